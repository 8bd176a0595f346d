"""`oab-bench agreement`: read the sources, compare them, write the report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oab_bench.judge.intervals import AGREEMENT_RESAMPLES
from oab_bench.scripts.arguments import SHARED_RESULTS_HELP, whole

HELP = "is the judge right? agreement between judges, repeats, humans"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.validity import agreement
    from oab_bench.judge.validity.sources import load_source, shared_judges, source_names

    if args.repeats and args.sources:
        raise ValueError("--repeats takes one run and no other sources")
    from oab_bench.judge.dataset import load_rows

    dataset = {r.question_id: r for r in load_rows(args.dataset)} if args.dataset else {}
    if args.repeats:
        from oab_bench.judge.validity.repeatability import read_repeated, render_repeats, repeats_report

        records = read_repeated(Path(args.repeats), dataset)
        report = repeats_report(records, resamples=args.resamples, seed=args.seed, dataset=dataset)
        render = render_repeats
    else:
        paths = shared_judges(args.sources) or args.sources  # a shared dataset of several judges: each
        if len(paths) == 1:  # one jury's file: its members compared with each other
            from oab_bench.judge.validity.jury_report import jury_file_sources

            sources = jury_file_sources(Path(paths[0]))
        elif not paths:
            raise ValueError(
                "give two sources or more (the same file may be given twice), or one jury's file"
            )
        else:
            sources = [
                load_source(n, p, dataset) for n, p in zip(source_names(len(paths)), paths, strict=True)
            ]
        report = agreement.compare_all(sources, dataset, resamples=args.resamples, seed=args.seed)
        render = agreement.render_text
    text = agreement.render_json(report) if args.format == "json" else render(report)
    if args.output:
        from oab_bench.judge.output import write_atomic

        write_atomic(Path(args.output), text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "sources",
        nargs="*",
        help="judgment files, run output folders, upstream *_single.jsonl, "
        + SHARED_RESULTS_HELP
        + ", or human grading CSVs "
        "(exam_id,question_id,item_id,score,grader[,model]); named A, B, C... by position",
    )
    p.add_argument("--dataset", help="dataset folder or Hub id: exams' questions and items' score grids")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--output", help="write the report here instead of stdout")
    p.add_argument(
        "--resamples", type=whole(1), default=AGREEMENT_RESAMPLES, help="bootstrap resamples of whole exams"
    )
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument(
        "--repeats",
        metavar="RUN",
        help="a judgments file (or run folder) made with --repeats K: the judge's run-to-run noise",
    )
