"""`oab-bench push`: publish a built dataset folder to the Hugging Face Hub (dataset_builder/publish.py),
only to a repo `oab-bench push` made (oab_bench/hub_guard.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "publish a built dataset folder to the Hugging Face Hub (configs: default, edition_39, ...)"


def main(args: argparse.Namespace) -> int:
    from oab_bench.dataset_builder.publish import push_dataset
    from oab_bench.hub_guard import HubRefusal, describe

    try:
        plan = push_dataset(
            Path(args.dataset),
            args.repo_id,
            private=args.private,
            revision=args.revision,
            replace_foreign=args.replace_foreign,
            dry_run=args.dry_run,
        )
    except HubRefusal as e:
        if args.dry_run and e.plan is not None:  # what it found and would have done, then the refusal
            print("\n".join(describe(e.plan)))
        raise
    if args.dry_run:
        print("\n".join(describe(plan)))
    else:
        print(f"pushed {args.dataset} to {args.repo_id}: {plan.url}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder written by `oab-bench build`")
    p.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.add_argument(
        "--replace-foreign",
        metavar="REPO_ID",
        help="write to REPO_ID (the same as --repo-id) even though `oab-bench push` did not make it: "
        "its card and data files are replaced",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the repo and print what would be uploaded and deleted; write nothing",
    )
