"""
name:
OAB-Bench

dataset:
$OAB_BENCH_DATASET (default: upstream's maritaca-ai/oab-bench): a Hub id or a folder, either
in upstream's raw layout (built here on the fly with the checked-in errata and cached under the
Hugging Face cache, one log line says so) or made by `oab-bench build`

abstract:
Phase 2 of the Brazilian Bar Exam (OAB/FGV): per exam a full legal brief (peça
prático-profissional, 5.00 points) and four discursive questions of two items each
(1.25 points per question). An LLM judge grades each answer item by item against the
official score table; code adds the scores; an exam passes at 6.00 of 10.00.

languages:
portuguese

tags:
legal, generation, llm-as-a-judge, rubric

paper:
https://arxiv.org/abs/2504.21202

Usage:
    OAB_JUDGE_MODEL=openai/gpt-5.2 \\
    lighteval endpoint litellm model.yaml "oab_bench|0" --custom-tasks oab_bench_task.py

lighteval names a task in its printed table `oab_bench:0` (and in the results JSON
`oab_bench|0`): the `0` is the number of few-shot examples, not a version or a subset.

Tasks: `oab_bench` (all questions), `oab_bench:<area>` (penal, civil, ...), and
`oab_bench:<edition>` (39 ... 44). The judge is configured by OAB_JUDGE_MODEL,
OAB_JUDGE_API_BASE, OAB_JUDGE_API_KEY (else the provider's usual variable),
OAB_JUDGE_MODE (structured|legacy), OAB_JUDGE_CONCURRENCY, OAB_JUDGE_CACHE.

Prompt: the exam's rules are the system message; one user message holds the
statement and every item, labelled with its value, and asks for all answers in one
reply, like the exam's answer sheet. Upstream instead asks item B in a second turn of
the same conversation, after the model has answered A.
"""

from __future__ import annotations

import functools
import logging
import os

os.environ.setdefault(
    "LITELLM_LOCAL_MODEL_COST_MAP", "True"
)  # before lighteval imports litellm (oab_bench/__init__.py)

from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import SampleLevelMetric
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from oab_bench.dataset_builder.ids import AREAS, EDITIONS
from oab_bench.dataset_builder.resolve import UPSTREAM_DATASET, resolve_dataset
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.aggregate import QuestionResult, task_figures
from oab_bench.judge.generation import lighteval_compat
from oab_bench.judge.generation.task_prompt import candidate_messages, candidate_prompt  # noqa: F401 (candidate_messages: API)
from oab_bench.judge.grading.lighteval_judge import check_store_from_env, judge_responses, settings_from_env

logger = logging.getLogger(__name__)

TASK = "oab_bench"
DEFAULT_DATASET = UPSTREAM_DATASET
SYSTEM_KEY = "oab_system_prompt"


def dataset_given() -> tuple[str, str]:
    """(the dataset asked for, where it came from): OAB_BENCH_DATASET, else upstream's Hub id."""
    given = os.environ.get("OAB_BENCH_DATASET")
    return (given, "OAB_BENCH_DATASET") if given else (DEFAULT_DATASET, "the task's default dataset")


@functools.cache
def dataset_path() -> str:
    """What lighteval loads: always a folder on disk (lighteval takes a relative path for a Hub id):
    our built layout as given, the cached build of upstream's raw layout, or a Hub dataset resolved
    (`oab-bench run` passes the folder it resolved). Resolved when lighteval builds a task to run."""
    return resolve_dataset(*dataset_given())


def check_judge_configured() -> None:
    """The judge's settings and cache, checked when lighteval prepares an evaluation of our documents:
    after browsing (`lighteval tasks inspect`, `tasks dump`: no judge needed), before any answer is
    generated (and paid for) only to stay unjudged."""
    settings_from_env()
    check_store_from_env()


def oab_prompt(line: dict, task_name: str = "") -> Doc:
    row = QuestionRow.model_validate(line)
    return Doc(
        task_name=task_name,
        query=candidate_prompt(row),
        choices=[],
        gold_index=[],
        instruction=None,
        specific={SYSTEM_KEY: row.system_prompt, "question_id": row.question_id, "row": line},
    )


lighteval_compat.install(
    task=TASK, system_key=SYSTEM_KEY, before_evaluating=check_judge_configured, dataset=dataset_path
)


class OabJudge(SampleLevelComputation):
    """Grade a task's answers in one batch with our judge (never lighteval's JudgeLLM)."""

    def compute(self, responses, docs, **kwargs) -> list[dict]:
        rows = [QuestionRow.model_validate(doc.specific["row"]) for doc in docs]
        answers = [(r.final_text[0] if r.final_text else "") or "" for r in responses]
        return judge_responses(rows, answers)


def corpus_figures(values: list[dict]) -> dict[str, float]:
    """Exam figures from the per-question values (a dict, so lighteval does not bootstrap it)."""
    return task_figures([QuestionResult.model_validate(v) for v in values])


oab_judge = SampleLevelMetric(
    metric_name="oab_judgment",
    higher_is_better=True,
    category=SamplingMethod.GENERATIVE,
    sample_level_fn=OabJudge(),
    corpus_level_fn=corpus_figures,
    batched_compute=True,
)


def _keep(field: str, value, line: dict) -> bool:
    return line[field] == value


class _TaskConfig(LightevalTaskConfig):
    """`hf_repo` is the dataset as given: importing or listing the tasks (`lighteval tasks dump`), or
    `oab-bench run` reading their filters, resolves, fetches and builds nothing. The folder lighteval
    loads, `dataset_path()`, is resolved when it builds one of these tasks to run (lighteval_compat)."""

    @property
    def hf_repo(self) -> str:
        return dataset_given()[0]

    @hf_repo.setter
    def hf_repo(self, value: str) -> None:
        pass  # always the given dataset


def _task(name: str, hf_filter=None) -> LightevalTaskConfig:
    return _TaskConfig(
        name=name,
        prompt_function=oab_prompt,
        hf_repo=DEFAULT_DATASET,  # read as the given dataset (dataset_given)
        hf_subset="default",
        hf_filter=hf_filter,
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        generation_size=int(os.environ.get("OAB_BENCH_GENERATION_SIZE", "8192")),
        stop_sequence=[],
        metrics=[oab_judge],
        version=1,
    )


TASKS_TABLE = [
    _task(TASK),
    *(_task(f"{TASK}:{area}", functools.partial(_keep, "area", area)) for area in AREAS),
    *(_task(f"{TASK}:{edition}", functools.partial(_keep, "edition", edition)) for edition in EDITIONS),
]
