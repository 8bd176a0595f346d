"""`--panel` for the commands that judge a candidate (judge, run) and for `judge-sweep`."""

from __future__ import annotations

import argparse

BESIDE = (
    "judge published answers beside the candidate, with the same judge and settings, and rank it among them"
)


def add_panel_argument(parser: argparse.ArgumentParser, what: str = BESIDE) -> None:
    parser.add_argument(
        "--panel",
        nargs="+",
        metavar="upstream|PATH|hf:...",
        help=f"{what}: 'upstream' (upstream's six answer files at a pinned commit, downloaded once "
        "into the cache and verified by SHA-256), answer files or folders (FastChat JSONL, "
        "lighteval details), or shared results (hf:OWNER/NAME[@REV], hf:/abs/folder: their answers)",
    )
