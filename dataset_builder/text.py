"""Upstream formatting that is not content, stripped from statements and item prompts (headings, item
labels, written values checked against `values`); the legal text stays exact (docs/dataset.md)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import QuestionId

_HEADING_RE = re.compile(
    r"^\s*(?:QUEST[ÃA]O(?:\s+(?P<n>\d+))?|PE[ÇC]A\s+PR[ÁA]TICO[-\s]?PROFISSIONAL|PE[ÇC]A\s+PROFISSIONAL)[ \t]*\n+"
)
_VALOR_RE = re.compile(r"[ \t]*\(\s*Valor\s*:\s*(?P<v>\d+[.,]\d+)\s*\)")
_ITEM_PREFIX_RE = re.compile(r"^\s*(?P<label>[A-Z])\)\s+")
_OBS_RE = re.compile(r"\n\s*Obs\s?\.\s?\d*\s?:")


class CleanQuestion(NamedTuple):
    statement: str
    prompts: list[str]
    notes: list[str]  # what was normalised, for the build report
    settled: list[str]  # fields whose wrong `(Valor: ...)` an errata entry settled


def clean_question(
    statement: str, turns: list[str], values: list[float], qid: QuestionId, wrong_valor: Collection[str]
) -> CleanQuestion:
    """SourceError (its field set) when a written value disagrees with `values`, unless the field is in
    `wrong_valor`; an `Obs.:` note appended to an item moves back to the statement."""
    kind, notes, settled = qid.kind, [], []

    def check(field: str, written: re.Match, value: float, message: str) -> None:
        if round(float(written["v"].replace(",", ".")), 2) == round(value, 2):
            return
        if field not in wrong_valor:
            raise SourceError(message, field=field)
        settled.append(field)
        notes.append(f"{field}: {message}; the errata keeps the values")

    m = _HEADING_RE.match(statement)
    if m and m["n"] is not None and int(m["n"]) != qid.number:
        raise SourceError(
            f"heading says QUESTÃO {m['n']} but the id says questao_{qid.number}", field="statement"
        )
    statement = statement[m.end() :] if m else statement
    found = list(_VALOR_RE.finditer(statement))
    if found and kind != "peca":
        raise SourceError(
            "'(Valor: ...)' in a questão statement; expected it after each item", field="statement"
        )
    if len(found) > 1:
        raise SourceError("more than one '(Valor: ...)' in the statement", field="statement")
    if found:
        check(
            "statement",
            found[0],
            sum(values),
            f"statement says (Valor: {found[0]['v']}) but values say {values}",
        )
        statement = statement[: found[0].start()] + statement[found[0].end() :]

    prompts: list[str] = []
    moved_obs: list[str] = []
    for i, text in enumerate(turns):
        field = f"turns.{i}"
        p = _ITEM_PREFIX_RE.match(text)
        if p and (kind != "questao" or p["label"] != "AB"[i]):
            raise SourceError(f"item starts with '{p['label']})' but is turn {i + 1}", field=field)
        text = text[p.end() :] if p else text
        obs = _OBS_RE.search(text)
        if obs:
            moved_obs.append(text[obs.start() :].strip())
            text = text[: obs.start()]
            notes.append(f"{field}: moved its 'Obs.:' note to the statement")
        vals = list(_VALOR_RE.finditer(text))
        if len(vals) > 1:
            raise SourceError("more than one '(Valor: ...)' in the item", field=field)
        if vals:
            if text[vals[0].end() :].strip():
                raise SourceError("text after '(Valor: ...)' in the item", field=field)
            check(
                field, vals[0], values[i], f"item says (Valor: {vals[0]['v']}) but values[{i}] is {values[i]}"
            )
            text = text[: vals[0].start()]
        prompts.append(text.strip())
    return CleanQuestion("\n".join([statement.strip(), *moved_obs]), prompts, notes, settled)
