"""The judge as the lighteval task uses it: the run's, or under the plain lighteval CLI one from
OAB_JUDGE_MODEL, OAB_JUDGE_<SETTING> and OAB_JUDGE_CACHE (a folder, or "off"), checked before any
answer is generated. No lighteval import here: the task file wires this in."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.dataset import knob
from oab_bench.judge.grading.client import API_KEY_ENV, api_key, missing_keys
from oab_bench.judge.grading.judgment_store import JudgmentStore, StoreError, check_folder, default_cache_dir
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import run_judge_all
from oab_bench.judge.records import Judgment
from oab_bench.judge.settings import JudgeSettings, env_var, member_settings, settings_from
from oab_bench.keyed_store import READ_ONLY_ENV, NotWritable, env_access


class JudgeNotConfigured(RuntimeError):
    pass


def settings_from_env(env: Mapping[str, str] = os.environ) -> JudgeSettings:
    if not env.get(env_var("judge_model"), "").strip():
        raise JudgeNotConfigured(
            "OAB_JUDGE_MODEL is not set: the oab_bench task needs a judge, e.g. OAB_JUDGE_MODEL=openai/gpt-5.2 "
            "(and OAB_JUDGE_API_BASE for a local OpenAI-compatible server)"
        )
    return settings_from(None, env)


def missing_judge_keys(settings: JudgeSettings, base: str) -> list[str]:
    """What each judge (each member of a jury) lacks: a key, or a local server (`base`: where to give one)."""
    problems = []
    for member in member_settings(settings):
        if member.api_base or api_key() or member.judge_model.startswith("vllm:"):
            continue
        if missing := missing_keys(member.judge_model):
            problems.append(
                f"the judge {member.judge_model} needs {API_KEY_ENV} or {' or '.join(missing)} "
                f"(or {base} for a local server)"
            )
    return problems


def _cache_folder(env: Mapping[str, str]) -> Path | None:
    where = env.get("OAB_JUDGE_CACHE")
    return default_cache_dir() if not where else None if where.lower() == "off" else Path(where)


def check_env(env: Mapping[str, str] = os.environ, entry: str = "lighteval") -> None:
    """The plain CLI's judge (`env`: OAB_JUDGE_*): its settings, key and cache, checked before any
    answer is generated."""
    if problems := missing_judge_keys(settings_from_env(env), knob("judge_api_base", entry)):
        raise JudgeNotConfigured("no API key: " + "; ".join(problems))
    try:
        if (folder := _cache_folder(env)) is not None:
            check_folder(folder, write=env_access() == "write")
    except NotWritable as e:
        raise NotWritable(
            f"OAB_JUDGE_CACHE: {e} (or {READ_ONLY_ENV}=1 to judge without keeping new judgments)"
        ) from None
    except StoreError as e:
        raise StoreError(f"OAB_JUDGE_CACHE: {e}") from None


def judge_from_env(env: Mapping[str, str] = os.environ):
    return make_judge(settings_from_env(env), JudgmentStore(_cache_folder(env), access=env_access()))


def judge_answers(
    judge, rows: list[QuestionRow], texts: list[str], candidate: str, stopping: threading.Event
) -> list[Judgment]:
    """Every answer graded, until `stopping` is set (runner.run_judge_all)."""
    pairs = [
        (r, Answer(model=candidate, question_id=r.question_id, turns=[t]))
        for r, t in zip(rows, texts, strict=True)
    ]
    return run_judge_all(judge, pairs, stopping=stopping)
