"""`oab-bench push-results`: export judged results, then upload them to a Hub dataset (judge/sharing/push.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from oab_bench.scripts.arguments import add_export_arguments

HELP = "export judged results and upload them to a Hub dataset"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.sharing.export import export_to
    from oab_bench.judge.sharing.push import push_results

    def export(folder: Path) -> Path:
        return export_to(args, folder, repo_id=args.repo_id)

    url = push_results(export, args.repo_id, private=args.private)
    print(f"pushed results to {args.repo_id}: {url}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_export_arguments(p)
    p.add_argument("--repo-id", required=True, help="OWNER/NAME: the dataset repository on the Hub")
    p.add_argument("--private", action="store_true", help="create the repository private")
