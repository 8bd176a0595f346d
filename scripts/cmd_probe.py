"""`oab-bench probe`: does the judge fail a failing answer? (judge/validity/probe.py)"""

from __future__ import annotations

import argparse

from oab_bench.judge import settings as judge_settings
from oab_bench.judge.intervals import LEADERBOARD_RESAMPLES
from oab_bench.judge.validity.probes import DEFAULT_SEED
from oab_bench.scripts.arguments import add_probe_arguments, whole

HELP = "does the judge fail a failing answer? answers of known worth from the dataset"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.validity.probe import run_probe_command

    return run_probe_command(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder made by `oab-bench build`, or a Hub id")
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    add_probe_arguments(p)
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print calls, tokens and cost of the probe judgments still to make (direct and batch), call nothing",
    )
    p.add_argument(
        "--output", help="folder for the probe answers and judgments (default runs/probe_<judge model>)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 unless the verdict is `discriminates` (`does not discriminate`, `incomplete`)",
    )
    p.add_argument("--cache", help="judgment cache folder (default ~/.cache/oab-bench/judge)")
    p.add_argument("--no-cache", action="store_true", help="judge again even what the cache holds")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--no-check-call",
        action="store_true",
        help="skip the minimal real call (1 output token; 16 for reasoning models) to the judge",
    )
    p.add_argument(
        "--seed", type=whole(0), default=DEFAULT_SEED, help="choice of swapped answers and bootstrap"
    )
    p.add_argument(
        "--resamples", type=whole(1), default=LEADERBOARD_RESAMPLES, help="bootstrap resamples of whole exams"
    )
    judge_settings.add_arguments(p)
