"""One append-only file of keyed JSON lines, shared safely by any number of threads and processes.

The judgment cache (judge/grading/judgment_store.py), the answer store
(judge/generation/answer_store.py) and the batch log (judge/grading/batch/state.py) are each one of these; they differ only in what a line holds.

- Writing: a line is appended whole, with one `write` under `flock` on a descriptor opened for
  that write (flock belongs to the open file, so threads and processes exclude each other
  alike); the writer first ends a torn last line (a process killed mid-write), under that lock.
- Reading: only up to the last newline (a line still being written waits), only what was
  appended since the last read, never this process's own lines; an unreadable line is
  skipped with a warning naming file and line.
- Keys: `claim(key)` (threads) and `aclaim(key)` (the event loop) hold a key while its value
  is paid for; whoever waited reads the value instead of paying again. A claim is an
  in-process hold on the key (shared by every store on that file in this process) plus a
  one-byte record lock at a key-derived offset of `<name>.lock`, both taken without blocking
  and retried: a record lock belongs to the process, and a thread that waited for one in the
  kernel while another thread held a key was told "deadlock" (EDEADLK) when a second process
  did the same.
- Compaction: `compact(rewrite)` writes the file anew without what a store no longer needs,
  under the writers' flock, and renames it over; a writer or reader that opened the old file
  sees the inode change and opens the new one, so no append is lost and no reader mixes the two.
- Modes: files are created 0o666 and folders 0o777, so the umask and a setgid parent decide; a
  compacted file keeps the mode and group of the one it replaces.
- Access: "write" (the default) refuses a store it cannot write, naming the path; "either"
  serves a store it cannot write (a read-only folder, file or mount) and keeps new values in
  memory only; "read" never creates, writes or write-locks anything. A read-only claim waits
  for a writer holding the key, then lets writers go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import glob
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Literal, TypeVar

from oab_bench.whole_file import replace_whole

logger = logging.getLogger(__name__)
T = TypeVar("T")
Access = Literal["write", "either", "read"]
FILE_MODE = 0o666  # the umask takes away what the user does not give
POLL_FIRST_S, POLL_MAX_S = 0.01, 0.2
READ_ONLY_ENV = "OAB_CACHE_READ_ONLY"  # "1" (--cache-read-only): stores opened "either", not "write"
FIX = "make it writable (group write: chmod g+w, and umask 002 for what is created) or use another folder"


class Unreadable(ValueError):
    """A parser's refusal of one line, its message the reason (said where the line is skipped)."""


class StoreError(ValueError):
    """A store cannot be opened as asked (a file where its folder should be, someone else's
    file, a folder this user cannot write)."""


class NotWritable(StoreError):
    pass


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
    return "either" if os.environ.get(READ_ONLY_ENV) == "1" else "write"


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _offset(key: str) -> int:
    """Where a key's record lock lies in the lock file (keys are hex digests; anything else is hashed)."""
    try:
        return int(key[:12], 16)
    except ValueError:
        import hashlib

        return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)


class _LockFile:
    """This process's holds on one lock file: the keys its threads and coroutines hold, and the one
    descriptor their record locks go through, open while any key is held (closing any descriptor
    of the file would drop every record lock this process has on it)."""

    def __init__(self, path: Path):
        self.path = path
        self.mutex = threading.Lock()
        self.held: set[int] = set()
        self.fd: int | None = None
        self.fd_writes = False

    def try_hold(self, offset: int, write: bool) -> bool:
        """Hold `offset` if no thread of ours and no other process holds it. A writer keeps its record
        lock; a reader only checks that no writer holds one (it never holds writers back)."""
        with self.mutex:
            if offset in self.held or (write and self.fd is not None and not self.fd_writes and self.held):
                return False
            fd = self._open(write)
            if fd is not None:
                try:
                    fcntl.lockf(fd, (fcntl.LOCK_EX if write else fcntl.LOCK_SH) | fcntl.LOCK_NB, 1, offset)
                except OSError as e:
                    if e.errno not in (errno.EACCES, errno.EAGAIN):
                        raise
                    self._close_if_idle()
                    return False
                if not write:
                    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
            self.held.add(offset)
            return True

    def release(self, offset: int) -> None:
        with self.mutex:
            if self.fd is not None:
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, offset)
            self.held.discard(offset)
            self._close_if_idle()

    def _open(self, write: bool) -> int | None:
        """The descriptor: read-write for a writer (the file is created); read-only for a reader, when
        the file exists (None: no writer ever locked anything, nothing to wait for)."""
        if self.fd is not None and write and not self.fd_writes:  # nothing held: reopen to write
            os.close(self.fd)
            self.fd = None
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT if write else os.O_RDONLY, FILE_MODE)
            except (FileNotFoundError, PermissionError):
                if write:
                    raise
                return None
            self.fd_writes = write
        return self.fd

    def _close_if_idle(self) -> None:
        if self.fd is not None and not self.held:
            os.close(self.fd)
            self.fd = None


_LOCK_FILES: dict[Path, _LockFile] = {}
_LOCK_FILES_MUTEX = threading.Lock()


def _lock_file(path: Path) -> _LockFile:
    """One per file in this process, whatever path (a symlink, a relative one) names it."""
    path = Path(os.path.realpath(path))
    with _LOCK_FILES_MUTEX:
        return _LOCK_FILES.setdefault(path, _LockFile(path))


class KeyedStore(Generic[T]):
    """`parse` makes a line's (key, value), None to skip it, or raises ValueError/UnicodeDecodeError
    (an unreadable line: "unreadable `what` skipped (not `record`)"); `fold` takes a value into
    the map (default: the last line of a key wins)."""

    def __init__(
        self,
        path: Path | str,
        parse: Callable[[bytes], tuple[str, T] | None],
        *,
        what: str = "line",
        record: str = "a record",
        read: bool = True,
        access: Access = "write",
        fold: Callable[[dict[str, T], str, T], None] | None = None,
    ):
        self.path = Path(path).absolute()
        self.lock_path = self.path.with_suffix(".lock")
        self.items: dict[str, T] = {}
        self.offset = 0  # bytes of the file read so far, and their lines
        self.lines = 0
        self._file: tuple[int, int] | None = None  # (device, inode) of the file read: a compaction changes it
        self._unwritten: list[tuple[str, T]] = []  # values held in memory only (a store it cannot write)
        self._parse, self._fold, self._read = parse, fold, read
        self._what, self._record = what, record
        self._guard = threading.Lock()  # the read offset, shared by readers and writers of this process
        self.why_not_writable = "opened to read only" if access == "read" else self.check_writable()
        if self.why_not_writable is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif access == "write":
            raise NotWritable(f"{self.why_not_writable}: {FIX}")
        self._locks = _lock_file(self.lock_path)
        self.refresh()

    @property
    def writable(self) -> bool:
        return self.why_not_writable is None

    def check_writable(self) -> str | None:
        return unwritable(self.path.parent, (self.path, self.lock_path))

    def refresh(self) -> None:
        """Read what was appended since the last read, by another process or thread; the whole
        file again when a compaction replaced it (this process's memory-only values kept)."""
        if not self._read:
            return
        with self._guard:
            try:
                st = os.stat(self.path)
                if st.st_size == self.offset and _ident(st) == self._file:
                    return
                f = self.path.open("rb")
            except FileNotFoundError:
                return
            with f:
                st = os.fstat(f.fileno())  # the file opened, whatever was renamed over it since
                items = self.items
                if _ident(st) != self._file:
                    if self._file is not None:  # replaced: read from its start into a new map
                        items, self.offset, self.lines = {}, 0, 0
                    self._file = _ident(st)
                f.seek(self.offset)
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line still being written (or torn) waits
            for raw in data[:end].split(b"\n")[:-1]:
                self.lines += 1
                if raw.strip():
                    self._take(items, raw, self.lines)
            self.offset += end
            if items is not self.items:
                for key, value in self._unwritten:
                    self._into(items, key, value)
                self.items = items  # whole: a thread reading the map never sees it half-built

    def _take(self, items: dict[str, T], raw: bytes, lineno: int) -> None:
        try:
            parsed = self._parse(raw)
        except (UnicodeDecodeError, ValueError) as e:
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else f"not {self._record}"
            if isinstance(e, Unreadable):  # the parser says why, in its readers' words
                why = str(e)
            logger.warning("%s:%d: unreadable %s skipped (%s)", self.path, lineno, self._what, why)
            return
        if parsed is not None:
            self._into(items, *parsed)

    def keep(self, key: str, value: T) -> None:
        """Hold `value` in memory (as if read from the file)."""
        self._into(self.items, key, value)

    def _into(self, items: dict[str, T], key: str, value: T) -> None:
        if self._fold is None:
            items[key] = value
        else:
            self._fold(items, key, value)

    @contextlib.contextmanager
    def _locked(self, flags: int):
        """The file, opened with `flags` and flocked (what excludes writers), and its stat: the
        file at `path` now; whoever waited on one a compaction replaced opens the new one."""
        while True:
            fd = os.open(self.path, flags, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                st = os.fstat(fd)
                try:
                    now = _ident(os.stat(self.path))
                except FileNotFoundError:
                    now = None
                if now == _ident(st):
                    yield fd, st
                    return
            finally:
                os.close(fd)  # and with it the flock

    def put(self, key: str, value: T, line: bytes, *, sync: bool = True) -> bool:
        """Keep `value` and append its `line` (one whole line, the value as `parse` reads it) in one
        write, fsynced before returning when `sync`; False when the store cannot be written (the
        value is then held in memory only). This process does not read its own lines back."""
        if not self.writable:
            self.keep(key, value)
            self._unwritten.append((key, value))
            return False
        with self._locked(os.O_RDWR | os.O_APPEND | os.O_CREAT) as (fd, st):
            with (
                self._guard
            ):  # kept under it: a refresh that meanwhile read a compacted file anew keeps it too
                self.keep(key, value)
                size = before = st.st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":  # a torn last line: end it first
                    size += os.write(fd, b"\n")
                size += os.write(fd, line)
                if before == self.offset and self._file in (None, _ident(st)):
                    self._file = _ident(st)
                    self.offset = size
                    self.lines += line.count(b"\n")
            if sync:
                os.fsync(fd)
        return True

    def compact(self, rewrite: Callable[[bytes], bytes | None]) -> bool:
        """Write the file anew with each whole line as `rewrite` gives it back (None: dropped), and
        rename it over the old one, under the writers' flock: a kill or an error leaves the old
        file whole. Nothing is written when no line changes or the store cannot be written
        (False). A torn last line stays as it is (the next writer ends it)."""
        if not self.writable or not self.path.exists():
            return False
        with self._locked(os.O_RDONLY) as (fd, st):
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
            end = data.rfind(b"\n") + 1
            lines = data[:end].split(b"\n")[:-1]
            kept = [rewrite(raw) for raw in lines]
            if kept == lines:
                return False
            for left in self.path.parent.glob(f".{glob.escape(self.path.name)}.*"):
                left.unlink(missing_ok=True)  # a compaction's, killed: none runs while we hold the flock
            new = [*(line + b"\n" for line in kept if line is not None), data[end:]]
            replace_whole(self.path, new, mode=st.st_mode & 0o777, gid=st.st_gid, durable=True)
        self.refresh()
        return True

    def fsync(self) -> None:
        """Sync the file (whichever descriptor wrote it)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _try_hold(self, key: str) -> bool:
        return self._locks.try_hold(_offset(key), self.writable)

    def _release(self, key: str) -> None:
        self._locks.release(_offset(key))

    def _pauses(self, key: str):
        """The waits between tries to hold `key`, doubling up to POLL_MAX_S; they end once it is held."""
        pause = POLL_FIRST_S
        while not self._try_hold(key):
            yield pause
            pause = min(pause * 2, POLL_MAX_S)

    @contextlib.contextmanager
    def _held(self, key: str):
        """`key` is held: read what others stored, run the block, release it however the block ends."""
        try:
            self.refresh()
            yield
        finally:
            self._release(key)

    @contextlib.contextmanager
    def claim(self, key: str):
        """Hold `key` (a thread): other threads and processes claiming it wait; then read what they stored."""
        for pause in self._pauses(key):
            time.sleep(pause)
        with self._held(key):
            yield

    @contextlib.asynccontextmanager
    async def aclaim(self, key: str):
        """`claim` for the event loop: waiting never blocks the loop."""
        for pause in self._pauses(key):
            await asyncio.sleep(pause)
        with self._held(key):
            yield
