"""`oab-bench run --estimate`: the bill of a run before its answers exist."""

from __future__ import annotations

from oab_bench.judge.grading.estimate.core import (
    DEFAULT_ANSWER_TOKENS,
    estimate,
    placeholder_pairs,
    print_estimate,
)
from oab_bench.judge.grading.grader import Judge


def estimate_run(args, settings, question_ids: list[str]) -> int:
    """`oab-bench run --estimate`: the judging of `question_ids` for `args.model`, with answers of
    DEFAULT_ANSWER_TOKENS (they are not generated yet) and the run's judge cache."""
    from pathlib import Path

    from oab_bench.judge.dataset import load_rows
    from oab_bench.judge.grading.judgment_store import JudgmentStore, default_cache_dir

    wanted = set(question_ids)
    rows = [r for r in load_rows(args.dataset) if r.question_id in wanted]
    where = args.judge_cache
    off = where is not None and where.lower() == "off"
    store = JudgmentStore(None if off else Path(where) if where else default_cache_dir())
    judge = Judge(settings, store)
    note = f"Answers not generated yet: assumed {DEFAULT_ANSWER_TOKENS} tokens per answer."
    return print_estimate(estimate(judge, placeholder_pairs(rows, args.model, judge)), args.format, note)
