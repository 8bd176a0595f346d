"""Write the Hub-style folder atomically, and push it to the Hub (with a config per edition)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from oab_bench.conventions import BUILD_MARKER as MARKER
from oab_bench.dataset_builder.build import BuildReport
from oab_bench.dataset_builder.card import render_card
from oab_bench.dataset_builder.schema import QuestionRow

DATA_FILE = "data/test-00000-of-00001.parquet"
MARKER_HEAD = "written by `oab-bench build`; --overwrite may replace this folder"
_SHOWN = 10  # foreign paths named in a refusal


class Mark(NamedTuple):
    """Which command's folder: its marker file (head line, then what it wrote) and how refusals say it."""

    file: str
    head: str
    command: str  # "`oab-bench build`"
    replacing: str  # what would replace the folder: "--overwrite"
    legacy: tuple[str, ...] = ()  # what an older, head-only marker of this command stands for
    made: str = "the build"  # "changed since the build"


BUILD = Mark(MARKER, MARKER_HEAD, "`oab-bench build`", "--overwrite", ("README.md", DATA_FILE))


def _marker_text(folder: Path, mark: Mark = BUILD) -> str:
    """The marker: its head line, then one line per file we wrote (sha256, path)."""
    lines = [mark.head]
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != mark.file):
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


def _listed(folder: Path, mark: Mark = BUILD) -> dict[str, str] | None:
    """The marker's files and hashes; None without a marker of ours, {} for an older head-only one."""
    try:
        lines = (folder / mark.file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != mark.head or (folder / mark.file).is_symlink():
        return None
    return {path: digest for digest, _, path in (line.partition("  ") for line in lines[1:])}


def written_files(folder: Path, mark: Mark = BUILD) -> list[str] | None:
    """The files `mark`'s marker in `folder` lists (None without such a marker)."""
    listed = _listed(folder, mark)
    return None if listed is None else sorted(listed)


def foreign_paths(folder: Path, *, built: Path | None = None, mark: Mark = BUILD) -> list[str] | None:
    """What replacing the folder (`--overwrite`) would remove that `mark`'s command did not write as it wrote it.

    None: no marker (the whole folder is foreign); [] when it holds only our build, unchanged.
    An older marker lists no hashes, so it proves nothing about the files: each must then be
    byte-identical to the same file of `built` (the build about to replace it), else it is foreign.
    """
    listed = _listed(folder, mark)
    if listed is None:
        return None
    ours: dict[str, str | None] = dict(listed) or dict.fromkeys(mark.legacy)
    ours[mark.file] = None
    parts = [p.split("/") for p in ours]
    dirs = {"/".join(q[:i]) + "/" for q in parts for i in range(1, len(q))}  # every folder above a file
    foreign = []
    for entry in _entries(folder):
        path = folder / entry
        if entry in dirs and path.is_dir() and not path.is_symlink():
            continue
        if entry not in ours or path.is_symlink() or not path.is_file():
            foreign.append(entry)
        elif ours[entry] and hashlib.sha256(path.read_bytes()).hexdigest() != ours[entry]:
            foreign.append(f"{entry} (changed since {mark.made})")
        elif not listed and entry != mark.file and not _same_file(path, built / entry if built else None):
            foreign.append(f"{entry} (not verifiable: the marker lists no hashes)")
    return foreign


def _same_file(path: Path, other: Path | None) -> bool:
    return other is not None and other.is_file() and path.read_bytes() == other.read_bytes()


def is_our_build(folder: Path) -> bool:
    """A folder `oab-bench build` wrote, holding nothing else, unchanged since (a cached build may be reused)."""
    return foreign_paths(folder) == []


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


def check_replaceable(output: Path, *, built: Path | None = None, mark: Mark = BUILD) -> None:
    """Refuse (FileExistsError) unless `output` holds our build and nothing else (see foreign_paths)."""
    foreign = foreign_paths(output, built=built, mark=mark)
    if foreign is None:
        raise FileExistsError(
            f"{output} is not a folder written by {mark.command} (no {mark.file} marker): refusing to "
            f"replace it; {mark.replacing} would have removed: {_summary(_entries(output)) or 'an empty folder'}"
        )
    if foreign and _listed(output, mark) == {}:
        raise FileExistsError(
            f"{output} was written by an older {mark.command} whose {mark.file} lists no file hashes, and "
            f"it differs from this build, so edits there cannot be told from ours: refusing to replace it "
            f"({_summary(foreign)}); keep what you need and remove the folder yourself (rm -r {output}), "
            "then build again"
        )
    if foreign:
        raise FileExistsError(
            f"{output} holds what {mark.command} did not write: refusing to replace it; {mark.replacing} "
            f"would have removed: {_summary(foreign)}"
        )


def write_dataset(
    rows: list[QuestionRow], report: BuildReport, output: Path, *, overwrite: bool = False
) -> Path:
    """Write `data/test-*.parquet` and `README.md` into a temporary sibling, then rename.

    A failure at any point leaves `output` as it was.
    """

    def fill(tmp: Path) -> None:
        (tmp / "data").mkdir()
        table = pa.Table.from_pylist([r.model_dump(mode="json") for r in rows])
        pq.write_table(table, tmp / DATA_FILE)
        (tmp / "README.md").write_text(render_card(rows, report), encoding="utf-8")

    return write_marked(output, fill, overwrite=overwrite)


def write_marked(output: Path, fill: Callable[[Path], None], *, mark: Mark = BUILD, overwrite: bool) -> Path:
    """`fill` a temporary sibling of `output`, mark it as `mark`'s, and swap it in: a failure at any
    point leaves `output` as it was. An existing `output` is replaced only with `overwrite`, and only
    when it holds what `mark`'s command wrote, unchanged (check_replaceable); an empty one is filled."""
    output = output.resolve()
    if output.is_file():
        raise FileExistsError(f"{output} is a file, not a dataset folder")
    empty = output.is_dir() and not output.is_symlink() and not any(output.iterdir())
    old_marker = False  # a head-only marker: the files are checked against the new build, once written
    if output.exists() and not empty:  # an empty folder holds nothing to lose: the swap fills it
        if not overwrite:
            raise FileExistsError(f"{output} exists (pass --overwrite to replace it)")
        old_marker = _listed(output, mark) == {}
        if not old_marker:
            check_replaceable(output, mark=mark)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700: a dataset folder is for everyone to read
    except OSError as e:
        raise OSError(f"cannot write {output}: {e.strerror or e}") from None
    try:
        fill(tmp)
        (tmp / mark.file).write_text(_marker_text(tmp, mark), encoding="utf-8")
        if old_marker:
            check_replaceable(output, built=tmp, mark=mark)
        _swap_in(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux renameat2 RENAME_EXCHANGE), so that no moment, not even
    a SIGKILL's, leaves `b` missing; False where the system or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _swap_in(new: Path, output: Path) -> None:
    """Put `new` at `output`: exchanged in one step where Linux can, else the old folder is moved
    aside first and restored if the swap fails."""
    if not output.exists():
        new.rename(output)
        return
    if _exchange(new, output):  # `new` now holds the old folder
        shutil.rmtree(new, ignore_errors=True)
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
    head, _, rest = card.partition("---\n")
    front, sep, body = rest.partition("---\n")
    try:
        meta = yaml.safe_load(front) if not head and sep else None
    except yaml.YAMLError:
        meta = None
    if not isinstance(meta, dict):
        raise ValueError("README.md: no YAML front matter (--- ... ---) to add the configs to")
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
    try:
        text = pushed_card(card, editions, repo_id)
    except ValueError as e:
        raise ValueError(f"{folder / 'README.md'}: {str(e).removeprefix('README.md: ')}") from None
    (staging / "README.md").write_text(text, encoding="utf-8")
    return staging


def check_pushable(folder: Path) -> None:
    """Only what `oab-bench build` wrote is pushed: its marker, and the rows as it wrote them (a card
    edited by hand may go, its front matter intact); anything else fails here, before the Hub."""
    listed = _listed(folder)
    if listed is None or not (folder / DATA_FILE).is_file() or not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a dataset folder made by `oab-bench build` (no {MARKER} marker with "
            f"{DATA_FILE} and README.md)"
        )
    digest = listed.get(DATA_FILE)
    if digest and hashlib.sha256((folder / DATA_FILE).read_bytes()).hexdigest() != digest:
        raise ValueError(f"{folder / DATA_FILE}: changed since the build: build again, then push")


def push_dataset(folder: Path, repo_id: str, *, private: bool = False, revision: str | None = None) -> str:
    """Upload a folder made by write_dataset, in the pushed layout; the token comes from HF_TOKEN or
    `hf auth login`."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    check_pushable(folder)
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
