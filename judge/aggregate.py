"""Question scores -> exam totals -> the task's figures; an exam counts only when all of it is `ok`."""

from __future__ import annotations

import math
from collections import defaultdict

from pydantic import BaseModel

from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, money
from oab_bench.judge.records import cost_now


class QuestionResult(BaseModel):
    """What aggregation needs of one judged (model, question)."""

    question_id: str
    exam_id: str
    status: str
    score: float | None
    max_score: float
    cost_usd: float | None = None
    cached: bool = False  # judged by an earlier run: costs nothing now

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.score is not None


def run_cost(results: list[QuestionResult]) -> float:
    """Dollars judging cost in this run; NaN (unknown) once any billed call, cached or not, had no price."""
    costs = [cost_now(r.cost_usd, r.cached) for r in results]
    return math.nan if None in costs else sum(costs)


def task_figures(results: list[QuestionResult]) -> dict[str, float]:
    """The corpus figures of the lighteval task. NaN where there is nothing to average, or unknown."""
    by_exam: dict[str, list[QuestionResult]] = defaultdict(list)
    for r in results:
        by_exam[r.exam_id].append(r)
    totals = [
        money(sum(r.score for r in rs))
        for _, rs in sorted(by_exam.items())
        if all(r.ok for r in rs) and money(sum(r.max_score for r in rs)) == EXAM_MAX
    ]
    ok = [r for r in results if r.ok]
    passed = sum(t >= PASS_MARK for t in totals)
    return {
        "exam_score": sum(totals) / len(totals) if totals else math.nan,
        "pass_rate": passed / len(totals) if totals else math.nan,
        "question_score_pct": 100 * sum(r.score / r.max_score for r in ok) / len(ok) if ok else math.nan,
        "coverage": len(ok) / len(results) if results else math.nan,
        "cost_usd": run_cost(results),
        "exams_complete": float(len(totals)),
        "exams_passed": float(passed),
    }
