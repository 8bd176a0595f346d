"""Strip upstream formatting that is not content, keeping the legal text exact.

Editions 39-41 put a `QUESTÃO`/`PEÇA PRÁTICO-PROFISSIONAL` heading on statements and
`(Valor: 5,00)` in peça statements. Editions 42-44 add: numbered headings (`QUESTÃO 3`)
or none, `A) `/`B) ` before items, `(Valor: 0,65)` after them, and the `Obs.:`
(or `Obs .:`) note sometimes appended to item B instead of the statement. The values
removed here are kept in `max_score`; each is checked against `values`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError

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


def _value(m: re.Match) -> float:
    return round(float(m["v"].replace(",", ".")), 2)


def clean_question(
    statement: str,
    turns: list[str],
    values: list[float],
    *,
    kind: str,
    number: int,
    wrong_valor: Collection[str] = (),
) -> CleanQuestion:
    """Return statement and item prompts without headings, labels and `(Valor: ...)`.

    Raises SourceError (with `field` set) when a removed number disagrees with `values`, unless
    the field is in `wrong_valor` (an errata entry says the written value is the wrong one).
    """
    notes: list[str] = []
    settled: list[str] = []

    def disagrees(field: str, message: str) -> None:
        if field not in wrong_valor:
            raise SourceError(message, field=field)
        settled.append(field)
        notes.append(f"{field}: {message}; the errata keeps the values")

    m = _HEADING_RE.match(statement)
    if m:
        if m["n"] is not None and int(m["n"]) != number:
            raise SourceError(
                f"heading says QUESTÃO {m['n']} but the id says questao_{number}", field="statement"
            )
        statement = statement[m.end() :]

    found = list(_VALOR_RE.finditer(statement))
    if kind == "peca":
        if len(found) > 1:
            raise SourceError("more than one '(Valor: ...)' in the statement", field="statement")
        if found:
            if _value(found[0]) != round(sum(values), 2):
                disagrees("statement", f"statement says (Valor: {found[0]['v']}) but values say {values}")
            statement = statement[: found[0].start()] + statement[found[0].end() :]
    elif found:
        raise SourceError(
            "'(Valor: ...)' in a questão statement; expected it after each item", field="statement"
        )

    labels = "AB" if kind == "questao" else ""
    prompts: list[str] = []
    moved_obs: list[str] = []
    for i, turn in enumerate(turns):
        field = f"turns.{i}"
        text = turn
        p = _ITEM_PREFIX_RE.match(text)
        if p:
            if kind != "questao" or p["label"] != labels[i]:
                raise SourceError(f"item starts with '{p['label']})' but is turn {i + 1}", field=field)
            text = text[p.end() :]
        obs = _OBS_RE.search(text)
        if obs:
            moved_obs.append(text[obs.start() :].strip())
            text = text[: obs.start()]
            notes.append(f"{field}: moved its 'Obs.:' note to the statement")
        vals = list(_VALOR_RE.finditer(text))
        if len(vals) > 1:
            raise SourceError("more than one '(Valor: ...)' in the item", field=field)
        if vals:
            v = vals[0]
            if text[v.end() :].strip():
                raise SourceError("text after '(Valor: ...)' in the item", field=field)
            if _value(v) != round(values[i], 2):
                disagrees(field, f"item says (Valor: {v['v']}) but values[{i}] is {values[i]}")
            text = text[: v.start()]
        prompts.append(text.strip())
    statement = statement.strip()
    if moved_obs:
        statement = "\n".join([statement, *moved_obs])
    return CleanQuestion(statement, prompts, notes, settled)
