"""`oab-bench push-results`: export into a temporary folder, then upload exactly what the export wrote.

Before any write: a token must be there (HF_TOKEN or `hf auth login`), the repo id must be OWNER/NAME,
and the target is checked by `check_target`, the one place the Hub guard is called: a model or Space
of that name, or a dataset that is not one of our results datasets, is refused.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from oab_bench.judge.results_layout import ANSWERS_FILE, CARD_KEY, JUDGMENTS_DIR, KIND
from oab_bench.judge.results_source import CARD, front_matter
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


def check_target(api, repo_id: str) -> None:
    """The Hub guard's one call site: only a new repo, or a results dataset of ours, is written.

    A model or Space named `repo_id` means a mistyped id (datasets share no names with them for the
    reader); a dataset whose card lacks our marker of kind `results` is someone else's, or our
    questions dataset: both refused, naming it, before any write."""
    if not api.repo_exists(repo_id, repo_type="dataset"):
        for kind in ("model", "space"):
            if api.repo_exists(repo_id, repo_type=kind):
                raise ValueError(
                    f"{repo_id} is a {kind} repository, not a dataset: push-results writes a dataset "
                    "repository; pick another --repo-id"
                )
        return
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        card = Path(hf_hub_download(repo_id, CARD, repo_type="dataset")).read_text(encoding="utf-8")
    except EntryNotFoundError:
        card = ""
    mark = (front_matter(card) or {}).get(CARD_KEY)
    if not isinstance(mark, dict) or mark.get("kind") != KIND:
        what = "has no card" if not card else f"has no `{CARD_KEY}: {{kind: {KIND}}}` in its card"
        raise ValueError(
            f"dataset {repo_id} {what}: not a results dataset made by oab-bench; refusing to replace its "
            f"card and its {JUDGMENTS_DIR}/ and answers/ files; pick another --repo-id"
        )


def upload(folder: Path, repo_id: str, *, private: bool) -> str:
    """Only the files the export listed are sent; a judge or answers file the repo held from an earlier
    push and this export did not write goes."""
    from huggingface_hub import HfApi

    api = HfApi()
    check_target(api, repo_id)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    info = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"Update OAB-Bench results ({MADE_BY})",
        allow_patterns=written(folder),
        delete_patterns=[f"{JUDGMENTS_DIR}/**", ANSWERS_FILE.split("/")[0] + "/**"],
    )
    return str(getattr(info, "commit_url", info))


def push_results(export, repo_id: str, *, private: bool) -> str:
    """`export(folder)` writes the results folder (its card naming `repo_id`); then it is uploaded."""
    check_repo_id(repo_id)
    check_token()
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-results-") as tmp:
        folder = export(Path(tmp) / "results")
        return upload(folder, repo_id, private=private)
