"""`oab-bench push`: publish a built dataset folder to the Hugging Face Hub (dataset_builder/publish.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "publish a built dataset folder to the Hugging Face Hub (configs: default, edition_39, ...)"


def main(args: argparse.Namespace) -> int:
    from oab_bench.dataset_builder.publish import push_dataset

    url = push_dataset(Path(args.dataset), args.repo_id, private=args.private, revision=args.revision)
    print(f"pushed {args.dataset} to {args.repo_id}: {url}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder written by `oab-bench build`")
    p.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (created if missing)")
