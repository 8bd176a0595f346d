"""Write the Hub-style folder atomically, and push it to the Hub."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .build import BuildReport
from .card import render_card
from .schema import QuestionRow

DATA_FILE = "data/test-00000-of-00001.parquet"
MARKER = ".oab-bench-build"  # says a folder is ours, so --overwrite may replace it


def is_our_build(folder: Path) -> bool:
    """Written by `oab-bench build` (marker; or, before markers, our parquet and card)."""
    return folder.is_dir() and (
        (folder / MARKER).is_file() or ((folder / DATA_FILE).is_file() and (folder / "README.md").is_file())
    )


def write_dataset(
    rows: list[QuestionRow], report: BuildReport, output: Path, *, overwrite: bool = False
) -> Path:
    """Write `data/test-*.parquet` and `README.md` into a temporary sibling, then rename.

    A failure at any point leaves `output` as it was.
    """
    output = output.resolve()
    if output.is_file():
        raise FileExistsError(f"{output} is a file, not a dataset folder")
    if output.exists():
        if not overwrite:
            raise FileExistsError(f"{output} exists (pass --overwrite to replace it)")
        if not is_our_build(output):
            raise FileExistsError(
                f"{output} is not a folder written by `oab-bench build` (no {MARKER}): refusing to replace it"
            )
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    except OSError as e:
        raise OSError(f"cannot write {output}: {e.strerror or e}") from None
    try:
        (tmp / "data").mkdir()
        table = pa.Table.from_pylist([r.model_dump(mode="json") for r in rows])
        pq.write_table(table, tmp / DATA_FILE)
        (tmp / "README.md").write_text(render_card(rows, report), encoding="utf-8")
        (tmp / MARKER).write_text("written by `oab-bench build`; --overwrite may replace this folder\n")
        _swap_in(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output


def _swap_in(new: Path, output: Path) -> None:
    """Put `new` at `output`; an old folder is moved aside first and restored if the swap fails."""
    if not output.exists():
        new.rename(output)
        return
    old = output.with_name(f".{output.name}.old-{os.getpid()}")
    output.rename(old)
    try:
        new.rename(output)
    except BaseException:
        old.rename(output)
        raise
    shutil.rmtree(old, ignore_errors=True)


def push_dataset(folder: Path, repo_id: str, *, private: bool = False, revision: str | None = None) -> str:
    """Upload a folder made by write_dataset; the token comes from HF_TOKEN or `hf auth login`."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    if not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a dataset folder made by `oab-bench build` (no {DATA_FILE})"
        )
    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    if revision:
        api.create_branch(repo_id, repo_type="dataset", branch=revision, exist_ok=True)
    info = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        revision=revision,
        commit_message="Update OAB-Bench dataset (oab-bench build)",
        allow_patterns=["README.md", "data/*.parquet"],
    )
    return str(getattr(info, "commit_url", info))
