"""A jury: several judges grade each answer independently; code combines their item scores.

Members are ordinary runner.Judge instances (own cache entries, own breaker, own cost), named
by `--judge-model A --judge-model B ...` or OAB_JUDGE_MODEL=A,B,C, and kept in their names'
sorted order whatever the order they were named in (jury_name.py); they share the other
settings, except those a member gives itself: `--judge-model "openai/b temperature=0.6
api_base=http://127.0.0.1:8000/v1"` (settings.member_settings). The jury's score of an item is the median (or mean, or min: `--jury-combine`) of the
scores its members gave, rounded DOWN to the item's allowed grid; the question's score is the
sum of its items (annulled items in full), as for one judge.

Failures: a member whose call failed gave no score for any item of the question. The jury
grades the question only when a strict majority of its members gave scores (2 of 3, 3 of 4),
combining those; otherwise the jury's judgment fails with the members' most common failure
status (a tie: the first by name, whatever the members' order). Without item scores (legacy mode) the question scores are combined the same way.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import statistics
from collections import Counter

from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.grader import Judge
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.judge.jury_name import jury_name
from oab_bench.judge.records import ItemScore, Judgment, MemberScore, Usage, total_cost
from oab_bench.judge.scoring import question_score
from oab_bench.judge.settings import JudgeSettings, member_names, member_settings

COMBINE = {"median": statistics.median, "mean": statistics.fmean, "min": min}


def make_judge(settings: JudgeSettings, store: JudgmentStore | None = None):
    """One judge, a jury when the judge model names several (A,B,C), or K repeats of one judge."""
    jury = len(member_settings(settings)) > 1  # (also checks each member's own settings)
    if jury and settings.repeats > 1:
        raise ValueError("--repeats with a jury is not supported: repeat one judge at a time")
    if (jury or settings.repeats > 1) and settings.batch:
        raise ValueError("--batch with a jury or --repeats is not supported: batch one judge at a time")
    if jury:
        return Jury(settings, store)
    if settings.repeats > 1:
        from oab_bench.judge.grading.repeats import Repeated

        return Repeated(settings, store)
    return Judge(settings, store)


def round_down(score: float, grid: list[float]) -> float:
    """The highest allowed score not above `score` (a jury never awards more than its members' middle)."""
    return grid[max(0, bisect.bisect_right(grid, score + 1e-9) - 1)]


class Jury:
    """Grades like a Judge (`grade`, `unanswered`, `settings`): run_judge_all takes either."""

    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None):
        names = member_names(settings.judge_model)
        if len(set(names)) != len(names):
            raise ValueError(f"a jury member is named twice: {settings.judge_model}")
        self.settings = settings
        members = sorted(
            member_settings(settings), key=lambda m: m.judge_model
        )  # `c,a` is `a,c` (jury_name.py)
        self.members = [Judge(member, store) for member in members]
        first = self.members[0]
        for m in self.members[1:]:  # the jury's record names one prompt version and mode
            if (m.prompt_version, m.mode) != (first.prompt_version, first.mode):
                raise ValueError(
                    f"jury member {m.settings.judge_model!r} grades with {m.prompt_version} in {m.mode} "
                    f"mode, member {first.settings.judge_model!r} with {first.prompt_version} in "
                    f"{first.mode} mode: a jury's members share the prompt and the mode"
                )
        for m in self.members[1:]:  # one --max-cost-usd for the whole jury, not one per member
            m.budget = self.members[0].budget
        self.name = jury_name(names, settings.jury_combine)
        self.graded: list[list[Judgment]] = [[] for _ in names]  # each member's judgments, for its summary

    @property
    def prompt_version(self) -> str:
        return self.members[0].prompt_version

    @property
    def mode(self) -> str:
        return self.members[0].mode

    def _base(self, row: QuestionRow, model: str) -> dict:
        return {
            "question_id": row.question_id,
            "exam_id": row.exam_id,
            "model": model,
            "judge_model": self.name,
            "prompt_version": self.prompt_version,
            "mode": self.mode,
            "max_score": row.max_score,
            "settings": {
                "jury_combine": self.settings.jury_combine,
                "members": [
                    {"judge_model": m.settings.judge_model, **m.settings.recorded()} for m in self.members
                ],
            },
        }

    def unanswered(self, row: QuestionRow, model: str, why: str, key: str = "") -> Judgment:
        return Judgment(**self._base(row, model), status="no_answer", error=why, cost_usd=0.0, members=[])

    async def grade(self, row: QuestionRow, answer: Answer) -> Judgment:
        got = await asyncio.gather(*(m.grade(row, answer) for m in self.members))
        for mine, j in zip(self.graded, got, strict=True):
            mine.append(j)
        return combine(
            row, answer.model, list(got), self.settings.jury_combine, self._base(row, answer.model)
        )


def combine(row: QuestionRow, model: str, got: list[Judgment], how: str, base: dict) -> Judgment:
    """The jury's judgment of one question from its members' (the rule: module docstring)."""
    fresh = [j for j in got if not j.cached]
    fields = dict(
        base,
        members=[MemberScore.of(j) for j in got],
        usage=sum((j.usage for j in fresh), Usage()),
        cost_usd=total_cost([j.cost_usd for j in fresh]),
        attempts=sum(j.attempts for j in got),
        cached=all(j.cached for j in got),
    )
    ok = [j for j in got if j.status == "ok"]
    if any(j.status == "no_answer" for j in got):
        return Judgment(**fields, status="no_answer", error=got[0].error)
    if 2 * len(ok) <= len(got):
        failures = Counter(j.status for j in got if j.status != "ok")
        status = min(failures, key=lambda s: (-failures[s], s))  # a tie: by name, not by member order
        return Judgment(
            **fields,
            status=status,
            error=f"jury: {len(ok)} of {len(got)} members graded this question; "
            f"a majority ({len(got) // 2 + 1}) is needed",
        )
    pick = COMBINE[how]
    gradable = [r for r in row.rubric if not r.annulled]
    if gradable and all(r.item_id in {i.item_id for i in j.items} for j in ok for r in gradable):
        items = []
        for r in row.rubric:
            scores = [next(i.score for i in j.items if i.item_id == r.item_id) for j in ok]
            value = r.max_score if r.annulled else round_down(pick(scores), r.allowed_scores)
            items.append(
                ItemScore(
                    item_id=r.item_id,
                    score=value,
                    max_score=r.max_score,
                    analysis=f"jury {how} of {', '.join(f'{s:g}' for s in scores)}",
                )
            )
        return Judgment(**fields, status="ok", score=question_score(items), items=items)
    annulled = [i for i in ok[0].items if i.item_id in {r.item_id for r in row.rubric if r.annulled}]
    score = money(math.floor(pick([j.score for j in ok]) * 100 + 1e-6) / 100)  # down to the cent
    return Judgment(**fields, status="ok", score=score, items=annulled)
