"""One guard for every command that writes a folder: `run --output-dir`, `probe --output`,
`judge-sweep --output`, `build --output`, `export --output`, and the test model of
benchmarks/tiny_model.py.

A command writes only into a new or empty folder, or one it marked as its own (a marker file
in it), so a mistyped path never replaces someone's files. A folder we wrote before markers
existed is recognised by its command's own `older` test. Each command marks a folder before
writing anything else into it (`claim`); a refusal names the flag, the folder and what it holds.

A command that writes its folder whole (`build`, `export`: `write_listed`) fills a temporary
sibling, lists every file with its sha256 in the marker, and swaps it in; it replaces a folder only
while that folder holds exactly what the marker lists (`check_replaceable`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from oab_bench.whole_file import umask

_SHOWN = 10  # paths named in a refusal
_WALKED = 10_000  # entries looked at to name what a refused folder holds


class Writer(NamedTuple):
    """A command that writes a folder: its name, its marker, and how to know its older folders."""

    command: str  # as the user types it: `oab-bench run`
    marker: str
    head: str = ""  # the marker's first line, where the marker has content
    older: Callable[[Path], bool] | None = None  # a folder of ours from before the marker
    legacy: tuple[str, ...] = ()  # write_listed: what an older, head-only marker stands for
    replacing: str = "--overwrite"  # write_listed: what replaces the folder, as refusals say it

    @property
    def made(self) -> str:
        """`the build`, `the export`: what wrote a listed folder, as refusals say it."""
        return f"the {self.command.split()[-1]}"


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


def marker_text(folder: Path, writer: Writer) -> str:
    """A listing marker: its head line, then one line per file written (sha256, path)."""
    lines = [writer.head]
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != writer.marker):
        lines.append(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(folder).as_posix()}")
    return "\n".join(lines) + "\n"


def listed(folder: Path, writer: Writer) -> dict[str, str] | None:
    """The marker's files and hashes; None without a marker of the writer's, {} for an older head-only one."""
    marker = folder / writer.marker
    try:
        lines = marker.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != writer.head or marker.is_symlink():
        return None
    return {path: digest for digest, _, path in (line.partition("  ") for line in lines[1:])}


def written_files(folder: Path, writer: Writer) -> list[str] | None:
    """The files the writer's marker in `folder` lists (None without such a marker)."""
    found = listed(folder, writer)
    return None if found is None else sorted(found)


def foreign_paths(folder: Path, writer: Writer, *, built: Path | None = None) -> list[str] | None:
    """What replacing the folder would remove that the writer did not write, as it wrote it.

    None: no marker (the whole folder is foreign); [] when it holds only what the writer wrote,
    unchanged. An older marker lists no hashes, so it proves nothing about the files: each must then
    be byte-identical to the same file of `built` (the folder about to replace it), else it is foreign.
    """
    found = listed(folder, writer)
    if found is None:
        return None
    ours: dict[str, str | None] = dict(found) or dict.fromkeys(writer.legacy)
    ours[writer.marker] = None
    parts = [p.split("/") for p in ours]
    dirs = {"/".join(q[:i]) + "/" for q in parts for i in range(1, len(q))}  # every folder above a file
    foreign = []
    for entry in entries(folder):
        path = folder / entry
        if entry in dirs and path.is_dir() and not path.is_symlink():
            continue
        if entry not in ours or path.is_symlink() or not path.is_file():
            foreign.append(entry)
        elif ours[entry] and hashlib.sha256(path.read_bytes()).hexdigest() != ours[entry]:
            foreign.append(f"{entry} (changed since {writer.made})")
        elif not found and entry != writer.marker and not _same_file(path, built / entry if built else None):
            foreign.append(f"{entry} (not verifiable: the marker lists no hashes)")
    return foreign


def _same_file(path: Path, other: Path | None) -> bool:
    return other is not None and other.is_file() and path.read_bytes() == other.read_bytes()


def check_replaceable(
    output: Path, writer: Writer, *, built: Path | None = None, flag: str = "--output"
) -> None:
    """Refuse (FileExistsError) unless `output` holds what the writer wrote and nothing else
    (foreign_paths): a folder without its marker as check_folder refuses one, then what replacing
    it would remove that the writer did not write."""
    check_folder(output, writer, flag, output)
    foreign = foreign_paths(output, writer, built=built)
    if foreign and listed(output, writer) == {}:
        raise FileExistsError(
            f"{output} was written by an older `{writer.command}` whose {writer.marker} lists no file "
            f"hashes, and it differs from this {writer.made.removeprefix('the ')}, so edits there cannot be "
            f"told from ours: refusing to replace it ({summarize(foreign)}); keep what you need and remove "
            f"the folder yourself (rm -r {output}), then {writer.command.split()[-1]} again"
        )
    if foreign:
        raise FileExistsError(
            f"{output} holds what `{writer.command}` did not write: refusing to replace it; "
            f"{writer.replacing} would have removed: {summarize(foreign)}"
        )


def write_listed(
    output: Path, writer: Writer, fill: Callable[[Path], None], *, overwrite: bool, flag: str = "--output"
) -> Path:
    """`fill` a temporary sibling of `output`, list it in the writer's marker, and swap it in: a
    failure at any point leaves `output` as it was. An existing `output` is replaced only with
    `overwrite`, and only when it holds what the writer wrote, unchanged; an empty one is filled."""
    output = Path(output).resolve()
    check_folder(output, writer, flag, output)  # a file, or a folder the writer did not write
    empty = output.is_dir() and not output.is_symlink() and not any(output.iterdir())
    old_marker = False  # a head-only marker: the files are checked against the new folder, once written
    if output.exists() and not empty:  # an empty folder holds nothing to lose: the swap fills it
        if not overwrite:
            raise FileExistsError(f"{output} exists (pass {writer.replacing} to replace it)")
        old_marker = listed(output, writer) == {}
        if not old_marker:
            check_replaceable(output, writer, flag=flag)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
        # mkdtemp makes it 0700: a written folder is for everyone to read; a setgid parent's bit stays
        tmp.chmod((0o777 & ~umask()) | (tmp.stat().st_mode & stat.S_ISGID))
    except OSError as e:
        raise OSError(f"cannot write {output}: {e.strerror or e}") from None
    try:
        fill(tmp)
        (tmp / writer.marker).write_text(marker_text(tmp, writer), encoding="utf-8")
        if old_marker:
            check_replaceable(output, writer, built=tmp, flag=flag)
        swap_in(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output


def exchange(a: Path, b: Path) -> bool:
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


def swap_in(new: Path, output: Path) -> None:
    """Put `new` at `output`: exchanged in one step where Linux can, else the old folder is moved
    aside first and restored if the swap fails."""
    if not output.exists():
        new.rename(output)
        return
    if exchange(new, output):  # `new` now holds the old folder
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
