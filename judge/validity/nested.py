"""Judgment records carrying nested gradings (a jury's `members`, a repeated run's `repeats`), read
and checked like any judgment the reports read.

Each record is checked as the leaderboard checks it (keys, question id, numbers: trust.problem,
which checks the nested gradings' scores too) and each nested grading's shape (MemberScore, strict:
"0.5" is not a score). A bad one stops with `file:line: field`. One (model, question) on two lines:
identical copies are one; two different ones stop naming both lines (no line order may win).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.judge.grading.trust import problem
from oab_bench.judge.leaderboard.inputs import OURS_KEYS
from oab_bench.judge.records import MemberScore
from oab_bench.judge.results_source import judgment_objects


def _grading(m: dict, at: dict, field: str) -> dict:
    """One member's (or repeat's) grading, as the record keeps it (its numbers: trust.problem)."""
    try:
        got = MemberScore.model_validate(m, strict=True)  # "0.5" is not a score
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in (field, *first["loc"]))
        got_value = "" if first["type"] == "missing" else f"{first['input']!r}: "
        raise SourceError(got_value + first["msg"], **at, field=where) from None
    return got.model_dump(mode="json")


def _checked(r: dict, key: str, at: dict) -> dict:
    missing = OURS_KEYS - set(r)
    if missing:
        raise SourceError(f"missing keys {sorted(missing)}", **at)
    try:
        parse_question_id(r["question_id"])
    except (ValueError, TypeError) as e:
        raise SourceError(str(e), **at, field="question_id") from None
    bad = problem(r)
    if bad:
        raise SourceError(bad[1], **at, field=bad[0])
    nested = [_grading(m, at, f"{key}[{n}]") for n, m in enumerate(r[key])]
    if key == "repeats":
        numbers = [m["repeat"] for m in nested]
        if None in numbers or len(set(numbers)) != len(numbers):
            raise SourceError(f"repeat numbers {numbers} are not distinct numbers", **at, field=key)
    return {**r, key: nested}


def read_nested(path: Path, key: str, *, one_each: bool = True) -> list[dict]:
    """The records of `path` that carry `key` ("members" or "repeats"), checked, sorted by
    (model, question); `one_each`: one record per (model, question), as the module docstring says."""
    found: dict[tuple[str, str], tuple[int, dict]] = {}
    out = []
    for file, lineno, r in judgment_objects(path):  # a judgments file, or a shared dataset's records
        if not r.get(key):
            continue
        at = {"file": file, "line": lineno}
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
