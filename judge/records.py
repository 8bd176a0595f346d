"""Typed records at the judge's boundaries: judgments out, and their projections (defined once here)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, AliasPath, BaseModel, ConfigDict, Field, StringConstraints

from oab_bench.judge.settings import Mode

# One vocabulary for every judged (model, question); only "ok" carries a score (docs/judge.md).
JUDGED = ("ok", "parse_error", "api_error", "truncated", "refused", "no_answer", "budget", "too_long")
Status = Literal[(*JUDGED, "missing", "missing_turn", "mismatch")]  # the last three: what reports add
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class Usage(BaseModel):
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


_REASONING = AliasChoices("reasoning_tokens", AliasPath("completion_tokens_details", "reasoning_tokens"))


class GenerationUsage(BaseModel):
    """What generating an answer cost, per turn in the newer release's answer files (OpenRouter's usage)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)
    reasoning_tokens: int | None = Field(None, ge=0, validation_alias=_REASONING)
    cost: float | None = Field(None, ge=0)


class ItemScore(BaseModel):
    item_id: str
    score: float
    max_score: float
    analysis: str = ""


class MemberScore(BaseModel):
    """A jury member's own grading of the question, or one repeat's (judge/grading/jury.py)."""

    judge_model: str
    repeat: int | None = Field(default=None, ge=0)  # --repeats: which grading (0: a single run's)
    status: Status
    score: float | None = None
    items: dict[str, float] = Field(default_factory=dict)  # item id -> score
    cost_usd: float | None = None
    cached: bool = False
    error: str | None = None

    @classmethod
    def of(cls, j: Judgment, repeat: int | None = None) -> MemberScore:
        """A member's (or repeat's) judgment as the jury's record keeps it; a cached one cost nothing now."""
        kept = j.model_dump(include={"judge_model", "status", "score", "cached", "error"})
        items = {i.item_id: i.score for i in j.items}
        return cls(**kept, repeat=repeat, items=items, cost_usd=cost_now(j.cost_usd, j.cached))


class Judgment(BaseModel):
    """One (model, question) graded. Only status `ok` carries a score."""

    question_id: str
    exam_id: str
    model: str
    judge_model: str
    prompt_version: str
    mode: Mode
    status: Status
    score: float | None = None
    max_score: float
    items: list[ItemScore] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    judge_text: str = ""
    error: str | None = None
    attempts: int = 0
    parse_method: str | None = None  # legacy mode: how the score was found
    note: str | None = None  # e.g. the answer was cut to max_answer_tokens before judging
    cache_key: str = ""
    cached: bool = False
    settings: dict[str, Any] | None = None  # what shaped the judge's reply (JudgeSettings.recorded)
    members: list[MemberScore] | None = None  # a jury's judgment: each member's grading
    repeats: list[MemberScore] | None = None  # a repeated run (--repeats K): each repeat's grading

    def record(self) -> dict:
        """A line of a judgments file (`oab-bench judge`, `oab-bench run`); a jury's carries its members."""
        nested = {k for k in ("members", "repeats") if getattr(self, k) is not None}
        return self.model_dump(mode="json", include=RECORD_FIELDS | nested)

    def sample(self) -> dict:
        """What lighteval keeps per question (details) and aggregates (corpus figures)."""
        return self.model_dump(mode="json", include=SAMPLE_FIELDS) | {
            "cost_usd": cost_now(self.cost_usd, self.cached)
        }


class JudgmentLine(BaseModel):
    """A judgment as every reader takes it back (files, details, the cache), validated strict before
    any number is read: looser than Judgment where files are, never on types ("0.5" is no score)."""

    model_config = ConfigDict(extra="ignore")

    question_id: NonEmpty
    exam_id: NonEmpty
    model: NonEmpty  # a details row's is its folder's
    judge_model: NonEmpty | None
    prompt_version: NonEmpty | None = None
    mode: Mode | None = None
    status: Status
    score: float | None
    max_score: float
    items: list[ItemScore] | None = None
    members: list[MemberScore] | None = None
    repeats: list[MemberScore] | None = None
    panel: NonEmpty | None = None  # a panel's published answers (`--panel`)
    judge_text: str | None = None  # texts the report shows
    error: str | None = None
    note: str | None = None


RECORD_FIELDS = set(Judgment.model_fields) - {"cache_key", "members", "repeats"}
SAMPLE_FIELDS = RECORD_FIELDS - {"model", "usage", "attempts", "parse_method"}


def cost_now(cost: float | None, cached: bool) -> float | None:
    """What a judgment costs this run: nothing from the cache, but unknown stays unknown (never $0)."""
    return 0.0 if cached and cost is not None else cost


def priced(cost: float | None, usage: Usage) -> float | None:
    """A call that billed no tokens cost nothing, priced or not."""
    return 0.0 if cost is None and usage.prompt_tokens == 0 and usage.completion_tokens == 0 else cost


def total_cost(costs: list[float | None]) -> float | None:
    """Unknown as soon as one billed call had no price: an understated total would mislead."""
    return None if any(c is None for c in costs) else sum(costs)
