"""OAB-Bench: LLMs writing law in Portuguese, graded against the Brazilian Bar Exam's official answers.

One import namespace. The repository's top folders are mapped into it (see pyproject.toml):
`dataset_builder/` -> `oab_bench.dataset_builder` (build), `judge/` -> `oab_bench.judge` (generate, grade,
validity, leaderboard, audit), `scripts/` -> `oab_bench.scripts` (the CLI). This folder holds what every
stage shares: file names and markers, the folder guard, signals, the keyed store.

litellm's bundled cost map, not a fetch from GitHub when litellm is first imported: set here, before any
module of the namespace imports litellm, so prices are reproducible and offline-safe.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
