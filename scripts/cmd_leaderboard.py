"""`oab-bench leaderboard`: exam scores, pass rates and intervals, per judge (judge/leaderboard/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oab_bench.scripts.arguments import SHARED_RESULTS_HELP, add_report_arguments

HELP = "exam scores, pass rates, intervals, per area and edition, per judge"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.leaderboard import formats as render
    from oab_bench.judge.leaderboard import tables as lb
    from oab_bench.judge.leaderboard.inputs import read_for_command
    from oab_bench.judge.output import check_output, write_atomic

    for flag, path in (("--output", args.output), ("--plot", args.plot)):
        if path:
            check_output(Path(path), flag)
    got = read_for_command(args.command, args.inputs, args.dataset)
    if args.members:  # a jury's members, each as its own judge
        from oab_bench.judge.validity.jury_report import member_records_of

        for path in args.inputs:
            got.records += member_records_of(Path(path))
    tables, notes = lb.build_tables(
        got.records, expected_ids=got.expected, truth=got.truth, resamples=args.resamples, seed=args.seed
    )
    notes += got.notes
    if args.format == "markdown":
        text = render.render_markdown(tables, notes, by=args.by)
    elif args.format == "csv":
        text = render.render_csv(tables)
    else:
        text = render.render_json(tables, notes)
    png = None
    if args.plot:  # drawn before anything is written: a failure leaves neither file
        from oab_bench.judge.leaderboard.plot import plot_png_bytes

        png = plot_png_bytes(tables)
    if args.output:
        write_atomic(Path(args.output), text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.format != "markdown":
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    if png is not None:
        print(f"wrote {write_atomic(Path(args.plot), png)}", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs",
        nargs="+",
        help="our judgment files, lighteval output folders, upstream judgment files, " + SHARED_RESULTS_HELP,
    )
    p.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    p.add_argument("--output", help="write the table here instead of stdout")
    p.add_argument("--plot", help="also draw a PNG: scores with 95%% intervals and a model x area heatmap")
    p.add_argument("--by", choices=["area", "edition"], help="add a breakdown table (markdown)")
    p.add_argument("--members", action="store_true", help="a jury's members too, each as its own judge")
    add_report_arguments(p)
