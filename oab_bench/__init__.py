"""OAB-Bench: LLMs writing law in Portuguese, graded against the Brazilian Bar Exam's official answers.

One import namespace, the repository's top folders mapped into it (pyproject.toml, docs/architecture.md);
this folder holds what every stage shares. litellm's bundled cost map is set here, before any module
imports litellm, so prices are reproducible and offline-safe (no fetch from GitHub).
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
