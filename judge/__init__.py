"""Grading, and everything around it: from the dataset rows and a candidate's answers to figures.

Core (this folder): the records at the boundaries (answers, records), scoring and aggregation,
settings, redaction. Stages, one subpackage each: `generation/` (the candidate's side: `oab-bench
run`), `grading/` (the judge), `validity/`, `leaderboard/`, `panel/`, `sweep/`, `audit/` (the HTML
report), `sharing/` (export and the Hub). The core imports no stage.
"""

from oab_bench.judge.legacy import parse_legacy_score

__all__ = ["parse_legacy_score"]
