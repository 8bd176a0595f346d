"""The Batch API state of a judgment cache: each chunk (one batch input file and the batch made from
it) is a row of table `batches` in the cache's `judgments.sqlite`, so a run killed at any point
reattaches instead of submitting again.

A chunk is recorded (`submit`: its request map, custom_id -> cache key, question, model) before
anything is uploaded; then its uploaded `file`, its `batch`, the replies it brought back to
judgments the collecting run did not make (`kept`: paid for, graded from here by a later run)
and its end (`done`). Each event is one transaction (no other process writes in between).
`prune_kept` drops kept replies once the cache holds their judgments, never before.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import BATCH_FILE
from oab_bench.judge.grading.judgment_store import JudgmentStore
from oab_bench.keyed_store import Access, KeyedStore, NotWritable

logger = logging.getLogger(__name__)
SUBMITTING = "submitting"  # the key held while a process decides what to submit


class Request(BaseModel):
    key: str
    question_id: str
    model: str


class Chunk(BaseModel):
    """One batch input file and the batch made from it."""

    chunk: str
    judge_model: str
    endpoint: str | None = None  # a hash of the --api-base it went to
    requests: dict[str, Request]  # custom_id -> what it judges
    file_id: str | None = None
    batch_id: str | None = None
    done: str | None = None  # the batch's final status once its results were taken, or "abandoned"
    kept: dict[str, dict] = {}  # custom_id -> reply body, for judgments the collecting run did not make


class BatchLog:
    """`access` as the judgment cache's: "read" for a look that must not write (an estimate)."""

    def __init__(self, folder: Path, *, access: Access = "write"):
        self._store = KeyedStore(
            Path(folder) / BATCH_FILE, "batches", Chunk.model_validate_json, access=access
        )
        self.path = self._store.path

    def chunks(self) -> dict[str, Chunk]:
        """Every chunk's state now (read afresh: the caller may change them)."""
        return self._store.items()

    def kept(self, chunks: dict[str, Chunk] | None = None) -> dict[str, dict]:
        """cache key -> a kept reply's body; from `chunks` when the caller has read them already."""
        return {
            chunk.requests[cid].key: body
            for chunk in (self.chunks() if chunks is None else chunks).values()
            for cid, body in chunk.kept.items()
        }

    def open_keys(self, chunks: dict[str, Chunk] | None = None) -> dict[str, str]:
        """cache key -> the batch (or chunk) still to collect it: uploaded, not yet taken in."""
        return {
            request.key: chunk.batch_id or chunk.chunk
            for chunk in (self.chunks() if chunks is None else chunks).values()
            if not chunk.done and chunk.file_id is not None
            for request in chunk.requests.values()
        }

    def append(self, event: str, chunk: str, **fields) -> None:
        """Record `event` of `chunk`: `submit` (the Chunk's fields), `file` (file_id=), `batch`
        (batch_id=), `kept` (replies=: custom_id -> body), `done` (status=)."""

        def change(old: Chunk | None) -> str:
            if event == "submit":
                return Chunk(chunk=chunk, **fields).model_dump_json()
            update = fields
            if event == "kept":
                update = {"kept": {**old.kept, **fields["replies"]}}
            elif event == "done":
                update = {"done": fields["status"]}
            return old.model_copy(update=update).model_dump_json()

        if not self._store.writable:
            raise NotWritable(f"{self.path}: {self._store.why_not_writable}: batches need a writable cache")
        self._store.update(chunk, change)

    def prune(self, held: set[str]) -> int:
        """Drop the kept replies to the judgments `held` (cache keys); the number dropped."""
        dropped = 0

        def change(chunk: Chunk) -> str:
            nonlocal dropped
            left = {cid: body for cid, body in chunk.kept.items() if chunk.requests[cid].key not in held}
            dropped += len(chunk.kept) - len(left)
            return chunk.model_copy(update={"kept": left}).model_dump_json()

        for name, chunk in self.chunks().items():
            if any(chunk.requests[cid].key in held for cid in chunk.kept):
                self._store.update(name, change)
        return dropped

    def submitting(self):
        """One process at a time decides what to submit, so two runs never submit the same judgment."""
        return self._store.aclaim(SUBMITTING)


def prune_kept(store: JudgmentStore) -> int:
    """Drop the kept replies whose judgments `store` holds (stored and committed: a kept reply is the
    only copy of a paid judgment until then; a failed judgment is not stored, so its reply stays).
    Nothing when the cache cannot be written; a failure (a full disk) is a warning, and a later run
    prunes. The number dropped."""
    if store.path is None or not store.writable:
        return 0
    log = BatchLog(store.path.parent)
    held = {key for key in log.kept() if store.get(key) is not None}
    try:
        dropped = log.prune(held)
    except (OSError, sqlite3.Error) as e:  # the judgments are stored: replies left cost disk, not money
        logger.warning("%s: kept replies not pruned (%s); a later run tries again", log.path, e)
        return 0
    if dropped:
        print(
            f"batch: {dropped} kept repl(ies) pruned from {log.path} (their judgments are stored)",
            file=sys.stderr,
        )
    return dropped
