"""`oab-bench build`: upstream files -> validated Hub-style dataset folder (dataset_builder/)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "upstream files -> validated Hub-style dataset folder"


def main(args: argparse.Namespace) -> int:
    from oab_bench.dataset_builder.build import build_rows
    from oab_bench.dataset_builder.errata import DEFAULT_ERRATA
    from oab_bench.dataset_builder.publish import write_dataset

    rows, report = build_rows(args.source, args.errata or DEFAULT_ERRATA)
    out = write_dataset(rows, report, Path(args.output), overwrite=args.overwrite)
    print("\n".join([*report.lines(), f"wrote {out}"]))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--source",
        required=True,
        help="upstream data folder (question.jsonl, reference_answer/) or a clone of its repository, or "
        "its Hub dataset: hf:OWNER/NAME[@REVISION] (e.g. hf:maritaca-ai/oab-bench) or hf:/abs/folder",
    )
    p.add_argument("--output", required=True, help="dataset folder to write (parquet under data/, README.md)")
    p.add_argument(
        "--errata", type=Path, help="errata file (default: the checked-in dataset_builder/errata.yaml)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
