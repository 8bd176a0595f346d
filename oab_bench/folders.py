"""One guard for every command that writes a folder: `run --output-dir`, `probe --output`,
`judge-sweep --output`, `build --output`, and the test model of benchmarks/tiny_model.py.

A command writes only into a new or empty folder, or one it marked as its own (a marker file
in it), so a mistyped path never replaces someone's files. A folder we wrote before markers
existed is recognised by its command's own `older` test. Each command marks a folder before
writing anything else into it (`claim`); a refusal names the flag, the folder and what it holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

_SHOWN = 10  # paths named in a refusal
_WALKED = 10_000  # entries looked at to name what a refused folder holds


class Writer(NamedTuple):
    """A command that writes a folder: its name, its marker, and how to know its older folders."""

    command: str  # as the user types it: `oab-bench run`
    marker: str
    head: str = ""  # the marker's first line, where the marker has content
    older: Callable[[Path], bool] | None = None  # a folder of ours from before the marker


def json_with_keys(path: Path, keys: set[str]) -> bool:
    """`path` holds a JSON object with at least `keys`: how an older folder of ours is known by the
    summary or report a command wrote in it."""
    try:
        got = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(got, dict) and keys <= got.keys()


class NotOurFolder(FileExistsError):
    """A folder a command did not write: refused before anything in it changes."""


def entries(folder: Path, limit: int | None = None) -> list[str]:
    """Every path under `folder`, relative, folders ending in `/`; links are not followed.
    With `limit`, the walk stops once it has seen more than `limit` (a home folder given by mistake)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        out += [(rel / d).as_posix() + "/" for d in dirnames]
        out += [(rel / f).as_posix() for f in filenames]
        if limit is not None and len(out) > limit:
            break
    return sorted(out)


def summarize(paths: list[str]) -> str:
    """A listed top folder of many files is one name (`.git/ (42 files)`); at most _SHOWN names."""
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


def is_marked(folder: Path, writer: Writer) -> bool:
    """The writer's marker is in `folder`: a plain file (not a link), with its head line if it has one."""
    marker = folder / writer.marker
    if marker.is_symlink() or not marker.is_file():
        return False
    if not writer.head:
        return True
    try:
        with marker.open(encoding="utf-8") as f:
            return f.readline().rstrip("\n") == writer.head
    except (OSError, UnicodeDecodeError):
        return False


def check_folder(folder: Path, writer: Writer, flag: str, given: str | Path | None = None) -> None:
    """Refuse (NotOurFolder) a folder `writer` may not write into: one that exists, is not empty,
    and carries neither its marker nor the signs of its older folders; a file where a folder goes."""
    folder = Path(folder)
    given = folder if given is None else given
    if folder.exists() and not folder.is_dir():
        raise NotOurFolder(f"{flag} {given}: is a file, not a folder")
    if not folder.is_dir() or is_marked(folder, writer) or (writer.older and writer.older(folder)):
        return
    found = entries(folder, _WALKED)
    if found:
        more = f" and more: over {_WALKED:,} entries" if len(found) > _WALKED else ""
        raise NotOurFolder(
            f"{flag} {given}: not a folder written by `{writer.command}` (no {writer.marker} "
            f"marker) and not empty ({summarize(found)}{more}): refusing to write there; give a new or "
            "empty folder"
        )


def claim(folder: Path, writer: Writer) -> None:
    """Make the folder if it is missing and mark it as the writer's, before anything is written
    into it: a run stopped early leaves a folder the same command may write again."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if not is_marked(folder, writer):
        marker = folder / writer.marker
        if marker.is_symlink():  # never written through: a link may point anywhere
            marker.unlink()
        marker.write_text(f"{writer.head}\n" if writer.head else "", encoding="utf-8")
