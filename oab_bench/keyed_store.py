"""The caches' one store: JSON values by key in a table of an sqlite database in a cache folder.

The answer store, the judgment cache and its batch state are tables of it. Rollback journal, not
WAL (WAL needs a writable `-shm` beside the file: no read-only copy, no network file system); a
writer waits for another's commit (busy timeout), and a commit is whole or absent, so a killed
process loses at most what it had not committed.

- Claims: `claim(key)` (threads) and `aclaim(key)` (the event loop) hold a key while its value is
  paid for; whoever waited reads the value instead of paying again. A claim is an in-process hold
  (threads, coroutines) plus a one-byte record lock at a key-derived offset of `<name>.lock`
  (processes; the kernel drops it when a process dies), both tried without blocking and retried:
  a blocking record lock can be refused as a "deadlock" between threads of two processes.
- Modes: files are created 0666 and folders 0777, less the umask, so a setgid folder and umask 002
  make them the team's (sqlite gives its journal the database file's mode).
- Access: "write" refuses a store this user cannot write, naming the path and the fix; "read" (a
  look, `--cache-read-only`, a cache it cannot write) opens it `mode=ro` and creates, writes and
  locks nothing: what this process stores then lives in its memory only.
- A file that is not one of our stores is refused and left as it is; a row that does not parse is
  skipped with a warning naming file, table and key.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
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
POLL_FIRST_S, POLL_MAX_S = 0.01, 0.2


class StoreError(ValueError):
    """A store cannot be opened as asked (a file where its folder should be, a file not ours, a
    folder this user cannot write)."""


class NotWritable(StoreError):
    pass


def umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread)."""
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))


def allowed(path: Path, mode: int) -> bool:
    """Whether this process may open `path` so (`os.W_OK`...): checked with the ids (and
    capabilities) an open would use, not the real ids `os.access` uses by default."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def unwritable(folder: Path, files: tuple[Path, ...] = ()) -> str | None:
    """Why this process could not create `folder` (if missing) and write `files` in it; None if it can."""
    folder = Path(folder)
    probe = folder
    try:
        while not probe.exists():
            if probe == probe.parent:
                return f"{folder}: no folder above it exists"
            probe = probe.parent
    except OSError as e:
        return f"{probe}: {e.strerror or e}"
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if not allowed(probe, os.W_OK | os.X_OK):
        where = "" if probe == folder else f" (to create {folder})"
        return f"{probe} is not writable by this user{where}"
    for path in files:
        if path.exists() and not allowed(path, os.W_OK):
            return f"{path} is not writable by this user"
    return None


def env_access() -> Access:
    """How a process started by `oab-bench run` opens its stores (READ_ONLY_ENV)."""
    return "read" if os.environ.get(READ_ONLY_ENV) == "1" else "write"


def check_store(path: Path) -> None:
    """What opening the store at `path` would refuse, checked without creating or writing anything:
    a file where its folder should be, a file that is not one of our stores."""
    folder = Path(path).parent
    first = next(p for p in (folder, *folder.parents) if p.exists())
    if not first.is_dir():
        where = "" if first == folder else f"{first} "
        raise StoreError(
            f"{folder}: {where}is a file, not a folder (a cache is a folder holding {path.name})"
        )
    if Path(path).exists():
        _connect(Path(path), write=False).close()


def _connect(path: Path, *, write: bool) -> sqlite3.Connection:
    """A connection to our store at `path` (an empty file becomes one when `write`); StoreError for
    a file that is not one."""
    uri = f"file:{quote(str(path))}" + ("" if write else "?mode=ro")
    db = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None, check_same_thread=False)
    try:
        app = db.execute("PRAGMA application_id").fetchone()[0]
        if app != APP_ID and (app or db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]):
            raise sqlite3.DatabaseError("another application's database")
        if write:
            db.execute("PRAGMA journal_mode = DELETE")
        if write and app != APP_ID:  # an empty file: ours before it has any table
            db.execute(f"PRAGMA application_id = {APP_ID}")
    except sqlite3.DatabaseError as e:
        db.close()
        raise StoreError(
            f"{path}: not an oab-bench store ({e}): left as it is; use another cache folder"
        ) from None
    return db


class _Holds:
    """This process's holds on one store: the keys' offsets its threads and coroutines hold, and the
    lock file's descriptor their record locks go through, open while any is held (closing any
    descriptor of the file would drop every record lock this process has on it)."""

    def __init__(self):
        self.offsets: set[int] = set()
        self.fd: int | None = None

    def idle(self) -> None:
        if self.fd is not None and not self.offsets:
            os.close(self.fd)
            self.fd = None


_HOLDS: dict[object, _Holds] = {}
_HOLDS_MUTEX = threading.Lock()


def _offset(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)


class KeyedStore(Generic[T]):
    """JSON texts by key in `table` of the database at `path` (None: in memory only); `parse` makes
    a value of a text (None: not one to serve) or raises ValueError (an unreadable row, skipped).
    `read=False` serves only what this process stored (generate or judge again, still storing)."""

    def __init__(
        self,
        path: Path | str | None,
        table: str,
        parse: Callable[[str], T | None],
        *,
        access: Access = "write",
        read: bool = True,
    ):
        self.path = None if path is None else Path(path).absolute()
        self.table, self._parse, self._read = table, parse, read
        self._memory: dict[str, str] = {}  # texts not in the database: it is not written, or not read
        self._warned: set[str] = set()
        self._mutex = threading.Lock()  # the connection, shared by this process's threads
        self._db: sqlite3.Connection | None = None
        self._ident: object = id(self)
        self.why_not_writable: str | None = "in memory only"
        if self.path is None:
            return
        self._ident = os.path.realpath(self.path)
        self.lock_path = self.path.with_suffix(".lock")
        check_store(self.path)
        self.why_not_writable = "opened to read only"
        if access == "write":
            self.why_not_writable = unwritable(self.path.parent, (self.path, self.lock_path))
            if self.why_not_writable:
                raise NotWritable(f"{self.why_not_writable}: {FIX}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666))  # sqlite's own would be 0644
        if self.path.exists():
            self._db = _connect(self.path, write=self.writable)
            if self.writable:
                self._db.execute(
                    f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
                )
            elif not self._rows("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)):
                self._db.close()
                self._db = None  # nothing stored in this table yet
            self._rows(f"SELECT key, value FROM {table} LIMIT 0")  # a table of another shape: refused now

    @property
    def writable(self) -> bool:
        return self.why_not_writable is None

    def _rows(self, sql: str, args: tuple = ()) -> list:
        if self._db is None:
            return []
        with self._mutex:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as e:
                raise StoreError(f"{self.path}: table {self.table}: {e}") from None

    def _value(self, key: str, raw: str | bytes) -> T | None:
        try:
            return self._parse(raw if isinstance(raw, str) else raw.decode())
        except ValueError as e:  # UnicodeDecodeError and pydantic's ValidationError are ValueErrors
            if key not in self._warned:
                self._warned.add(key)
                why = str(e).splitlines()[0]
                logger.warning("%s: %s %s: unreadable row skipped (%s)", self.path, self.table, key, why)
            return None

    def get(self, key: str) -> T | None:
        raw = self._memory.get(key)
        if raw is None and self._read:
            found = self._rows(f"SELECT value FROM {self.table} WHERE key = ?", (key,))
            raw = found[0][0] if found else None
        return None if raw is None else self._value(key, raw)

    def items(self) -> dict[str, T]:
        """Every value it serves: the table's rows (when read) and those held in memory."""
        raw = dict(self._rows(f"SELECT key, value FROM {self.table}")) if self._read else {}
        raw.update(self._memory)
        return {key: value for key, text in raw.items() if (value := self._value(key, text)) is not None}

    def __len__(self) -> int:
        return len(self.items())

    def put(self, pairs: list[tuple[str, str]]) -> bool:
        """Store each (key, JSON text) in one commit; False when the store is not written (they are
        then held in memory, for this process)."""
        if not self.writable or not self._read:
            self._memory.update(pairs)
        if not self.writable:
            return False
        with self._mutex, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", [(k, t.encode()) for k, t in pairs]
            )
        return True

    def update(self, key: str, change: Callable[[T | None], str]) -> None:
        """Store `change(value now)` in one transaction: no other process writes in between."""
        if not self.writable:
            raise NotWritable(f"{self.path}: {self.why_not_writable}")
        with self._mutex, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            row = self._db.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
            text = change(None if row is None else self._value(key, row[0]))
            self._db.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", (key, text.encode()))

    def _try_hold(self, offset: int) -> bool:
        with _HOLDS_MUTEX:
            holds = _HOLDS.setdefault(self._ident, _Holds())
            if offset in holds.offsets:
                return False
            if self.writable:
                if holds.fd is None:
                    holds.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.lockf(holds.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                except OSError as e:
                    if e.errno not in (errno.EACCES, errno.EAGAIN):
                        raise
                    holds.idle()
                    return False
            holds.offsets.add(offset)
            return True

    def _release(self, offset: int) -> None:
        with _HOLDS_MUTEX:
            holds = _HOLDS[self._ident]
            holds.offsets.discard(offset)
            if holds.fd is not None:
                fcntl.lockf(holds.fd, fcntl.LOCK_UN, 1, offset)
            holds.idle()

    def _pauses(self, offset: int):
        """The waits between tries to hold `offset`, doubling up to POLL_MAX_S; they end once it is held."""
        pause = POLL_FIRST_S
        while not self._try_hold(offset):
            yield pause
            pause = min(pause * 2, POLL_MAX_S)

    @contextlib.contextmanager
    def claim(self, key: str):
        """Hold `key` (a thread): other threads and processes claiming it wait."""
        for pause in self._pauses(_offset(key)):
            time.sleep(pause)
        try:
            yield
        finally:
            self._release(_offset(key))

    @contextlib.asynccontextmanager
    async def aclaim(self, key: str):
        """`claim` for the event loop: waiting never blocks the loop."""
        for pause in self._pauses(_offset(key)):
            await asyncio.sleep(pause)
        try:
            yield
        finally:
            self._release(_offset(key))
