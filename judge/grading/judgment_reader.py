"""The one reader of judgment records (reports, `agreement`, the cache): typed strictly first
(records.JudgmentLine), then its numbers checked (`problem`), so that nothing impossible reaches an
exam total; what is wrong is told as `file:line: field: what` in every command."""

from __future__ import annotations

import math

from pydantic import ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.dataset_builder.source import shape_error
from oab_bench.judge.grading.prompts import PROMPT_VERSION
from oab_bench.judge.records import Judgment, JudgmentLine
from oab_bench.judge.scoring import annulled_part

TOLERANCE = 1e-6


def _within(x: float | None, top: float) -> bool:
    return x is not None and math.isfinite(x) and 0 <= x <= top + TOLERANCE


def _annulled_value(row: QuestionRow, item_id: str) -> float | None:
    """The full value of `item_id` (a rubric row, or an item A/B scored whole) when FGV annulled it."""
    for r in row.rubric:
        if r.item_id == item_id:
            return r.max_score if r.annulled else None
    for item in row.items:
        if item.label and item.label == item_id and annulled_part(row, item.label):
            return item.max_score
    return None


def problem(record: Judgment | JudgmentLine, row: QuestionRow | None = None) -> tuple[str, str] | None:
    """(field, why) when a record is impossible (with the row: our items must be the rubric's, allowed)."""
    top = record.max_score
    if not math.isfinite(top) or top <= 0:
        return "max_score", f"{top!r} is not a positive number"
    for key in ("members", "repeats"):  # a jury's members, a repeated run's repeats
        for n, m in enumerate(getattr(record, key) or []):
            scores = {"score": m.score, **{f"items.{item}": v for item, v in m.items.items()}}
            bad = [k for k, v in scores.items() if m.status == "ok" and not _within(v, top)]
            if bad:
                return f"{key}[{n}].{bad[0]}", f"{scores[bad[0]]!r} is not a score within 0..{top}"
    if record.status != "ok":
        return None
    if not _within(record.score, top):
        return "score", f"{record.score!r} is outside 0..{top}"
    items = record.items or []
    for n, item in enumerate(items):
        if not _within(item.score, item.max_score if item.max_score > 0 else math.inf):
            return f"items[{n}].score", f"{item.score!r} is not a score within 0..{item.max_score}"
        full = None if row is None else _annulled_value(row, item.item_id)
        if full is not None and abs(item.score - full) > TOLERANCE:  # any prompt: FGV's in full
            return f"items[{n}].score", f"{item.score}: {item.item_id} was annulled by FGV, it counts {full}"
    if record.mode != "structured" or record.prompt_version != PROMPT_VERSION:
        return None
    added = money(sum(i.score for i in items))
    if items and abs(added - record.score) > 0.005:
        return "items", f"item scores add up to {added}, not {record.score}"
    if row is None:
        return None
    rubric = {r.item_id: r for r in row.rubric}
    if sorted(i.item_id for i in items) != sorted(rubric):
        return "items", f"items {sorted(i.item_id for i in items)} do not match the rubric's {sorted(rubric)}"
    for n, item in enumerate(items):
        r = rubric[item.item_id]
        allowed = [r.max_score] if r.annulled else r.allowed_scores
        if not any(abs(a - item.score) < TOLERANCE for a in allowed):
            return f"items[{n}].score", f"{item.score} is not an allowed score of {r.item_id} {allowed}"
    return None


def typed(raw: dict | str) -> JudgmentLine:
    """The record's shape (a dict or a JSON line), or SourceError naming the field."""
    try:
        validate = JudgmentLine.model_validate_json if isinstance(raw, str) else JudgmentLine.model_validate
        line = validate(raw, strict=True)
        parse_question_id(line.question_id)
    except ValidationError as e:
        raise shape_error(e) from None
    except ValueError as e:
        raise SourceError(str(e), field="question_id") from None
    if line.repeats:
        numbers = [m.repeat for m in line.repeats]
        if sorted(n for n in numbers if n is not None) != list(range(len(numbers))):
            raise SourceError(
                f"repeat numbers {numbers} are not 0..{len(numbers) - 1}, each once", field="repeats"
            )
        first = next(m for m in line.repeats if m.repeat == 0)
        same_score = line.status != "ok" or abs((first.score or 0.0) - (line.score or 0.0)) <= TOLERANCE
        if first.status != line.status or not same_score:
            raise SourceError(
                f"{line.score} ({line.status}) is not repeat 0's {first.score} ({first.status}): "
                "the record is repeat 0's grading",
                field="score",
            )
    return line


def read_judgment(
    raw: dict, *, file: str, line: int, rows: dict[str, QuestionRow] | None = None
) -> JudgmentLine:
    """One record typed and checked against its row (one disagreeing on exam or value: `mismatch`)."""
    try:
        got = typed(raw)
    except SourceError as e:
        raise e.at(file=file, line=line) from None
    row = (rows or {}).get(got.question_id)
    mismatch = row is not None and (
        got.exam_id != row.exam_id or abs(got.max_score - row.max_score) > TOLERANCE
    )
    bad = problem(got, None if mismatch else row)
    if bad:
        raise SourceError(bad[1], file=file, line=line, field=bad[0])
    return got.model_copy(update={"status": "mismatch"}) if mismatch else got
