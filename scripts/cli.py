"""`oab-bench`: dispatch to one module per subcommand (`scripts/cmd_<name>.py`: HELP, add_arguments,
main, importing its stage only in main), and one exit-code policy for errors and signals."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from pathlib import Path

COMMANDS = ("build", "push", "run", "judge", "probe", "leaderboard", "compare", "report", "agreement")
COMMANDS += ("judge-sweep", "export", "push-results")
INPUT_ARGS = ("inputs", "sources", "answers", "repeats", "source", "dataset", "panel")  # what a command reads
OUTPUT_ARGS = ("output", "plot")  # what a command writes
FILE_OUTPUT_COMMANDS = {"judge", "leaderboard", "report", "agreement"}  # --output is a file, else a folder
JUDGING_COMMANDS = {"judge", "run", "probe", "judge-sweep"}  # a stop keeps what they judged


class Parser(argparse.ArgumentParser):
    """A flag the subcommand does not know is its error, with its usage: argparse would give the
    top-level usage, which lists the subcommands but none of their flags."""

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.commands[parsed.command].error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    what = "build and publish the dataset, judge answers, run lighteval, report"
    parser = Parser(prog="oab-bench", description=what)
    sub = parser.add_subparsers(dest="command", required=True)
    parser.commands = sub.choices  # name -> its parser, for Parser.parse_args
    for name in COMMANDS:
        module = importlib.import_module(f"oab_bench.scripts.cmd_{name.replace('-', '_')}")
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(func=module.main)
    return parser


def check_output_is_not_an_input(args: argparse.Namespace) -> None:
    """`--output` (or `--plot`) never replaces what the command reads, nor a folder holding it (a typo
    must not turn answers into judgments); an unwritable file output is said first, as what it is."""
    from oab_bench.judge.output import check_output
    from oab_bench.judge.results_layout import local_path

    for flag in OUTPUT_ARGS:
        output = getattr(args, flag, None)
        if not output:
            continue
        if flag == "plot" or args.command in FILE_OUTPUT_COMMANDS:
            check_output(Path(output), f"--{flag}")
        out = Path(output).resolve()
        for name in INPUT_ARGS:
            given = getattr(args, name, None)
            for path in given if isinstance(given, list) else [given]:
                src = (local_path(path) or Path(path)) if isinstance(path, str) else None  # hf:/abs/folder
                if src and src.exists() and (out == src.resolve() or out in src.resolve().parents):
                    raise ValueError(f"--{flag} {output} would overwrite the input {path}: write elsewhere")


@contextlib.contextmanager
def signals_as_ctrl_c():
    """SIGTERM and SIGHUP raise Stopped, as Ctrl-C raises KeyboardInterrupt, from the first moment;
    once: a second signal must not break off the cleanup the first one started."""
    from oab_bench.judge.grading.loop import Stopped

    taken: list[int] = []

    def handler(signum, frame):
        if not taken:
            taken.append(signum)
            raise Stopped(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def main(argv: list[str] | None = None) -> int:
    from oab_bench.dataset_builder.errors import BuildError, SourceError
    from oab_bench.judge.generation.vllm_server import ServerError
    from oab_bench.judge.grading.loop import Stopped
    from oab_bench.judge.redact import redact

    args = build_parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else [str(a) for a in argv]  # as typed: `run`'s resume line
    try:
        with signals_as_ctrl_c():
            check_output_is_not_an_input(args)
            return args.func(args)
    except (SourceError, BuildError, OSError, ValueError, ServerError) as e:
        for line in redact(str(e)).splitlines():
            print(f"oab-bench {args.command}: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM, SIGHUP (Stopped): one line, never a traceback
        signame = e.signame if isinstance(e, Stopped) else "SIGINT"
        stored = ": the judgments made are stored; run the same command again to continue"
        stored *= args.command in JUDGING_COMMANDS
        print(f"oab-bench {args.command}: stopped by {signame}{stored}", file=sys.stderr)
        return 128 + signal.Signals[signame]


if __name__ == "__main__":
    sys.exit(main())
