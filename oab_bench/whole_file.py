"""A file replaced whole or not at all: written beside it, then renamed over it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except OSError:
        return 0o022


def replace_whole(path: Path, chunks: Iterable[bytes], *, mode: int | None = None) -> None:
    """Readers see the old file or the new one; a failure leaves `path` as it was and nothing beside it.
    `mode` defaults to what open() would give under the umask (not mkstemp's 0600)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(fd, 0o666 & ~umask() if mode is None else mode)
            f.writelines(chunks)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
