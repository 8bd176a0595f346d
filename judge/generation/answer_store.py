"""Candidate answers kept, so a rerun or a resume never pays for one twice.

Keyed by everything that determines an answer: the model, its generation settings (temperature,
seed, max new tokens, stop sequences, samples) and the prompt's messages; never the server's
address (a `vllm:` model gets a new port each run) nor the key. Only non-empty answers are
kept: an empty or failed generation is asked again next time.

The same keyed store as the judgment cache (oab_bench/keyed_store.py): one JSON line per answer, fsynced
before `put` returns, so a run killed mid-way loses at most the answers in flight; a torn or
unreadable line is skipped with a warning. Concurrent runs and threads share it: `claim(key)`
holds the key while it is generated, and whoever waited reads the answer instead of paying
again. A store this user cannot write is refused, or served as it is (`access`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import ANSWERS_FILE as STORE_FILE
from oab_bench.keyed_store import Access, KeyedStore, NotWritable

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


def _parse(raw: bytes) -> tuple[str, StoredAnswer] | None:
    answer = StoredAnswer.model_validate_json(raw.decode("utf-8"))
    return (answer.key, answer) if any(t.strip() for t in answer.texts) else None


def check_folder(folder: Path | str) -> None:
    """What opening a store at `folder` would refuse, checked without writing: for `run` to fail
    before any work, naming its flag (the store itself opens in lighteval's process)."""
    folder = Path(folder)
    first = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if first is not None and not first.is_dir():
        what = "is a file" if first == folder else f"{first} is a file"
        raise ValueError(f"{folder}: {what} (an answer cache is a folder holding {STORE_FILE})")
    if (folder / STORE_FILE).is_dir():
        raise ValueError(f"{folder / STORE_FILE} is a folder, not our store file")


class AnswerStore:
    """The answers read so far; `access` as the judgment cache's ("either": --cache-read-only)."""

    def __init__(self, folder: Path | str, *, read: bool = True, access: Access = "write"):
        self.path = Path(folder) / STORE_FILE
        try:
            self._store = KeyedStore(
                self.path, _parse, what="answer line", record="an answer", read=read, access=access
            )
        except NotWritable as e:
            raise NotWritable(f"answer cache {e}") from None

    @property
    def writable(self) -> bool:
        return self._store.writable

    @property
    def _items(self) -> dict[str, StoredAnswer]:
        return self._store.items

    def refresh(self) -> None:
        """Read what was appended since the last read, by this process or another."""
        self._store.refresh()

    def get(self, key: str) -> StoredAnswer | None:
        return self._store.items.get(key)

    def __len__(self) -> int:
        return len(self._store.items)

    def claim(self, key: str):
        """Hold `key` while it is generated: other threads and processes asking for it wait."""
        return self._store.claim(key)

    def put(self, answer: StoredAnswer) -> bool:
        """Keep a non-empty answer (False: not kept; in memory only when the store is read-only).
        The line is on disk when this returns."""
        if not answer.texts or not all(t and t.strip() for t in answer.texts):
            return False
        answer = answer.model_copy(update={"created": answer.created or time.time()})
        return self._store.put(answer.key, answer, (answer.model_dump_json() + "\n").encode())


def count_answers(folder: Path | str) -> int:
    """Good answers in the store at `folder` (0 when there is none)."""
    path = Path(folder) / STORE_FILE
    return len(AnswerStore(folder, access="read")) if path.exists() else 0


def stored_texts(folder: Path | None, model: str, generation: dict, rows: list) -> list[str | None]:
    """For each row, the answer the store holds for `model` and `generation`, as the judge reads it
    (reasoning blocks removed); None where none is stored. Looked up as a run's generation would
    look it up (answer_key); a store that does not exist is not created."""
    from oab_bench.judge.answers import strip_reasoning
    from oab_bench.judge.generation.task_prompt import candidate_messages

    if folder is None or not (Path(folder) / STORE_FILE).exists():
        return [None] * len(rows)
    store = AnswerStore(folder, access="read")
    texts: list[str | None] = []
    for row in rows:
        found = store.get(answer_key(model=model, messages=candidate_messages(row), generation=generation))
        texts.append(strip_reasoning(found.texts[0]) if found is not None else None)
    return texts
