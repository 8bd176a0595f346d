"""The judge as the lighteval task uses it, configured from the environment: OAB_JUDGE_MODEL
(required) and every other setting as OAB_JUDGE_<FIELD> (settings.py), OAB_JUDGE_API_KEY (else the
provider's variable), OAB_JUDGE_CACHE (a folder, or "off"); OAB_JUDGE_OUTPUT (our judgment records
are appended there) and OAB_CANDIDATE_MODEL (the name they record), set by `oab-bench run`.
No lighteval import here: the task file wires this in.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.judgment_store import JudgmentStore, StoreError, check_folder, default_cache_dir
from oab_bench.judge.grading.jury import make_judge
from oab_bench.judge.grading.runner import dump_jsonl, run_judge_all
from oab_bench.judge.settings import JudgeSettings, env_var, settings_from
from oab_bench.keyed_store import READ_ONLY_ENV, NotWritable, env_access


class JudgeNotConfigured(RuntimeError):
    pass


def settings_from_env() -> JudgeSettings:
    if not os.environ.get(env_var("judge_model")):
        raise JudgeNotConfigured(
            "OAB_JUDGE_MODEL is not set: the oab_bench task needs a judge, e.g. OAB_JUDGE_MODEL=openai/gpt-5.2 "
            "(and OAB_JUDGE_API_BASE for a local OpenAI-compatible server)"
        )
    return settings_from(None, os.environ)


def _cache_folder() -> Path | None:
    where = os.environ.get("OAB_JUDGE_CACHE")
    if where and where.lower() == "off":
        return None
    return Path(where) if where else default_cache_dir()


def check_store_from_env() -> None:
    """What opening the store would refuse, checked while the task loads, not after every answer
    was generated."""
    folder = _cache_folder()
    try:
        if folder is not None:
            check_folder(folder, write=env_access() == "write")
    except NotWritable as e:
        raise NotWritable(
            f"OAB_JUDGE_CACHE: {e} (or {READ_ONLY_ENV}=1 to judge without keeping new judgments)"
        ) from None
    except StoreError as e:
        raise StoreError(f"OAB_JUDGE_CACHE: {e}") from None


def judge_responses(rows: list[QuestionRow], answers: list[str]) -> list[dict]:
    judge = make_judge(settings_from_env(), JudgmentStore(_cache_folder(), access=env_access()))
    model = os.environ.get("OAB_CANDIDATE_MODEL", "candidate")
    pairs = [
        (row, Answer(model=model, question_id=row.question_id, turns=[text]))
        for row, text in zip(rows, answers, strict=True)
    ]
    judgments = run_judge_all(judge, pairs)
    if output := os.environ.get("OAB_JUDGE_OUTPUT"):
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        with Path(output).open("a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(dump_jsonl(judgments))
    return [j.sample() for j in judgments]
