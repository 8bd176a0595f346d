"""The judge as the lighteval task uses it: configured from the environment, one batch per task.

Variables: OAB_JUDGE_MODEL (required), OAB_JUDGE_API_BASE, OAB_JUDGE_API_KEY (else the
provider's usual variable), OAB_JUDGE_MODE, OAB_JUDGE_CONCURRENCY, OAB_JUDGE_CACHE
(folder, or "off"), OAB_JUDGE_PROMPT, OAB_JUDGE_UPSTREAM_PROMPTS, OAB_JUDGE_MAX_TOKENS,
OAB_JUDGE_REASONING_EFFORT, OAB_JUDGE_TIMEOUT; OAB_JUDGE_OUTPUT (append our judgment
records there) and OAB_CANDIDATE_MODEL (the name recorded in them), set by `oab-bench run`.
No lighteval import here: the task file wires this in.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from dataset_builder.schema import QuestionRow

from .answers import Answer
from .models import JudgeSettings, Judgment
from .runner import Judge, dump_jsonl, run_judge_all
from .store import JudgmentStore, default_cache_dir


class JudgeNotConfigured(RuntimeError):
    pass


def settings_from_env() -> JudgeSettings:
    env = os.environ
    model = env.get("OAB_JUDGE_MODEL")
    if not model:
        raise JudgeNotConfigured(
            "OAB_JUDGE_MODEL is not set: the oab_bench task needs a judge, e.g. OAB_JUDGE_MODEL=openai/gpt-5.2 "
            "(and OAB_JUDGE_API_BASE for a local OpenAI-compatible server)"
        )
    fields: dict = {"judge_model": model}
    for var, field, cast in (
        ("OAB_JUDGE_API_BASE", "api_base", str),
        ("OAB_JUDGE_MODE", "mode", str),
        ("OAB_JUDGE_CONCURRENCY", "concurrency", int),
        ("OAB_JUDGE_PROMPT", "prompt", str),
        ("OAB_JUDGE_UPSTREAM_PROMPTS", "upstream_prompts", str),
        ("OAB_JUDGE_MAX_TOKENS", "max_tokens", int),
        ("OAB_JUDGE_REASONING_EFFORT", "reasoning_effort", str),
        ("OAB_JUDGE_TIMEOUT", "timeout", float),
    ):
        if env.get(var):
            fields[field] = cast(env[var])
    return JudgeSettings(**fields)


def store_from_env() -> JudgmentStore:
    where = os.environ.get("OAB_JUDGE_CACHE")
    if where and where.lower() == "off":
        return JudgmentStore(None)
    return JudgmentStore(Path(where) if where else default_cache_dir())


def _append(path: Path, judgments: list[Judgment]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(dump_jsonl(judgments))


def sample_value(j: Judgment) -> dict:
    """What lighteval keeps per question (details) and aggregates (corpus figures)."""
    return {
        "question_id": j.question_id,
        "exam_id": j.exam_id,
        "status": j.status,
        "score": j.score,
        "max_score": j.max_score,
        "items": [i.model_dump() for i in j.items],
        "judge_text": j.judge_text,
        "error": j.error,
        "cost_usd": None if j.cached else j.cost_usd,
        "judge_model": j.judge_model,
        "prompt_version": j.prompt_version,
        "mode": j.mode,
        "cached": j.cached,
    }


def judge_responses(rows: list[QuestionRow], answers: list[str]) -> list[dict]:
    judge = Judge(settings_from_env(), store_from_env())
    model = os.environ.get("OAB_CANDIDATE_MODEL", "candidate")
    pairs = [
        (row, Answer(model=model, question_id=row.question_id, turns=[text]))
        for row, text in zip(rows, answers, strict=True)
    ]
    judgments = run_judge_all(judge, pairs)
    if os.environ.get("OAB_JUDGE_OUTPUT"):
        _append(Path(os.environ["OAB_JUDGE_OUTPUT"]), judgments)
    return [sample_value(j) for j in judgments]
