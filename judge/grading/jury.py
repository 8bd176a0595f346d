"""Several gradings of each answer, each grading like a Judge: a jury of judges (item scores combined,
rounded down to the grid, a strict majority needed), or K repeats of one judge. Rules: docs/judge.md."""

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
from oab_bench.judge.judge_label import jury_name
from oab_bench.judge.records import ItemScore, Judgment, MemberScore, Usage, total_cost
from oab_bench.judge.scoring import question_score
from oab_bench.judge.settings import JudgeSettings, member_settings

COMBINE = {"median": statistics.median, "mean": statistics.fmean, "min": min}


def make_judge(settings: JudgeSettings, store: JudgmentStore | None = None):
    """One judge, a jury when the judge model names several (A,B,C), or K repeats of one judge."""
    jury, repeated = len(member_settings(settings)) > 1, settings.repeats > 1  # (checks members' settings)
    if jury + repeated + settings.batch > 1:
        raise ValueError("--repeats with a jury, or --batch with a jury or --repeats, is not supported")
    if jury:
        return Jury(settings, store)
    return Repeated(settings, store) if repeated else Judge(settings, store)


def _fresh_totals(got: list[Judgment]) -> dict:
    """What several gradings cost this time (cached ones: nothing) and took."""
    fresh = [j for j in got if not j.cached]
    return {
        "usage": sum((j.usage for j in fresh), Usage()),
        "cost_usd": total_cost([j.cost_usd for j in fresh]),
        "cached": all(j.cached for j in got),
        "attempts": sum(j.attempts for j in got),
    }


class Repeated:
    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None):
        self.settings = settings
        self.runs = [Judge(settings, store, repeat=k) for k in range(settings.repeats)]
        for r in self.runs[1:]:  # one --max-cost-usd for all repeats, not one per repeat
            r.budget = self.runs[0].budget

    def unanswered(self, row: QuestionRow, model: str, why: str) -> Judgment:
        return self.runs[0].unanswered(row, model, why).model_copy(update={"repeats": []})

    async def grade(self, row: QuestionRow, answer: Answer) -> Judgment:
        got = await asyncio.gather(*(r.grade(row, answer) for r in self.runs))
        repeats = [MemberScore.of(j, repeat=k) for k, j in enumerate(got)]
        return got[0].model_copy(update={"repeats": repeats, **_fresh_totals(list(got))})


def round_down(score: float, grid: list[float]) -> float:
    return grid[max(0, bisect.bisect_right(grid, score + 1e-9) - 1)]


class Jury:
    def __init__(self, settings: JudgeSettings, store: JudgmentStore | None = None):
        self.settings = settings
        members = sorted(member_settings(settings), key=lambda m: m.judge_model)
        self.members = [Judge(m, store) for m in members]
        names = [m.settings.judge_model for m in self.members]
        if len(set(names)) != len(names):
            raise ValueError(f"a jury member is named twice: {settings.judge_model}")
        first = self.members[0]
        for m in self.members[1:]:  # the jury's record names one prompt version and mode
            if (m.prompt_version, m.mode) != (first.prompt_version, first.mode):
                what = f"jury member {m.settings.judge_model!r} grades with {m.prompt_version} in {m.mode}"
                raise ValueError(f"{what} mode, unlike {first.settings.judge_model!r}: one prompt and mode")
            m.budget = first.budget  # one --max-cost-usd for the whole jury, not one per member
        self.name = jury_name(names, settings.jury_combine)
        self.prompt_version, self.mode = first.prompt_version, first.mode
        self.graded: list[list[Judgment]] = [[] for _ in names]  # each member's judgments, for its summary

    def base(self, row: QuestionRow, model: str) -> dict:
        members = [{"judge_model": m.settings.judge_model, **m.settings.recorded()} for m in self.members]
        settings = {"jury_combine": self.settings.jury_combine, "members": members}
        return {**self.members[0].base(row, model), "judge_model": self.name, "settings": settings}

    def unanswered(self, row: QuestionRow, model: str, why: str) -> Judgment:
        return Judgment(**self.base(row, model), status="no_answer", error=why, cost_usd=0.0, members=[])

    async def grade(self, row: QuestionRow, answer: Answer) -> Judgment:
        got = await asyncio.gather(*(m.grade(row, answer) for m in self.members))
        for mine, j in zip(self.graded, got, strict=True):
            mine.append(j)
        return combine(row, list(got), self.settings.jury_combine, self.base(row, answer.model))


def combine(row: QuestionRow, got: list[Judgment], how: str, base: dict) -> Judgment:
    fields = dict(base, members=[MemberScore.of(j) for j in got], **_fresh_totals(got))
    ok = [j for j in got if j.status == "ok"]
    if any(j.status == "no_answer" for j in got):
        return Judgment(**fields, status="no_answer", error=got[0].error)
    if 2 * len(ok) <= len(got):
        failures = Counter(j.status for j in got if j.status != "ok")
        status = min(failures, key=lambda s: (-failures[s], s))  # a tie: by name, not by member order
        why = f"jury: {len(ok)} of {len(got)} members graded this question; a majority ({len(got) // 2 + 1}) is needed"
        return Judgment(**fields, status=status, error=why)
    pick = COMBINE[how]
    gradable = [r for r in row.rubric if not r.annulled]
    if gradable and all(r.item_id in {i.item_id for i in j.items} for j in ok for r in gradable):
        items = []
        for r in row.rubric:
            scores = [next(i.score for i in j.items if i.item_id == r.item_id) for j in ok]
            value = r.max_score if r.annulled else round_down(pick(scores), r.allowed_scores)
            analysis = f"jury {how} of {', '.join(f'{s:g}' for s in scores)}"
            items.append(ItemScore(item_id=r.item_id, score=value, max_score=r.max_score, analysis=analysis))
        return Judgment(**fields, status="ok", score=question_score(items), items=items)
    # without item scores (legacy mode) the question scores combine, down to the cent
    annulled = [i for i in ok[0].items if i.item_id in {r.item_id for r in row.rubric if r.annulled}]
    score = money(math.floor(pick([j.score for j in ok]) * 100 + 1e-6) / 100)
    return Judgment(**fields, status="ok", score=score, items=annulled)
