"""Judgment records carrying nested gradings (a jury's `members`, a repeated run's `repeats`), read
and checked like any judgment the reports read.

Each record goes through the one judgment reader (judge/grading/judgment_reader.py: its shape, the
nested gradings' included, its numbers, a repeated run's repeat numbers); a bad one stops with
`file:line: field`. One (model, question) on two lines: identical copies are one; two different
ones stop naming both lines (no line order may win).
"""

from __future__ import annotations

from pathlib import Path

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import read_objects
from oab_bench.judge.grading.judgment_reader import read_judgment


def _checked(r: dict, key: str, at: dict) -> dict:
    """The record, its nested gradings as the record keeps them (MemberScore's fields, defaults filled)."""
    got = read_judgment(r, **at)
    return {**r, key: [m.model_dump(mode="json") for m in getattr(got, key)]}


def read_nested(path: Path, key: str, *, one_each: bool = True) -> list[dict]:
    """The records of `path` that carry `key` ("members" or "repeats"), checked, sorted by
    (model, question); `one_each`: one record per (model, question), as the module docstring says."""
    found: dict[tuple[str, str], tuple[int, dict]] = {}
    out = []
    for lineno, r in read_objects(path):
        if not r.get(key):
            continue
        at = {"file": str(path), "line": lineno}
        record = _checked(r, key, at)
        if not one_each:
            out.append(record)
            continue
        slot = (str(r["model"]), str(r["question_id"]))
        if slot in found:
            before, seen = found[slot]
            if seen != record:
                raise SourceError(
                    f"{slot[0]} on {slot[1]} is graded here and differently on line {before}: keep one of them",
                    **at,
                )
            continue
        found[slot] = (lineno, record)
    if one_each:
        out = [found[k][1] for k in sorted(found)]
    return out
