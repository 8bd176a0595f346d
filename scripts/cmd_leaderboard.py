"""`oab-bench leaderboard`: exam scores, pass rates and intervals, per judge (judge/leaderboard/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oab_bench.scripts.arguments import add_inputs, add_report_arguments

HELP = "exam scores, pass rates, intervals, per area and edition, per judge"


def main(args: argparse.Namespace) -> int:
    from oab_bench.conventions import PROBE_PREFIX
    from oab_bench.judge.leaderboard import tables as lb
    from oab_bench.judge.leaderboard.inputs import read_for_command
    from oab_bench.judge.output import write_atomic

    got = read_for_command(args.command, args.inputs, args.dataset)
    if args.members:  # a jury's members, each as its own judge
        from oab_bench.judge.validity.jury_report import member_records_of

        got.records += [r for path in args.inputs for r in member_records_of(Path(path))]
    probes = sorted({r.model for r in got.records if r.model.startswith(PROBE_PREFIX)})
    left_out = []
    if probes and not args.probes:  # answers of known worth are no models to rank (nor does the report)
        got.records = [r for r in got.records if not r.model.startswith(PROBE_PREFIX)]
        names = ", ".join(probes)
        if not got.records:
            raise ValueError(f"only {PROBE_PREFIX}* models in the inputs ({names}): pass --probes")
        left_out = [f"{len(probes)} {PROBE_PREFIX}* models left out ({names}): pass --probes to rank them"]
    tables, notes = lb.build_tables(
        got.records, expected_ids=got.expected, truth=got.truth, resamples=args.resamples, seed=args.seed
    )
    notes += got.notes + left_out
    if args.format == "markdown":
        text = lb.render_markdown(tables, notes, by=args.by)
    else:
        text = lb.render_csv(tables) if args.format == "csv" else lb.render_json(tables, notes)
    png = None
    if args.plot:  # drawn before anything is written: a failure leaves neither file
        from oab_bench.judge.leaderboard.plot import plot_png_bytes

        png = plot_png_bytes(tables)
    if args.output:
        write_atomic(Path(args.output), text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    for note in notes if args.format != "markdown" else []:
        print(f"note: {note}", file=sys.stderr)
    if png is not None:
        print(f"wrote {write_atomic(Path(args.plot), png)}", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_inputs(p, "our judgment files, lighteval output folders, upstream judgment files")
    p.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    p.add_argument("--output", help="write the table here instead of stdout")
    p.add_argument("--plot", help="also draw a PNG: scores with 95%% intervals and a model x area heatmap")
    p.add_argument("--by", choices=["area", "edition"], help="add a breakdown table (markdown)")
    p.add_argument("--members", action="store_true", help="a jury's members too, each as its own judge")
    p.add_argument("--probes", action="store_true", help="rank `oab-bench probe`'s probe:* answers too")
    add_report_arguments(p)
