"""Typed upstream rows (FastChat-style JSONL) and a reader that says where input is bad."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from oab_bench.dataset_builder.errors import SourceError

QUESTIONS_FILE = "question.jsonl"
GUIDELINES_FILE = "reference_answer/guidelines.jsonl"


def _unicode(text: str) -> str:
    """JSON's `\\ud800` escape reads as a lone surrogate, which no UTF-8 file (or parquet) can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"lone surrogate {text[e.start]!r} at character {e.start + 1}: not valid Unicode"
        ) from None
    return text


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError("empty text")
    return text


Text = Annotated[str, AfterValidator(_unicode)]
NonEmptyText = Annotated[str, AfterValidator(_unicode), AfterValidator(_non_empty)]


class SourceQuestion(BaseModel):
    """One line of `question.jsonl`.

    Strict: `"0.6"` or `true` is not a value (ints are); NaN and infinity are refused. Every text
    the real data always fills is required non-empty; a peça's one turn is `""` upstream, so
    turns may be empty here (the builder requires a questão's turns).
    """

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)

    question_id: NonEmptyText
    category: NonEmptyText
    statement: NonEmptyText
    turns: list[Text] = Field(min_length=1)
    values: list[float] = Field(min_length=1)
    system: NonEmptyText


class GenerationUsage(BaseModel):
    """What generating an answer cost, as the newer release's answer files record it per turn
    (OpenRouter's usage: tokens, `completion_tokens_details.reasoning_tokens`, `cost` in USD)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)
    reasoning_tokens: int | None = Field(None, ge=0)
    cost: float | None = Field(None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _reasoning_from_details(cls, data):
        if isinstance(data, dict) and "reasoning_tokens" not in data:
            details = data.get("completion_tokens_details")
            if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
                return {**data, "reasoning_tokens": details["reasoning_tokens"]}
        return data

    def __add__(self, other: GenerationUsage) -> GenerationUsage:
        """Turns of one answer together; a figure one of them lacks is unknown for the whole."""

        def both(a, b):
            return None if a is None or b is None else a + b

        return GenerationUsage(
            **{k: both(getattr(self, k), getattr(other, k)) for k in GenerationUsage.model_fields}
        )


class AnswerTurn(BaseModel):
    """A turn of an answer file: a text (the older release), or `{"content": ..., "usage": {...}}`
    (the newer release's files), read alike."""

    model_config = ConfigDict(extra="ignore")

    content: str
    usage: GenerationUsage | None = None

    @model_validator(mode="before")
    @classmethod
    def _text_or_object(cls, data):
        if isinstance(data, str):
            return {"content": data}
        if not isinstance(data, dict | AnswerTurn):
            raise ValueError(f"a turn is a text or an object with `content`, not {type(data).__name__}")
        return data


class AnswerChoice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int = 0
    turns: list[AnswerTurn] = Field(min_length=1)


class SourceAnswer(BaseModel):
    """One line of a FastChat answer file (`reference_answer/guidelines.jsonl`, `model_answer/*.jsonl`)."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    model_id: str
    answer_id: str | None = None
    choices: list[AnswerChoice] = Field(min_length=1)
    tstamp: float | None = None

    @property
    def turns(self) -> list[str]:
        return [t if isinstance(t, str) else t.content for t in self.choices[0].turns]

    @property
    def usage(self) -> GenerationUsage | None:
        """What generating the whole answer cost (its turns added); None when no turn says."""
        turns = self.choices[0].turns
        if all(isinstance(t, str) or t.usage is None for t in turns):
            return None
        total = None
        for t in turns:
            got = GenerationUsage() if isinstance(t, str) or t.usage is None else t.usage
            total = got if total is None else total + got
        return total


class ReferenceChoice(AnswerChoice):
    turns: list[Text] = Field(min_length=1)


class ReferenceAnswer(SourceAnswer):
    """A line of `reference_answer/guidelines.jsonl`: its texts go into the dataset, so they must be
    valid Unicode (a model's answer file is read as SourceAnswer, unchanged)."""

    choices: list[ReferenceChoice] = Field(min_length=1)


M = TypeVar("M", bound=BaseModel)


def _field_of(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "<row>", first["msg"]


def read_objects(path: Path, *, label: str | None = None) -> Iterator[tuple[int, dict]]:
    """Yield (line number, JSON object) of a JSONL file; raise SourceError naming the first bad line.

    Lines are split on newline bytes only (str.splitlines() would also split on U+2028 inside strings)
    and decoded one by one, so a non-UTF-8 byte is reported with its line.
    """
    name = label or str(path)
    try:
        handle = Path(path).open("rb")  # noqa: SIM115 (closed by the `with` below)
    except FileNotFoundError:
        raise SourceError("file not found", file=name) from None
    except IsADirectoryError:
        raise SourceError("is a folder, not a JSONL file", file=name) from None
    with handle:
        for lineno, raw_line in enumerate(handle, start=1):
            try:
                text = raw_line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise SourceError(f"not UTF-8 (byte {e.start + 1})", file=name, line=lineno) from None
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as e:
                where = f"{e.msg.removesuffix(' at')} at column {e.colno}"  # "starting at" ends some msgs
                raise SourceError(f"invalid JSON ({where})", file=name, line=lineno) from None
            if not isinstance(raw, dict):
                raise SourceError("expected a JSON object", file=name, line=lineno)
            yield lineno, raw


def read_jsonl(path: Path, model: type[M], *, label: str | None = None) -> Iterator[tuple[int, M]]:
    """Yield (line number, typed row); raise SourceError at the first bad line."""
    name = label or str(path)
    yield from validate_objects(read_objects(path, label=name), model, label=name)


def validate_objects(
    objects: Iterable[tuple[int, dict]], model: type[M], *, label: str
) -> Iterator[tuple[int, M]]:
    """Typed rows from (line or row number, object) pairs of any source; SourceError names the first bad one."""
    for lineno, raw in objects:
        try:
            yield lineno, model.model_validate(raw)
        except ValidationError as e:
            field, msg = _field_of(e)
            raise SourceError(msg, file=label, line=lineno, field=field) from None


# --- records read back by other readers (judgments, details rows): the same words for a wrong shape

_KINDS = {  # pydantic's error type -> what the value should have been
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "float_type": "a number",
    "int_type": "a whole number",
    "string_type": "a string",
    "string_too_short": "a non-empty string",
    "bool_type": "true or false",
    "literal_error": "one of the known values",
}


def plain(x):
    """Parquet gives numpy arrays and scalars where JSON had lists and numbers: plain Python."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple) or type(x).__name__ == "ndarray":
        return [plain(v) for v in x]
    if hasattr(x, "item") and type(x).__module__ == "numpy":
        return x.item()
    return x


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<record>"


def shape_error(e: ValidationError) -> SourceError:
    """A pydantic error as `field 'x': what is wrong` (the caller adds file and line)."""
    first = e.errors()[0]
    if first["type"] == "json_invalid":
        return SourceError(f"not JSON ({first['ctx']['error']})")
    if first["type"] == "missing":
        why = "missing"
    else:
        shown = repr(first["input"])
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        kind = _KINDS.get(first["type"])
        if first["type"] == "greater_than_equal":
            kind = f"a number >= {first['ctx']['ge']}"
        why = f"{shown} is not {kind}" if kind else f"{shown}: {first['msg']}"
    return SourceError(why, field=_loc(first["loc"]))
