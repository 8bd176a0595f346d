"""Parse one reference turn: the commented answer, then the markdown score table.

The tables are messy (docs/dataset.md): padded cells, an optional
heading, `nan` section rows, labels `1.`/`A.`/`a)`/`5.1`/none, score cells written
`0,00/0,55/0,65`, `0,0/...`, with spaces instead of slashes, `/ `, a dot decimal.
This module reads them as they are; corrections happen in errata, never here.
"""

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
    """A row as written in the source.

    A section row (`Fundamentação`, score `nan`) has is_item False. An item row whose
    score cell is blank but whose text carries point values, e.g. `3. ... (0,10).` under
    a merged cell, is an item with `scores` None: the build refuses it unless the errata
    scores it.
    """

    row: int  # 1-based position among the table's body rows
    label: str
    description: str
    cell: str  # the score cell as written (whitespace collapsed)
    scores: list[float] | None
    annulled: bool
    is_item: bool = True


class ParsedReference(NamedTuple):
    commented_answer: str
    rows: list[TableRow]


def parse_scores(cell: str) -> list[float]:
    """`0,00/0,55/ 0,65` -> [0.0, 0.55, 0.65]; raise ValueError on anything else."""
    tokens = [t for t in re.split(r"[/\s]+", cell.strip()) if t]
    if not tokens:
        raise ValueError(f"empty score cell {cell!r}")
    values = []
    for token in tokens:
        if not _NUMBER_RE.match(token):
            raise ValueError(f"unreadable score cell {cell!r} (token {token!r})")
        values.append(round(float(token.replace(",", ".")), 2))
    return sorted(set(values))


def split_label(text: str) -> tuple[str, str]:
    m = _LABEL_RE.match(text)
    if not m:
        return "", text
    return m["label"], text[m.end() :]


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip() for c in body.split("|")]


def parse_reference(text: str) -> ParsedReference:
    """Split a reference turn into its commented answer and score-table rows.

    Raises SourceError (field left for the caller) when there is no readable table.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]  # not splitlines(): U+2028 etc. are text
    table_idx = [i for i, line in enumerate(lines) if line.lstrip().startswith("|")]
    if not table_idx:
        raise SourceError("no score table (`| ITEM | PONTUAÇÃO |`) found")
    start, end = table_idx[0], table_idx[-1]
    if end - start + 1 != len(table_idx):
        raise SourceError(f"score table is interrupted by non-table lines (lines {start + 1}-{end + 1})")
    if any(line.strip() for line in lines[end + 1 :]):
        raise SourceError("text after the score table")

    header, *body = [lines[i] for i in table_idx]
    head = [c.upper() for c in _cells(header)]
    if len(head) != 2 or "ITEM" not in head[0] or "PONTUA" not in head[1]:
        raise SourceError(f"score table header is {header.strip()[:60]!r}, expected '| ITEM | PONTUAÇÃO |'")
    if not body or not _SEPARATOR_RE.match(body[0].strip()):
        raise SourceError("score table has no '|:---|:---|' separator under its header")

    rows: list[TableRow] = []
    for n, line in enumerate(body[1:], start=1):
        cells = _cells(line)
        if len(cells) != 2:
            raise SourceError(
                f"score table row {n} has {len(cells)} cells, expected 2: {line.strip()[:60]!r}"
            )
        item_text, cell = (" ".join(c.split()) for c in cells)
        if not item_text:
            raise SourceError(f"score table row {n} has an empty ITEM cell")
        label, description = split_label(item_text)
        if cell.lower() in SECTION_CELLS:
            if _POINTS_RE.search(item_text):  # an item under a merged score cell
                rows.append(TableRow(n, label, description, cell, None, False))
            else:
                rows.append(TableRow(n, label, item_text, cell, None, False, is_item=False))
            continue
        try:
            scores = parse_scores(cell)
        except ValueError as e:
            raise SourceError(f"score table row {n}: {e}") from None
        annulled = bool(_ANNULLED_RE.match(description.strip()))
        rows.append(TableRow(n, label, description, cell, scores, annulled))
    if not any(r.scores is not None for r in rows):  # at least one readable cell
        raise SourceError("score table has no scored rows")

    before = lines[:start]
    while before and (not before[-1].strip() or _HEADING_RE.match(before[-1])):
        before.pop()
    return ParsedReference("\n".join(before).strip(), rows)
