"""A file replaced whole or not at all: written beside it, then renamed over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return 0o022


def replace_whole(
    path: Path, chunks: Iterable[bytes], *, mode: int, gid: int | None = None, durable: bool = False
) -> None:
    """Write `chunks` to a new file beside `path` (`.<name>.<random>`, with `mode` and group `gid`)
    and rename it over `path`: a reader opens the old file or the new one, never part of either,
    and any failure (a full disk, Ctrl-C) leaves `path` as it was and no new file behind.
    `durable`: the data and the rename are on disk before this returns."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if gid is not None and os.fstat(fd).st_gid != gid:
                os.fchown(fd, -1, gid)
            os.fchmod(fd, mode)  # not mkstemp's 0600
            f.writelines(chunks)
            if durable:
                f.flush()
                os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
