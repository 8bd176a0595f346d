"""The task in inspect-ai's shape (`inspect eval oab_bench_task.py@oab_bench`, lighteval's inspect
backend): rows -> samples with the candidate's messages, our judge as the scorer (the same prompts,
cache and records as `oab-bench run`), the exam figures as metrics."""

from __future__ import annotations

import os

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import SampleScore, Score, Scorer, Target, mean, metric, scorer
from inspect_ai.solver import TaskState, generate

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import AREAS, EDITIONS
from oab_bench.dataset_builder.resolve import resolve_dataset
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.answers import Answer
from oab_bench.judge.dataset import advised, load_rows
from oab_bench.judge.generation.task_prompt import candidate_messages
from oab_bench.judge.grading import lighteval_judge


class JudgmentFailed(RuntimeError):
    """A judgment that is not `ok`: the sample's error in the log, never a score of 0."""


def sample_of(record: dict) -> Sample:
    """A dataset row -> the candidate's messages (the exam's rules, then the answer sheet)."""
    row = QuestionRow.model_validate(record)
    system, user = (m["content"] for m in candidate_messages(row))
    facts = row.model_dump(include={"exam_id", "area", "edition", "max_score"})
    return Sample(
        id=row.question_id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=user)],
        metadata=facts | {"row": record},
    )


def judge_env(args: dict) -> dict[str, str]:
    """The environment with the task's `-T judge_<setting>=...` over OAB_JUDGE_*; a key is never a
    task argument (inspect logs them)."""
    if bad := [k for k in args if not k.startswith("judge_") or k == "judge_api_key"]:
        raise SystemExit(
            f"oab_bench: error: unknown task argument {bad[0]}: the judge's are -T judge_model=..., "
            "-T judge_<setting>=... (`oab-bench judge -h`); its key comes from OAB_JUDGE_API_KEY"
        )
    return os.environ | {f"OAB_{k.upper()}": str(v) for k, v in args.items()}


def check_judge(args: dict) -> None:
    """Before any candidate call: a judge is named, its key and its cache are usable."""
    if not str(args.get("judge_model") or os.environ.get("OAB_JUDGE_MODEL", "")).strip():
        raise SystemExit(
            "oab_bench: error: no judge: pass -T judge_model=openai/gpt-5.2 (or set OAB_JUDGE_MODEL)"
        )
    try:
        lighteval_judge.check_env(judge_env(args), "inspect")
    except (lighteval_judge.JudgeNotConfigured, ValueError) as e:  # StoreError is a ValueError
        raise SystemExit(f"oab_bench: error: {e}") from None


def _figure(name: str):
    def figure(scores: list[SampleScore]) -> float:
        results = [QuestionResult.model_validate(s.score.metadata["judgment"]) for s in scores]
        return task_figures(results)[name]

    return figure


@metric
def exam_score():
    """Mean exam total (0-10) over the exams whose every question was judged."""
    return _figure("exam_score")


@metric
def pass_rate():
    """Share of those exams with 6.00 or more."""
    return _figure("pass_rate")


@scorer(metrics=[mean(), exam_score(), pass_rate()])
def oab_judge(**judge_args) -> Scorer:
    """Our judge, built at the first score from the judge arguments and OAB_JUDGE_*."""
    judges = []

    async def score(state: TaskState, target: Target) -> Score:
        if not judges:
            judges.append(lighteval_judge.judge_from_env(judge_env(judge_args)))
        row = QuestionRow.model_validate(state.metadata["row"])
        answer = Answer(model=str(state.model), question_id=row.question_id, turns=[state.output.completion])
        j = await judges[0].grade(row, answer)
        if j.status != "ok":
            raise JudgmentFailed(f"{row.question_id}: judgment {j.status}: {j.error}")
        allowed = {r.item_id: r.allowed_scores for r in row.rubric}
        items = [
            dict(item_id=i.item_id, allowed_scores=allowed.get(i.item_id), score=i.score, reason=i.analysis)
            for i in j.items
        ]
        lines = [f"{i.item_id}: {i.score:g} of {i.max_score:g}. {i.analysis}" for i in j.items]
        return Score(
            value=j.score,
            answer=f"{j.score:g} of {j.max_score:g}",
            explanation="\n".join(lines),
            metadata={"items": items, "judgment": j.record()},
        )

    return score


def set_inspect_fields(config) -> None:
    """What lighteval's inspect-ai backend (`get_inspect_ai_task`) needs of a task config."""
    keep = config.hf_filter
    config.sample_fields = sample_of
    config.solver = [generate(cache=True, max_tokens=config.generation_size)]
    config.scorer = oab_judge()
    config.filter = None if keep is None else (lambda sample: keep(sample.metadata["row"]))


def oab_task(
    given: tuple[str, str], area: str | None, edition: int | None, max_tokens: int, judge_args: dict
) -> Task:
    """The rows of `given` (the dataset, where it came from), of one area or edition if asked; the
    judge is checked before any candidate call."""
    for name, value, known in (("area", area, list(AREAS)), ("edition", edition, list(EDITIONS))):
        if value is not None and value not in known:
            raise SystemExit(f"oab_bench: error: -T {name}={value}: not one of {', '.join(map(str, known))}")
    check_judge(judge_args)
    try:
        folder = resolve_dataset(*given)
    except SourceError as e:
        raise SystemExit(f"oab_bench: error: {advised(e, 'inspect')}") from None
    rows = [r for r in load_rows(folder) if area in (None, r.area) and edition in (None, r.edition)]
    return Task(
        dataset=MemoryDataset([sample_of(r.model_dump(mode="json")) for r in rows], name="oab_bench"),
        solver=[generate(cache=True, max_tokens=max_tokens)],
        scorer=oab_judge(**judge_args),
        metadata={"dataset": folder},
    )
