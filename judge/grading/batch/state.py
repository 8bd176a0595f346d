"""The Batch API state of a judgment cache (tables of its database), so a killed run reattaches:
each chunk recorded before upload, then its file, batch and end; replies `kept` until stored."""

from __future__ import annotations

import json
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
    chunk: str
    judge_model: str
    endpoint: str  # a hash of the --api-base it went to
    requests: dict[str, Request]  # custom_id -> what it judges
    file_id: str | None = None
    batch_id: str | None = None
    done: str | None = None  # the batch's final status once its results were taken, or "abandoned"


def _parse(text: str) -> Chunk | str:
    """A chunk's row (`name`), or one of its fields set later (`name/field`: the value)."""
    value = json.loads(text)
    return Chunk.model_validate(value) if isinstance(value, dict) else value


class BatchLog(KeyedStore):
    """`access` as the judgment cache's: "read" for a look that must not write (an estimate)."""

    def __init__(self, folder: Path, *, access: Access = "write"):
        super().__init__(Path(folder) / BATCH_FILE, "batches", _parse, access=access)
        self.replies = KeyedStore(self.path, "kept", json.loads, access=access)

    def chunks(self) -> dict[str, Chunk]:
        rows = self.items()
        chunks = {name: chunk for name, chunk in rows.items() if isinstance(chunk, Chunk)}
        for key, value in rows.items():
            name, _, field = key.partition("/")
            if field and name in chunks:
                setattr(chunks[name], field, value)
        return chunks

    def kept(self) -> dict[str, dict]:
        """cache key -> a kept reply's body."""
        return self.replies.items()

    def open_keys(self) -> dict[str, str]:
        """cache key -> the batch (or chunk) still to collect it: uploaded, not yet taken in."""
        chunks = [c for c in self.chunks().values() if not c.done and c.file_id is not None]
        return {r.key: c.batch_id or c.chunk for c in chunks for r in c.requests.values()}

    def append(self, event: str, chunk: str, **fields) -> None:
        """Record `event` of `chunk`: `submit` (the Chunk's fields), `file` (file_id=), `batch`
        (batch_id=), `kept` (replies=: custom_id -> body), `done` (status=)."""
        if not self.writable:
            raise NotWritable(f"{self.path}: {self.why_not_writable}: batches need a writable cache")
        if event == "submit":
            self.write([(chunk, Chunk(chunk=chunk, **fields).model_dump_json())])
        elif event == "kept":
            self.replies.write([(key, json.dumps(body)) for key, body in fields["replies"].items()])
        else:
            fields = {"done": fields["status"]} if event == "done" else fields
            self.write([(f"{chunk}/{field}", json.dumps(value)) for field, value in fields.items()])

    def submitting(self):
        """One process at a time decides what to submit, so two runs never submit the same judgment."""
        return self.aclaim(SUBMITTING)


def prune_kept(store: JudgmentStore) -> int:
    """Delete the kept replies whose judgments `store` holds (never before: docs/operations.md); how many.
    Nothing when the cache cannot be written; a failure (a full disk) is a warning."""
    if store.path is None or not store.writable:
        return 0
    log = BatchLog(store.path.parent)
    held = [key for key in log.kept() if store.get(key) is not None]
    try:
        log.replies.write([(key, None) for key in held])
    except (OSError, sqlite3.Error) as e:  # the judgments are stored: replies left cost disk, not money
        logger.warning("%s: kept replies not pruned (%s); a later run tries again", log.path, e)
        return 0
    if held:
        said = f"batch: {len(held)} kept repl(ies) pruned from {log.path} (their judgments are stored)"
        print(said, file=sys.stderr)
    return len(held)
