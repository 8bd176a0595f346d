"""The batches of a cache folder (`batches.jsonl`, next to `judgments.jsonl`): an append-only log.

Events, each one fsynced line: `submit` (a chunk's request map, custom_id -> cache key,
question, model; written before anything is uploaded), `file` (its uploaded input file),
`batch` (the batch created from it), `kept` (replies to judgments the collecting run did not
make, paid for: a later run grades them from here), `done` (its results are in the judgment
store or kept, or the chunk was abandoned before upload). Folding the log gives every chunk's state, so a run killed
at any point reattaches instead of submitting again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import BATCH_FILE

logger = logging.getLogger(__name__)


class Request(BaseModel):
    key: str
    question_id: str
    model: str


class Chunk(BaseModel):
    """One batch input file and the batch made from it."""

    chunk: str
    judge_model: str
    endpoint: str | None = None  # a hash of the --api-base it went to (None: logged before this was)
    requests: dict[str, Request]  # custom_id -> what it judges
    file_id: str | None = None
    batch_id: str | None = None
    done: str | None = None  # the batch's final status once its results were taken, or "abandoned"
    kept: dict[str, dict] = {}  # custom_id -> reply body, for judgments the collecting run did not make


class BatchLog:
    def __init__(self, folder: Path):
        self.path = Path(folder) / BATCH_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def chunks(self) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        if not self.path.exists():
            return out
        for lineno, raw in enumerate(self.path.read_bytes().split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
                name = event.pop("event")
                if name == "submit":
                    out[event["chunk"]] = Chunk(**{k: v for k, v in event.items() if k != "time"})
                elif name == "kept" and event["chunk"] in out:
                    out[event["chunk"]].kept.update(event["replies"])
                elif event["chunk"] in out:
                    field = {"file": "file_id", "batch": "batch_id", "done": "status"}[name]
                    chunk = out[event["chunk"]]
                    setattr(chunk, "done" if name == "done" else field, event[field])
            except (ValueError, KeyError, TypeError):  # a torn last line from a kill
                logger.warning("%s:%d: unreadable batch log line skipped", self.path, lineno)
        return out

    def kept(self, chunks: dict[str, Chunk] | None = None) -> dict[str, dict]:
        """cache key -> a kept reply's body (see `kept` events); from `chunks` when the caller has
        read the log already."""
        return {
            chunk.requests[cid].key: body
            for chunk in (self.chunks() if chunks is None else chunks).values()
            for cid, body in chunk.kept.items()
            if cid in chunk.requests
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
        line = json.dumps({"event": event, "chunk": chunk, **fields, "time": time.time()}, ensure_ascii=False)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @contextlib.contextmanager
    def submitting(self):
        """One process at a time decides what to submit, so two runs never submit the same judgment."""
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
