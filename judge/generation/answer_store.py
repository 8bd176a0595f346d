"""Candidate answers kept, so a rerun or a resume never pays for one twice: keyed by model, generation
settings and the prompt's messages (never the server's address nor the key); only non-empty answers.
Table `answers` of the cache folder's `answers.sqlite` (oab_bench/keyed_store.py)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from pydantic import BaseModel

from oab_bench.conventions import ANSWERS_FILE as STORE_FILE
from oab_bench.keyed_store import Access, KeyedStore


class StoredAnswer(BaseModel):
    key: str
    model: str
    texts: list[str]  # one per sample
    reasonings: list[str | None] = []
    finish_reasons: list[str | None] = []
    created: float = 0.0

    def good(self) -> bool:
        return bool(self.texts) and all(t and t.strip() for t in self.texts)


def generation_settings(params: dict, max_new_tokens: int | None, samples: int = 1, stop=None) -> dict:
    """What shapes an answer besides model and prompt; `params`: lighteval's GenerationParameters."""
    params = {k: v for k, v in params.items() if v is not None}
    return {"params": params, "max_new_tokens": max_new_tokens, "samples": samples, "stop": list(stop or [])}


def answer_key(*, model: str, messages: list[dict], generation: dict) -> str:
    text = json.dumps({"model": model, "messages": messages, "generation": generation}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _parse(text: str) -> StoredAnswer | None:
    answer = StoredAnswer.model_validate_json(text)
    return answer if answer.good() else None


class AnswerStore(KeyedStore[StoredAnswer]):
    """The answers stored in `folder`; `claim(key)` holds a key while it is generated (one payer)."""

    def __init__(self, folder: Path | str, *, read: bool = True, access: Access = "write"):
        super().__init__(Path(folder) / STORE_FILE, "answers", _parse, access=access, read=read)

    def put(self, answer: StoredAnswer) -> bool:
        """Keep a non-empty answer (False: not kept, or held in memory only)."""
        answer = answer.model_copy(update={"created": answer.created or time.time()})
        return answer.good() and self.write([(answer.key, answer.model_dump_json())])
