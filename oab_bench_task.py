"""
name:
OAB-Bench
dataset:
$OAB_BENCH_DATASET, else upstream's maritaca-ai/oab-bench: a folder built by `oab-bench build`, or a Hub
id or folder in upstream's raw layout (built here once, cached)
abstract:
Phase 2 of the Brazilian Bar Exam (OAB/FGV): a legal brief and four discursive questions per exam, each
answer graded item by item against the official score table by an LLM judge; code adds the scores.
languages:
portuguese
tags:
legal, generation, llm-as-a-judge, rubric
paper:
https://arxiv.org/abs/2504.21202

Usage: OAB_JUDGE_MODEL=openai/gpt-5.2 lighteval endpoint litellm model.yaml "oab_bench|0" --custom-tasks
oab_bench_task.py (tasks oab_bench, oab_bench:<area>, oab_bench:<edition>; the judge's other OAB_JUDGE_*
variables: `oab-bench judge -h`).
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before lighteval imports litellm

from inspect_ai import Task, task

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.resolve import UPSTREAM_DATASET, resolve_dataset
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.dataset import advised, dataset_argument
from oab_bench.judge.generation import inspect_task, lighteval_compat, task_run
from oab_bench.judge.generation.run_settings import TASK, task_names
from oab_bench.judge.generation.task_prompt import candidate_prompt
from oab_bench.judge.grading import lighteval_judge
from oab_bench.keyed_store import StoreError

DEFAULT_DATASET = UPSTREAM_DATASET
SYSTEM_KEY = "oab_system_prompt"
REFUSED = "the candidate's server refused the request, so the run stopped: "
dataset_given = functools.partial(dataset_argument, None, "the task's default dataset")


@functools.cache
def dataset_path() -> str:
    """The folder lighteval loads (it takes a relative path for a Hub id); none: one line naming the variable."""
    try:
        return resolve_dataset(*dataset_given())
    except SourceError as e:
        raise SystemExit(f"oab_bench: error: {advised(e, 'lighteval')}") from None


def check_judge_configured() -> None:
    """Before an evaluation's first call (not while the task is browsed), the plain CLI's judge is
    usable, or one line and a non-zero exit (`oab-bench run` checked its own)."""
    if task_run.RUN is None:
        try:
            lighteval_judge.check_env()
        except (lighteval_judge.JudgeNotConfigured, StoreError, ValueError) as e:
            raise SystemExit(f"oab_bench: error: {e}") from None


def oab_prompt(line: dict, task_name: str = ""):
    from lighteval.tasks.requests import Doc

    row = QuestionRow.model_validate(line)
    specific = {SYSTEM_KEY: row.system_prompt, "question_id": row.question_id, "row": line}
    return Doc(task_name=task_name, query=candidate_prompt(row), choices=[], gold_index=[], specific=specific)


def corpus_figures(values: list[dict]) -> dict[str, float]:
    """Exam figures from the per-question values (a dict: lighteval bootstraps no float)."""
    return task_figures([QuestionResult.model_validate(v) for v in values])


@task
def oab_bench(
    area: str | None = None,
    edition: int | None = None,
    dataset: str | None = None,
    max_tokens: int = 8192,
    **judge,
) -> Task:
    """`inspect eval oab_bench_task.py@oab_bench --model openai/gpt-4o-mini -T judge_model=openai/gpt-5.2`:
    -T area=penal, -T edition=41 are oab_bench:penal, oab_bench:41; -T dataset= is OAB_BENCH_DATASET;
    the judge is -T judge_<setting>=... over OAB_JUDGE_*."""
    given = (dataset, "-T dataset") if dataset else dataset_given()
    return inspect_task.oab_task(given, area, edition, max_tokens, judge)


def __getattr__(name: str) -> list:  # TASKS_TABLE when lighteval asks: `inspect eval` needs no lighteval
    if name != "TASKS_TABLE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return _tasks_table()
    except AttributeError as e:  # lighteval's hasattr would take it for "no TASKS_TABLE here"
        raise RuntimeError(f"oab_bench_task: making TASKS_TABLE: {e!r}") from e


@functools.cache
def _tasks_table() -> list:
    from lighteval.metrics.metrics_sample import SampleLevelComputation
    from lighteval.metrics.utils.metric_utils import SampleLevelMetric
    from lighteval.tasks.lighteval_task import LightevalTaskConfig
    from lighteval.tasks.requests import SamplingMethod

    def prepare(task) -> None:
        """Our task, as lighteval builds it to run: `oab-bench run`'s dataset folder, or the plain CLI's."""
        task.dataset_path = task_run.RUN.dataset if task_run.RUN else dataset_path()

    lighteval_compat.install(
        task=TASK, system_key=SYSTEM_KEY, prepare=prepare, before_evaluating=check_judge_configured
    )

    class OabJudge(SampleLevelComputation):
        """Grade a task's answers in one batch with our judge (never lighteval's JudgeLLM)."""

        def compute(self, responses, docs, **kwargs) -> list[dict]:
            if task_run.REFUSED and task_run.RUN is None:  # the plain CLI: one line, nothing judged
                raise SystemExit(f"oab_bench: error: {REFUSED}{task_run.REFUSED[0]}")
            rows = [QuestionRow.model_validate(doc.specific["row"]) for doc in docs]
            texts = [(r.final_text[0] if r.final_text else "") or "" for r in responses]
            run = task_run.RUN
            judge, candidate = (
                (run.judge, run.candidate) if run else (lighteval_judge.judge_from_env(), "candidate")
            )
            judgments = lighteval_judge.judge_answers(judge, rows, texts, candidate, task_run.STOPPING)
            if run:
                run.judged.extend(judgments)
            return [j.sample() for j in judgments]

    judge = dict(metric_name="oab_judgment", higher_is_better=True, category=SamplingMethod.GENERATIVE)
    judge |= dict(sample_level_fn=OabJudge(), corpus_level_fn=corpus_figures, batched_compute=True)

    class _TaskConfig(LightevalTaskConfig):
        """The dataset and answer budget are `oab-bench run`'s, else the plain CLI's; `hf_repo` is the
        dataset as given, so listing the tasks fetches and builds nothing (`prepare` sets the folder)."""

        hf_repo = property(
            lambda self: task_run.RUN.dataset if task_run.RUN else dataset_given()[0], lambda *_: None
        )
        generation_size = property(
            lambda self: task_run.RUN.max_new_tokens if task_run.RUN else 8192, lambda *_: None
        )

        def __post_init__(self):  # lighteval's inspect-ai backend (`lighteval eval`) makes it an inspect Task
            super().__post_init__()
            inspect_task.set_inspect_fields(self)

    common = dict(prompt_function=oab_prompt, hf_repo=DEFAULT_DATASET, hf_subset="default", version=1)
    common |= dict(hf_avail_splits=["test"], evaluation_splits=["test"], stop_sequence=[])  # zero-shot
    common |= dict(metrics=[SampleLevelMetric(**judge)])  # generation_size: _TaskConfig's

    def keep(task: str, line: dict) -> bool:
        return task.partition(":")[2] in (line["area"], str(line["edition"]))

    return [  # oab_bench, oab_bench:<area>, oab_bench:<edition>
        _TaskConfig(name=n, hf_filter=functools.partial(keep, n) if ":" in n else None, **common)
        for n in task_names()
    ]
