"""Candidate answers kept, so a rerun or a resume never pays for one twice.

Keyed by everything that determines an answer: the model, its generation settings (temperature,
seed, max new tokens, stop sequences, samples) and the prompt's messages; never the server's
address (a `vllm:` model gets a new port each run) nor the key. Only non-empty answers are
kept: an empty or failed generation is asked again next time.

The same crash-safe design as the judgment store (judge/grading/judgment_store.py): one JSON line per answer, one
append, fsynced under a file lock, so a run killed mid-way loses at most the answers in
flight; a torn or unreadable line is skipped with a warning. Concurrent runs share it:
`claim(key)` holds the key (a thread lock, and a byte-range lock in `answers.lock` across
processes) while it is generated, and whoever waited reads the answer instead of paying again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import ANSWERS_FILE as STORE_FILE

logger = logging.getLogger(__name__)
CACHE_ENV = "OAB_ANSWER_CACHE"  # folder; unset or "off": no store (the plain lighteval CLI)
FRESH_ENV = "OAB_FRESH_ANSWERS"  # "1": generate again, still storing what comes back


class StoredAnswer(BaseModel):
    key: str
    model: str
    texts: list[str]  # one per sample
    reasonings: list[str | None] = []
    finish_reasons: list[str | None] = []
    created: float = 0.0


def generation_settings(params: dict, max_new_tokens: int | None, samples: int = 1, stop=None) -> dict:
    """What shapes an answer besides model and prompt; `params`: lighteval's GenerationParameters
    without its unset (None) fields."""
    return {
        "params": {k: v for k, v in params.items() if v is not None},
        "max_new_tokens": max_new_tokens,
        "samples": samples,
        "stop": list(stop or []),
    }


def answer_key(*, model: str, messages: list[dict], generation: dict) -> str:
    text = json.dumps({"model": model, "messages": messages, "generation": generation}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "oab-bench" / "answers"


class AnswerStore:
    """State: the answers read so far (and how far the file was read), the lock file, key locks."""

    def __init__(self, folder: Path | str, *, read: bool = True):
        self.path = Path(folder) / STORE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._read = read
        self._items: dict[str, StoredAnswer] = {}
        self._offset = 0
        self._lines = 0
        self._mutex = threading.Lock()
        self._keys: dict[str, threading.Lock] = {}
        self._lock_fd: int | None = None
        self.refresh()

    def refresh(self) -> None:
        """Read what was appended since the last read, by this process or another."""
        if not self._read or not self.path.exists():
            return
        with self._mutex:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line another process is still writing waits
            for raw in data[:end].split(b"\n")[:-1]:
                self._lines += 1
                if raw.strip():
                    self._add(raw)
            self._offset += end

    def _add(self, raw: bytes) -> None:
        try:
            answer = StoredAnswer.model_validate_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            logger.warning("%s:%d: unreadable answer line skipped", self.path, self._lines)
            return
        if any(t.strip() for t in answer.texts):
            self._items[answer.key] = answer

    def get(self, key: str) -> StoredAnswer | None:
        return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)

    @contextlib.contextmanager
    def claim(self, key: str):
        """Hold `key` while it is generated: other threads and processes asking for it wait."""
        with self._mutex:
            lock = self._keys.setdefault(key, threading.Lock())
        with lock:
            start = int(key[:12], 16)
            fd = self._lock_file()
            fcntl.lockf(fd, fcntl.LOCK_EX, 1, start)
            try:
                self.refresh()  # another process may have generated it while we waited
                yield
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, start)

    def _lock_file(self) -> int:
        with self._mutex:
            if self._lock_fd is None:
                self._lock_fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            return self._lock_fd

    def put(self, answer: StoredAnswer) -> bool:
        """Keep a non-empty answer (False: not kept). The line is on disk when this returns."""
        if not answer.texts or not all(t and t.strip() for t in answer.texts):
            return False
        answer = answer.model_copy(update={"created": answer.created or time.time()})
        line = (answer.model_dump_json() + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _seal_torn_line(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        with self._mutex:
            self._items[answer.key] = answer
        return True


def _seal_torn_line(fd: int) -> None:
    """A process killed mid-write may leave a line without its newline: end it before appending."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        os.write(fd, b"\n")


def count_answers(folder: Path | str) -> int:
    """Good answers in the store at `folder` (0 when there is none)."""
    path = Path(folder) / STORE_FILE
    return len(AnswerStore(folder)) if path.exists() else 0


def stored_texts(folder: Path | None, model: str, generation: dict, rows: list) -> list[str | None]:
    """For each row, the answer the store holds for `model` and `generation`, as the judge reads it
    (reasoning blocks removed); None where none is stored. Looked up as a run's generation would
    look it up (answer_key); a store that does not exist is not created."""
    from oab_bench.judge.answers import strip_reasoning
    from oab_bench.judge.generation.task_prompt import candidate_messages

    if folder is None or not (Path(folder) / STORE_FILE).exists():
        return [None] * len(rows)
    store = AnswerStore(folder)
    texts: list[str | None] = []
    for row in rows:
        found = store.get(answer_key(model=model, messages=candidate_messages(row), generation=generation))
        texts.append(strip_reasoning(found.texts[0]) if found is not None else None)
    return texts
