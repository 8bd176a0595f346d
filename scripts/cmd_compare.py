"""`oab-bench compare`: paired comparison of two models over the exams both completed."""

from __future__ import annotations

import argparse
import sys

from oab_bench.scripts.arguments import add_inputs, add_report_arguments

HELP = "paired comparison of two models over the exams both completed"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.leaderboard import tables as lb
    from oab_bench.judge.leaderboard.inputs import read_for_command

    got = read_for_command(args.command, args.inputs, args.dataset)
    options = {"resamples": args.resamples, "seed": args.seed}
    tables, _ = lb.build_tables(got.records, expected_ids=got.expected, truth=got.truth, **options)
    lines = lb.compare(tables, args.model_a, args.model_b, **options)
    if not lines:
        raise ValueError(f"no judge graded both {args.model_a!r} and {args.model_b!r}")
    sys.stdout.write("".join(lines))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_a")
    p.add_argument("model_b")
    add_inputs(p, "what the leaderboard reads")
    add_report_arguments(p)
