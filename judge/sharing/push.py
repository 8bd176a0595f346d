"""`oab-bench push-results`: export into a temporary folder, then upload exactly what the export wrote.

Before anything is read: a token must be there (HF_TOKEN or `hf auth login`) and the repo id must be
OWNER/NAME. The upload goes through the one Hub guard (oab_bench/hub_guard.py, kind `results`): only
a new repo, or one whose card carries our `results` marker, is written, in one commit; a dataset
someone else made, or our questions dataset, is refused before any write.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from oab_bench.hub_guard import PushPlan, guarded_push, mark_card
from oab_bench.judge.results_layout import ANSWERS_FILE, JUDGMENTS_DIR, KIND
from oab_bench.judge.results_source import CARD
from oab_bench.judge.sharing.export import written

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
MADE_BY = "oab-bench push-results"


def check_token() -> str:
    """The token huggingface_hub would use; a missing one is said now, before anything is read or sent."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise ValueError(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token that may write to the repo)"
        )
    return token


def check_repo_id(repo_id: str) -> None:
    if not REPO_ID.match(repo_id):
        raise ValueError(f"--repo-id {repo_id!r}: expected OWNER/NAME (a dataset repository on the Hub)")


def stage(folder: Path, staging: Path) -> Path:
    """What is uploaded: the files the export listed (its marker stays home), the card marked as a
    `results` repo of ours (hub_guard.mark_card)."""
    for rel in written(folder):
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel == CARD:
            target.write_text(mark_card((folder / rel).read_text(encoding="utf-8"), KIND), encoding="utf-8")
        else:
            shutil.copyfile(folder / rel, target)
    return staging


def upload(folder: Path, repo_id: str, *, private: bool, api=None) -> PushPlan:
    """Only the files the export listed are sent; a judge or answers file the repo held from an earlier
    push and this export did not write goes."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-results-stage-") as tmp:
        return guarded_push(
            api,
            repo_id,
            stage(folder, Path(tmp) / "hub"),
            kind=KIND,
            commit_message=f"Update OAB-Bench results ({MADE_BY})",
            delete_patterns=[f"{JUDGMENTS_DIR}/**", ANSWERS_FILE.split("/")[0] + "/**"],
            private=private,
        )


def push_results(export, repo_id: str, *, private: bool) -> str:
    """`export(folder)` writes the results folder (its card naming `repo_id`); then it is uploaded."""
    check_repo_id(repo_id)
    check_token()
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-results-") as tmp:
        folder = export(Path(tmp) / "results")
        return str(upload(folder, repo_id, private=private).url)
