"""Write the Hub-style folder atomically, and push it to the Hub."""

from __future__ import annotations

import hashlib
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
MARKER = ".oab-bench-build"  # says a folder is ours and lists what we wrote, so --overwrite may replace it
MARKER_HEAD = "written by `oab-bench build`; --overwrite may replace this folder"
_SHOWN = 10  # foreign paths named in a refusal


def _marker_text(folder: Path) -> str:
    """The marker: its head line, then one line per file we wrote (sha256, path)."""
    lines = [MARKER_HEAD]
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MARKER):
        lines.append(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(folder).as_posix()}")
    return "\n".join(lines) + "\n"


def _entries(folder: Path) -> list[str]:
    """Every path under `folder`, relative, folders ending in `/`; links are not followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        out += [(rel / d).as_posix() + "/" for d in dirnames]
        out += [(rel / f).as_posix() for f in filenames]
    return sorted(out)


def foreign_paths(folder: Path) -> list[str] | None:
    """What `--overwrite` would remove that `oab-bench build` did not write, as it wrote it.

    None: no marker (the whole folder is foreign); [] when it holds only our build, unchanged.
    """
    try:
        lines = (folder / MARKER).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != MARKER_HEAD or (folder / MARKER).is_symlink():
        return None
    ours: dict[str, str | None] = {}
    for line in lines[1:]:
        digest, _, path = line.partition("  ")
        ours[path] = digest
    if not ours:  # a marker from before markers listed the files
        ours = {"README.md": None, DATA_FILE: None}
    ours[MARKER] = None
    dirs = {p.rsplit("/", 1)[0] + "/" for p in ours if "/" in p}
    foreign = []
    for entry in _entries(folder):
        path = folder / entry
        if entry in dirs and path.is_dir() and not path.is_symlink():
            continue
        if entry not in ours or path.is_symlink() or not path.is_file():
            foreign.append(entry)
        elif ours[entry] and hashlib.sha256(path.read_bytes()).hexdigest() != ours[entry]:
            foreign.append(f"{entry} (changed since the build)")
    return foreign


def _summary(paths: list[str]) -> str:
    """A foreign top folder of many files is one name (`.git/ (42 files)`); at most _SHOWN names."""
    names = []
    for top in sorted({p.split("/", 1)[0] + ("/" if "/" in p else "") for p in paths}):
        files = (
            [p for p in paths if p.startswith(top) and not p.endswith("/")] if top.endswith("/") else [top]
        )
        if top in paths and len(files) > 3:
            names.append(f"{top} ({len(files)} files)")
        else:
            names += files or [top]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def check_replaceable(output: Path) -> None:
    """Refuse (FileExistsError) unless `output` holds our build and nothing else."""
    foreign = foreign_paths(output)
    if foreign is None:
        raise FileExistsError(
            f"{output} is not a folder written by `oab-bench build` (no {MARKER} marker): refusing to "
            f"replace it; --overwrite would have removed: {_summary(_entries(output)) or 'an empty folder'}"
        )
    if foreign:
        raise FileExistsError(
            f"{output} holds what `oab-bench build` did not write: refusing to replace it; --overwrite "
            f"would have removed: {_summary(foreign)}"
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
        check_replaceable(output)
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
        (tmp / MARKER).write_text(_marker_text(tmp), encoding="utf-8")
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
