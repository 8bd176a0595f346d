"""The judge's settings, defined once: `judge`, `run` (`--judge-` prefix) and the lighteval task
(OAB_JUDGE_*) take their flags and variables from these fields; flags win over the environment, the
environment over the defaults. The API key is never a setting."""

from __future__ import annotations

import argparse
import re
import typing
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

Mode = Literal["structured", "legacy"]
# the same flag on `judge` and `run` (`run`'s other judge flags take the `--judge-` prefix)
UNPREFIXED = {"judge_model": "--judge-model", "jury_combine": "--jury-combine", "repeats": "--repeats"}
ENV_PREFIX = "OAB_JUDGE_"
NULL = object()  # what "none"/"null" converts to (`--temperature none`: send none), unlike an unset flag
# A jury's members share these; every other setting may be a member's own (`MODEL key=value ...`).
SAMPLING = ("max_tokens", "temperature", "reasoning_effort")
JURY_WIDE = {"judge_model", "jury_combine", "repeats", "batch", "batch_wait", "max_cost_usd", "concurrency"}


class JudgeSettings(BaseModel):
    """Everything that shapes a judge call."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    judge_model: str = Field(description="litellm model name, e.g. openai/gpt-5.2 (several: a jury)")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL (local vLLM server, proxy...)")
    mode: Mode = Field("structured", description="structured (JSON per rubric item) or legacy ([[nota]])")
    prompt: Literal["oab", "upstream-v1", "upstream-v2"] = Field("oab", description="ours or upstream's")
    upstream_prompts: str | None = Field(None, description="upstream's judge_prompts.jsonl (upstream-*)")
    concurrency: int = Field(16, ge=1, description="judge calls at a time")
    max_tokens: int = Field(16000, ge=1, description="judge reply budget (reasoning included)")
    temperature: float | None = Field(0.0, description="judge temperature ('none' to send none)")
    reasoning_effort: str | None = Field(None, description="e.g. high (GPT-5.2, upstream's judge)")
    timeout: float = Field(600.0, gt=0, description="seconds per judge call")
    max_attempts: int = Field(6, ge=1, description="API attempts per call (429/5xx/timeouts)")
    parse_attempts: int = Field(2, ge=1, description="whole calls per judgment when the reply is invalid")
    backoff_initial: float = Field(1.0, ge=0, description="first retry wait, seconds")
    backoff_max: float = Field(60.0, ge=0, description="longest retry wait, seconds")
    price_input: float | None = Field(None, ge=0, description="USD per 1M prompt tokens (overrides litellm)")
    price_cached_input: float | None = Field(None, ge=0, description="USD per 1M cached prompt tokens")
    price_output: float | None = Field(None, ge=0, description="USD per 1M completion tokens")
    max_cost_usd: float | None = Field(None, ge=0, description="no judgment starts that could pass it (USD)")
    max_answer_tokens: int = Field(32768, ge=1, description="longer answers are not judged (too_long)")
    long_answers: Literal["too_long", "truncate"] = Field("too_long", description="too long: skipped or cut")
    batch: bool = Field(False, description="judge through the provider's Batch API (OpenAI-style)")
    batch_wait: float | None = Field(None, ge=0, description="seconds to wait for batches (then exit)")
    price_batch_discount: float = Field(0.5, ge=0, le=1, description="batch price / direct price")
    repeats: int = Field(1, ge=1, description="grade each answer K times, to measure the judge's own noise")
    jury_combine: Literal["median", "mean", "min"] = Field("median", description="a jury's combining rule")

    @model_validator(mode="before")
    @classmethod
    def _mode_follows_prompt(cls, data):
        implied = {"upstream-v1": "legacy", "upstream-v2": "structured"}.get(data.get("prompt") or "oab")
        if implied is None:
            return data
        prompt = f"prompt {data['prompt']}"
        if data.get("mode") not in (None, implied):
            raise ValueError(f"{prompt} grades in {implied} mode; mode {data['mode']} conflicts with it")
        if not data.get("upstream_prompts"):
            where = f"--upstream-prompts / {ENV_PREFIX}UPSTREAM_PROMPTS"
            raise ValueError(f"{prompt} needs upstream_prompts ({where}): upstream's judge_prompts.jsonl")
        return {**data, "mode": implied}

    @field_validator("api_base")
    @classmethod
    def _api_base_is_a_url(cls, value: str | None) -> str | None:
        value = (value or "").strip()
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)")
        return value or None

    @model_validator(mode="after")
    def _batch_has_no_cap(self):  # a batch is submitted whole: a cap cannot stop it half-way
        if self.batch and self.max_cost_usd is not None:
            why = "a batch is submitted whole: check the bill first with --estimate, then batch without a cap"
            raise ValueError(f"<batch> and <max_cost_usd> do not go together ({why})")
        return self

    def sampling(self) -> dict:
        """The settings that change what the judge writes: part of the cache key."""
        return self.model_dump(include=set(SAMPLING))

    def recorded(self) -> dict:
        """What a judgment records of its judge's settings (never an address or a key)."""
        return self.model_dump(include={*SAMPLING, "max_answer_tokens", "long_answers"})


def _member_specs(judge_model: str) -> list[str]:
    return [m.strip() for m in judge_model.split(",") if m.strip()]


def member_settings(settings: JudgeSettings) -> list[JudgeSettings]:
    """One judge's settings per jury member (`A,B` or --judge-model twice), with the member's own."""
    specs = _member_specs(settings.judge_model)
    if len(specs) <= 1:
        if specs and len(specs[0].split()) > 1:
            raise ValueError(f"{specs[0]!r}: settings after a model name are for jury members; use the flags")
        return [settings]
    out = []
    for spec in specs:  # `openai/gpt-5.2 reasoning_effort=high temperature=none`: a member's own settings
        model, *pairs = spec.split()
        own = {"judge_model": model}
        for pair in pairs:
            field, sep, raw = pair.partition("=")
            field = field.replace("-", "_")
            if not sep or field not in JudgeSettings.model_fields or field in JURY_WIDE:
                raise ValueError(
                    f"jury member {spec!r}: {pair!r} is not SETTING=VALUE of a member's own setting "
                    f"(any judge setting but {', '.join(sorted(JURY_WIDE))})"
                )
            own[field] = None if raw.lower() in ("none", "null") else raw  # pydantic converts the rest
        try:
            out.append(JudgeSettings(**{**settings.model_dump(), **own}))
        except ValidationError as e:
            raise ValueError(f"jury member {spec!r}: " + "; ".join(map(_problem, e.errors()))) from None
    return out


def env_var(field: str) -> str:
    return f"{ENV_PREFIX}MODEL" if field == "judge_model" else ENV_PREFIX + field.upper()


def flag(field: str, prefix: str = "") -> str:
    return UNPREFIXED.get(field) or f"--{prefix}{field.replace('_', '-')}"


def _kind(field: str) -> tuple[type, tuple[str, ...] | None, bool]:
    """(type, choices, nullable) of a field: `int | None` -> int; a Literal -> str with its values."""
    annotation = JudgeSettings.model_fields[field].annotation
    nullable = type(None) in typing.get_args(annotation)
    if nullable:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is Literal:
        return str, typing.get_args(annotation), nullable
    return annotation, None, nullable


def _converter(field: str):
    kind, _, nullable = _kind(field)

    def convert(text: str):
        text = text.strip()  # ' 2 ' and 'True ' alike: surrounding blanks are never meant
        if nullable and text.lower() in ("none", "null"):
            return NULL
        return kind(text) if kind in (int, float) else text

    convert.__name__ = kind.__name__  # argparse names the type in its error message
    return convert


def add_arguments(parser: argparse.ArgumentParser, *, prefix: str = "") -> None:
    """One flag per setting; unset flags stay None so the environment and the defaults can apply."""
    group = parser.add_argument_group("judge settings (also OAB_JUDGE_* variables)")
    for name, info in JudgeSettings.model_fields.items():
        kind, choices, _ = _kind(name)
        default = "" if info.is_required() else f" (default {info.default})"
        group.add_argument(
            flag(name, prefix),
            type=_converter(name),
            choices=choices,
            action="append" if name == "judge_model" else "store",  # given twice or more: a jury
            help=f"{info.description}{default}; env {env_var(name)}",
            **({"nargs": "?", "const": True} if kind is bool else {}),  # `--batch` alone means true
        )


def values_from_env(env: Mapping[str, str]) -> dict:
    """The OAB_JUDGE_* settings present in `env`, converted (blank is unset); a bad value names its variable."""
    values = {}
    for name in JudgeSettings.model_fields:
        raw = env.get(env_var(name)) or ""
        try:
            values |= {name: _converter(name)(raw)} if raw.strip() else {}
        except ValueError as e:
            raise ValueError(f"{env_var(name)}={raw!r}: {e}") from None
    return values


def settings_from(args=None, env: Mapping | None = None, *, prefix="", defaults=None) -> JudgeSettings:
    """Defaults, then the environment, then the flags (`args`, from add_arguments)."""
    values = {**(defaults or {}), **values_from_env(env or {})}
    for name in JudgeSettings.model_fields if args is not None else ():
        got = getattr(args, flag(name, prefix)[2:].replace("-", "_"), None)
        if got is not None:  # --judge-model A --judge-model B: a jury, as in OAB_JUDGE_MODEL=A,B
            values[name] = ",".join(got) if isinstance(got, list) else got
    values = {k: None if v is NULL else v for k, v in values.items()}
    if not _member_specs(str(values.get("judge_model") or "")):  # unset, blank, or only commas
        raise ValueError(f"no judge model: pass --judge-model or set {env_var('judge_model')}")
    try:
        return JudgeSettings(**values)
    except ValidationError as e:  # one line per problem, named as the user wrote it: no pydantic dump
        raise ValueError("; ".join(_problem(err, prefix) for err in e.errors())) from None


def _problem(err: dict, prefix: str = "") -> str:
    """A pydantic error as `--flag (OAB_JUDGE_X): what`; a rule over several names each (`<field>`)."""
    field = err["loc"][0] if err["loc"] else None
    raw = err["msg"].removeprefix("Value error, ")
    if err["type"] == "finite_number":  # NaN passes no comparison: "greater than or equal to 0" misled
        raw = f"{err['input']!r} is not {'a number' if err['input'] != err['input'] else 'finite'}"
    named = re.sub(r"<(\w+)>", lambda m: f"{flag(m[1], prefix)} ({env_var(m[1])})", raw)
    if field not in JudgeSettings.model_fields:
        return named if named != raw else f"judge settings: {named}"
    return f"{flag(field, prefix)} ({env_var(field)}): {named}"


def add_estimate_arguments(parser: argparse.ArgumentParser) -> None:
    what = "print calls, tokens and cost of the judgments still to make (direct and batch), call nothing"
    parser.add_argument("--estimate", action="store_true", help=what)
    what = "--estimate output (json: a contract)"
    parser.add_argument("--format", choices=["text", "json"], default="text", help=what)
