"""One reader for judgment records, whoever reads them back: the leaderboard, the report,
`agreement` (judges, juries, repeats) and the judgment cache.

A record is typed first (records.JudgmentLine, strict: a dict is not a list of items, "0.5" is
not a score, an item has an `item_id`), then its numbers are checked (trust.problem). What is
wrong is told as `file:line: field: what`, the same in every command, never a traceback; the
cache, which may skip a line, skips it with the same words.
"""

from __future__ import annotations

from pydantic import ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.dataset_builder.source import shape_error
from oab_bench.judge.grading.trust import TOLERANCE, problem
from oab_bench.judge.records import JudgmentLine


def _repeats_problem(line: JudgmentLine) -> tuple[str, str] | None:
    """A repeated run's record is repeat 0's grading, with repeats 0..K-1 under `repeats`."""
    if not line.repeats:
        return None
    numbers = [m.repeat for m in line.repeats]
    if sorted(n for n in numbers if n is not None) != list(range(len(numbers))):
        return "repeats", f"repeat numbers {numbers} are not 0..{len(numbers) - 1}, each once"
    first = next(m for m in line.repeats if m.repeat == 0)
    same = first.status == line.status and (
        line.status != "ok" or abs((first.score or 0.0) - (line.score or 0.0)) <= TOLERANCE
    )
    if not same:
        return (
            "score",
            f"{line.score} ({line.status}) is not repeat 0's {first.score} ({first.status}): "
            "the record is repeat 0's grading",
        )
    return None


def typed(raw: dict | str) -> JudgmentLine:
    """The record's shape, or SourceError naming the field (the caller knows the place); `raw`: a
    record, or a JSON line (the cache's: read by pydantic at once)."""
    try:
        if isinstance(raw, str):
            line = JudgmentLine.model_validate_json(raw, strict=True)
        else:
            line = JudgmentLine.model_validate(raw, strict=True)
    except ValidationError as e:
        raise shape_error(e) from None
    try:
        parse_question_id(line.question_id)
    except ValueError as e:
        raise SourceError(str(e), field="question_id") from None
    bad = _repeats_problem(line)
    if bad:
        raise SourceError(bad[1], field=bad[0])
    return line


def read_judgment(
    raw: dict, *, file: str, line: int, rows: dict[str, QuestionRow] | None = None
) -> JudgmentLine:
    """One record, typed and its numbers checked against its question's row in `rows` (the
    dataset, when known). A record that disagrees with the row on the question's exam or value
    comes back as `mismatch` (records.Status), checked without the row."""
    try:
        got = typed(raw)
    except SourceError as e:
        raise e.at(file=file, line=line) from None
    row = (rows or {}).get(got.question_id)
    if row is not None and (got.exam_id != row.exam_id or abs(got.max_score - row.max_score) > TOLERANCE):
        got, row = got.model_copy(update={"status": "mismatch"}), None
    bad = problem(raw, row)
    if bad:
        raise SourceError(bad[1], file=file, line=line, field=bad[0])
    return got
