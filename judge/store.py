"""An append-only, crash-safe store of finished judgments, keyed by everything that determines them.

One JSON line per `ok` judgment, written with a single append, flushed and fsynced under a
file lock, so a run killed mid-way loses at most the judgment in flight; a torn last line
is ignored on load. Failures are not stored: a rerun tries them again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from pathlib import Path

from .records import Judgment

logger = logging.getLogger(__name__)
STORE_FILE = "judgments.jsonl"


def cache_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "judge"


class JudgmentStore:
    def __init__(self, folder: Path | str | None, *, read: bool = True):
        self.path = Path(folder) / STORE_FILE if folder else None
        self._items: dict[str, Judgment] = {}
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                self._seal_torn_line()
                if read:
                    self._load()

    def _seal_torn_line(self) -> None:
        """A run killed mid-write may leave a line without its newline: end it so appends start clean."""
        assert self.path is not None
        with self.path.open("rb+") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() and (f.seek(-1, os.SEEK_END) or f.read(1) != b"\n"):
                f.write(b"\n")

    def _load(self) -> None:
        assert self.path is not None
        with self.path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    j = Judgment.model_validate_json(line)
                except ValueError:
                    logger.warning(
                        "%s:%d: unreadable cache line skipped (interrupted write?)", self.path, lineno
                    )
                    continue
                self._items[j.cache_key] = j

    def get(self, key: str) -> Judgment | None:
        return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)

    def put(self, judgment: Judgment) -> None:
        if judgment.status != "ok":
            return
        self._items[judgment.cache_key] = judgment
        if not self.path:
            return
        line = (judgment.model_dump_json(exclude={"cached"}) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
