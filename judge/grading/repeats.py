"""`--repeats K`: grade every answer K times, to measure how much the judge disagrees with itself.

Repeat 0 uses the ordinary cache key (it is what a single run would grade, and an existing cache
still serves it); repeats 1..K-1 add their index to the key, so each is its own cache entry and
its own call at the judge's own temperature. The judgment record is repeat 0's, with every
repeat's grading under `repeats`; the leaderboard averages the repeats and widens its interval
with them (judge/intervals.py).
"""

from __future__ import annotations

import asyncio

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore, cache_key
from oab_bench.judge.records import Judgment, MemberScore, Usage, total_cost
from oab_bench.judge.settings import JudgeSettings


class RepeatJudge(Judge):
    """A Judge whose cache entries are those of repeat `repeat` (0: the plain ones)."""

    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None, repeat: int):
        super().__init__(settings, store)
        self.repeat = repeat

    def key(self, row: QuestionRow, answer_text: str) -> str:
        plain = super().key(row, answer_text)
        return plain if self.repeat == 0 else cache_key(judgment=plain, repeat=self.repeat)


class Repeated:
    """Grades like a Judge (`grade`, `unanswered`, `settings`): run_judge_all takes either."""

    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None):
        self.settings = settings
        self.runs = [RepeatJudge(settings, store, k) for k in range(settings.repeats)]
        for r in self.runs[1:]:  # one --max-cost-usd for all repeats, not one per repeat
            r.budget = self.runs[0].budget

    def unanswered(self, row: QuestionRow, model: str, why: str, key: str = "") -> Judgment:
        return self.runs[0].unanswered(row, model, why, key).model_copy(update={"repeats": []})

    async def grade(self, row: QuestionRow, answer: Answer) -> Judgment:
        got = await asyncio.gather(*(r.grade(row, answer) for r in self.runs))
        fresh = [j for j in got if not j.cached]
        repeats = [MemberScore.of(j, repeat=k) for k, j in enumerate(got)]
        return got[0].model_copy(
            update={
                "repeats": repeats,
                "usage": sum((j.usage for j in fresh), Usage()),
                "cost_usd": total_cost([j.cost_usd for j in fresh]),
                "cached": all(j.cached for j in got),
                "attempts": sum(j.attempts for j in got),
            }
        )
