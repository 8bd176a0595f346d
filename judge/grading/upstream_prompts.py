"""Upstream's judge prompts (`upstream-v1`: a legacy call per turn; `upstream-v2`: one structured
call per questão), filled exactly as upstream fills them from the row's `upstream` texts."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.dataset_builder.source import read_objects
from oab_bench.judge.grading.client import CallResult, merged
from oab_bench.judge.grading.reply_schema import GradingError, json_format, strict_object
from oab_bench.judge.legacy import parse_legacy_score_detailed
from oab_bench.judge.records import ItemScore, Judgment
from oab_bench.judge.scoring import annulled_part

V1_SINGLE, V1_MULTI, V2 = "single-oab-v1", "single-oab-v1-multi-turn", "single-oab-v2"
_TEXT, _NUMBER = {"type": "string"}, {"type": "number"}
_ITEM = strict_object({"item_id": _TEXT, "item_description": _TEXT, "analysis": _TEXT, "score": _NUMBER})
_V2_SCHEMA = strict_object({"items": {"type": "array", "items": _ITEM}, "total_score": _NUMBER})
UPSTREAM_V2_FORMAT = json_format("OABJudgment", _V2_SCHEMA)


class UpstreamCall(NamedTuple):
    label: str  # which turn it grades: "" (peça or whole question), "A", "B"
    messages: list[dict]
    max_score: float
    structured: bool


def load_upstream_prompts(path: str | Path) -> dict[str, dict]:
    prompts = {}
    for lineno, entry in read_objects(Path(path)):
        if missing := [k for k in ("name", "system_prompt", "prompt_template") if k not in entry]:
            raise SourceError("missing", file=str(path), line=lineno, field=missing[0])
        prompts[entry["name"]] = entry
    return prompts


def prompt_version(version: str, prompts: dict[str, dict]) -> str:
    names = [V1_SINGLE, V1_MULTI] if version == "upstream-v1" else [V2]
    missing = [n for n in names if n not in prompts]
    if missing:
        raise SourceError(f"upstream prompts file has no {missing} (needed by --prompt {version})")
    blob = json.dumps([prompts[n] for n in names], sort_keys=True).encode()
    return f"{version}@{hashlib.sha256(blob).hexdigest()[:8]}"


def _call(label: str, prompt: dict, max_score: float, structured: bool, fill: dict) -> UpstreamCall:
    user = prompt["prompt_template"].format(**fill, value=max_score, value_half=max_score / 2)
    messages = [{"role": "system", "content": prompt["system_prompt"]}, {"role": "user", "content": user}]
    return UpstreamCall(label, messages, max_score, structured)


def _joined(texts: list[str]) -> str:
    return "\n\n".join(f"# {chr(65 + i)}:\n{t}" for i, t in enumerate(texts))


def upstream_calls(row: QuestionRow, answers: list[str], version: str, prompts: dict) -> list[UpstreamCall]:
    up, refs = row.upstream, row.upstream.reference_turns
    first = up.statement + "\n" + up.turns[0]
    if version == "upstream-v2" and row.kind == "questao":
        turns = [f"# {chr(65 + i)}:\n{t}" for i, t in enumerate(up.turns) if t.strip()]
        # one text for the whole question (lighteval's) is already the candidate's A and B
        answer = _joined(answers) if len(answers) == len(up.turns) else answers[0]
        question = "\n\n".join([up.statement, *turns])
        fill = {"question": question, "ref_answer_1": _joined(refs), "answer": answer}
        return [_call("", prompts[V2], sum(up.values), True, fill)]
    if len(answers) != len(up.turns):
        raise ValueError(f"{row.question_id}: {version} grades each turn and needs one answer per turn")
    structured = version == "upstream-v2"  # the peça, structured
    fill = {"question": first, "ref_answer_1": refs[0], "answer": answers[0]}
    label, prompt = ("" if row.kind == "peca" else "A"), prompts[V2 if structured else V1_SINGLE]
    calls = [_call(label, prompt, up.values[0], structured, fill)]
    if row.kind == "questao":
        fill = dict(question_1=first, question_2=up.turns[1], ref_answer_1=refs[0], ref_answer_2=refs[1])
        fill |= {"answer_1": answers[0], "answer_2": answers[1]}
        calls.append(_call("B", prompts[V1_MULTI], up.values[1], False, fill))
    return calls


def score_within(total: float, value: float) -> float:
    """`total`, or GradingError when it is not a score within 0..`value`."""
    if not (math.isfinite(total) and 0 <= total <= value + 1e-9):
        raise GradingError(f"score {total} outside 0..{value}")
    return total


def _parser(c: UpstreamCall) -> Callable[[str], tuple[float, list[ItemScore], str | None]]:
    """(score, items, parse method) of a reply; v2's score is the sum of its item scores (not its total_score)."""

    def parse(content: str) -> tuple[float, list[ItemScore], str | None]:
        if not c.structured:
            found = parse_legacy_score_detailed(content)
            if found is None:
                raise GradingError("no score found (upstream would record -1)")
            return score_within(found.score, c.max_score), [], found.method
        items = [
            ItemScore(
                item_id=str(i.get("item_id", "")),
                score=float(i["score"]),
                max_score=0.0,
                analysis=str(i.get("analysis", "")),
            )
            for i in json.loads(content)["items"]
        ]
        bad = [i.score for i in items if not (math.isfinite(i.score) and i.score >= 0)]
        if bad:
            raise GradingError(f"item score {bad[0]} is not a score (finite, >= 0)")
        return score_within(round(sum(i.score for i in items), 4), c.max_score), items, None

    return parse


async def grade_upstream(judge, row: QuestionRow, turns: list[str], base: dict) -> Judgment:
    """Upstream's protocol: a `judge.call` per turn (v1) or question (v2); the score is the parts' sum."""
    calls = upstream_calls(row, turns, judge.settings.prompt, judge.upstream)
    outcomes: list[tuple[UpstreamCall, CallResult]] = []
    for c in calls:
        fmt = UPSTREAM_V2_FORMAT if c.structured else None
        outcomes.append((c, await judge.call(c.messages, fmt, _parser(c))))
        if outcomes[-1][1].status != "ok":
            break
    texts = [o.content if len(calls) == 1 else f"# {c.label}:\n{o.content}" for c, o in outcomes]
    spent = merged([o for _, o in outcomes])
    fields = dict(base, usage=spent.usage, cost_usd=spent.cost_usd, attempts=spent.attempts)
    fields["judge_text"] = "\n\n".join(texts)
    c, last = outcomes[-1]
    if last.status != "ok":
        return Judgment(**fields, status=last.status, error=f"{c.label or 'question'}: {last.error}")
    items: list[ItemScore] = []
    parts: list[float] = []
    for c, o in outcomes:
        total, raw_items, _ = o.parsed
        if not c.structured and annulled_part(row, c.label):  # FGV's: in full, whatever the judge said
            total = next(i.max_score for i in row.items if i.label == c.label)
        parts.append(total)
        items += [*raw_items, ItemScore(item_id=c.label or "total", score=total, max_score=c.max_score)]
    methods = ",".join(o.parsed[2] for c, o in outcomes if not c.structured) or None
    return Judgment(**fields, status="ok", score=money(sum(parts)), items=items, parse_method=methods)
