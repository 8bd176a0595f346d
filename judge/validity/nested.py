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
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.grading.judgment_reader import read_judgment
from oab_bench.judge.results_source import judgment_objects


def agreeing_row(r: dict, rows: dict[str, QuestionRow]) -> QuestionRow | None:
    """The dataset's row of the record's question, when the record agrees with it on exam and value."""
    row = rows.get(r.get("question_id"))
    same_max = row is not None and isinstance(r.get("max_score"), int | float)
    if same_max and r.get("exam_id") == row.exam_id and abs(r["max_score"] - row.max_score) < 1e-6:
        return row
    return None


def _checked(r: dict, key: str, at: dict, row: QuestionRow | None = None) -> dict:
    """The record, its nested gradings as the record keeps them (MemberScore's fields, defaults filled);
    checked against `row`'s rubric when given."""
    got = read_judgment(r, **at, rows={row.question_id: row} if row is not None else None)
    return {**r, key: [m.model_dump(mode="json") for m in getattr(got, key)]}


def read_nested_lines(
    path: Path, key: str, rows: dict[str, QuestionRow] | None = None
) -> list[tuple[int, dict]]:
    """Every record of `path` that carries `key`, checked, with its line, in file order.
    `rows`: the dataset's, by question id: a record that agrees with its row on the exam and the
    value is checked against its rubric too (one that does not is the caller's to leave out)."""
    out = []
    for file, lineno, r in judgment_objects(path):  # a judgments file, or a shared dataset's records
        if r.get(key):
            out.append(
                (lineno, _checked(r, key, {"file": file, "line": lineno}, agreeing_row(r, rows or {})))
            )
    return out


def read_nested(path: Path, key: str, *, rows: dict[str, QuestionRow] | None = None) -> list[dict]:
    """The records of `path` that carry `key` ("members" or "repeats"), checked (read_nested_lines),
    one per (model, question) as the module docstring says, sorted by (model, question)."""
    return one_each(read_nested_lines(path, key, rows), path)


def one_each(lines: list[tuple[int, dict]], path: Path) -> list[dict]:
    """One record per (model, question) of `lines` (read_nested_lines'), sorted: a copy is read
    once, two that differ are an error naming both lines."""
    found: dict[tuple[str, str], tuple[int, dict]] = {}
    for lineno, record in lines:
        slot = (str(record["model"]), str(record["question_id"]))
        if slot in found:
            before, seen = found[slot]
            if seen != record:
                raise SourceError(
                    f"{slot[0]} on {slot[1]} is graded here and differently on line {before}: keep one of them",
                    file=str(path),
                    line=lineno,
                )
            continue
        found[slot] = (lineno, record)
    return [found[k][1] for k in sorted(found)]
