"""`oab-bench export`: judged results -> a Hub dataset folder (judge/sharing/export.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from oab_bench.scripts.arguments import add_export_arguments

HELP = "judged results -> a Hub dataset folder (parquet, a config per judge, a card)"


def main(args: argparse.Namespace) -> int:
    from oab_bench.folders import check_replaceable
    from oab_bench.judge.sharing.export import EXPORT, export_to

    check_replaceable(Path(args.output).resolve(), EXPORT)  # before anything is read
    print(f"wrote {export_to(args, Path(args.output))}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_export_arguments(p)
    p.add_argument(
        "--output", required=True, help="folder to write: new, empty, or one `oab-bench export` wrote"
    )
