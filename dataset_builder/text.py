"""Upstream's texts read as written (the traps: docs/dataset.md): prompts stripped of headings, labels and
checked written values; a reference split into answer and score-table rows. Corrections live in the errata."""

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
_POINTS_HEADING_RE = re.compile(r"^\s*#*\s*distribui[çc][ãa]o\s+dos\s+pontos\s*:?\s*$", re.IGNORECASE)
_SEPARATOR_RE = re.compile(r"^\|[\s:\-|]+\|$")
_NUMBER_RE = re.compile(r"^\d+(?:[.,]\d+)?$")
_LABEL_RE = re.compile(r"^(?P<label>[A-Z]\d?[.)]|\d+(?:\.\d+)*\.?|[a-z]\)|[IVX]+\.)\s+(?=\S)")
_POINTS_RE = re.compile(r"\(\d+[.,]\d+\)")
_ANNULLED_RE = re.compile(r"^\(?\s*anulad[ao]\s*\)?\.?$", re.IGNORECASE)


def clean_question(
    statement: str, turns: list[str], values: list[float], qid: QuestionId, wrong_valor: Collection[str]
) -> tuple[str, list[str], list[str], list[str]]:
    """(statement, prompts, what was normalised, fields whose wrong `(Valor: ...)` the errata settled);
    SourceError (its field set) for a written value disagreeing with `values`, unless in `wrong_valor`."""
    notes, settled, prompts, moved_obs = [], [], [], []

    def cut_valor(text: str, field: str, value: float, but: str) -> str:
        found, where = list(_VALOR_RE.finditer(text)), "statement" if field == "statement" else "item"
        if len(found) > 1:
            raise SourceError(f"more than one '(Valor: ...)' in the {where}", field=field)
        if not found:
            return text
        if where == "item" and text[found[0].end() :].strip():
            raise SourceError("text after '(Valor: ...)' in the item", field=field)
        if round(float(found[0]["v"].replace(",", ".")), 2) != round(value, 2):
            message = f"{where} says (Valor: {found[0]['v']}) but {but}"
            if field not in wrong_valor:
                raise SourceError(message, field=field)
            settled.append(field)
            notes.append(f"{field}: {message}; the errata keeps the values")
        return text[: found[0].start()] + text[found[0].end() :]

    m = _HEADING_RE.match(statement)
    if m and m["n"] is not None and int(m["n"]) != qid.number:
        why = f"heading says QUESTÃO {m['n']} but the id says questao_{qid.number}"
        raise SourceError(why, field="statement")
    statement = statement[m.end() :] if m else statement
    if qid.kind != "peca" and _VALOR_RE.search(statement):
        why = "'(Valor: ...)' in a questão statement; expected it after each item"
        raise SourceError(why, field="statement")
    statement = cut_valor(statement, "statement", sum(values), f"values say {values}")
    for i, text in enumerate(turns):
        field = f"turns.{i}"
        p = _ITEM_PREFIX_RE.match(text)
        if p and (qid.kind != "questao" or p["label"] != "AB"[i]):
            raise SourceError(f"item starts with '{p['label']})' but is turn {i + 1}", field=field)
        text = text[p.end() :] if p else text
        obs = _OBS_RE.search(text)
        if obs:
            moved_obs.append(text[obs.start() :].strip())
            text = text[: obs.start()]
            notes.append(f"{field}: moved its 'Obs.:' note to the statement")
        prompts.append(cut_valor(text, field, values[i], f"values[{i}] is {values[i]}").strip())
    return "\n".join([statement.strip(), *moved_obs]), prompts, notes, settled


class TableRow(NamedTuple):
    """An item row as written, under the nearest section row above it (`Fundamentação`, score `nan`);
    `scores` None: a blank cell with points in the text (under a merged cell), for the errata to score."""

    label: str
    description: str
    cell: str  # the score cell as written (whitespace collapsed)
    scores: list[float] | None
    annulled: bool
    section: str


def parse_scores(cell: str) -> list[float]:
    """`0,00/0,55/ 0,65` -> [0.0, 0.55, 0.65]; ValueError on anything else."""
    tokens = [t for t in re.split(r"[/\s]+", cell.strip()) if t]
    if not tokens:
        raise ValueError(f"empty score cell {cell!r}")
    if bad := next((t for t in tokens if not _NUMBER_RE.match(t)), None):
        raise ValueError(f"unreadable score cell {cell!r} (token {bad!r})")
    return sorted({round(float(t.replace(",", ".")), 2) for t in tokens})


def _cells(line: str) -> list[str]:
    body = line.strip().removeprefix("|").removesuffix("|")
    return [" ".join(c.split()) for c in body.split("|")]


def parse_reference(text: str) -> tuple[str, list[TableRow]]:
    """A reference turn's commented answer and score-table rows; SourceError (no field) without a table."""
    lines = [line.rstrip("\r") for line in text.split("\n")]  # not splitlines(): U+2028 etc. are text
    table = [i for i, line in enumerate(lines) if line.lstrip().startswith("|")]
    if not table:
        raise SourceError("no score table (`| ITEM | PONTUAÇÃO |`) found")
    start, end = table[0], table[-1]
    if end - start + 1 != len(table):
        raise SourceError(f"score table is interrupted by non-table lines (lines {start + 1}-{end + 1})")
    if any(line.strip() for line in lines[end + 1 :]):
        raise SourceError("text after the score table")
    header, *body = lines[start : end + 1]
    head = [c.upper() for c in _cells(header)]
    if len(head) != 2 or "ITEM" not in head[0] or "PONTUA" not in head[1]:
        raise SourceError(f"score table header is {header.strip()[:60]!r}, expected '| ITEM | PONTUAÇÃO |'")
    if not body or not _SEPARATOR_RE.match(body[0].strip()):
        raise SourceError("score table has no '|:---|:---|' separator under its header")
    rows: list[TableRow] = []
    section = ""
    for n, line in enumerate(body[1:], start=1):
        cells = _cells(line)
        if len(cells) != 2:
            why = f"has {len(cells)} cells, expected 2: {line.strip()[:60]!r}"
            raise SourceError(f"score table row {n} {why}")
        item_text, cell = cells
        if not item_text:
            raise SourceError(f"score table row {n} has an empty ITEM cell")
        m = _LABEL_RE.match(item_text)
        label, description = (m["label"], item_text[m.end() :]) if m else ("", item_text)
        blank = cell.lower() in {"nan", "", "-"}
        if blank and not _POINTS_RE.search(item_text):  # a section; with points, an item under a merged cell
            section = item_text
            continue
        try:
            scores = None if blank else parse_scores(cell)
        except ValueError as e:
            raise SourceError(f"score table row {n}: {e}") from None
        annulled = bool(_ANNULLED_RE.match(description.strip()))  # FGV's word in the item cell
        rows.append(TableRow(label, description, cell, scores, annulled, section))
    if not any(r.scores is not None for r in rows):
        raise SourceError("score table has no scored rows")
    before = lines[:start]
    while before and (not before[-1].strip() or _POINTS_HEADING_RE.match(before[-1])):
        before.pop()
    return "\n".join(before).strip(), rows
