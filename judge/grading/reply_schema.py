"""The structured reply a rubric allows (per gradable item `{analysis, score: enum}`, analysis first)
and its validation: servers may ignore the schema, so every reply is checked."""

from __future__ import annotations

import contextlib
import hashlib
import json

from oab_bench.dataset_builder.schema import QuestionRow, RubricItem
from oab_bench.judge.records import ItemScore

SCHEMA_NAME = "correcao_oab"


class GradingError(ValueError):
    """The judge's reply does not fit the rubric."""


def gradable(row: QuestionRow) -> list[RubricItem]:
    return [r for r in row.rubric if not r.annulled]


def strict_object(properties: dict) -> dict:
    """A JSON schema object with exactly these properties, all required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def grading_schema(row: QuestionRow) -> dict:
    items = {
        r.item_id: strict_object(
            {"analysis": {"type": "string"}, "score": {"type": "number", "enum": list(r.allowed_scores)}}
        )
        for r in gradable(row)
    }
    return strict_object({"items": strict_object(items)})


def json_format(name: str, schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def response_format(row: QuestionRow) -> dict:
    return json_format(SCHEMA_NAME, grading_schema(row))


def schema_hash(schema: dict) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:12]


def validate_grading(row: QuestionRow, content: str) -> list[ItemScore]:
    """Every gradable item scored once with an allowed score (a ```json fence and "0,30" are read)."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1].rsplit("```", 1)[0] if "\n" in text else ""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise GradingError(f"reply is not JSON ({e.msg.removesuffix(' at')} at character {e.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), dict):
        raise GradingError("reply has no 'items' object")
    given, expected = data["items"], gradable(row)
    extra = sorted(set(given) - {r.item_id for r in expected})
    missing = [r.item_id for r in expected if r.item_id not in given]
    if extra or missing:
        raise GradingError(f"items do not match the rubric (missing {missing}, unknown {extra})")
    out = []
    for r in expected:
        entry = given[r.item_id]
        if not isinstance(entry, dict):
            raise GradingError(f"item {r.item_id} is not an object")
        score = entry.get("score")
        with contextlib.suppress(ValueError):  # "0,30"
            score = float(score.replace(",", ".")) if isinstance(score, str) else score
        if not isinstance(score, int | float) or isinstance(score, bool):
            raise GradingError(f"item {r.item_id}: score {score!r} is not a number")
        allowed = [a for a in r.allowed_scores if abs(a - score) < 1e-6]
        if not allowed:
            raise GradingError(f"item {r.item_id}: score {score} not in allowed {r.allowed_scores}")
        analysis = str(entry.get("analysis", ""))
        out.append(ItemScore(item_id=r.item_id, score=allowed[0], max_score=r.max_score, analysis=analysis))
    return out
