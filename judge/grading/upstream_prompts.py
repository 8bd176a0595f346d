"""Upstream's judge prompts, loaded from their file at run time and filled exactly as upstream does.

upstream-v1 (older release): one call per turn. Turn 1 uses `single-oab-v1` with the
question `statement + "\\n" + turns[0]`; turn 2 uses `single-oab-v1-multi-turn` with both
turns, grading only item B. `{value}` is that turn's upstream value. Free-text replies,
parsed with upstream's regexes (legacy.py). Verified against the published judgments.

upstream-v2 (newer release, `single-oab-v2`): one call per question. For a questão the
statement and the turns are joined as `statement\\n\\n# A:\\n...\\n\\n# B:\\n...` (the answer
and the reference alike), `{value}` is the sum of the values, and the reply is JSON
`{items: [{item_id, item_description, analysis, score}], total_score}`; the score is the
sum of item scores. A call's score outside 0..its value (or an item's below 0) is a parse error. For the peça, upstream's newer code could not be checked; we fill
it as upstream-v1 does (statement + "\\n" + turns[0]).

Upstream's raw texts come from the row's `upstream` field (unnormalised, values as
published, swapped ones included), so parity is with what upstream actually sent.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import QuestionRow, money
from oab_bench.dataset_builder.source import read_objects
from oab_bench.judge.grading.reply_schema import GradingError
from oab_bench.judge.legacy import parse_legacy_score_detailed
from oab_bench.judge.records import ItemScore, Judgment, Outcome, Usage, total_cost
from oab_bench.judge.scoring import annulled_part

CallJudge = Callable[[list[dict], dict | None, Callable[[str], object]], Awaitable[Outcome]]

V1_SINGLE, V1_MULTI, V2 = "single-oab-v1", "single-oab-v1-multi-turn", "single-oab-v2"

UPSTREAM_V2_SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "item_id": {"type": "string"},
                    "item_description": {"type": "string"},
                    "analysis": {"type": "string"},
                    "score": {"type": "number"},
                },
                "required": ["item_id", "item_description", "analysis", "score"],
                "additionalProperties": False,
            },
        },
        "total_score": {"type": "number"},
    },
    "required": ["items", "total_score"],
    "additionalProperties": False,
}


class UpstreamCall(NamedTuple):
    label: str  # which turn it grades: "" (peça or whole question), "A", "B"
    messages: list[dict]
    max_score: float
    structured: bool


def load_upstream_prompts(path: str | Path) -> dict[str, dict]:
    prompts = {}
    for lineno, entry in read_objects(Path(path)):
        for key in ("name", "system_prompt", "prompt_template"):
            if key not in entry:
                raise SourceError("missing", file=str(path), line=lineno, field=key)
        prompts[entry["name"]] = entry
    return prompts


def prompt_version(version: str, prompts: dict[str, dict]) -> str:
    names = [V1_SINGLE, V1_MULTI] if version == "upstream-v1" else [V2]
    missing = [n for n in names if n not in prompts]
    if missing:
        raise SourceError(f"upstream prompts file has no {missing} (needed by --prompt {version})")
    blob = json.dumps([prompts[n] for n in names], sort_keys=True).encode()
    return f"{version}@{hashlib.sha256(blob).hexdigest()[:8]}"


def _messages(prompt: dict, user: str) -> list[dict]:
    return [{"role": "system", "content": prompt["system_prompt"]}, {"role": "user", "content": user}]


def _fill(template: str, **kwargs) -> str:
    value = kwargs.get("value")
    if value is not None:
        kwargs["value_half"] = value / 2
    return template.format(**kwargs)


def upstream_calls(
    row: QuestionRow, answer_turns: list[str], version: str, prompts: dict[str, dict]
) -> list[UpstreamCall]:
    up = row.upstream
    refs = up.reference_turns
    first = up.statement + "\n" + up.turns[0]
    if version == "upstream-v1" or row.kind == "peca":
        if len(answer_turns) != len(up.turns):
            raise ValueError(f"{row.question_id}: {version} grades each turn and needs one answer per turn")
        structured = version == "upstream-v2"  # the peça, structured
        p1 = prompts[V2 if structured else V1_SINGLE]
        user1 = _fill(
            p1["prompt_template"],
            question=first,
            ref_answer_1=refs[0],
            answer=answer_turns[0],
            value=up.values[0],
        )
        label = "" if row.kind == "peca" else "A"
        calls = [UpstreamCall(label, _messages(p1, user1), up.values[0], structured)]
        if row.kind == "questao":
            p2 = prompts[V1_MULTI]
            user2 = _fill(
                p2["prompt_template"],
                question_1=first,
                question_2=up.turns[1],
                ref_answer_1=refs[0],
                ref_answer_2=refs[1],
                answer_1=answer_turns[0],
                answer_2=answer_turns[1],
                value=up.values[1],
            )
            calls.append(UpstreamCall("B", _messages(p2, user2), up.values[1], False))
        return calls

    labels = [chr(65 + i) for i in range(len(up.turns))]
    question = "\n\n".join(
        [up.statement, *(f"# {lab}:\n{t}" for lab, t in zip(labels, up.turns, strict=True) if t.strip())]
    )
    reference = "\n\n".join(f"# {lab}:\n{t}" for lab, t in zip(labels, refs, strict=True))
    if len(answer_turns) == len(up.turns):
        answer = "\n\n".join(f"# {lab}:\n{t}" for lab, t in zip(labels, answer_turns, strict=True))
    else:  # one text for the whole question (lighteval): already the candidate's A and B
        answer = answer_turns[0]
    total = sum(up.values)
    p = prompts[V2]
    user = _fill(p["prompt_template"], question=question, ref_answer_1=reference, answer=answer, value=total)
    return [UpstreamCall("", _messages(p, user), total, True)]


def upstream_v2_format() -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": "OABJudgment", "schema": UPSTREAM_V2_SCHEMA, "strict": True},
    }


def parse_upstream_v2(content: str) -> tuple[float, list[dict]]:
    """Upstream's total: the sum of the item scores the judge returned (not its total_score)."""
    data = json.loads(content)
    items = data["items"]
    scores = [float(i["score"]) for i in items]
    bad = [s for s in scores if not (math.isfinite(s) and s >= 0)]
    if bad:
        raise GradingError(f"item score {bad[0]} is not a score (finite, >= 0)")
    return round(sum(scores), 4), items


def _within(total: float, value: float) -> None:
    """A reply scoring outside the 0..value the judge was told failed (a parse error), like ours."""
    if not (math.isfinite(total) and 0 <= total <= value + 1e-9):
        raise GradingError(f"score {total} outside 0..{value}")


async def grade_upstream(
    call: CallJudge, row: QuestionRow, turns: list[str], version: str, prompts: dict[str, dict], base: dict
) -> Judgment:
    """Upstream's protocol: one call per turn (v1) or per question (v2); the score is the sum of the parts.

    `call(messages, response_format, parse)` is the runner's call-until-it-parses.
    """
    calls = upstream_calls(row, turns, version, prompts)
    outcomes: list[tuple[UpstreamCall, Outcome]] = []
    for c in calls:

        def parse(content: str, c=c):
            if c.structured:
                parsed = parse_upstream_v2(content)
                _within(parsed[0], c.max_score)
                return parsed
            found = parse_legacy_score_detailed(content)
            if found is None:
                raise GradingError("no score found (upstream would record -1)")
            _within(found.score, c.max_score)
            return found

        o = await call(c.messages, upstream_v2_format() if c.structured else None, parse)
        outcomes.append((c, o))
        if o.status != "ok":
            break
    texts = [o.content if len(calls) == 1 else f"# {c.label}:\n{o.content}" for c, o in outcomes]
    fields = dict(
        base,
        usage=sum((o.usage for _, o in outcomes), Usage()),
        cost_usd=total_cost([o.cost_usd for _, o in outcomes]),
        judge_text="\n\n".join(texts),
        attempts=sum(o.attempts for _, o in outcomes),
    )
    c, last = outcomes[-1]
    if last.status != "ok":
        return Judgment(**fields, status=last.status, error=f"{c.label or 'question'}: {last.error}")
    items: list[ItemScore] = []
    parts: list[float] = []
    for c, o in outcomes:
        if c.structured:
            total, raw_items = o.parsed
            items += [
                ItemScore(
                    item_id=str(i.get("item_id", "")),
                    score=float(i["score"]),
                    max_score=0.0,
                    analysis=str(i.get("analysis", "")),
                )
                for i in raw_items
            ]
        else:
            total = o.parsed.score
        if not c.structured and annulled_part(row, c.label):  # FGV's: in full, whatever the judge said
            total = next(i.max_score for i in row.items if i.label == c.label)
        parts.append(total)
        items.append(ItemScore(item_id=c.label or "total", score=total, max_score=c.max_score))
    methods = ",".join(o.parsed.method for c, o in outcomes if not c.structured) or None
    return Judgment(**fields, status="ok", score=money(sum(parts)), items=items, parse_method=methods)
