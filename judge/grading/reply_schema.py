"""The structured reply a question's rubric allows, and its validation.

The schema has one fixed property per gradable rubric item (annulled items are not
graded), each `{analysis: string, score: enum(allowed_scores)}`, analysis first so the
judge reasons before it scores. Strict mode (OpenAI) then makes an invalid reply
impossible; other servers may ignore the schema, so every reply is validated again here.
"""

from __future__ import annotations

import hashlib
import json

from oab_bench.dataset_builder.schema import QuestionRow, RubricItem
from oab_bench.judge.records import ItemScore

SCHEMA_NAME = "correcao_oab"


class GradingError(ValueError):
    """The judge's reply does not fit the rubric."""


def gradable(row: QuestionRow) -> list[RubricItem]:
    return [r for r in row.rubric if not r.annulled]


def grading_schema(row: QuestionRow) -> dict:
    items = gradable(row)
    properties = {
        r.item_id: {
            "type": "object",
            "properties": {
                "analysis": {"type": "string"},
                "score": {"type": "number", "enum": list(r.allowed_scores)},
            },
            "required": ["analysis", "score"],
            "additionalProperties": False,
        }
        for r in items
    }
    return {
        "type": "object",
        "properties": {
            "items": {
                "type": "object",
                "properties": properties,
                "required": [r.item_id for r in items],
                "additionalProperties": False,
            }
        },
        "required": ["items"],
        "additionalProperties": False,
    }


def response_format(row: QuestionRow) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": grading_schema(row), "strict": True},
    }


def schema_hash(schema: dict) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:12]


def _strip_fences(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        t = t.rsplit("```", 1)[0]
    return t.strip()


def validate_grading(row: QuestionRow, content: str) -> list[ItemScore]:
    """Every gradable item scored exactly once with an allowed score; raise GradingError otherwise."""
    try:
        data = json.loads(_strip_fences(content))
    except json.JSONDecodeError as e:
        raise GradingError(f"reply is not JSON ({e.msg} at {e.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), dict):
        raise GradingError("reply has no 'items' object")
    given = data["items"]
    expected = gradable(row)
    names = {r.item_id for r in expected}
    extra = sorted(set(given) - names)
    missing = [r.item_id for r in expected if r.item_id not in given]
    if extra or missing:
        raise GradingError(f"items do not match the rubric (missing {missing}, unknown {extra})")
    out = []
    for r in expected:
        entry = given[r.item_id]
        if not isinstance(entry, dict):
            raise GradingError(f"item {r.item_id} is not an object")
        score = entry.get("score")
        if isinstance(score, str):
            try:
                score = float(score.replace(",", "."))
            except ValueError:
                raise GradingError(
                    f"item {r.item_id}: score {entry.get('score')!r} is not a number"
                ) from None
        if not isinstance(score, int | float) or isinstance(score, bool):
            raise GradingError(f"item {r.item_id}: score {score!r} is not a number")
        allowed = [a for a in r.allowed_scores if abs(a - score) < 1e-6]
        if not allowed:
            raise GradingError(f"item {r.item_id}: score {score} not in allowed {r.allowed_scores}")
        analysis = entry.get("analysis", "")
        out.append(
            ItemScore(item_id=r.item_id, score=allowed[0], max_score=r.max_score, analysis=str(analysis))
        )
    return out
