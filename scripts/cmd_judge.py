"""`oab-bench judge`: grade answer files against each question's rubric (judge/grading/judge_answers.py)."""

from __future__ import annotations

import argparse

from oab_bench.judge import settings as judge_settings
from oab_bench.judge.panel.published import add_panel_argument
from oab_bench.scripts.arguments import SHARED_RESULTS_HELP, add_cache_arguments

HELP = "grade answers against each question's rubric"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.grading.judge_answers import run_judge_command
    from oab_bench.judge.validity.jury_report import jury_lines

    beside = None
    if args.panel:  # published answers judged beside the candidates (judge/panel/)
        from oab_bench.judge.panel.judging import judge_command_share

        beside = judge_command_share(args.panel)
    return run_judge_command(args, jury_lines, beside)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder made by `oab-bench build`, or a Hub id")
    p.add_argument(
        "--answers",
        required=True,
        nargs="+",
        help="FastChat answer files (.jsonl), lighteval details, or " + SHARED_RESULTS_HELP,
    )
    p.add_argument("--output", required=True, help="judgments JSONL to write")
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    add_cache_arguments(p)
    judge_settings.add_arguments(p)
    judge_settings.add_estimate_arguments(p)
    add_panel_argument(p)
