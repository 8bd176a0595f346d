"""`oab-bench`: build and publish the dataset, judge answers, run lighteval, report.

Each subcommand parses its flags and calls one function of the packages; imports are
lazy so `oab-bench build` does not pay for litellm or lighteval.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _build(args: argparse.Namespace) -> int:
    from dataset_builder.build import build_rows
    from dataset_builder.errata import DEFAULT_ERRATA
    from dataset_builder.publish import write_dataset

    rows, report = build_rows(Path(args.source), Path(args.errata) if args.errata else DEFAULT_ERRATA)
    out = write_dataset(rows, report, Path(args.output), overwrite=args.overwrite)
    for line in report.lines():
        print(line)
    print(f"wrote {out}")
    return 0


def _push(args: argparse.Namespace) -> int:
    from dataset_builder.publish import push_dataset

    url = push_dataset(Path(args.dataset), args.repo_id, private=args.private, revision=args.revision)
    print(f"pushed {args.dataset} to {args.repo_id}: {url}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oab-bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="upstream files -> validated Hub-style dataset folder")
    p.add_argument("--source", required=True, help="upstream data folder (question.jsonl, reference_answer/)")
    p.add_argument("--output", required=True, help="dataset folder to write (parquet under data/, README.md)")
    p.add_argument("--errata", help="errata file (default: the checked-in dataset_builder/errata.yaml)")
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    p.set_defaults(func=_build)

    p = sub.add_parser("push", help="publish a built dataset folder to the Hugging Face Hub")
    p.add_argument("--dataset", required=True, help="folder written by `oab-bench build`")
    p.add_argument("--repo-id", required=True, help="ORG/NAME on the Hub")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.set_defaults(func=_push)

    return parser


def main(argv: list[str] | None = None) -> int:
    from dataset_builder.errors import BuildError, SourceError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SourceError, BuildError, FileExistsError, FileNotFoundError) as e:
        for line in str(e).splitlines():
            print(f"oab-bench {args.command}: error: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
