"""Answers too long for the judge: never sent (or cut, when asked). Two bounds decide before counting
(a token is at least one byte, at most CHARS_PER_TOKEN characters); only between them is counted."""

from __future__ import annotations

import litellm

CHARS_PER_TOKEN = 16  # prose runs at 3-5; only a long repetition of one symbol reaches 8
TRUNCATION_NOTE = "\n\n[resposta cortada em {limit} tokens antes da avaliação: o restante não foi avaliado]"


def count_tokens(text: str, model: str) -> int:
    return litellm.token_counter(model=model, text=text)


def excess(text: str, model: str, limit: int) -> int | None:
    """None when `text` fits in `limit` tokens; else its token count (past the bound, a floor of it)."""
    if len(text.encode("utf-8")) <= limit:
        return None
    if len(text) > limit * CHARS_PER_TOKEN:
        return len(text) // CHARS_PER_TOKEN
    n = count_tokens(text, model)
    return n if n > limit else None


def truncate(text: str, model: str, limit: int) -> str:
    """The longest prefix of `text` (found in a few counts) that fits in `limit` tokens, and a note."""
    cut = text[: limit * CHARS_PER_TOKEN]
    while (n := count_tokens(cut, model)) > limit:
        cut = cut[: max(0, min(len(cut) - 1, int(len(cut) * limit / n * 0.98)))]
    return cut + TRUNCATION_NOTE.format(limit=limit)


def fit_answer(turns: list[str], model: str, limit: int, *, cut: bool) -> tuple[list[str], int | None]:
    """(turns to judge, the answer's tokens when over `limit`, else None); `cut`: each turn cut to its share."""
    size = excess("\n\n".join(turns), model, limit)
    if size is None or not cut:
        return turns, size
    share = max(1, limit // len(turns))
    return [truncate(t, model, share) if excess(t, model, share) else t for t in turns], size
