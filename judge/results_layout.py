"""What a shared results dataset holds: its files, configs, columns and the marker that says it is ours.

One row of `judgments/<config>/train-*.parquet` is one judgment as the leaderboard read it from one
input (copies included, so a reader counts what the leaderboard counted); `answers/train-*.parquet`
holds each (model, question)'s answer once. A row keeps every field of our judgment record, or, for
upstream's judgment files, each turn's score and text, so reading it back goes through the same
readers and checks as the original files (judge/leaderboard/inputs.py). `oab-bench export`
(judge/sharing/) writes it; results_source.py reads it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

KIND = "results"  # the card's `oab_bench.kind`: a dataset of judged results (not the questions)
CARD_KEY = "oab_bench"  # the front matter's marker: {kind, made_by, format, version}
FORMAT = 1  # the layout's version: a reader refuses one it does not know
SPLIT = "train"
JUDGMENTS_DIR = "judgments"
ANSWERS_FILE = "answers/train-00000-of-00001.parquet"
DATA_FILE = "train-00000-of-00001.parquet"
RESERVED = {"default", "answers"}
SourceKind = Literal["judgments", "details", "upstream"]


def judge_file(config: str) -> str:
    return f"{JUDGMENTS_DIR}/{config}/{DATA_FILE}"


def config_names(judges: list[str]) -> dict[str, str]:
    """judge label -> config name: readable, file-safe, never a reserved name, the same whatever the
    order of the judges (two labels that would share a name both get a hash of their label)."""
    slug = {j: re.sub(r"[^A-Za-z0-9._]+", "-", j).strip("-.")[:80] or "judge" for j in judges}
    taken = list(slug.values())
    return {
        j: f"{s}-{hashlib.sha256(j.encode()).hexdigest()[:8]}" if s in RESERVED or taken.count(s) > 1 else s
        for j, s in slug.items()
    }


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemRow(Strict):
    item_id: str
    score: float
    max_score: float | None = None
    analysis: str | None = None


class GradingItem(Strict):
    item_id: str
    score: float


class GradingRow(Strict):
    """A jury member's grading or one repeat's (judge/records.py MemberScore), items as a list."""

    judge_model: str
    repeat: int | None = None
    status: str
    score: float | None = None
    items: list[GradingItem] = []
    cost_usd: float | None = None
    cached: bool = False
    error: str | None = None


class UsageRow(Strict):
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0


class JudgmentRow(Strict):
    judge: str  # the leaderboard's judge: model and prompt (one table, and one config, each)
    judge_model: str | None
    prompt_version: str | None
    mode: str | None
    model: str
    question_id: str
    exam_id: str
    area: str
    edition: int
    status: str  # as recorded (a leaderboard may still find it a `mismatch` with its dataset)
    score: float | None
    max_score: float
    items: list[ItemRow] | None = None
    judge_text: str | None = None
    error: str | None = None
    note: str | None = None
    parse_method: str | None = None
    attempts: int | None = None
    cached: bool | None = None
    cost_usd: float | None = None
    usage: UsageRow | None = None
    settings: str | None = None  # JSON: the judge settings the record names
    panel: str | None = None  # a published answer judged beside a candidate (`--panel`): its source
    members: list[GradingRow] | None = None
    repeats: list[GradingRow] | None = None
    turn_scores: list[float | None] | None = None  # upstream: each turn's score (-1: none found)
    turn_texts: list[str] | None = None  # upstream: each turn's judgment text
    source: str  # the input as given to `oab-bench export`
    source_kind: SourceKind
    source_file: str  # inside a folder input ("" for a file)
    source_line: int
    dataset: str | None  # the dataset the input recorded (a run folder's), if any

    @field_validator("settings")
    @classmethod
    def _settings_are_json(cls, value: str | None) -> str | None:
        if value is not None and not isinstance(json.loads(value), dict):  # a JSONDecodeError is a ValueError
            raise ValueError("is not a JSON object")
        return value


class GenerationRow(Strict):
    """What generating an answer cost, when its file said (dataset_builder/source.py GenerationUsage)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None


class AnswerRow(Strict):
    model: str
    question_id: str
    exam_id: str
    area: str
    edition: int
    turns: list[str]
    usage: GenerationRow | None = None
    source: str
    source_file: str
    source_line: int


def _grading_type(pa):
    S, F, N, B = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    items = pa.list_(pa.struct({"item_id": S, "score": F}))
    fields = {"judge_model": S, "repeat": N, "status": S, "score": F, "items": items, "cost_usd": F}
    return pa.struct({**fields, "cached": B, "error": S})


def judgments_schema():
    """The judgments files' columns, typed as JudgmentRow's fields (pyarrow only when a file is written)."""
    import pyarrow as pa

    S, F, N, B = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    grading = pa.list_(_grading_type(pa))
    types = {
        "edition": N,
        "score": F,
        "max_score": F,
        "items": pa.list_(pa.struct({k: F if k.endswith("score") else S for k in ItemRow.model_fields})),
        "attempts": N,
        "cached": B,
        "cost_usd": F,
        "usage": pa.struct({k: N for k in UsageRow.model_fields}),
        "members": grading,
        "repeats": grading,
        "turn_scores": pa.list_(F),
        "turn_texts": pa.list_(S),
        "source_line": N,
    }
    return pa.schema({name: types.get(name, S) for name in JudgmentRow.model_fields})


def answers_schema():
    import pyarrow as pa

    usage = pa.struct({k: pa.float64() if k == "cost" else pa.int64() for k in GenerationRow.model_fields})
    types = {"edition": pa.int64(), "turns": pa.list_(pa.string()), "usage": usage, "source_line": pa.int64()}
    return pa.schema({name: types.get(name, pa.string()) for name in AnswerRow.model_fields})


# --- our judgment record <-> row ------------------------------------------------------------------

RECORD_KEYS = (  # a judgment record's fields a row keeps (judge/records.py Judgment.record())
    "judge_model",
    "prompt_version",
    "mode",
    "question_id",
    "exam_id",
    "status",
    "score",
    "max_score",
    "judge_text",
    "error",
    "note",
    "parse_method",
    "attempts",
    "cached",
    "cost_usd",
    "panel",
)


def _grading_row(m: dict) -> dict:
    items = m.get("items") or {}
    return {
        **{k: m.get(k) for k in ("judge_model", "repeat", "status", "score", "cost_usd", "error")},
        "cached": bool(m.get("cached")),
        "items": [{"item_id": k, "score": v} for k, v in items.items()],
    }


def _known(d: dict | None, model: type[BaseModel]) -> dict | None:
    return None if d is None else {k: d.get(k) for k in model.model_fields if k in d}


def record_fields(v: dict) -> dict[str, Any]:
    """The row's fields from one of our judgment records (a judgments file line, a details metric)."""
    items = v.get("items")
    settings = v.get("settings")
    return {
        **{k: v.get(k) for k in RECORD_KEYS},
        "items": None if items is None else [_known(i, ItemRow) for i in items],
        "usage": _known(v.get("usage"), UsageRow),
        "settings": None if settings is None else json.dumps(settings, sort_keys=True, ensure_ascii=False),
        "members": None if v.get("members") is None else [_grading_row(m) for m in v["members"]],
        "repeats": None if v.get("repeats") is None else [_grading_row(m) for m in v["repeats"]],
    }


def _grading(m: dict) -> dict:
    return {**m, "items": {i["item_id"]: i["score"] for i in m["items"]}}


def judgment_record(row: JudgmentRow) -> dict:
    """A row back as the judgment record it was (`model` included): what our readers take."""
    out = {k: getattr(row, k) for k in RECORD_KEYS}
    out["model"] = row.model
    out["items"] = None if row.items is None else [i.model_dump() for i in row.items]
    out["usage"] = None if row.usage is None else row.usage.model_dump()
    out["settings"] = None if row.settings is None else json.loads(row.settings)
    for key in ("members", "repeats"):
        nested = getattr(row, key)
        if nested is not None:
            out[key] = [_grading(m.model_dump()) for m in nested]
    return out


def upstream_lines(row: JudgmentRow, line: int) -> list[tuple[int, dict]]:
    """An upstream row back as upstream's lines, one per turn it had (a missing turn stays missing)."""
    judge = [row.judge_model, row.prompt_version] if row.prompt_version else [row.judge_model]
    texts = row.turn_texts or []
    return [
        (
            line,
            {
                "question_id": row.question_id,
                "model": row.model,
                "judge": judge,
                "turn": turn,
                "score": score,
                "judgment": texts[turn - 1] if turn <= len(texts) else "",
            },
        )
        for turn, score in enumerate(row.turn_scores or [], start=1)
        if score is not None
    ]
