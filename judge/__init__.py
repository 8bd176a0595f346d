"""Rubric-constrained grading of OAB answers through litellm.

Flow: answers.py (what was written) -> prompts.py / upstream.py (what the judge sees)
-> reply_schema.py (what it may answer) -> client.py (one call, retried) -> scoring.py (code adds
the scores) -> runner.py (many calls: cache, concurrency, progress) -> aggregate.py.

litellm's bundled cost map, not a fetch from GitHub when litellm is first imported: set here,
before any module of this package imports litellm, so prices (estimates, caps) are
reproducible and offline-safe whatever is imported first.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from .legacy import parse_legacy_score

__all__ = ["parse_legacy_score"]
