"""What a shared results dataset holds: files, configs, columns, the marker that says it is ours. A
judgments row keeps every field of our record (or upstream's turns), so that reading it back goes
through the readers of the original files."""

from __future__ import annotations

import hashlib
import json
import re
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, field_validator

from oab_bench.judge.records import RECORD_FIELDS

KIND = "results"  # the card's `oab_bench.kind`: a dataset of judged results (not the questions)
CARD_KEY = "oab_bench"  # the front matter's marker: {kind, made_by, format, version}
FORMAT = 1  # the layout's version: a reader refuses one it does not know
JUDGMENTS_DIR = "judgments"
ANSWERS_FILE = "answers/train-00000-of-00001.parquet"
RESERVED = {"default", "answers"}


def judge_file(config: str) -> str:
    return f"{JUDGMENTS_DIR}/{config}/train-00000-of-00001.parquet"


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
    source_kind: Literal["judgments", "details", "upstream"]
    source_file: str  # inside a folder input ("" for a file)
    source_line: int
    dataset: str | None  # the dataset the input recorded (a run folder's), if any

    @field_validator("settings")
    @classmethod
    def _settings_are_json(cls, value: str | None) -> str | None:
        if value is not None and not isinstance(json.loads(value), dict):  # a JSONDecodeError is a ValueError
            raise ValueError("is not a JSON object")
        return value

    def copy_key(self) -> tuple:
        """What makes two rows the same judgment of the same answer (an answer is one per (model,
        question) in an export): judge, question, outcome, item scores and the judge's reply."""
        items = tuple((i.item_id, i.score) for i in self.items or [])
        said = (self.judge, self.model, self.question_id, self.status, self.score, self.judge_text)
        return (*said, items, str(self.turn_scores), str(self.turn_texts))


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


def arrow_schema(model: type[BaseModel]):
    """The parquet columns of a row model, typed from its fields (every column typed, even all null)."""
    import pyarrow as pa

    def arrow(tp):
        args = [a for a in get_args(tp) if a is not type(None)]
        if get_origin(tp) in (Union, types.UnionType):
            return arrow(args[0])
        if get_origin(tp) is list:
            return pa.list_(arrow(args[0]))
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return pa.struct({k: arrow(f.annotation) for k, f in tp.model_fields.items()})
        return {int: pa.int64(), float: pa.float64(), bool: pa.bool_()}.get(tp, pa.string())  # str, Literal

    return pa.schema({k: arrow(f.annotation) for k, f in model.model_fields.items()})


# a judgment record's fields a row keeps as they are (judge/records.py Judgment.record()), and `panel`
RECORD_KEYS = [
    k for k in JudgmentRow.model_fields if k in RECORD_FIELDS - {"model", "items", "usage", "settings"}
]
GRADING_KEYS = ("judge_model", "repeat", "status", "score", "cost_usd", "error")


def record_fields(v: dict) -> dict[str, Any]:
    """The row's fields from one of our judgment records (a judgments file line, a details metric)."""

    def graded(m: dict) -> dict:
        items = [{"item_id": k, "score": s} for k, s in (m.get("items") or {}).items()]
        return {**{k: m.get(k) for k in GRADING_KEYS}, "cached": bool(m.get("cached")), "items": items}

    usage, settings = v.get("usage"), v.get("settings")
    return {
        **{k: v.get(k) for k in [*RECORD_KEYS, "panel"]},
        "items": v.get("items") and [{k: i[k] for k in ItemRow.model_fields if k in i} for i in v["items"]],
        "usage": usage and {k: usage[k] for k in UsageRow.model_fields if k in usage},
        "settings": None if settings is None else json.dumps(settings, sort_keys=True, ensure_ascii=False),
        **{k: v.get(k) and [graded(m) for m in v[k]] for k in ("members", "repeats")},
    }


def judgment_record(row: JudgmentRow) -> dict:
    """A row back as the judgment record it was (`model` included): what our readers take."""
    out = row.model_dump(include={*RECORD_KEYS, "panel", "model", "usage"})
    out["items"] = row.items and [
        i.model_dump(exclude_none=True) for i in row.items
    ]  # a field left out stays out
    out["settings"] = None if row.settings is None else json.loads(row.settings)
    for key in ("members", "repeats"):
        if getattr(row, key) is not None:
            out[key] = [
                {**m.model_dump(), "items": {i.item_id: i.score for i in m.items}} for m in getattr(row, key)
            ]
    return out


def upstream_lines(row: JudgmentRow, line: int) -> list[tuple[int, dict]]:
    """An upstream row back as upstream's lines, one per turn it had (a missing turn stays missing)."""
    judge = [row.judge_model, row.prompt_version] if row.prompt_version else [row.judge_model]
    texts, said = row.turn_texts or [], {"question_id": row.question_id, "model": row.model, "judge": judge}
    return [
        (
            line,
            {**said, "turn": turn, "score": score, "judgment": texts[turn - 1] if turn <= len(texts) else ""},
        )
        for turn, score in enumerate(row.turn_scores or [], start=1)
        if score is not None
    ]
