"""`oab-bench push-results`: export judged results, upload them to a Hub dataset (judge/sharing/push.py)."""

from __future__ import annotations

import argparse

from oab_bench.scripts.arguments import add_export_arguments
from oab_bench.scripts.cmd_push import add_hub_arguments

HELP = "export judged results and upload them to a Hub dataset"


def main(args: argparse.Namespace) -> int:
    from oab_bench.judge.sharing.push import push_results

    url = push_results(args)
    if url:
        print(f"pushed results to {args.repo_id}: {url}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_export_arguments(p)
    add_hub_arguments(p, "push-results")
