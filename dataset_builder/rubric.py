"""One reference turn -> its commented answer and the rows of its markdown score table, read as written
(the traps are in docs/dataset.md); corrections happen in the errata, never here."""

from __future__ import annotations

import re
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError

_HEADING_RE = re.compile(r"^\s*#*\s*distribui[çc][ãa]o\s+dos\s+pontos\s*:?\s*$", re.IGNORECASE)
_SEPARATOR_RE = re.compile(r"^\|[\s:\-|]+\|$")
_NUMBER_RE = re.compile(r"^\d+(?:[.,]\d+)?$")
_LABEL_RE = re.compile(r"^(?P<label>[A-Z]\d?[.)]|\d+(?:\.\d+)*\.?|[a-z]\)|[IVX]+\.)\s+(?=\S)")
_POINTS_RE = re.compile(r"\(\d+[.,]\d+\)")
_ANNULLED_RE = re.compile(r"^\(?\s*anulad[ao]\s*\)?\.?$", re.IGNORECASE)
SECTION_CELLS = {"nan", "", "-"}


class TableRow(NamedTuple):
    """An item row as written, under the nearest section row above it (`Fundamentação`, score `nan`).
    An item row with a blank cell but point values in its text (under a merged cell) has `scores` None:
    the build refuses it unless the errata score it."""

    label: str
    description: str
    cell: str  # the score cell as written (whitespace collapsed)
    scores: list[float] | None
    annulled: bool
    section: str


class ParsedReference(NamedTuple):
    commented_answer: str
    rows: list[TableRow]


def parse_scores(cell: str) -> list[float]:
    """`0,00/0,55/ 0,65` -> [0.0, 0.55, 0.65]; ValueError on anything else."""
    tokens = [t for t in re.split(r"[/\s]+", cell.strip()) if t]
    if not tokens:
        raise ValueError(f"empty score cell {cell!r}")
    for token in tokens:
        if not _NUMBER_RE.match(token):
            raise ValueError(f"unreadable score cell {cell!r} (token {token!r})")
    return sorted({round(float(t.replace(",", ".")), 2) for t in tokens})


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body.removeprefix("|").removesuffix("|")
    return [" ".join(c.split()) for c in body.split("|")]


def parse_reference(text: str) -> ParsedReference:
    """Split a reference turn into its commented answer and score-table rows; SourceError (its field
    left to the caller) when there is no readable table."""
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
            raise SourceError(
                f"score table row {n} has {len(cells)} cells, expected 2: {line.strip()[:60]!r}"
            )
        item_text, cell = cells
        if not item_text:
            raise SourceError(f"score table row {n} has an empty ITEM cell")
        m = _LABEL_RE.match(item_text)
        label, description = (m["label"], item_text[m.end() :]) if m else ("", item_text)
        blank = cell.lower() in SECTION_CELLS
        if blank and not _POINTS_RE.search(item_text):  # a section; with points, an item under a merged cell
            section = item_text
            continue
        try:
            scores = None if blank else parse_scores(cell)
        except ValueError as e:
            raise SourceError(f"score table row {n}: {e}") from None
        annulled = bool(_ANNULLED_RE.match(description.strip()))
        rows.append(TableRow(label, description, cell, scores, annulled, section))
    if not any(r.scores is not None for r in rows):
        raise SourceError("score table has no scored rows")
    before = lines[:start]
    while before and (not before[-1].strip() or _HEADING_RE.match(before[-1])):
        before.pop()
    return ParsedReference("\n".join(before).strip(), rows)
