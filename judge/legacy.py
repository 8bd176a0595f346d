"""Free-text judgments ending in `[[nota]]`, read as upstream reads them (None for its -1); a closing
`Nota total: 0,65` line reproduces upstream's five hand-fixed o3 judgments, and says so."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

_PATTERNS = (
    (re.compile(r"\[\[(\d+[.,]?\d*)\]\]"), "double_bracket"),
    (re.compile(r"\[(\d+[,.]?\d*)\]"), "single_bracket"),
)
_TOTAL_LINE = re.compile(r"^\W*(?:nota\s+total|soma\s+da\s+nota)\s*:\s*(\d+(?:[.,]\d+)?)\W*$", re.IGNORECASE)


class LegacyScore(NamedTuple):
    score: float
    method: Literal["double_bracket", "single_bracket", "total_line"]


def parse_legacy_score_detailed(text: str) -> LegacyScore | None:
    lines = [line for line in text.strip().split("\n") if line.strip()]
    found = [(p.search(text), method) for p, method in _PATTERNS]
    found.append((_TOTAL_LINE.match(lines[-1].strip()) if lines else None, "total_line"))
    return next((LegacyScore(float(m.group(1).replace(",", ".")), how) for m, how in found if m), None)


def parse_legacy_score(text: str) -> float | None:
    """The score a `[[nota]]` judgment gives, or None (upstream's -1) when it gives none."""
    found = parse_legacy_score_detailed(text)
    return None if found is None else found.score
