"""The batches of a cache folder (`batches.jsonl`, next to `judgments.jsonl`): an append-only log.

Events, each one fsynced line: `submit` (a chunk's request map, custom_id -> cache key,
question, model; written before anything is uploaded), `file` (its uploaded input file),
`batch` (the batch created from it), `kept` (replies to judgments the collecting run did not
make, paid for: a later run grades them from here), `done` (its results are in the judgment
store or kept, or the chunk was abandoned before upload). Folding the log gives every chunk's
state, so a run killed at any point reattaches instead of submitting again. The log is a keyed
store (oab_bench/keyed_store.py), keyed by chunk: its file, locks and modes are the judgment cache's.
The one rewrite: `prune` drops kept replies whose judgments the cache holds (batch/prune.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import BATCH_FILE
from oab_bench.keyed_store import Access, KeyedStore, NotWritable

SUBMITTING = "submitting"  # the key held while a process decides what to submit


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


_FIELDS = {"file": "file_id", "batch": "batch_id", "done": "status"}  # event -> the field it sets


def _parse(raw: bytes) -> tuple[str, tuple[str, object]]:
    """A log line as (chunk, (event, what it brings)); a line of another shape is unreadable."""
    event = json.loads(raw)
    if not isinstance(event, dict) or not isinstance(event.get("chunk"), str):
        raise ValueError("not an event")
    name = event.get("event")
    if name == "submit":
        return event["chunk"], (name, Chunk(**{k: v for k, v in event.items() if k not in ("event", "time")}))
    if name == "kept" and isinstance(event.get("replies"), dict):
        return event["chunk"], (name, event["replies"])
    if name in _FIELDS and _FIELDS[name] in event:
        return event["chunk"], (name, event[_FIELDS[name]])
    raise ValueError("not an event")


def _fold(chunks: dict[str, Chunk], name: str, event: tuple[str, object]) -> None:
    """Events in the log's order give each chunk's state (an event before its chunk's submit: none)."""
    kind, value = event
    if kind == "submit":
        chunks[name] = value  # type: ignore[assignment]
    elif name not in chunks:
        return
    elif kind == "kept":
        chunks[name].kept.update(value)  # type: ignore[arg-type]
    else:
        setattr(chunks[name], "done" if kind == "done" else _FIELDS[kind], value)


class BatchLog:
    """`access` as the judgment cache's: "read" for a look that must not write (an estimate)."""

    def __init__(self, folder: Path, *, access: Access = "write"):
        self.path = Path(folder) / BATCH_FILE
        self._store = KeyedStore(
            self.path, _parse, what="batch log line", record="an event", access=access, fold=_fold
        )

    def chunks(self) -> dict[str, Chunk]:
        """Every chunk's state now (copies: the caller may change them)."""
        self._store.refresh()
        return {name: chunk.model_copy(deep=True) for name, chunk in self._store.items.items()}

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
        data = (line + "\n").encode()
        if not self._store.put(*_parse(data), data):
            raise NotWritable(f"{self.path}: {self._store.why_not_writable}: batches need a writable cache")

    def submitting(self):
        """One process at a time decides what to submit, so two runs never submit the same judgment."""
        return self._store.aclaim(SUBMITTING)

    def prune(self, stored: Callable[[str], bool]) -> int:
        """Drop each kept reply whose cache key `stored` says the judgment cache holds (a `kept` event
        left with none goes; every other line stays as written), compacting the log in place
        (KeyedStore.compact); the number dropped. A store it cannot write is left as it is."""
        keys: dict[str, dict[str, str]] = {}  # chunk -> custom_id -> cache key, from the submits read so far
        dropped = 0

        def rewrite(raw: bytes) -> bytes | None:
            nonlocal dropped
            try:
                name, (kind, value) = _parse(raw)
            except ValueError:  # unreadable (not UTF-8 included): it stays as it is
                return raw
            if isinstance(value, Chunk):
                keys[name] = {cid: r.key for cid, r in value.requests.items()}
            if kind != "kept" or not isinstance(value, dict):
                return raw
            mine = keys.get(name, {})
            left = {cid: body for cid, body in value.items() if cid not in mine or not stored(mine[cid])}
            if len(left) == len(value):
                return raw
            dropped += len(value) - len(left)
            if not left:
                return None
            return json.dumps({**json.loads(raw), "replies": left}, ensure_ascii=False).encode()

        self._store.compact(rewrite)
        return dropped
