"""Write the Hub-style folder atomically, and push it to the Hub (with a config per edition)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

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
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700: a dataset folder is for everyone to read
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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


EDITION_FILE = "editions/{edition}/test-00000-of-00001.parquet"


def hub_configs(editions: list[int]) -> list[dict]:
    """The pushed card's `configs:`: the full set (default) and one per edition."""
    configs = [
        {"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}], "default": True}
    ]
    configs += [
        {"config_name": f"edition_{e}", "data_files": [{"split": "test", "path": f"editions/{e}/test-*"}]}
        for e in editions
    ]
    return configs


def pushed_card(card: str, editions: list[int], repo_id: str) -> str:
    """The built card with `configs:` added (a local folder's card has none: `datasets` 5.2 caches a
    local folder with configs by its name alone) and the repository named in its example."""
    _, front, body = card.split("---\n", 2)
    meta = yaml.safe_load(front) or {}
    meta["configs"] = hub_configs(editions)
    names = ", ".join(f"`edition_{e}`" for e in editions)
    body = body.replace(
        'load_dataset("<this repo>", split="test")', f'load_dataset("{repo_id}", split="test")'
    )
    body = body.replace(
        "\nEvaluate a model with lighteval",
        f"\nConfigs: `default` (every question) and one per edition ({names}), e.g.\n"
        f'`load_dataset("{repo_id}", "edition_{editions[-1]}", split="test")`.\n\nEvaluate a model with lighteval',
        1,
    )
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body}"


def stage_for_hub(folder: Path, staging: Path, repo_id: str) -> Path:
    """The pushed layout in `staging`: the full parquet, one parquet per edition, the card with configs."""
    table = pq.read_table(folder / DATA_FILE)
    editions = sorted(set(table.column("edition").to_pylist()))
    (staging / "data").mkdir(parents=True)
    shutil.copyfile(folder / DATA_FILE, staging / DATA_FILE)
    for e in editions:
        path = staging / EDITION_FILE.format(edition=e)
        path.parent.mkdir(parents=True)
        pq.write_table(table.filter(pc.equal(table.column("edition"), e)), path)
    card = (folder / "README.md").read_text(encoding="utf-8")
    (staging / "README.md").write_text(pushed_card(card, editions, repo_id), encoding="utf-8")
    return staging


def push_dataset(folder: Path, repo_id: str, *, private: bool = False, revision: str | None = None) -> str:
    """Upload a folder made by write_dataset, in the pushed layout; the token comes from HF_TOKEN or
    `hf auth login`."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    if not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a dataset folder made by `oab-bench build` (no {DATA_FILE})"
        )
    api = HfApi()
    with tempfile.TemporaryDirectory(prefix="oab-bench-push-") as tmp:
        staging = stage_for_hub(folder, Path(tmp) / "hub", repo_id)
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if revision:
            api.create_branch(repo_id, repo_type="dataset", branch=revision, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(staging),
            repo_id=repo_id,
            repo_type="dataset",
            revision=revision,
            commit_message="Update OAB-Bench dataset (oab-bench build)",
            allow_patterns=["README.md", "data/*.parquet", "editions/*/*.parquet"],
            delete_patterns=["data/*.parquet", "editions/**"],  # an edition no longer built goes too
        )
    return str(getattr(info, "commit_url", info))
