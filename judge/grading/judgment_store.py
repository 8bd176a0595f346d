"""The judgment cache: finished judgments, keyed by everything that determines them.

One JSON line per `ok` judgment in a keyed store (oab_bench/keyed_store.py: whole-line appends, torn and
unreadable lines skipped, key claims across threads and processes, modes from the umask, a
read-only store served as it is), so a run killed mid-way loses at most the judgment in
flight. Failures are not stored: a rerun tries them again. Processes sharing a store do not
pay twice for one judgment: `claim(key)` holds the key while it is judged, and a process that
waited for it reads the other's judgment instead of calling the judge.

Lean on the event loop: `append` writes its line at once (other processes read it from then
on, and a killed process keeps it) and leaves the fsync to one background task that syncs
whatever was written meanwhile (group commit), so no judgment waits for a thread to be woken
for its own fsync (figures: docs/performance.md). `synced()` awaits every fsync in flight (a run's end).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

from oab_bench.conventions import JUDGMENTS_FILE as STORE_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.grading.judgment_reader import typed
from oab_bench.judge.records import Judgment
from oab_bench.keyed_store import FIX, Access, KeyedStore, NotWritable, StoreError, Unreadable, unwritable

logger = logging.getLogger(__name__)
_SYNCING: set[asyncio.Task] = set()  # every store's background fsync in flight
__all__ = ["STORE_FILE", "JudgmentStore", "NotWritable", "StoreError", "cache_key", "check_folder", "synced"]


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


def cache_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "judge"


def _not_a_folder(path: Path) -> StoreError:
    return StoreError(f"{path}: not a folder (a judgment cache is a folder holding {STORE_FILE})")


def check_folder(folder: Path | str, *, write: bool = False) -> None:
    """What opening a store at `folder` would refuse (`write`: to write), checked without creating
    or writing anything: for a command whose store is opened later, elsewhere (`oab-bench run`'s
    task), to fail before any work, naming its own flag."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise _not_a_folder(folder)
    if (folder / STORE_FILE).is_file():
        _refuse_foreign(folder / STORE_FILE)
    if write and (
        why := unwritable(folder, (folder / STORE_FILE, (folder / STORE_FILE).with_suffix(".lock")))
    ):
        raise NotWritable(f"{why}: {FIX}")


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


def _parse(raw: bytes) -> tuple[str, Judgment]:
    """A line the reports would refuse is skipped (and judged again), said in their words."""
    text = raw.decode("utf-8")
    try:
        typed(text)  # the shape every reader of judgments checks (judgment_reader.py)
    except SourceError as e:
        raise Unreadable(f"{e.field}: {e.message}" if e.field else e.message) from None
    judgment = Judgment.model_validate_json(text)
    return judgment.cache_key, judgment


class JudgmentStore:
    """`access`: "write" refuses a cache this user cannot write; "either" serves it and keeps new
    judgments in memory only (--cache-read-only); "read" only looks (never creates or writes)."""

    def __init__(self, folder: Path | str | None, *, read: bool = True, access: Access = "write"):
        self.path = Path(folder) / STORE_FILE if folder else None
        self._store: KeyedStore[Judgment] | None = None
        self._memory: dict[str, Judgment] = {}  # without a folder: held here
        self._local: dict[str, asyncio.Lock] = {}  # without a folder: the key claims
        self._unsynced = False  # lines written since the last fsync began
        self._syncer: asyncio.Task | None = None
        if self.path:
            if self.path.parent.exists() and not self.path.parent.is_dir():
                raise _not_a_folder(self.path.parent)
            if self.path.exists():
                _refuse_foreign(self.path)  # a file not ours is never written to
            try:
                self._store = KeyedStore(
                    self.path, _parse, what="cache line", record="a judgment", read=read, access=access
                )
            except (FileExistsError, NotADirectoryError):
                raise _not_a_folder(self.path.parent) from None
            except NotWritable as e:
                raise NotWritable(f"judgment cache {e}") from None

    @property
    def writable(self) -> bool:
        return self._store is None or self._store.writable

    @property
    def _items(self) -> dict[str, Judgment]:
        return self._memory if self._store is None else self._store.items

    def refresh(self) -> None:
        """Read what was appended since the last read (by this process or another)."""
        if self._store is not None:
            self._store.refresh()

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
        if self._store is None:
            lock = self._local.setdefault(key, asyncio.Lock())
            async with lock:
                yield
            return
        async with self._store.aclaim(key):
            yield

    def put(self, judgment: Judgment) -> None:
        """Store an `ok` judgment now (blocking: the write is fsynced before it returns)."""
        if judgment.status != "ok":
            return
        self._keep(judgment)

    async def append(self, judgment: Judgment) -> None:
        """`put` for the event loop: the line is written before this returns (visible to other
        processes, kept if this one is killed); its fsync runs in the background, grouped with
        the lines written meanwhile; `synced()` waits for it."""
        if judgment.status != "ok":
            return
        if not self._keep(judgment, sync=False):
            return
        self._unsynced = True
        if self._syncer is None or self._syncer.done():
            self._syncer = asyncio.create_task(self._sync_loop())
            _SYNCING.add(self._syncer)
            self._syncer.add_done_callback(_synced_one)

    def _keep(self, judgment: Judgment, *, sync: bool = True) -> bool:
        """Held, and written when the store has a file it can write (True)."""
        if self._store is None:
            self._memory[judgment.cache_key] = judgment
            return False
        line = (judgment.model_dump_json(exclude={"cached"}) + "\n").encode()
        return self._store.put(judgment.cache_key, judgment, line, sync=sync)

    async def _sync_loop(self) -> None:
        while self._unsynced:
            self._unsynced = False
            await asyncio.to_thread(self._fsync)

    def _fsync(self) -> None:
        self.fsync()

    def fsync(self) -> None:
        """The whole file on disk now, whichever process wrote its lines."""
        if self._store is not None:
            self._store.fsync()
