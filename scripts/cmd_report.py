"""`oab-bench report`: one self-contained HTML file, leaderboard down to each rubric item (judge/audit/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oab_bench.scripts.arguments import add_inputs, add_report_arguments

HELP = "one self-contained HTML file: leaderboard down to each rubric item"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.sweep.sweep_page import write_report_with_sweeps

    inputs, answers = [Path(p) for p in args.inputs], [Path(p) for p in args.answers or []]
    options = {"dataset": args.dataset, "resamples": args.resamples, "seed": args.seed}
    path = write_report_with_sweeps(inputs, Path(args.output), answers=answers, **options)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(
        p,
        "judgment files, run/lighteval output folders, upstream judgment files, FastChat answer files, "
        "judge-sweep folders or their sweep.json (a page each)",
    )
    p.add_argument("--answers", nargs="+", help="more answer files (FastChat JSONL or lighteval details)")
    p.add_argument("--output", required=True, help="HTML file to write")
    add_report_arguments(p)
