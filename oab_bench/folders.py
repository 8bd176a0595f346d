"""The guard of every command that writes a folder: only a new or empty one, or one the same command marked.
`build` and `export` write theirs whole, each file's sha256 in the marker, replaced only while unchanged."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from oab_bench.whole_file import umask

_SHOWN = 10  # paths named in a refusal
_WALKED = 10_000  # entries looked at to name what a refused folder holds


class Writer(NamedTuple):
    """A command that writes a folder, its marker and the marker's first line."""

    command: str
    marker: str
    head: str = ""


def entries(folder: Path, limit: int | None = None) -> list[str]:
    """Every path under `folder`, relative, folders ending in `/`; past `limit` entries the walk stops."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        out += [(rel / d).as_posix() + "/" for d in dirnames] + [(rel / f).as_posix() for f in filenames]
        if limit is not None and len(out) > limit:
            break
    return sorted(out)


def summarize(paths: list[str]) -> str:
    """A listed top folder of many files is one name (`.git/ (42 files)`); at most _SHOWN names."""
    names = []
    for top in sorted({p.split("/", 1)[0] + ("/" if "/" in p else "") for p in paths}):
        files = [p for p in paths if p.startswith(top) and not p.endswith("/")] if "/" in top else [top]
        names += [f"{top} ({len(files)} files)"] if top in paths and len(files) > 3 else files or [top]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def listed(folder: Path, writer: Writer) -> dict[str, str] | None:
    """The files and sha256 sums the writer's marker lists; None without one (or a link, another head)."""
    marker = Path(folder) / writer.marker
    try:
        lines = [] if marker.is_symlink() else marker.read_text(encoding="utf-8").splitlines() or [""]
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or (writer.head and lines[0] != writer.head):
        return None
    return {path: digest for digest, _, path in (line.partition("  ") for line in lines[1:])}


def check_folder(folder: Path, writer: Writer, flag: str, given: str | Path | None = None) -> None:
    """Refuse a file where a folder goes, or a folder neither empty nor marked by the writer, naming it."""
    folder, given = Path(folder), folder if given is None else given
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{flag} {given}: is a file, not a folder")
    found = [] if not folder.is_dir() or listed(folder, writer) is not None else entries(folder, _WALKED)
    if found:
        more = f" and more: over {_WALKED:,} entries" if len(found) > _WALKED else ""
        why = f"not a folder written by `{writer.command}` (no {writer.marker} marker) and not empty"
        fix = "refusing to write there; give a new or empty folder"
        raise FileExistsError(f"{flag} {given}: {why} ({summarize(found)}{more}): {fix}")


def claim(folder: Path, writer: Writer) -> None:
    """Make and mark the folder before anything is written in it: a stopped run's folder stays writable."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if listed(folder, writer) is None:
        (folder / writer.marker).unlink(missing_ok=True)  # never written through: a link may point anywhere
        (folder / writer.marker).write_text(f"{writer.head}\n" if writer.head else "", encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_replaceable(output: Path, writer: Writer) -> None:
    """Refuse, naming what would go, unless `output` is missing, empty or its marker's files unchanged."""
    check_folder(output, writer, "--output", output)
    ours = listed(output, writer) or {}
    dirs = {"/".join(p.split("/")[:i]) + "/" for p in ours for i in range(1, p.count("/") + 1)}
    foreign = []
    for entry in entries(output):
        path = output / entry
        if entry == writer.marker or (entry in dirs and path.is_dir() and not path.is_symlink()):
            continue
        if entry not in ours or path.is_symlink() or not path.is_file():
            foreign.append(entry)
        elif _sha256(path) != ours[entry]:
            foreign.append(f"{entry} (changed since the {writer.command.split()[-1]})")
    if foreign:
        why = f"holds what `{writer.command}` did not write: refusing to replace it"
        raise FileExistsError(f"{output} {why}; replacing it would have removed: {summarize(foreign)}")


def write_listed(output: Path, writer: Writer, fill: Callable[[Path], None], *, overwrite: bool) -> Path:
    """`fill` a temporary sibling, list its files in the marker, rename it into place (the old folder
    aside as `.NAME.old-PID` meanwhile): a failure leaves `output` as it was; a kill between the two
    renames leaves no `output`, the old folder whole beside it as `.NAME.old-PID`."""
    output = Path(output).resolve()
    check_folder(output, writer, "--output", output)  # a file, or a folder the writer did not write
    if output.is_dir() and any(output.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{output} exists (pass --overwrite to replace it)")
        check_replaceable(output, writer)
    output.parent.mkdir(parents=True, exist_ok=True)
    old = output.with_name(f".{output.name}.old-{os.getpid()}")
    with tempfile.TemporaryDirectory(
        prefix=f".{output.name}.", dir=output.parent, ignore_cleanup_errors=True
    ) as t:
        tmp = Path(t)  # made 0700: a written folder is for everyone to read; a setgid parent's bit stays
        tmp.chmod((0o777 & ~umask()) | (tmp.stat().st_mode & stat.S_ISGID))
        fill(tmp)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        lines = [writer.head] + [f"{_sha256(f)}  {f.relative_to(tmp).as_posix()}" for f in files]
        (tmp / writer.marker).write_text("\n".join(lines) + "\n", encoding="utf-8")
        if output.exists():
            output.rename(old)
        try:
            tmp.rename(output)
        except BaseException:
            if old.exists():
                old.rename(output)
            raise
    shutil.rmtree(old, ignore_errors=True)
    return output
