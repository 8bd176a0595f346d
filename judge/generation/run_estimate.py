"""`oab-bench run --estimate`: the bill of a run before its answers exist."""

from __future__ import annotations

from oab_bench.judge.grading.estimate.core import (
    DEFAULT_ANSWER_TOKENS,
    Estimate,
    estimate,
    placeholder_pairs,
    print_estimate,
)
from oab_bench.judge.grading.grader import Judge


def estimate_run(args, settings, question_ids: list[str], panel=None) -> int:
    """`oab-bench run --estimate`: the judging of `question_ids` for `args.model`, printed; with
    `panel` (its Panel and (row, answer) pairs, `run --panel`), the panel's bill apart."""
    judge, est, note = run_estimate(args, settings, question_ids)
    if panel is None:
        return print_estimate(est, args.format, note)
    from oab_bench.judge.panel.estimate import print_with_panel

    return print_with_panel(est, estimate(judge, panel[1]), panel[0], args.format, note)


def run_estimate(args, settings, question_ids: list[str]) -> tuple[Judge, Estimate, str]:
    """(the judge, its estimate, a note) for `oab-bench run --estimate`: answers of
    DEFAULT_ANSWER_TOKENS (they are not generated yet) and the run's judge cache."""
    from pathlib import Path

    from oab_bench.judge.dataset import load_rows
    from oab_bench.judge.grading.judgment_store import JudgmentStore, default_cache_dir

    wanted = set(question_ids)
    rows = [r for r in load_rows(args.dataset) if r.question_id in wanted]
    where = args.judge_cache
    off = where is not None and where.lower() == "off"
    store = JudgmentStore(None if off else Path(where) if where else default_cache_dir(), access="read")
    judge = Judge(settings, store)
    note = f"Answers not generated yet: assumed {DEFAULT_ANSWER_TOKENS} tokens per answer."
    return judge, estimate(judge, placeholder_pairs(rows, args.model, judge)), note
