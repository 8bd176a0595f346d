"""`oab-bench run --estimate`: the bill of a run, looked up as the run would look it up.

The answers the answer store holds for the run's model and generation settings are judged as they
are, so their cached judgments cost nothing (after a finished run: 0 calls); only the answers
still to generate are assumed of DEFAULT_ANSWER_TOKENS.
"""

from __future__ import annotations

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.estimate.core import (
    DEFAULT_ANSWER_TOKENS,
    Estimate,
    estimate,
    placeholder_pairs,
    print_estimate,
)


def estimate_run(
    judge, model: str, rows: list[QuestionRow], texts: list[str | None], fmt: str, panel=None
) -> int:
    """Printed; `texts`: the stored answer of each row (None: to generate). With `panel` (its Panel
    and (row, answer) pairs, `run --panel`), the panel's bill apart."""
    est, note = run_estimate(judge, model, rows, texts)
    if panel is None:
        return print_estimate(est, fmt, note)
    from oab_bench.judge.panel.estimate import print_with_panel

    return print_with_panel(est, estimate(judge, panel[1]), panel[0], fmt, note)


def run_estimate(judge, model: str, rows: list[QuestionRow], texts: list[str | None]) -> tuple[Estimate, str]:
    """(the estimate, a note): stored answers as they are, the others as placeholders."""
    stored = [
        (row, Answer(model=model, question_id=row.question_id, turns=[t]))
        for row, t in zip(rows, texts, strict=True)
        if t is not None
    ]
    missing = [row for row, t in zip(rows, texts, strict=True) if t is None]
    est = estimate(judge, stored + placeholder_pairs(missing, model, judge))
    est.generations_cached, est.generations_to_pay = len(stored), len(missing)
    note = f"Answers to generate assumed of {DEFAULT_ANSWER_TOKENS} tokens." if missing else ""
    return est, note
