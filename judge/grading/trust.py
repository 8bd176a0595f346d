"""Can a judged record be trusted? Checked wherever one is read back: cache hits and report inputs.

A file can be edited, truncated or written by another version; a NaN, a negative score, a
score above the question's value or item scores that are not the rubric's would flow
straight into exam totals. Such a record is rejected (reports) or re-judged (cache), never
averaged.
"""

from __future__ import annotations

import math

from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.judge.grading.prompts import PROMPT_VERSION
from oab_bench.judge.scoring import annulled_part

TOLERANCE = 1e-6


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _annulled_value(row: QuestionRow, item_id) -> float | None:
    """The full value of `item_id` when FGV annulled it: a rubric row, or an item (A, B) scored as
    one number whose every row was annulled; None otherwise."""
    for r in row.rubric:
        if r.item_id == item_id:
            return r.max_score if r.annulled else None
    for item in row.items:
        if item.label and item.label == item_id and annulled_part(row, item.label):
            return item.max_score
    return None


def problem(record: dict, row: QuestionRow | None = None) -> tuple[str, str] | None:
    """(field, why) when `record` (a judgment as a dict) is impossible; None when it is sound.

    With the dataset row, an `ok` judgment made with our structured prompt must score exactly
    the rubric's items, each with an allowed score, adding up to its score.
    """
    max_score = record.get("max_score")
    if not _number(max_score) or max_score <= 0:
        return "max_score", f"{max_score!r} is not a positive number"
    nested = _nested_problem(record, max_score)
    if nested:
        return nested
    if record.get("status") != "ok":
        return None
    score = record.get("score")
    if not _number(score):
        return "score", f"{score!r} is not a number"
    if score < 0 or score > max_score + TOLERANCE:
        return "score", f"{score} is outside 0..{max_score}"
    items = record.get("items")
    try:
        items = [] if items is None else list(items)  # a list, or an array read back from parquet
    except TypeError:
        return "items", "is not a list"
    for n, item in enumerate(items):
        s, m = (item or {}).get("score"), (item or {}).get("max_score")
        if not _number(s) or s < 0 or (_number(m) and m > 0 and s > m + TOLERANCE):
            return f"items[{n}].score", f"{s!r} is not a score within 0..{m}"
    if row is not None:  # any prompt: what FGV annulled counts in full (judge/scoring.py)
        for n, item in enumerate(items):
            full = _annulled_value(row, (item or {}).get("item_id"))
            if full is not None and abs(item["score"] - full) > TOLERANCE:
                return (
                    f"items[{n}].score",
                    f"{item['score']}: {item['item_id']} was annulled by FGV, it counts {full}",
                )
    ours = record.get("mode") == "structured" and record.get("prompt_version") == PROMPT_VERSION
    if not ours:
        return None
    if items and abs(money(sum(i["score"] for i in items)) - score) > 0.005:
        return "items", f"item scores add up to {money(sum(i['score'] for i in items))}, not {score}"
    if row is None:
        return None
    rubric = {r.item_id: r for r in row.rubric}
    got = [i.get("item_id") for i in items]
    if sorted(got) != sorted(rubric):
        return "items", f"items {sorted(map(str, got))} do not match the rubric's {sorted(rubric)}"
    for n, item in enumerate(items):
        r = rubric[item["item_id"]]
        allowed = [r.max_score] if r.annulled else r.allowed_scores
        if not any(abs(a - item["score"]) < TOLERANCE for a in allowed):
            return f"items[{n}].score", f"{item['score']} is not an allowed score of {r.item_id} {allowed}"
    return None


def _nested_problem(record: dict, max_score: float) -> tuple[str, str] | None:
    """A jury's `members` or a repeated run's `repeats`: each a grading with a status, and when
    `ok` a score (and item scores) within 0..the question's value."""
    for key in ("members", "repeats"):
        nested = record.get(key)
        if nested is None:
            continue
        if not isinstance(nested, list):
            return key, "is not a list"
        for n, m in enumerate(nested):
            if not isinstance(m, dict) or not isinstance(m.get("status"), str):
                return f"{key}[{n}]", "is not a grading with a status"
            if m["status"] != "ok":
                continue
            s = m.get("score")
            if not _number(s) or s < 0 or s > max_score + TOLERANCE:
                return f"{key}[{n}].score", f"{s!r} is not a score within 0..{max_score}"
            items = m.get("items") or {}
            if not isinstance(items, dict):
                return f"{key}[{n}].items", "is not an object of item scores"
            for item, v in items.items():
                if not _number(v) or v < 0 or v > max_score + TOLERANCE:
                    return f"{key}[{n}].items.{item}", f"{v!r} is not a score within 0..{max_score}"
    return None
