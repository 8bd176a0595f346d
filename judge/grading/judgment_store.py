"""The judgment cache: `ok` judgments keyed by everything that determines them (table `judgments` of
`judgments.sqlite`), each committed before its key is released: whoever waited reads it, never pays."""

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
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oab-bench" / "judge"


def check_folder(folder: Path | str, *, write: bool = False) -> None:
    """What opening the cache at `folder` would refuse, creating nothing (a `judgments.jsonl`: no cache)."""
    path = Path(folder) / STORE_FILE
    check_store(path)
    if (path.parent / JUDGMENTS_FILE).exists():
        raise StoreError(
            f"{path.parent / JUDGMENTS_FILE}: not an oab-bench judgment store (a judgment cache holds "
            f"{STORE_FILE}; these are judgments a run or another tool wrote): left as it is; use another "
            "cache folder"
        )
    if write and (why := unwritable(path.parent, (path, path.with_suffix(".lock")))):
        raise NotWritable(f"{why}: {FIX}")


def _parse(text: str) -> Judgment:
    """A row the reports would refuse is skipped (and judged again), in their words."""
    try:
        typed(text)  # the shape every reader of judgments checks (judgment_reader.py)
    except SourceError as e:
        raise ValueError(f"{e.field}: {e.message}" if e.field else e.message) from None
    return Judgment.model_validate_json(text)


class JudgmentStore(KeyedStore[Judgment]):
    """`folder` None: in memory only; `access` "read": looked at, never written; `read=False`: --no-cache."""

    def __init__(self, folder: Path | str | None, *, read: bool = True, access: Access = "write"):
        if folder:
            check_folder(folder)
        path = Path(folder) / STORE_FILE if folder else None
        super().__init__(path, "judgments", _parse, access=access, read=read)

    claim = KeyedStore.aclaim  # held while a judgment is made: others wait, then read it

    def judgments(self) -> list[Judgment]:
        return list(self.items().values())

    def put(self, judgment: Judgment) -> None:
        if judgment.status == "ok":
            self.write([(judgment.cache_key, judgment.model_dump_json(exclude={"cached"}))])

    async def append(self, judgment: Judgment) -> None:
        """`put` from the event loop: the commit runs in a worker thread."""
        if judgment.status == "ok":
            await asyncio.to_thread(self.put, judgment)
