"""An append-only, crash-safe store of finished judgments, keyed by everything that determines them.

One JSON line per `ok` judgment, written with a single append under a file lock and then
fsynced, so a run killed mid-way loses at most the judgment in flight; a torn last line
is ignored on load, and so is any line that does not read (not UTF-8, not JSON), with a
warning naming the file. Failures are not stored: a rerun tries them again.

Processes sharing a store do not pay twice for one judgment: `claim(key)` holds a lock on
that key (a byte-range lock in `judgments.lock`) while it is judged, and a process that
waited for it reads the other's judgment instead of calling the judge.

Lean on the event loop: `append` writes its line at once (one `write` to the page cache: from
then on other processes read it, and a killed process keeps it) and leaves the fsync to one
background thread that syncs whatever was written meanwhile (group commit), so no judgment waits
for a thread to be woken for its own fsync (figures: docs/performance.md). `synced()` awaits
every fsync in flight (a run's end); the lines this process wrote are not read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE as STORE_FILE
from oab_bench.judge.records import Judgment

logger = logging.getLogger(__name__)
_SYNCING: set[asyncio.Task] = set()  # every store's background fsync in flight


async def synced() -> None:
    """Wait until every line appended on this event loop, by any store, is fsynced; a failed
    fsync (a disk error) is raised here, however long ago it failed, never lost."""
    loop = asyncio.get_running_loop()
    while True:
        mine = [t for t in _SYNCING if t.get_loop() is loop]
        for task in mine:
            if task.done():
                _SYNCING.discard(task)
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()
        pending = [t for t in mine if not t.done()]
        if not pending:
            return
        await asyncio.wait(pending)


def _synced_one(task: asyncio.Task) -> None:
    """A finished fsync task leaves the set, unless it failed: then synced() raises it."""
    if task.cancelled() or task.exception() is None:
        _SYNCING.discard(task)
    else:
        logger.warning("judgment store: fsync failed (%s); the run will stop with it", task.exception())


class StoreError(ValueError):
    """The cache path cannot hold our store (a file, or a folder holding someone else's file)."""


def cache_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "judge"


def _not_a_folder(path: Path) -> StoreError:
    return StoreError(f"{path}: not a folder (a judgment cache is a folder holding {STORE_FILE})")


def check_folder(folder: Path | str) -> None:
    """What opening a store at `folder` would refuse, checked without creating or writing
    anything: for a command whose store is opened later, elsewhere (`oab-bench run`'s task), to
    fail before any work, naming its own flag."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise _not_a_folder(folder)
    if (folder / STORE_FILE).is_file():
        _refuse_foreign(folder / STORE_FILE)


def _refuse_foreign(path: Path) -> None:
    """Refuse a file with lines but no judgment of ours (another tool's `judgments.jsonl`, or
    `oab-bench run`'s output, whose lines carry no cache key): appending would mix our lines
    into it. Reads up to our first line, so a store of ours costs one line; a torn last line
    (a kill during the first write) is not a line yet."""
    lines = 0
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            if not raw.strip():
                continue
            lines += 1
            try:
                if Judgment.model_validate_json(raw.decode("utf-8")).cache_key:
                    return
            except (UnicodeDecodeError, ValueError):
                pass
    if lines:
        raise StoreError(
            f"{path}: not an oab-bench judgment store ({lines} line(s), none a judgment with "
            "a cache key): left as it is; use another cache folder"
        )


class JudgmentStore:
    def __init__(self, folder: Path | str | None, *, read: bool = True):
        self.path = Path(folder) / STORE_FILE if folder else None
        self._items: dict[str, Judgment] = {}
        self._offset = 0  # bytes of the file read so far, and their lines
        self._lines = 0
        self._read = read
        self._lock_fd: int | None = None
        self._local: dict[str, asyncio.Lock] = {}
        self._guard = threading.Lock()  # the read offset, shared by the loop and threads calling `put`
        self._unsynced = False  # lines written since the last fsync began
        self._syncer: asyncio.Task | None = None
        if self.path:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise _not_a_folder(self.path.parent) from None
            if self.path.exists():
                _refuse_foreign(self.path)  # before the seal: a file not ours is never written to
                self._seal_torn_line()
            self.refresh()

    def _seal_torn_line(self) -> None:
        """A run killed mid-write may leave a line without its newline: end it so appends start clean."""
        assert self.path is not None
        with self.path.open("rb+") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() and (f.seek(-1, os.SEEK_END) or f.read(1) != b"\n"):
                f.write(b"\n")

    def refresh(self) -> None:
        """Read what was appended since the last read (by this process or another)."""
        if not self.path or not self._read:
            return
        with self._guard:
            try:
                if os.stat(self.path).st_size == self._offset:
                    return
            except FileNotFoundError:
                return
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line still being written by another process waits
            for raw in data[:end].split(b"\n")[:-1]:
                self._lines += 1
                if raw.strip():
                    self._add(raw, self._lines)
            self._offset += end

    def _add(self, raw: bytes, lineno: int) -> None:
        try:
            j = Judgment.model_validate_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else "not a judgment"
            logger.warning("%s:%d: unreadable cache line skipped (%s)", self.path, lineno, why)
            return
        self._items[j.cache_key] = j

    def get(self, key: str) -> Judgment | None:
        return self._items.get(key)

    def judgments(self) -> list[Judgment]:
        """Every judgment held (read from the file or written by this process)."""
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    @contextlib.asynccontextmanager
    async def claim(self, key: str):
        """Hold `key` while it is judged: other coroutines and processes sharing the store wait."""
        lock = self._local.setdefault(key, asyncio.Lock())
        async with lock:
            if not self.path:
                yield
                return
            start = int(key[:12], 16)
            fd = self._lock_file()
            while True:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, start)
                    break
                except OSError:
                    await asyncio.sleep(0.2)
            try:
                self.refresh()  # another process may have judged it while we waited
                yield
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, start)

    def _lock_file(self) -> int:
        if self._lock_fd is None:
            assert self.path is not None
            self._lock_fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        return self._lock_fd

    def put(self, judgment: Judgment) -> None:
        """Store an `ok` judgment now (blocking: the write is fsynced before it returns)."""
        if judgment.status != "ok":
            return
        self._items[judgment.cache_key] = judgment
        if self.path:
            self._write(self._line(judgment))

    async def append(self, judgment: Judgment) -> None:
        """`put` for the event loop: the line is written before this returns (visible to other
        processes, kept if this one is killed); its fsync runs in the background, grouped with
        the lines written meanwhile; `synced()` waits for it."""
        if judgment.status != "ok":
            return
        self._items[judgment.cache_key] = judgment
        if not self.path:
            return
        self._append(self._line(judgment))
        self._unsynced = True
        if self._syncer is None or self._syncer.done():
            self._syncer = asyncio.create_task(self._sync_loop())
            _SYNCING.add(self._syncer)
            self._syncer.add_done_callback(_synced_one)

    async def _sync_loop(self) -> None:
        while self._unsynced:
            self._unsynced = False
            await asyncio.to_thread(self._fsync)

    def _fsync(self) -> None:
        assert self.path is not None
        fd = os.open(self.path, os.O_RDONLY)  # fsync syncs the file, whichever descriptor wrote it
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _line(judgment: Judgment) -> bytes:
        return (judgment.model_dump_json(exclude={"cached"}) + "\n").encode()

    def _write(self, data: bytes) -> None:
        """Append `data` and fsync it before returning."""
        self._append(data)
        self._fsync()

    def _append(self, data: bytes) -> None:
        """Append `data` (whole lines) in one write under the file lock; when nobody else wrote
        since our last read, move the read offset past it: this process never parses its own
        lines again."""
        assert self.path is not None
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with self._guard:
                before = os.fstat(fd).st_size
                os.write(fd, data)
                if before == self._offset:
                    self._offset += len(data)
                    self._lines += data.count(b"\n")
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
