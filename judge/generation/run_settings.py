"""`oab-bench run`'s settings, built once from the command line and `OAB_*` variables; a step that learns
something (the dataset's folder, a server's address) makes a new object. No heavy import: the CLI reads it."""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shlex
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from oab_bench.dataset_builder.ids import AREAS, EDITIONS
from oab_bench.judge.dataset import dataset_argument
from oab_bench.judge.grading.judgment_store import default_cache_dir
from oab_bench.judge.settings import JudgeSettings, member_settings, settings_from

TASK = "oab_bench"
DEFAULT_JUDGE = "openai/gpt-5.2"
DEFAULT_MAX_MODEL_LENGTH = 32768
API_CONCURRENCY = 10
LOCAL_CONCURRENCY = 64  # enough requests in flight for vLLM's continuous batching
VLLM_PREFIX = "vllm:"


class RunSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str  # as litellm names it once local servers run (`vllm:X` until then)
    api_base: str | None
    dataset: str  # as given; a folder on disk once resolved (run_checks.resolve_references)
    dataset_origin: str  # the flag or variable it came from, for errors
    tasks: list[str]
    output_dir: Path
    output_given: str  # as typed, for errors
    answer_cache: Path | None  # None: off
    answer_cache_name: str  # the flag or variable that chose it, as the user would look for it
    judge_cache: Path | None
    judge_cache_name: str
    cache_access: Literal["write", "read"] = "write"  # read: a read-only cache served, nothing written
    cache_read_only: bool
    fresh_answers: bool
    concurrency: int | None
    temperature: float
    seed: int | None
    max_new_tokens: int
    max_model_length: int | None
    max_samples: int | None
    candidate_retries: int
    candidate_retry_sleep: float
    candidate_timeout: float
    vllm_args: str | None
    judge_vllm_args: str | None
    vllm_start_timeout: float
    check_call: bool
    estimate: bool
    format: str
    panel: list[str] | None
    judge: JudgeSettings
    argv: list[str]  # the command line, for the resume command

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunSettings:
        judge = settings_from(args, os.environ, prefix="judge-", defaults={"judge_model": DEFAULT_JUDGE})
        if len(members := member_settings(judge)) > 1 and any(vllm_target(m.judge_model) for m in members):
            raise ValueError(
                "a jury member cannot be vllm:...: start its server yourself (python -m "
                "vllm.entrypoints.openai.api_server) and name it openai/<served name> with --judge-api-base"
            )
        values = {k: v for k, v in vars(args).items() if k in cls.model_fields}
        values["dataset"], values["dataset_origin"] = dataset_argument(args)
        values["answer_cache"], values["answer_cache_name"] = _cache(args.answer_cache, "answer", "answers")
        values["judge_cache"], values["judge_cache_name"] = _cache(args.judge_cache, "judge", "judge")
        values |= {"output_dir": Path(args.output_dir).resolve(), "output_given": str(args.output_dir)}
        values |= {"tasks": check_tasks(args.tasks), "check_call": not args.no_check_call, "judge": judge}
        values.setdefault("argv", sys.argv[1:])  # the CLI gives the argv it parsed
        return cls(**values)

    @property
    def litellm_model(self) -> str:
        return litellm_name(self.model)

    @property
    def dummy_key(self) -> str | None:
        """A key for a local OpenAI-compatible server (vLLM takes any) when OPENAI_API_KEY is unset."""
        local = self.api_base and self.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")
        return "EMPTY" if local else None

    def generation(self) -> dict:
        """The answer store's generation settings, as lighteval's client reports them."""
        from lighteval.models.model_input import GenerationParameters

        from oab_bench.judge.generation.answer_store import generation_settings

        params = GenerationParameters(**self.generation_parameters()).model_dump(exclude_none=True)
        return generation_settings(params, self.max_new_tokens)

    def generation_parameters(self) -> dict:
        return {"temperature": self.temperature} | ({"seed": self.seed} if self.seed is not None else {})

    def resume_command(self) -> str:
        """This run's own command line (less --fresh-answers: a resume keeps what was generated)."""
        argv = [a for a in self.argv if a != "--fresh-answers"]
        return shlex.join(["oab-bench", *argv]) if argv[:1] == ["run"] else "the same `oab-bench run` command"


def _cache(given: str | None, kind: str, default: str) -> tuple[Path | None, str]:
    """A cache's folder (None: off) and the flag or variable that chose it."""
    flag, var = f"--{kind}-cache", f"OAB_{kind.upper()}_CACHE"
    where = given if given is not None else os.environ.get(var)
    name = flag if given is not None else var if where else f"{flag} (default; {var} not set)"
    if where and where.lower() == "off":
        return None, name
    return (Path(where).expanduser().resolve() if where else default_cache_dir().parent / default), name


def vllm_target(model: str | None) -> str | None:
    """The HF id or folder of `vllm:...`."""
    return model[len(VLLM_PREFIX) :] if model and model.startswith(VLLM_PREFIX) else None


def served_name(target: str) -> str:
    """The name a local server answers to: an HF id as it is, a folder by its name."""
    path = Path(target).expanduser()
    return path.resolve().name if path.exists() else target


def litellm_name(model: str) -> str:
    """The name litellm gets: `vllm:X` becomes `openai/<served name>` (its server's)."""
    target = vllm_target(model)
    return f"openai/{served_name(target)}" if target else model


def task_names() -> list[str]:
    """The tasks oab_bench_task.py defines, without importing lighteval."""
    return [TASK, *(f"{TASK}:{a}" for a in AREAS), *(f"{TASK}:{e}" for e in EDITIONS)]


def check_tasks(tasks: str) -> list[str]:
    """`--tasks` names (lighteval's `|0` suffix allowed): an unknown one, or two sharing questions
    (they would be generated, judged and counted twice), fail now."""
    names = [t.split("|")[0].strip() for t in tasks.split(",") if t.strip()]
    unknown = [n for n in names if n not in task_names()]
    if unknown or not names:
        valid = ", ".join(task_names())
        raise ValueError(f"unknown task {', '.join(unknown) or repr(tasks)}; valid tasks: {valid}")
    for a, b in itertools.combinations(names, 2):
        what_a, what_b = a.partition(":")[2], b.partition(":")[2]
        if a == b or not what_a or not what_b or what_a.isdigit() != what_b.isdigit():
            raise ValueError(
                f"tasks {a} and {b} overlap: their common questions would be generated, judged and "
                "counted twice; give tasks with no question in common (one area or edition each), "
                "or run them with separate --output-dir"
            )
    return names


def selected_rows(s: RunSettings, sampled: bool = True) -> list:
    """The rows the run's tasks ask for; `sampled`: with --max-samples, those lighteval evaluates (per
    task, its rows shuffled with lighteval's seed, the first N: LightevalTask.get_docs)."""
    from oab_bench.judge.dataset import load_rows

    rows = load_rows(s.dataset, origin=s.dataset_origin)
    chosen: set[str] = set()
    for name in s.tasks:
        what = name.partition(":")[2]
        mine = [r.question_id for r in rows if not what or what in (r.area, str(r.edition))]
        if sampled and s.max_samples:
            random.Random(42).shuffle(mine)
            mine = mine[: s.max_samples]
        chosen.update(mine)
    return [r for r in rows if r.question_id in chosen]
