"""`oab-bench push`: a built dataset folder to the Hugging Face Hub, only to a repo `oab-bench push` made."""

from __future__ import annotations

import argparse

HELP = "publish a built dataset folder to the Hugging Face Hub (configs: default, edition_39, ...)"


def main(args: argparse.Namespace) -> int:
    from oab_bench.dataset_builder.publish import push_dataset

    url = push_dataset(args)
    if url:
        print(f"pushed {args.dataset} to {args.repo_id}: {url}")
    return 0


def add_hub_arguments(p: argparse.ArgumentParser, command: str) -> None:
    """What `push` and `push-results` share: the repo, and what the Hub guard lets through."""
    p.add_argument("--repo-id", required=True, help="OWNER/NAME: the dataset repository on the Hub")
    p.add_argument("--private", action="store_true", help="create the repository private")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.add_argument(
        "--replace-foreign",
        metavar="REPO_ID",
        help=f"write to REPO_ID (the same as --repo-id) even though `oab-bench {command}` did not make it: "
        "its card and data files are replaced",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check the repo and print what would be uploaded and deleted; write nothing",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="folder written by `oab-bench build`")
    add_hub_arguments(p, "push")
