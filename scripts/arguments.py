"""Argument types every subcommand shares: a bad value is argparse's error naming the flag."""

from __future__ import annotations

import argparse
import math

from oab_bench.judge.intervals import LEADERBOARD_RESAMPLES
from oab_bench.judge.validity.probes import PROBE_KINDS


def number(kind: type, least: float, *, above: bool = False):
    """An argparse type: a finite `kind` >= `least` (> `least` when `above`); a bad value is argparse's
    error naming the flag (`--resamples 0` is no interval, lighteval takes -1 samples as all but one)."""

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < least or (above and value == least):
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} {'>' if above else '>='} {least}")
        return value

    convert.__name__ = kind.__name__
    return convert


def whole(least: int):
    return number(int, least)


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """What every command reading judged results shares: the questions expected and the bootstrap."""
    dataset = "dataset folder or Hub id: the questions expected (default: those seen in the inputs)"
    p.add_argument("--dataset", help=dataset)
    resamples = "bootstrap resamples of whole exams"
    p.add_argument("--resamples", type=whole(1), default=LEADERBOARD_RESAMPLES, help=resamples)
    p.add_argument("--seed", type=whole(0), default=0)


def add_probe_arguments(p: argparse.ArgumentParser) -> None:
    """What `probe` and `judge-sweep` share: the probes to grade and the report's format."""
    kinds = ",".join(PROBE_KINDS)
    p.add_argument("--probes", default=kinds, help=f"comma-separated probes (default {kinds})")
    formats = ["text", "json"]
    p.add_argument("--format", choices=formats, default="text", help="report (or estimate) format on stdout")


def add_cache_arguments(p: argparse.ArgumentParser) -> None:
    """The judgment cache and the progress bar of the commands that judge (judge, judge-sweep, probe)."""
    p.add_argument("--cache", help="judgment cache folder (default ~/.cache/oab-bench/judge)")
    p.add_argument("--no-cache", action="store_true", help="judge again even what the cache holds")
    p.add_argument("--no-progress", action="store_true")


def add_check_call(p: argparse.ArgumentParser, to: str = "the judge") -> None:
    check = f"skip the minimal real call (1 output token; 16 for reasoning models) to {to}"
    p.add_argument("--no-check-call", action="store_true", help=check)


SHARED_RESULTS_HELP = "shared results (hf:OWNER/NAME[@REV], hf:/abs/folder)"


def add_inputs(p: argparse.ArgumentParser, what: str) -> None:
    """The judged inputs a reading command takes: `what` it reads, and shared results datasets."""
    p.add_argument("inputs", nargs="+", help=f"{what}, {SHARED_RESULTS_HELP}")


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    """What `export` and `push-results` share: the sources, the answers, the leaderboard's flags."""
    what = "run folders, judgment files, probe folders, upstream judgment files, or " + SHARED_RESULTS_HELP
    p.add_argument("sources", nargs="+", help=what)
    p.add_argument("--answers", nargs="+", help="answer files too (FastChat JSONL or lighteval details)")
    add_report_arguments(p)
