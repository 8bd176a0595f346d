"""`oab-bench push-results`: export into a temporary folder, then upload exactly what the export wrote
(its marker stays home) through the one Hub guard (oab_bench/hub_guard.py, kind `results`)."""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from oab_bench.scripts.arguments import add_export_arguments
from oab_bench.scripts.cmd_push import add_hub_arguments

HELP = "export judged results and upload them to a Hub dataset"
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def main(args: argparse.Namespace) -> int:
    """Repo id and token checked before anything is read; export; upload in one commit that deletes
    the data files an earlier push left (none on --dry-run)."""
    from huggingface_hub import HfApi, get_token

    from oab_bench.folders import listed
    from oab_bench.hub_guard import CARD, guarded_push
    from oab_bench.judge.results_layout import ANSWERS_FILE, JUDGMENTS_DIR, KIND
    from oab_bench.judge.sharing.export import EXPORT, export_to

    if not REPO_ID.match(args.repo_id):
        raise ValueError(f"--repo-id {args.repo_id!r}: expected OWNER/NAME (a dataset repository on the Hub)")
    if not get_token():
        raise ValueError(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token that may write to the repo)"
        )
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-results-") as tmp:
        folder = export_to(args, Path(tmp) / "results", repo_id=args.repo_id)
        files = {rel: (folder / rel).read_bytes() for rel in sorted(listed(folder, EXPORT)) if rel != CARD}
        card = (folder / CARD).read_text(encoding="utf-8")
        delete = [f"{JUDGMENTS_DIR}/**", ANSWERS_FILE.split("/")[0] + "/**"]
        url = guarded_push(HfApi(), args, card, files, kind=KIND, delete=delete)
    if url:
        print(f"pushed results to {args.repo_id}: {url}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_export_arguments(p)
    add_hub_arguments(p, "push-results")
