"""The checked-in errata: every place the source is wrong, the evidence, and our correction. The build
applies and reports each entry; one that no longer matches the source is an error, never skipped."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.source import shape_error

DEFAULT_ERRATA = Path(__file__).with_name("errata.yaml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a correction ignored


class ScoreFix(_Strict):
    """Replace the allowed scores of one rubric row (by the item_id the build gives it)."""

    item_id: str
    was: str  # the score cell as the source writes it (whitespace collapsed): guards against stale entries
    now: list[float]


class Correction(_Strict):
    values: list[float] | None = None  # replaces question.jsonl `values`
    scores: list[ScoreFix] = []
    annulled: list[str] = []  # item_ids annulled by FGV: full marks to everyone
    # fields ("statement", "turns.0", "turns.1") whose written `(Valor: ...)` is wrong while `values` is right
    wrong_valor: list[str] = []


class ErrataEntry(_Strict):
    question_id: str
    problem: str
    evidence: str
    correction: Correction

    def summary(self) -> str:
        return " ".join(self.problem.split())


def load_errata(path: Path = DEFAULT_ERRATA) -> dict[str, ErrataEntry]:
    try:
        listed = TypeAdapter(list[ErrataEntry]).validate_python(yaml.safe_load(path.read_text("utf-8")) or [])
    except FileNotFoundError:
        raise SourceError("errata file not found", file=str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise SourceError(f"invalid YAML: {e}", file=str(path), line=mark and mark.line + 1) from None
    except ValidationError as e:
        raise shape_error(e).at(file=str(path)) from None
    entries: dict[str, ErrataEntry] = {}
    for i, entry in enumerate(listed):
        qid, where = entry.question_id, {"file": str(path), "field": f"[{i}].correction"}
        if entry.correction == Correction():
            why = "corrects nothing (empty correction): remove it or say what to correct"
            raise SourceError(f"the entry for {qid} {why}", **where)
        if qid in entries:
            raise SourceError(f"second entry for {qid}", **{**where, "field": f"[{i}].question_id"})
        entries[qid] = entry
    return entries
