"""Typed records at the judge's boundaries: settings in, judgments out."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["ok", "parse_error", "api_error", "truncated", "refused", "no_answer"]
Mode = Literal["structured", "legacy"]
PromptName = Literal["oab", "upstream-v1", "upstream-v2"]


class JudgeSettings(BaseModel):
    """Everything that shapes a judge call. The API key is never a field: it stays in the environment."""

    model_config = ConfigDict(frozen=True)

    judge_model: str
    api_base: str | None = None
    mode: Mode = "structured"
    prompt: PromptName = "oab"
    upstream_prompts: str | None = None  # path to upstream's judge_prompts.jsonl (for upstream-*)
    concurrency: int = Field(default=16, ge=1)
    max_tokens: int = Field(default=16000, ge=1)
    temperature: float | None = 0.0
    reasoning_effort: str | None = None
    timeout: float = Field(default=600.0, gt=0)  # seconds per call
    max_attempts: int = Field(default=6, ge=1)  # API attempts per call (429/5xx/timeouts)
    parse_attempts: int = Field(default=2, ge=1)  # whole calls per judgment when the reply does not validate
    backoff_initial: float = Field(default=1.0, ge=0)
    backoff_max: float = Field(default=60.0, ge=0)
    input_price: float | None = None  # USD per 1M prompt tokens, overrides litellm's cost map
    cached_input_price: float | None = None
    output_price: float | None = None

    def sampling(self) -> dict:
        """The settings that change what the judge writes: part of the cache key."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "reasoning_effort": self.reasoning_effort,
        }


class Usage(BaseModel):
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class ItemScore(BaseModel):
    item_id: str
    score: float
    max_score: float
    analysis: str = ""


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
    cache_key: str = ""
    cached: bool = False
