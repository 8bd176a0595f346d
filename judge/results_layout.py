"""A shared results dataset (files, configs, columns, marker), read back as an input (`hf:OWNER/NAME[@REV]`,
`hf:/abs/folder` or such a folder; `#CONFIG` one judge's); a row keeps a record's fields or upstream's."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, field_validator

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import HF_PREFIX, parse_hub_spec, read_objects, validate_objects
from oab_bench.hub_guard import CARD, card_data
from oab_bench.judge.records import RECORD_FIELDS, GenerationUsage, Usage

KIND = "results"  # the card's `oab_bench.kind`: a dataset of judged results (not the questions)
CARD_KEY = "oab_bench"  # the front matter's marker: {kind, made_by, format, version}
FORMAT = 1  # the layout's version: a reader refuses one it does not know
JUDGMENTS_DIR = "judgments"
ANSWERS_FILE = "answers/train-00000-of-00001.parquet"
RESERVED = {"default", "answers"}


def judge_file(config: str) -> str:
    return f"{JUDGMENTS_DIR}/{config}/train-00000-of-00001.parquet"


def config_names(judges: list[str]) -> dict[str, str]:
    """judge label -> config name: file-safe, never reserved, order-free (a shared slug gets a hash)."""
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


class GradingRow(Strict):  # a jury member's grading or one repeat's, items as a list
    judge_model: str
    repeat: int | None = None
    status: str
    score: float | None = None
    items: list[GradingItem] = []
    cost_usd: float | None = None
    cached: bool = False
    error: str | None = None


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
    usage: Usage | None = None
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
        """What makes two rows the same judgment of the same answer: judge, outcome, scores, reply."""
        items = tuple((i.item_id, i.score) for i in self.items or [])
        said = (self.judge, self.model, self.question_id, self.status, self.score, self.judge_text)
        return (*said, items, str(self.turn_scores), str(self.turn_texts))


class AnswerRow(Strict):
    model: str
    question_id: str
    exam_id: str
    area: str
    edition: int
    turns: list[str]
    usage: GenerationUsage | None = None  # as the answer file said
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
        "usage": usage and {k: usage[k] for k in Usage.model_fields if k in usage},
        "settings": None if settings is None else json.dumps(settings, sort_keys=True, ensure_ascii=False),
        **{k: v.get(k) and [graded(m) for m in v[k]] for k in ("members", "repeats")},
    }


def judgment_record(row: JudgmentRow) -> dict:
    """A row back as the judgment record it was (`model` included): what our readers take."""
    out = row.model_dump(include={*RECORD_KEYS, "panel", "model", "usage"})
    out["items"] = row.items and [i.model_dump(exclude_none=True) for i in row.items]
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
    scores = row.turn_scores or []
    texts = [*(row.turn_texts or []), *[""] * len(scores)]
    said = {"question_id": row.question_id, "model": row.model, "judge": judge}
    return [
        (line, {**said, "turn": turn, "score": score, "judgment": texts[turn - 1]})
        for turn, score in enumerate(scores, start=1)
        if score is not None
    ]


class Shared(NamedTuple):
    name: str  # the spec or folder as given, without `#CONFIG`: how its files are named
    folder: Path
    configs: list[str]  # the judges' configs to read (all, or the one picked)

    def judgments(self) -> list[tuple[str, int, JudgmentRow]]:
        return [row for config in self.configs for row in _rows(self, judge_file(config), JudgmentRow)]

    def answers(self) -> list[tuple[str, int, AnswerRow]]:
        return _rows(self, ANSWERS_FILE, AnswerRow) if (self.folder / ANSWERS_FILE).is_file() else []

    def sources(self) -> list[tuple[str, str | None]]:
        """(input the export read, the dataset it recorded) of each input."""
        return sorted(
            {(r.source, r.dataset) for _, _, r in self.judgments()}, key=lambda s: (s[0], s[1] or "")
        )


def _rows(shared: Shared, rel: str, model: type[BaseModel]) -> list:
    """(label, row number, row) of one file, validated; read once while the file is unchanged."""
    try:
        stat = (shared.folder / rel).stat()
    except OSError as e:
        raise SourceError(f"cannot read it: {e.strerror or e}", file=f"{shared.name}:{rel}") from None
    return _read_rows(shared.folder / rel, stat.st_mtime_ns, f"{shared.name}:{rel}", model)


@functools.lru_cache(maxsize=32)
def _read_rows(path: Path, _mtime: int, label: str, model: type[BaseModel]) -> list:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
        raise SourceError(f"cannot read it as parquet: {e}", file=label) from None
    missing = [c for c in model.model_fields if c not in table.column_names]
    if missing:
        raise SourceError(f"missing columns {missing}: not an oab-bench results file", file=label)
    rows = validate_objects(enumerate(table.to_pylist(), start=1), model, label=label)
    return [(label, n, row) for n, row in rows]


@functools.cache
def _download(repo: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download

    patterns = [CARD, f"{JUDGMENTS_DIR}/*/*.parquet", "answers/*.parquet"]
    return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=patterns))


def _spec(name: str):
    try:
        return parse_hub_spec(name)
    except SourceError as e:  # said for `build --source`: named here without that flag
        raise SourceError(e.message, file=name) from None


def open_shared(path: str | Path) -> Shared | None:
    """The shared results dataset `path` names (`hf:...` must be one), or None (a plain file or folder)."""
    given = str(path)
    name, _, picked = given.partition("#")
    name = name.rstrip("/") or name
    if given.startswith(HF_PREFIX):
        spec = _spec(name)
        folder = spec.folder
        if folder is None:
            try:
                folder = _download(spec.repo, spec.revision)
            except Exception as e:  # every Hub failure (offline and not cached, no such repo, no access)
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise SourceError(f"cannot read the Hub dataset: {why}", file=name) from None
        elif not folder.is_dir():
            raise SourceError("folder not found", file=name)
    elif Path(name).is_dir() and (Path(name) / CARD).is_file():
        folder = Path(name)
    else:
        return None
    try:
        meta = card_data((folder / CARD).read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError):
        meta = {}
    mark = meta.get(CARD_KEY)
    if not isinstance(mark, dict) or mark.get("kind") != KIND:
        if not given.startswith(HF_PREFIX):
            return None
        raise SourceError(
            f"not an oab-bench results dataset: its {CARD} has no `oab_bench: {{kind: results}}` in its "
            "front matter (`oab-bench export` writes one)",
            file=name,
        )
    made = mark.get("format", FORMAT)
    if not isinstance(made, int) or made > FORMAT:
        raise SourceError(f"written in layout format {made!r}; oab-bench reads up to {FORMAT}", file=name)
    configs = sorted(
        str(c["config_name"])
        for c in meta.get("configs") or []
        if isinstance(c, dict) and c.get("config_name") not in RESERVED | {None}
    )
    if picked and picked not in configs:
        raise SourceError(f"no judge config {picked!r} (configs: {', '.join(configs) or 'none'})", file=name)
    return Shared(name, folder, [picked] if picked else configs)


def rows_at(label: str) -> dict[int, JudgmentRow] | None:
    """The rows of the judgments file a record names as its source; None when it names no such file."""
    name, sep, rel = label.rpartition(":")
    if not sep or not rel.startswith(f"{JUDGMENTS_DIR}/"):
        return None
    try:
        shared = open_shared(name)
    except SourceError:
        shared = None
    return shared and {n: r for _, n, r in shared._replace(configs=[rel.split("/")[1]]).judgments()}


def judgment_objects(path: str | Path) -> Iterator[tuple[str, int, dict]]:
    """(file, line, our judgment record) of a judgments file, or of a shared dataset's non-upstream rows."""
    shared = open_shared(path)
    if shared is None:
        for n, obj in read_objects(Path(path)):
            yield str(path), n, obj
        return
    for label, n, row in shared.judgments():
        if row.source_kind != "upstream":
            yield label, n, judgment_record(row)


def local_path(path: str) -> Path | None:
    """The local folder an `hf:/abs/folder` spec names (what an output must not overwrite)."""
    return _spec(path.partition("#")[0]).folder if path.startswith(HF_PREFIX) else None
