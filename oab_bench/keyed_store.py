"""The caches' one store: JSON texts by key in a table of an sqlite database (docs/operations.md). `claim`
holds a key across threads and processes: a lock of `<name>.lock`, tried without blocking (no deadlock)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Literal, TypeVar
from urllib.parse import quote

logger = logging.getLogger(__name__)
T = TypeVar("T")
Access = Literal["write", "read"]
APP_ID = 0x4F414242  # sqlite's application_id of our stores ("OABB")
READ_ONLY_ENV = "OAB_CACHE_READ_ONLY"  # "1" (--cache-read-only): stores opened to read only
FIX = "make it writable (group write: chmod g+w, and umask 002 for what is created) or use another folder"
_HELD: set[tuple[str, int]] = set()  # (lock file, offset) held by this process's threads and coroutines
_FDS: dict[str, int] = {}  # lock file -> the one descriptor this process's record locks go through
_HOLDS = threading.Lock()


class StoreError(ValueError):
    """A store that cannot be opened as asked: a file where its folder should be, a file not ours."""


class NotWritable(StoreError):
    """A store this user cannot write, opened to write."""


def allowed(path: Path, mode: int) -> bool:
    """Whether this process may open `path` so (`os.W_OK`...), with the ids open() would use."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def unwritable(folder: Path, files: tuple[Path, ...] = ()) -> str | None:
    """Why this process could not create `folder` (if missing) and write `files` in it; None if it can."""
    try:
        probe = next(p for p in (folder, *folder.parents) if p.exists())
    except OSError as e:
        return f"{e.filename or folder}: {e.strerror or e}"
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if not allowed(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user" + ("" if probe == folder else f" (to create {folder})")
    refused = [p for p in files if p.exists() and not allowed(p, os.W_OK)]
    return f"{refused[0]} is not writable by this user" if refused else None


def env_access() -> Access:
    return "read" if os.environ.get(READ_ONLY_ENV) == "1" else "write"


def check_store(path: Path, *, write: bool = False) -> sqlite3.Connection | None:
    """Refuse (creating nothing) a file for the folder or a database not ours; else its connection, if any."""
    folder = path.parent
    first = next(p for p in (folder, *folder.parents) if p.exists())
    if not first.is_dir():
        where = "" if first == folder else f"{first} "
        why = f"is a file, not a folder (a cache is a folder holding {path.name})"
        raise StoreError(f"{folder}: {where}{why}")
    if not path.exists():
        return None
    uri = f"file:{quote(str(path))}" + ("" if write else "?mode=ro")
    db = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None, check_same_thread=False)
    try:
        # one statement, one snapshot: a process creating the store beside this one is seen before or after
        snapshot = (
            "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master)"
        )
        app, tables = db.execute(snapshot).fetchone()
        if app != APP_ID and (app or tables):
            raise sqlite3.DatabaseError("another application's database")
        if write and app != APP_ID:  # an empty file: ours before it has any table
            db.execute(f"PRAGMA application_id = {APP_ID}")
    except sqlite3.DatabaseError as e:
        db.close()
        why = "left as it is; use another cache folder"
        raise StoreError(f"{path}: not an oab-bench store ({e}): {why}") from None
    return db


class KeyedStore(Generic[T]):
    """`table` of the database at `path` (None: in memory); `parse` makes a value of a text (None or
    ValueError: skipped). `read=False` serves only what this process put (judge or generate again)."""

    def __init__(self, path, table: str, parse: Callable, *, access: Access = "write", read: bool = True):
        self.path = self.lock_path = None if path is None else Path(path).absolute()
        self._ident = str(id(self))  # whose holds its claims are: its lock file's, once it has one
        self.table, self._parse, self._read = table, parse, read
        self._memory: dict[str, str] = {}  # texts not in the database: not written, or not read
        self._pending: list[tuple[str, str | None]] = []  # written, waiting for commit number _batch
        self._batch, self._done, self._queue = 1, 0, threading.Lock()  # _done: the last commit made
        self._mutex = threading.Lock()  # the connection and its transactions
        self._db = None
        self.why_not_writable = "opened to read only" if path else "held in memory only"
        if self.path is None:
            return
        self.lock_path = self.path.with_suffix(".lock")
        self._ident = os.path.realpath(self.lock_path)
        # opened to write when it may be: a killed writer's journal is rolled back, not refused as read-only
        self._db = check_store(self.path, write=access == "write" and allowed(self.path, os.W_OK))
        if access == "write":
            self.why_not_writable = unwritable(self.path.parent, (self.path, self.lock_path))
            if self.why_not_writable:
                raise NotWritable(f"{self.why_not_writable}: {FIX}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666))  # sqlite's would be 0644
            self._db = check_store(self.path, write=True)
            self._db.execute("PRAGMA journal_mode = DELETE")
            columns = "key TEXT PRIMARY KEY, value BLOB NOT NULL"
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        elif self._db and not self._rows("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)):
            self._db = None  # nothing stored in this table yet
        self._rows(f"SELECT key, value FROM {table} LIMIT 0")  # a table of another shape: refused now

    @property
    def writable(self) -> bool:
        return self.why_not_writable is None

    def _rows(self, sql: str, args: tuple = ()) -> list:
        with self._mutex:
            try:
                return self._db.execute(sql, args).fetchall() if self._db else []
            except sqlite3.DatabaseError as e:
                raise StoreError(f"{self.path}: table {self.table}: {e}") from None

    def _value(self, key: str, text: str | bytes) -> T | None:
        try:
            return self._parse(text if isinstance(text, str) else text.decode())
        except ValueError as e:  # UnicodeDecodeError and pydantic's ValidationError are ValueErrors
            why = str(e).split("\n")[0]
            logger.warning("%s: %s %s: unreadable row skipped (%s)", self.path, self.table, key, why)
            return None

    def get(self, key: str) -> T | None:
        text = self._memory.get(key)
        if text is None and self._read:
            text = next(iter(self._rows(f"SELECT value FROM {self.table} WHERE key = ?", (key,))), [None])[0]
        return None if text is None else self._value(key, text)

    def items(self) -> dict[str, T]:
        texts = dict(self._rows(f"SELECT key, value FROM {self.table}")) if self._read else {}
        texts.update(self._memory)
        return {key: value for key, text in texts.items() if (value := self._value(key, text)) is not None}

    def __len__(self) -> int:
        return len(self.items())

    def __bool__(self) -> bool:  # a store, however empty: `if store` never reads it whole
        return True

    def write(self, pairs: list[tuple[str, str | None]]) -> bool:
        """Store each (key, JSON text or None: delete), committed on return, one commit for what other
        threads wrote meanwhile. False: held in memory only."""
        if not self.writable or not self._read:
            self._memory.update(pairs)
        if not self.writable:
            return False
        with self._queue:
            self._pending += pairs
            mine = self._batch
        with self._mutex:
            if self._done >= mine:  # committed by the commit another thread made meanwhile
                return True
            with self._queue:
                group, self._pending, number = self._pending, [], self._batch
                self._batch += 1
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    gone = [(key,) for key, text in group if text is None]
                    self._db.executemany(f"DELETE FROM {self.table} WHERE key = ?", gone)
                    kept = [(key, text.encode()) for key, text in group if text is not None]
                    self._db.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", kept)
            except BaseException:
                with self._queue:  # for the next commit: their writers wait for it
                    self._pending[:0] = group
                raise
            self._done = number
        return True

    def _try_hold(self, offset: int) -> bool:
        with _HOLDS:
            if (self._ident, offset) in _HELD:
                return False
            if self.writable:
                if self._ident not in _FDS:  # kept open: closing any descriptor drops the process's locks
                    _FDS[self._ident] = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.lockf(_FDS[self._ident], fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                except (BlockingIOError, PermissionError):  # EAGAIN, EACCES: another process holds it
                    return False
            _HELD.add((self._ident, offset))
            return True

    def _release(self, offset: int) -> None:
        with _HOLDS:
            _HELD.discard((self._ident, offset))
            if self._ident in _FDS:
                fcntl.lockf(_FDS[self._ident], fcntl.LOCK_UN, 1, offset)

    def _pauses(self, offset: int):
        pause = 0.01
        while not self._try_hold(offset):
            yield pause
            pause = min(pause * 2, 0.2)

    @contextlib.contextmanager
    def claim(self, key: str):
        """Hold `key`: other threads and processes claiming it wait."""
        offset = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)
        for pause in self._pauses(offset):
            time.sleep(pause)
        try:
            yield
        finally:
            self._release(offset)

    @contextlib.asynccontextmanager
    async def aclaim(self, key: str):
        offset = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)
        for pause in self._pauses(offset):
            await asyncio.sleep(pause)
        try:
            yield
        finally:
            self._release(offset)
