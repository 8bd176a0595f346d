"""One guard for every command that writes a folder: `run --output-dir`, `probe --output`,
`judge-sweep --output`, `build --output`, `export --output`, and benchmarks/tiny_model.py.

A command writes only into a new or empty folder, or one it marked as its own (`claim` puts the
marker in before anything else), so a mistyped path never replaces someone's files; a refusal names
the flag, the folder and what it holds. A command that writes its folder whole (`build`, `export`:
`write_listed`) fills a temporary sibling, lists every file with its sha256 in the marker, and
renames it into place; it replaces a folder only while that folder holds exactly what its marker
lists (`check_replaceable`).
"""

from __future__ import annotations

import hashlib
import json
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
    """A command that writes a folder: its name as the user types it, its marker, the marker's first line."""

    command: str
    marker: str
    head: str = ""

    @property
    def made(self) -> str:
        """`the build`, `the export`: what wrote a listed folder, as refusals say it."""
        return f"the {self.command.split()[-1]}"


def json_with_keys(path: Path, keys: set[str]) -> bool:
    """`path` holds a JSON object with at least `keys`."""
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
        out += [(rel / d).as_posix() + "/" for d in dirnames] + [(rel / f).as_posix() for f in filenames]
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
        names += [f"{top} ({len(files)} files)"] if top in paths and len(files) > 3 else files or [top]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def listed(folder: Path, writer: Writer) -> dict[str, str] | None:
    """The files and sha256 sums the writer's marker in `folder` lists; None without such a marker
    (missing, a link, or another first line)."""
    marker = Path(folder) / writer.marker
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        lines = marker.read_text(encoding="utf-8").splitlines() or [""]
    except (OSError, UnicodeDecodeError):
        return None
    if writer.head and lines[0] != writer.head:
        return None
    return {path: digest for digest, _, path in (line.partition("  ") for line in lines[1:])}


def is_marked(folder: Path, writer: Writer) -> bool:
    return listed(folder, writer) is not None


def check_folder(folder: Path, writer: Writer, flag: str, given: str | Path | None = None) -> None:
    """Refuse (NotOurFolder) a folder `writer` may not write into: one that exists, is not empty and
    carries no marker of the writer's; a file where a folder goes."""
    folder = Path(folder)
    given = folder if given is None else given
    if folder.exists() and not folder.is_dir():
        raise NotOurFolder(f"{flag} {given}: is a file, not a folder")
    if not folder.is_dir() or is_marked(folder, writer):
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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_paths(folder: Path, writer: Writer) -> list[str] | None:
    """What replacing the folder would remove that the writer did not write, as it wrote it:
    None without its marker, [] when the folder holds only what the marker lists, unchanged."""
    ours = listed(folder, writer)
    if ours is None:
        return None
    dirs = {"/".join(p.split("/")[:i]) + "/" for p in ours for i in range(1, p.count("/") + 1)}
    foreign = []
    for entry in entries(folder):
        path = folder / entry
        if entry == writer.marker or (entry in dirs and path.is_dir() and not path.is_symlink()):
            continue
        if entry not in ours or path.is_symlink() or not path.is_file():
            foreign.append(entry)
        elif _sha256(path) != ours[entry]:
            foreign.append(f"{entry} (changed since {writer.made})")
    return foreign


def check_replaceable(output: Path, writer: Writer, flag: str = "--output") -> None:
    """Refuse (FileExistsError) unless `output` is missing, empty, or holds what the writer wrote and
    nothing else (foreign_paths)."""
    check_folder(output, writer, flag, output)
    foreign = foreign_paths(output, writer)
    if foreign:
        raise FileExistsError(
            f"{output} holds what `{writer.command}` did not write: refusing to replace it; "
            f"replacing it would have removed: {summarize(foreign)}"
        )


def write_listed(
    output: Path, writer: Writer, fill: Callable[[Path], None], *, overwrite: bool, flag: str = "--output"
) -> Path:
    """`fill` a temporary sibling of `output`, list it in the writer's marker, and rename it into place:
    a failure while filling leaves `output` as it was. An existing `output` is replaced only with
    `overwrite`, and only when it holds what the writer wrote, unchanged; an empty one is filled.

    The old folder is renamed aside (`.NAME.old-PID`), the new one renamed in, the old one removed:
    a kill between the two renames leaves no `output`, the old folder whole beside it."""
    output = Path(output).resolve()
    check_folder(output, writer, flag, output)  # a file, or a folder the writer did not write
    if output.is_dir() and any(output.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{output} exists (pass --overwrite to replace it)")
        check_replaceable(output, writer, flag)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        # mkdtemp makes it 0700: a written folder is for everyone to read; a setgid parent's bit stays
        tmp.chmod((0o777 & ~umask()) | (tmp.stat().st_mode & stat.S_ISGID))
    except OSError as e:
        raise OSError(f"cannot write {output}: {e.strerror or e}") from None
    old = output.with_name(f".{output.name}.old-{os.getpid()}")
    try:
        fill(tmp)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        lines = [writer.head] + [f"{_sha256(f)}  {f.relative_to(tmp).as_posix()}" for f in files]
        (tmp / writer.marker).write_text("\n".join(lines) + "\n", encoding="utf-8")
        if output.exists():
            output.rename(old)
        tmp.rename(output)
    except BaseException:
        if old.exists() and not output.exists():
            old.rename(output)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return output
