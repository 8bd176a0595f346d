"""Writing a command's output file: checked before any paid call, then written whole or not at all."""

from __future__ import annotations

from pathlib import Path

from oab_bench.keyed_store import unwritable
from oab_bench.whole_file import replace_whole

MAKE_WRITABLE = "make it writable (group write: chmod g+w, and umask 002 for what runs create)"


def check_output(path: Path, flag: str = "--output") -> None:
    """Fail now, naming the flag, if `path` cannot be written as a file (not after paying to judge)."""
    if Path(path).is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file path")
    if why := unwritable(Path(path).parent):
        raise ValueError(f"{flag} {path}: {why}: {MAKE_WRITABLE} or give another path")


def write_atomic(path: Path, text: str | bytes) -> Path:
    """Nothing half-written (whole_file.py), made with the umask's mode; text as UTF-8."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_whole(path, [text.encode("utf-8") if isinstance(text, str) else text])
    return path
