"""Rubric-constrained grading of OAB answers through litellm.

Flow: answers.py (what was written) -> prompts.py / upstream.py (what the judge sees)
-> reply_schema.py (what it may answer) -> client.py (one call, retried) -> scoring.py (code adds
the scores) -> runner.py (many calls: cache, concurrency, progress) -> aggregate.py.
"""

from .legacy import parse_legacy_score

__all__ = ["parse_legacy_score"]
