"""The judgment cache: finished judgments, keyed by everything that determines them.

Table `judgments` of the cache folder's `judgments.sqlite` (oab_bench/keyed_store.py): only `ok`
judgments are stored (a rerun judges failures again). Processes sharing the cache pay once for a
judgment: `claim(key)` holds the key while it is judged, and whoever waited reads the judgment.
`append` (the event loop) returns once the judgment is committed, so it is kept if the process is
killed and seen by others before the key is released; the commit runs in a worker thread, grouped
with every judgment appended meanwhile (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

from oab_bench.conventions import JUDGMENT_CACHE_FILE as STORE_FILE
from oab_bench.conventions import JUDGMENTS_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.grading.judgment_reader import typed
from oab_bench.judge.records import Judgment
from oab_bench.keyed_store import FIX, Access, KeyedStore, NotWritable, StoreError, check_store, unwritable

__all__ = ["STORE_FILE", "JudgmentStore", "NotWritable", "StoreError", "cache_key", "check_folder"]


def cache_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "judge"


def check_folder(folder: Path | str, *, write: bool = False) -> None:
    """What opening a store at `folder` would refuse (`write`: to write), checked without creating
    or writing anything: for a command whose store is opened later, elsewhere (`oab-bench run`'s
    task), to fail before any work, naming its own flag. A folder holding a `judgments.jsonl` (a
    run's or probe's folder, another tool's) is not a cache: nothing is added to it."""
    folder = Path(folder)
    check_store(folder / STORE_FILE)
    if (folder / JUDGMENTS_FILE).exists():
        raise StoreError(
            f"{folder / JUDGMENTS_FILE}: not an oab-bench judgment store (a judgment cache holds "
            f"{STORE_FILE}; this folder holds judgments a run or another tool wrote): left as it is; "
            "use another cache folder"
        )
    if write and (
        why := unwritable(folder, (folder / STORE_FILE, (folder / STORE_FILE).with_suffix(".lock")))
    ):
        raise NotWritable(f"{why}: {FIX}")


def _parse(text: str) -> Judgment:
    """A row the reports would refuse is skipped (and judged again), said in their words."""
    try:
        typed(text)  # the shape every reader of judgments checks (judgment_reader.py)
    except SourceError as e:
        raise ValueError(f"{e.field}: {e.message}" if e.field else e.message) from None
    return Judgment.model_validate_json(text)


class JudgmentStore:
    """`folder` None: judgments held in memory only. `access` "read": a cache only looked at, or
    one the run may not write (--cache-read-only): new judgments are held in memory only.
    `read=False` (judge --no-cache): judge again, still storing."""

    def __init__(self, folder: Path | str | None, *, read: bool = True, access: Access = "write"):
        if folder:
            check_folder(folder)
        try:
            path = Path(folder) / STORE_FILE if folder else None
            self._store = KeyedStore(path, "judgments", _parse, access=access, read=read)
        except NotWritable as e:
            raise NotWritable(f"judgment cache {e}") from None
        self.path = self._store.path
        self.get = self._store.get
        self.claim = self._store.aclaim  # held while a judgment is made: another process waits, then reads it
        self._waiting: list[tuple[Judgment, asyncio.Future]] = []
        self._committer: asyncio.Task | None = None

    @property
    def writable(self) -> bool:
        return self._store.writable

    def judgments(self) -> list[Judgment]:
        """Every judgment held (stored, or kept in memory by this process)."""
        return list(self._store.items().values())

    def __len__(self) -> int:
        return len(self._store)

    def put(self, *judgments: Judgment) -> None:
        """Store the `ok` ones in one commit (blocking)."""
        self._store.put(
            [(j.cache_key, j.model_dump_json(exclude={"cached"})) for j in judgments if j.status == "ok"]
        )

    async def append(self, judgment: Judgment) -> None:
        """`put` for the event loop: returns once committed, by a worker thread that commits the
        judgments appended meanwhile together."""
        if judgment.status != "ok":
            return
        done = asyncio.get_running_loop().create_future()
        self._waiting.append((judgment, done))
        if self._committer is None or self._committer.done():
            self._committer = asyncio.create_task(self._commit())
        await done

    async def _commit(self) -> None:
        while self._waiting:
            group, self._waiting = self._waiting, []
            try:
                await asyncio.to_thread(self.put, *(j for j, _ in group))
            except Exception as e:  # a full disk, say: every append waiting for it fails with it
                for _, done in group:
                    if not done.done():
                        done.set_exception(e)
            else:
                for _, done in group:
                    if not done.done():
                        done.set_result(None)
