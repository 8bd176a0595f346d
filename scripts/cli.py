"""`oab-bench`: build and publish the dataset, judge answers, run lighteval, report.

Each subcommand parses its flags and calls one function of the packages; imports are
lazy so `oab-bench build` does not pay for litellm or lighteval.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def _build(args: argparse.Namespace) -> int:
    from dataset_builder.build import build_rows
    from dataset_builder.errata import DEFAULT_ERRATA
    from dataset_builder.publish import write_dataset

    source = args.source if args.source.startswith("hf:") else Path(args.source)
    rows, report = build_rows(source, Path(args.errata) if args.errata else DEFAULT_ERRATA)
    out = write_dataset(rows, report, Path(args.output), overwrite=args.overwrite)
    for line in report.lines():
        print(line)
    print(f"wrote {out}")
    return 0


def _push(args: argparse.Namespace) -> int:
    from dataset_builder.publish import push_dataset

    url = push_dataset(Path(args.dataset), args.repo_id, private=args.private, revision=args.revision)
    print(f"pushed {args.dataset} to {args.repo_id}: {url}")
    return 0


def _judge(args: argparse.Namespace) -> int:
    from judge.command import run_judge_command

    return run_judge_command(args)


def _probe(args: argparse.Namespace) -> int:
    from judge.validity.probe import run_probe_command

    return run_probe_command(args)


def _run(args: argparse.Namespace) -> int:
    from scripts.run import run

    return run(args)


def _records(args: argparse.Namespace):
    """Every input's records with the facts to check them against, and notes (skipped inputs...)."""
    from judge.report.inputs import read_inputs

    inputs = read_inputs(args.inputs, args.dataset)
    if getattr(args, "members", False):  # a jury's members, each as its own judge
        from judge.validity.jury_report import member_records_of

        for path in args.inputs:
            inputs.records += member_records_of(Path(path))
    for note in inputs.notes:
        print(f"oab-bench {args.command}: note: {note}", file=sys.stderr)
    return inputs


def _leaderboard(args: argparse.Namespace) -> int:
    from judge.output import check_output, write_atomic
    from judge.report import render
    from judge.report import tables as lb

    for flag, path in (("--output", args.output), ("--plot", args.plot)):
        if path:
            check_output(Path(path), flag)
    got = _records(args)
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
        from judge.report.plot import plot_png_bytes

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


def _compare(args: argparse.Namespace) -> int:
    from judge.report import render
    from judge.report import tables as lb

    got = _records(args)
    tables, _ = lb.build_tables(
        got.records, expected_ids=got.expected, truth=got.truth, resamples=args.resamples, seed=args.seed
    )
    comparisons = lb.compare(tables, args.model_a, args.model_b, resamples=args.resamples, seed=args.seed)
    if not comparisons:
        raise ValueError(f"no judge graded both {args.model_a!r} and {args.model_b!r}")
    sys.stdout.write(render.render_comparisons(comparisons))
    return 0


def _report(args: argparse.Namespace) -> int:
    from judge.audit.write import write_report

    path = write_report(
        [Path(p) for p in args.inputs],
        Path(args.output),
        answers=[Path(p) for p in args.answers or []],
        dataset=args.dataset,
        resamples=args.resamples,
        seed=args.seed,
    )
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from judge.validity.command import run_agreement

    return run_agreement(args)


def _export(args: argparse.Namespace) -> int:
    from judge.sharing.command import run_export

    return run_export(args)


def _push_results(args: argparse.Namespace) -> int:
    from judge.sharing.command import run_push_results

    return run_push_results(args)


def _report_args(p: argparse.ArgumentParser) -> None:
    from judge.validity.command import whole

    p.add_argument(
        "--dataset",
        help="dataset folder or Hub id: the questions expected (default: those seen in the inputs)",
    )
    p.add_argument("--resamples", type=whole(1), default=10_000, help="bootstrap resamples of whole exams")
    p.add_argument("--seed", type=whole(0), default=0)


def build_parser() -> argparse.ArgumentParser:
    from judge import settings as judge_settings
    from judge.estimate.flags import add_estimate_arguments

    parser = argparse.ArgumentParser(prog="oab-bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="upstream files -> validated Hub-style dataset folder")
    p.add_argument(
        "--source",
        required=True,
        help="upstream data folder (question.jsonl, reference_answer/) or a clone of its repository, or its Hub dataset: "
        "hf:OWNER/NAME[@REVISION] (e.g. hf:maritaca-ai/oab-bench) or hf:/abs/folder in that layout",
    )
    p.add_argument("--output", required=True, help="dataset folder to write (parquet under data/, README.md)")
    p.add_argument("--errata", help="errata file (default: the checked-in dataset_builder/errata.yaml)")
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    p.set_defaults(func=_build)

    p = sub.add_parser(
        "push",
        help="publish a built dataset folder to the Hugging Face Hub (configs: default, edition_39, ...)",
    )
    p.add_argument("--dataset", required=True, help="folder written by `oab-bench build`")
    p.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.set_defaults(func=_push)

    p = sub.add_parser("judge", help="grade answers against each question's rubric")
    p.add_argument("--dataset", required=True, help="folder made by `oab-bench build`, or a Hub id")
    p.add_argument(
        "--answers", required=True, nargs="+", help="FastChat answer files (.jsonl) or lighteval details"
    )
    p.add_argument("--cache", help="judgment cache folder (default ~/.cache/oab-bench/judge)")
    p.add_argument("--no-cache", action="store_true", help="judge again even what the cache holds")
    p.add_argument("--output", required=True, help="judgments JSONL to write")
    p.add_argument("--questions", nargs="+", help="only these question or exam ids (glob patterns)")
    p.add_argument("--no-progress", action="store_true")
    judge_settings.add_arguments(p)
    add_estimate_arguments(p)
    p.set_defaults(func=_judge)

    from judge.validity import probe

    p = sub.add_parser(
        "probe", help="does the judge fail a failing answer? answers of known worth from the dataset"
    )
    probe.add_arguments(p)
    p.set_defaults(func=_probe)

    from scripts.run import add_arguments

    p = sub.add_parser("run", help="generate with lighteval (litellm backend), judge, score")
    add_arguments(p)
    p.set_defaults(func=_run)

    p = sub.add_parser(
        "leaderboard", help="exam scores, pass rates, intervals, per area and edition, per judge"
    )
    p.add_argument(
        "inputs", nargs="+", help="our judgment files, lighteval output folders, upstream judgment files"
    )
    p.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    p.add_argument("--output", help="write the table here instead of stdout")
    p.add_argument("--plot", help="also draw a PNG: scores with 95%% intervals and a model x area heatmap")
    p.add_argument("--by", choices=["area", "edition"], help="add a breakdown table (markdown)")
    p.add_argument("--members", action="store_true", help="a jury's members too, each as its own judge")
    _report_args(p)
    p.set_defaults(func=_leaderboard)

    p = sub.add_parser("compare", help="paired comparison of two models over the exams both completed")
    p.add_argument("model_a")
    p.add_argument("model_b")
    p.add_argument("inputs", nargs="+")
    _report_args(p)
    p.set_defaults(func=_compare)

    p = sub.add_parser("report", help="one self-contained HTML file: leaderboard down to each rubric item")
    p.add_argument(
        "inputs",
        nargs="+",
        help="judgment files, run/lighteval output folders, upstream judgment files, FastChat answer files",
    )
    p.add_argument("--answers", nargs="+", help="more answer files (FastChat JSONL or lighteval details)")
    p.add_argument("--output", required=True, help="HTML file to write")
    _report_args(p)
    p.set_defaults(func=_report)

    from judge.validity.command import add_arguments as agreement_arguments

    p = sub.add_parser("agreement", help="is the judge right? agreement between judges, repeats, humans")
    agreement_arguments(p)
    p.set_defaults(func=_agreement)

    from judge.sharing.command import add_export_arguments, add_push_arguments

    p = sub.add_parser(
        "export", help="judged results -> a Hub dataset folder (parquet, a config per judge, a card)"
    )
    add_export_arguments(p)
    _report_args(p)
    p.set_defaults(func=_export)

    p = sub.add_parser("push-results", help="export judged results and upload them to a Hub dataset")
    add_push_arguments(p)
    _report_args(p)
    p.set_defaults(func=_push_results)

    return parser


INPUT_ARGS = ("inputs", "sources", "answers", "repeats", "source", "dataset")  # what a command reads


OUTPUT_ARGS = ("output", "plot")  # what a command writes


def check_output_is_not_an_input(args: argparse.Namespace) -> None:
    """`--output` (or `--plot`) never replaces what the same command reads, nor a folder holding
    it: a typo must not turn an answers file into a judgments file."""
    from judge.sharing.source import local_path

    for flag in OUTPUT_ARGS:
        output = getattr(args, flag, None)
        if not output:
            continue
        out = Path(output).resolve()
        for name in INPUT_ARGS:
            given = getattr(args, name, None)
            for path in given if isinstance(given, list) else [given]:
                if not isinstance(path, str):
                    continue
                src = local_path(path) or Path(path)  # hf:/abs/folder: that folder
                if not src.exists():
                    continue
                src = src.resolve()
                if out == src or out in src.parents:
                    raise ValueError(f"--{flag} {output} would overwrite the input {path}: write elsewhere")


JUDGING_COMMANDS = {"judge", "run", "probe"}  # a stop keeps what they judged (judge/runner.py)


def main(argv: list[str] | None = None) -> int:
    from dataset_builder.errors import BuildError, SourceError
    from judge.loop import Stopped
    from judge.redact import redact
    from scripts.processes import stop_signals
    from scripts.vllm_server import ServerError

    args = build_parser().parse_args(argv)
    try:
        with stop_signals((signal.SIGTERM, signal.SIGHUP)):  # as Ctrl-C, from the first moment
            check_output_is_not_an_input(args)
            return args.func(args)
    except (SourceError, BuildError, OSError, ValueError, ServerError) as e:
        for line in redact(str(e)).splitlines():
            print(f"oab-bench {args.command}: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM, SIGHUP (Stopped): one line, never a traceback
        signame = e.signame if isinstance(e, Stopped) else "SIGINT"
        stored = (
            ": the judgments made are stored; run the same command again to continue"
            if args.command in JUDGING_COMMANDS
            else ""
        )
        print(f"oab-bench {args.command}: stopped by {signame}{stored}", file=sys.stderr)
        return 128 + {"SIGINT": 2, "SIGHUP": 1}.get(signame, 15)


if __name__ == "__main__":
    sys.exit(main())
