"""Free-text judgments ending in `[[nota]]`, read exactly as upstream reads them.

Upstream searches `\\[\\[(\\d+[.,]?\\d*)\\]\\]`, then `\\[(\\d+[,.]?\\d*)\\]`, comma as decimal
point, first match wins, -1 when nothing matches. Five of upstream's published o3
judgments carry no bracketed score but close with a total line (`Nota total: 0,65`) and
were fixed by hand; the fallback below reproduces them and says it did.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

_DOUBLE = re.compile(r"\[\[(\d+[.,]?\d*)\]\]")
_SINGLE = re.compile(r"\[(\d+[,.]?\d*)\]")
_TOTAL_LINE = re.compile(r"^\W*(?:nota\s+total|soma\s+da\s+nota)\s*:\s*(\d+(?:[.,]\d+)?)\W*$", re.IGNORECASE)


class LegacyScore(NamedTuple):
    score: float
    method: Literal["double_bracket", "single_bracket", "total_line"]


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def parse_legacy_score_detailed(text: str) -> LegacyScore | None:
    for pattern, method in ((_DOUBLE, "double_bracket"), (_SINGLE, "single_bracket")):
        m = pattern.search(text)
        if m:
            return LegacyScore(_number(m.group(1)), method)
    lines = [line for line in text.strip().split("\n") if line.strip()]
    if lines:
        m = _TOTAL_LINE.match(lines[-1].strip())
        if m:
            return LegacyScore(_number(m.group(1)), "total_line")
    return None


def parse_legacy_score(text: str) -> float | None:
    """The score a `[[nota]]` judgment gives, or None (upstream's -1) when it gives none."""
    found = parse_legacy_score_detailed(text)
    return None if found is None else found.score
