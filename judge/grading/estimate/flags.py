"""`--estimate` and `--format` for every command that judges (judge, run, probe)."""

from __future__ import annotations

import argparse


def add_estimate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print calls, tokens and cost of the judgments still to make (direct and batch), call nothing",
    )
    parser.add_argument(
        "--format", choices=["text", "json"], default="text", help="--estimate output (json: a contract)"
    )
