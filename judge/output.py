"""Writing a command's output file: checked before any paid call, then written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from oab_bench.keyed_store import umask, unwritable


def check_output(path: Path, flag: str = "--output") -> None:
    """Fail now, naming the flag, if `path` cannot be written as a file: a command that judges
    first would otherwise find out after paying for every judgment."""
    if Path(path).is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file path")
    if why := unwritable(Path(path).parent):
        raise ValueError(
            f"{flag} {path}: {why}: make it writable (group write: chmod g+w, and umask 002 for what "
            "runs create) or give another path"
        )


def write_atomic(path: Path, text: str | bytes) -> Path:
    """Written beside `path` and renamed over it: it appears whole or not at all, and a failure (a
    folder in the way, a full disk) leaves nothing behind. Made as open() would (the umask's mode)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(fd, 0o666 & ~umask())  # not mkstemp's 0600
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
