"""The dataset row: one question, with a rubric whose numbers add up. The judge reads these."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PECA_MAX = 5.0
QUESTAO_MAX = 1.25
EXAM_MAX = 10.0
PASS_MARK = 6.0


def money(x: float) -> float:
    """Scores are hundredths of a point; round away float noise before comparing or summing."""
    return round(float(x) + 0.0, 2)


def points_pt(x: float) -> str:
    """A score as the exam writes it: 0,65."""
    return f"{x:.2f}".replace(".", ",")


class Item(BaseModel):
    """What the candidate is asked: the peça (label "") or item A/B of a questão."""

    model_config = ConfigDict(frozen=True)

    label: str
    prompt: str
    max_score: float


class RubricItem(BaseModel):
    """One scored row of the official score table (ITEM | PONTUAÇÃO)."""

    model_config = ConfigDict(frozen=True)

    item_id: str  # unique in the question: P1.., A1.., B1..
    part: str  # the Item label it belongs to ("" for the peça)
    section: str  # nearest section row above it ("Fundamentação"...), "" if none
    label: str  # the row's own label in the source ("1.", "A.", "a)"...), "" if none
    description: str
    max_score: float
    allowed_scores: list[float]
    annulled: bool = False  # annulled by FGV: awarded in full to every candidate, never judged

    @model_validator(mode="after")
    def _check_scores(self) -> RubricItem:
        s = self.allowed_scores
        if not s or s[0] != 0.0 or s != sorted(set(s)) or money(s[-1]) != money(self.max_score):
            why = "must be sorted, unique, start at 0 and end at max_score"
            raise ValueError(f"{self.item_id}: allowed_scores {s} {why}")
        return self


class UpstreamText(BaseModel):
    """Upstream's raw fields, for upstream's judge prompts filled exactly."""

    statement: str
    turns: list[str]
    values: list[float]
    reference_turns: list[str]


class Provenance(BaseModel):
    """The source as given to `--source`, and its revision (a Hub commit, or `sha256:...` of a local one)."""

    source: str
    revision: str | None = None


class QuestionRow(BaseModel):
    question_id: str
    edition: int
    area: str
    exam_id: str
    kind: Literal["peca", "questao"]
    number: int = Field(ge=0, le=4)
    system_prompt: str
    statement: str
    items: list[Item]
    max_score: float
    reference: list[str]  # per item: the commented answer (the score table is in `rubric`)
    rubric: list[RubricItem]
    errata: list[str] = Field(default_factory=list)  # corrections applied to this question, one line each
    upstream: UpstreamText
    provenance: Provenance | None = None  # every build records it; rows made by hand (tests) may lack it

    def rubric_for(self, part: str) -> list[RubricItem]:
        return [r for r in self.rubric if r.part == part]

    def content_hash(self) -> str:
        """Stable hash of everything that can change a judgment of this question (not where it came from)."""
        payload = self.model_dump(mode="json", exclude={"errata", "provenance"})
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
