"""A jury's name: its combining rule and its members in one canonical (sorted) order.

`a,b,c` and `c,b,a` are one jury: one name in the records, one judge on the leaderboard.
Records written before the order was canonical name their members as they were given; they
are read as the canonical name (`canonical_judge`), so old judgment files and caches still
count as the same judge.
"""

from __future__ import annotations

import re

_JURY = re.compile(r"^jury-(\w+)\((.*)\)$")


def jury_name(names: list[str], how: str) -> str:
    return f"jury-{how}({', '.join(sorted(names))})"


def canonical_judge(judge_model: str) -> str:
    """A jury's name with its members sorted; any other judge's name as it is."""
    m = _JURY.match(judge_model)
    return jury_name(m.group(2).split(", "), m.group(1)) if m else judge_model
