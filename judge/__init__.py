"""Grading, and everything around it: from the dataset rows and a candidate's answers to figures.

Core (this folder): the records at the boundaries (answers, details, records), scoring and
aggregation, settings, redaction. Stages, one subpackage each: `generation/` (the candidate's side:
lighteval child, task prompt, answer store, vLLM server, `oab-bench run`), `grading/` (prompts, schema,
client, runner, judgment store, jury, repeats, batch, estimate), `validity/` (agreement, probe),
`leaderboard/` (tables, plot), `audit/` (the HTML report). The core imports no stage.
"""

from oab_bench.judge.legacy import parse_legacy_score

__all__ = ["parse_legacy_score"]
