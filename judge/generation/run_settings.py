"""What `oab-bench run`'s arguments mean: the candidate's model config, the judge's settings, the
caches, the questions the tasks select, and the environment the lighteval child runs in.

Every step of a run (checks, estimate, child, summary) reads its arguments through these, so a
flag, its `OAB_*` variable and its default mean the same thing everywhere.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE
from oab_bench.dataset_builder.schema import dataset_source
from oab_bench.judge.dataset import dataset_argument
from oab_bench.judge.generation.places import READ_ONLY_ENV
from oab_bench.judge.generation.preflight import check_tasks
from oab_bench.judge.generation.vllm_server import served_name, vllm_target
from oab_bench.judge.settings import JudgeSettings, member_settings, settings_env, settings_from

DEFAULT_JUDGE = "openai/gpt-5.2"


def model_config(args: argparse.Namespace, cache_dir: Path) -> dict:
    params: dict = {
        "model_name": args.model,
        "max_model_length": args.max_model_length,
        "concurrent_requests": args.concurrency,
        "cache_dir": str(cache_dir),
        "api_max_retry": args.candidate_retries,
        "api_retry_sleep": args.candidate_retry_sleep,
        "timeout": args.candidate_timeout,
        "generation_parameters": {"temperature": args.temperature}
        | ({"seed": args.seed} if args.seed is not None else {}),
    }
    if args.api_base:
        params["base_url"] = args.api_base
    return {"model_parameters": params}  # never an api_key: lighteval copies it into the results JSON


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """Flags over OAB_JUDGE_* over defaults; the judge defaults to upstream's recommended GPT-5.2."""
    settings = settings_from(args, os.environ, prefix="judge-", defaults={"judge_model": DEFAULT_JUDGE})
    members = member_settings(settings)
    if len(members) > 1 and any(vllm_target(m.judge_model) for m in members):
        raise ValueError(
            "a jury member cannot be vllm:...: start its server yourself (python -m "
            "vllm.entrypoints.openai.api_server) and name it openai/<served name> with --judge-api-base"
        )
    return settings


def child_env(args: argparse.Namespace, out: Path, settings: JudgeSettings | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["OAB_BENCH_DATASET"] = dataset_source(args.dataset or dataset_argument(args)[0])  # resolved by run()
    if Path(env["OAB_BENCH_DATASET"]).is_absolute():  # a local folder: nothing to fetch
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["OAB_BENCH_GENERATION_SIZE"] = str(args.max_new_tokens)
    env["OAB_CANDIDATE_MODEL"] = args.model
    env["OAB_JUDGE_OUTPUT"] = str(out / JUDGMENTS_FILE)
    for var, value in settings_env(settings or judge_settings(args)).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value
    judges = judge_cache(args)
    env["OAB_JUDGE_CACHE"] = str(judges) if judges else "off"  # absolute: lighteval runs in `out`
    answers = answer_cache(args)
    env["OAB_ANSWER_CACHE"] = str(answers) if answers else "off"
    env.pop("OAB_FRESH_ANSWERS", None)
    if getattr(args, "fresh_answers", False):
        env["OAB_FRESH_ANSWERS"] = "1"
    env.pop(READ_ONLY_ENV, None)
    if getattr(args, "read_only_caches", False):  # a read-only cache the run goes on with: serve it
        env[READ_ONLY_ENV] = "1"
    if args.api_base and args.model.startswith("openai/") and not env.get("OPENAI_API_KEY"):
        env["OPENAI_API_KEY"] = "EMPTY"  # local OpenAI-compatible servers (vLLM) take any key
    return env


def answer_cache(args: argparse.Namespace) -> Path | None:
    from oab_bench.judge.generation.answer_store import CACHE_ENV, default_cache_dir

    where = getattr(args, "answer_cache", None) or os.environ.get(CACHE_ENV)
    if where and where.lower() == "off":
        return None
    return Path(where).expanduser().resolve() if where else default_cache_dir()


def judge_cache(args: argparse.Namespace) -> Path | None:
    from oab_bench.judge.grading.judgment_store import default_cache_dir

    where = args.judge_cache if args.judge_cache is not None else os.environ.get("OAB_JUDGE_CACHE")
    if where and where.lower() == "off":
        return None
    return Path(where).expanduser().resolve() if where else default_cache_dir()


def litellm_name(model: str) -> str:
    """The name litellm gets: `vllm:X` becomes `openai/<served name>` (its server's)."""
    target = vllm_target(model)
    return f"openai/{served_name(target)}" if target else model


def selected_rows(dataset: str, tasks: str, max_samples: int | None = None) -> list:
    """The dataset rows `tasks` ask for (names checked by check_tasks), as the task file selects them;
    with `max_samples` (--max-samples), those lighteval evaluates: per task, its rows shuffled with
    lighteval's seed, the first N (LightevalTask.get_docs)."""
    import random

    from oab_bench.judge.dataset import load_rows

    rows = load_rows(dataset)
    chosen: set[str] = set()
    for name in check_tasks(tasks):
        what = name.partition(":")[2]
        mine = [r.question_id for r in rows if not what or what == r.area or what == str(r.edition)]
        if max_samples:
            random.Random(42).shuffle(mine)
            mine = mine[:max_samples]
        chosen.update(mine)
    return [r for r in rows if r.question_id in chosen]


def candidate_prompts(dataset: str, tasks: str) -> list[tuple[str, list[dict]]]:
    """(question id, messages) the task will send for `tasks`, as lighteval builds them."""
    from oab_bench.judge.generation.task_prompt import candidate_messages

    return [(row.question_id, candidate_messages(row)) for row in selected_rows(dataset, tasks)]
