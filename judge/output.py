"""Writing a command's output file: checked before any paid call, then written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from oab_bench.keyed_store import allowed


def check_output(path: Path, flag: str = "--output") -> None:
    """Fail now, naming the flag, if `path` cannot be written as a file: a command that judges
    first would otherwise find out after paying for every judgment."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file path")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:  # the folders write_atomic would make
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {path}: {parent} is a file, not a folder")
    if not allowed(parent, os.W_OK | os.X_OK):
        raise ValueError(
            f"{flag} {path}: cannot write in {parent} (permission denied): make it writable (group "
            "write: chmod g+w, and umask 002 for what runs create) or give another path"
        )


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return 0o022


def write_atomic(path: Path, text: str | bytes) -> Path:
    """Nothing half-written: the file appears whole or not at all, and a failure (a folder in the
    way, a full disk) leaves no temporary file behind. Text is written as UTF-8."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would make it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path
