"""The batches of a cache folder (`batches.jsonl`, next to `judgments.jsonl`): an append-only log.

Events, each one fsynced line: `submit` (a chunk's request map, custom_id -> cache key,
question, model; written before anything is uploaded), `file` (its uploaded input file),
`batch` (the batch created from it), `kept` (replies to judgments the collecting run did not
make, paid for: a later run grades them from here), `done` (its results are in the judgment
store or kept, or the chunk was abandoned before upload). Folding the log gives every chunk's state, so a run killed
at any point reattaches instead of submitting again. A kept reply is pruned from the log once its
judgment is in the store and fsynced (`prune`, at the end of a run), never before.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable
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
        try:
            return self._fold(self.path.read_bytes())
        except FileNotFoundError:
            return {}

    def _fold(self, data: bytes) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        for lineno, raw in enumerate(data.split(b"\n"), 1):
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
        while True:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if _is_current(fd, self.path):  # not a log a prune replaced while we waited
                    os.write(fd, (line + "\n").encode())
                    os.fsync(fd)
                    return
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def prune(self, stored: Callable[[str], bool]) -> int:
        """Drop the kept replies whose judgments `stored` says the store holds (never one it does
        not), by writing the log anew without them and renaming it over the old one: a kill
        leaves one or the other, whole. The number of replies dropped."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # appenders wait, then see the new file (append)
            if not _is_current(fd, self.path):
                return 0  # another process pruned meanwhile: the next run looks again
            data = self.path.read_bytes()
            lines, dropped = _without_stored(data, self._fold(data), stored)
            if dropped:
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(b"".join(line + b"\n" for line in lines))
                with open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
                _fsync_folder(self.path.parent)
            return dropped
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


def _is_current(fd: int, path: Path) -> bool:
    """`fd` is the file at `path` now (a prune renames a new log over it)."""
    try:
        now, mine = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _without_stored(
    data: bytes, chunks: dict[str, Chunk], stored: Callable[[str], bool]
) -> tuple[list[bytes], int]:
    """The log's lines with each `kept` event's stored replies left out (an event left with none
    goes); every other line, unreadable ones too, as it was."""
    out, dropped = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
            kept = event.get("event") == "kept" and isinstance(event["replies"], dict)
            chunk = chunks[event["chunk"]] if kept else None
        except (ValueError, KeyError, TypeError, AttributeError):
            chunk = None
        if chunk is None:
            out.append(raw)
            continue
        keep = {
            cid: body
            for cid, body in event["replies"].items()
            if cid not in chunk.requests or not stored(chunk.requests[cid].key)
        }
        dropped += len(event["replies"]) - len(keep)
        if keep:
            out.append(
                raw
                if len(keep) == len(event["replies"])
                else json.dumps({**event, "replies": keep}, ensure_ascii=False).encode()
            )
    return out, dropped
