"""`oab-bench run`: generate with lighteval's litellm backend, judge, score, print the leaderboard row.

lighteval 0.13 has sharp edges (../shared/notes/lighteval-0.13.md): its response cache
is keyed by model and task only and replays failed calls as empty answers, and a run
whose calls all failed still exits 0. So each run gets a fresh lighteval cache, and this
command exits non-zero, naming the questions, when an answer is empty or a judgment failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from dataset_builder.schema import dataset_source
from dataset_builder.source import read_objects
from judge.aggregate import QuestionResult, task_figures
from judge.lighteval_compat import ensure_offline_safe
from judge.settings import JudgeSettings, settings_env, settings_from
from judge.settings import add_arguments as add_judge_arguments

JUDGMENTS_FILE = "judgments.jsonl"
SUMMARY_FILE = "oab_bench_summary.json"
DEFAULT_JUDGE = "openai/gpt-5.2"


def task_file() -> str:
    spec = importlib.util.find_spec("oab_bench_task")
    if spec is None or not spec.origin:
        raise FileNotFoundError("oab_bench_task.py is not importable: install the project (pip install -e .)")
    return spec.origin


def task_spec(tasks: str) -> str:
    return ",".join(t if "|" in t else f"{t}|0" for t in (x.strip() for x in tasks.split(",")) if t)


def model_config(args: argparse.Namespace, cache_dir: Path) -> dict:
    params: dict = {
        "model_name": args.model,
        "max_model_length": args.max_model_length,
        "concurrent_requests": args.concurrency,
        "cache_dir": str(cache_dir),
        "api_max_retry": args.candidate_retries,
        "api_retry_sleep": args.candidate_retry_sleep,
        "timeout": args.candidate_timeout,
        "generation_parameters": {"temperature": args.temperature},
    }
    if args.api_base:
        params["base_url"] = args.api_base
    return {"model_parameters": params}  # never an api_key: lighteval copies it into the results JSON


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """Flags over OAB_JUDGE_* over defaults; the judge defaults to upstream's recommended GPT-5.2."""
    return settings_from(args, os.environ, prefix="judge-", defaults={"judge_model": DEFAULT_JUDGE})


def child_env(args: argparse.Namespace, out: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["OAB_BENCH_DATASET"] = dataset_source(args.dataset)
    if Path(env["OAB_BENCH_DATASET"]).is_absolute():  # a local folder: nothing to fetch
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["OAB_BENCH_GENERATION_SIZE"] = str(args.max_new_tokens)
    env["OAB_CANDIDATE_MODEL"] = args.model
    env["OAB_JUDGE_OUTPUT"] = str(out / JUDGMENTS_FILE)
    for var, value in settings_env(judge_settings(args)).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value
    if args.judge_cache is not None:
        env["OAB_JUDGE_CACHE"] = args.judge_cache
    if args.api_base and args.model.startswith("openai/") and not env.get("OPENAI_API_KEY"):
        env["OPENAI_API_KEY"] = "EMPTY"  # local OpenAI-compatible servers (vLLM) take any key
    return env


def newest_results(out: Path, since: float) -> Path | None:
    """This run's results JSON: an older run's, left in the same folder, must not stand in for it."""
    files = sorted(
        (p for p in (out / "results").rglob("results_*.json") if p.stat().st_mtime >= since),
        key=lambda p: p.stat().st_mtime,
    )
    return files[-1] if files else None


def read_judgments(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [r for _, r in read_objects(path)]


def leaderboard(out: Path) -> str:
    """The run's row, as `oab-bench leaderboard` prints it (with its 95% interval)."""
    from judge.report.inputs import load_records
    from judge.report.render import render_markdown
    from judge.report.tables import build_tables

    tables, notes = build_tables(load_records(out / JUDGMENTS_FILE))
    return render_markdown(tables, notes)


def run(args: argparse.Namespace) -> int:
    settings = judge_settings(args)  # a bad setting fails here, before any generation
    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / JUDGMENTS_FILE).unlink(missing_ok=True)
    started = time.time()
    ensure_offline_safe()
    cache_dir = Path(tempfile.mkdtemp(prefix=".lighteval-cache-", dir=out))  # fresh: no replayed failures
    config = out / "model_config.yaml"
    config.write_text(yaml.safe_dump(model_config(args, cache_dir), sort_keys=False), encoding="utf-8")
    cmd = [sys.executable, "-m", "lighteval", "endpoint", "litellm", str(config), task_spec(args.tasks)]
    cmd += ["--custom-tasks", task_file(), "--output-dir", str(out), "--save-details"]
    if args.max_samples:
        cmd += ["--max-samples", str(args.max_samples)]
    print("running:", " ".join(cmd), file=sys.stderr)
    try:
        proc = subprocess.run(cmd, env=child_env(args, out))
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)

    judgments = read_judgments(out / JUDGMENTS_FILE)
    results = newest_results(out, started)
    if proc.returncode != 0 or results is None or not judgments:
        print(
            f"oab-bench run: error: lighteval exited {proc.returncode}; no results or judgments in {out}",
            file=sys.stderr,
        )
        return proc.returncode or 1

    figures = task_figures([QuestionResult.model_validate(j) for j in judgments])
    empty = [j["question_id"] for j in judgments if j["status"] == "no_answer"]
    failed = [
        f"{j['question_id']} ({j['status']}: {j.get('error') or ''})"
        for j in judgments
        if j["status"] not in ("ok", "no_answer")
    ]
    summary = {
        "model": args.model,
        "judge_model": settings.judge_model,
        "results": str(results),
        "figures": figures,
        "empty_answers": empty,
        "failed_judgments": failed,
    }
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(leaderboard(out))
    print(f"results: {results}\njudgments: {out / JUDGMENTS_FILE}", file=sys.stderr)
    if empty or failed:
        if empty:
            print(
                f"oab-bench run: {len(empty)} empty answers (failed generations?): {', '.join(empty)}",
                file=sys.stderr,
            )
        if failed:
            print(f"oab-bench run: {len(failed)} failed judgments: {'; '.join(failed)}", file=sys.stderr)
        print("oab-bench run: the exams of these questions have no score (see coverage)", file=sys.stderr)
        return 1
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        required=True,
        help="candidate, as litellm names it: openai/gpt-4o, anthropic/..., openai/<served name> with --api-base",
    )
    p.add_argument(
        "--api-base", help="candidate's OpenAI-compatible server (e.g. vLLM: http://127.0.0.1:8000/v1)"
    )
    p.add_argument(
        "--dataset",
        default=os.environ.get("OAB_BENCH_DATASET", "oab-bench/oab-bench"),
        help="folder made by `oab-bench build`, or a Hub id",
    )
    p.add_argument(
        "--tasks", default="oab_bench", help="comma-separated: oab_bench, oab_bench:penal, oab_bench:41, ..."
    )
    p.add_argument("--output-dir", required=True)
    p.add_argument("--judge-cache", help="judgment cache folder, or 'off'")
    p.add_argument("--concurrency", type=int, default=10, help="candidate requests at a time")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="candidate sampling temperature (upstream's paper: 0.7)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=8192,
        help="answer length (lighteval gives reasoning models 10x, capped)",
    )
    p.add_argument("--max-model-length", type=int, default=32768, help="candidate context length")
    p.add_argument(
        "--max-samples", type=int, help="lighteval's --max-samples (partial exams get no exam score)"
    )
    p.add_argument("--candidate-retries", type=int, default=8)
    p.add_argument("--candidate-retry-sleep", type=float, default=1.0)
    p.add_argument("--candidate-timeout", type=float, default=900.0, help="seconds per candidate call")
    add_judge_arguments(p, prefix="judge-")
