"""Calls, tokens and cost of the judgments still to make, per judged model and in total.

Prompt tokens are counted with litellm's token counter on the exact messages the judge would
send (the model's own tokenizer where litellm knows it; OpenAI's GPT-4o/4.1/5 and o-series use
o200k). Completion tokens per judgment are the mean of this judge's judgments in the cache, per
question kind; with no history, DEFAULT_COMPLETION_TOKENS. Cached-input discounts are not
assumed (an upper bound); the structured-output schema is not counted.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from oab_bench.dataset_builder.ids import parse_question_id
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.client import prices
from oab_bench.judge.redact import redact

if TYPE_CHECKING:  # Judge calls expected_cost: a type here, not an import
    from oab_bench.judge.grading.grader import Judge

# Expected completion tokens of one judgment with no history in the cache (a non-reasoning judge
# writing one analysis per rubric item; a reasoning judge at high effort writes several times this).
DEFAULT_COMPLETION_TOKENS = {"peca": 2500, "questao": 1000}
# Expected answer length when the answers do not exist yet (`run --estimate`, before generation).
DEFAULT_ANSWER_TOKENS = {"peca": 2000, "questao": 600}
DEFAULT_BATCH_DISCOUNT = 0.5
_O200K = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


class ModelEstimate(BaseModel):
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cost_usd_batch: float | None = None


class Estimate(BaseModel):
    """`--format json` contract: models[{model, calls, prompt_tokens, completion_tokens, cost_usd,
    cost_usd_batch}] and total with the same keys; judgments_cached and judgments_to_pay (one per
    judge: a jury's members count each), generations_cached and generations_to_pay (`run` only)."""

    judge_model: str
    completion_source: str
    batch_discount: float
    models: list[ModelEstimate]
    total: ModelEstimate
    judgments_cached: int = 0  # in the judgment cache (or paid through a batch): cost 0
    judgments_to_pay: int = 0
    generations_cached: int | None = None  # in the answer store: cost 0
    generations_to_pay: int | None = None


def count_tokens(judge_model: str, messages: list[dict]) -> int:
    import litellm  # after ..client, which points litellm at its bundled cost map

    name = judge_model.split("/", 1)[-1]
    return litellm.token_counter(
        model="gpt-4o" if name.startswith(_O200K) else judge_model, messages=messages
    )


def _kind(question_id: str) -> str:
    """peca or questao, from the id alone (the budget sees one row at a time, not the dataset)."""
    try:
        return parse_question_id(question_id).kind
    except ValueError:
        return ""


def _history(judge: Judge, kinds: dict[str, str]) -> tuple[dict[str, float], str]:
    """Mean completion tokens per judgment and question kind, from this judge's cached judgments."""
    got: dict[str, list[int]] = defaultdict(list)
    for j in judge.store.judgments():
        if (
            j.judge_model == judge.settings.judge_model
            and j.mode == judge.mode
            and j.prompt_version == judge.prompt_version
            and j.usage.completion_tokens
        ):
            got[kinds.get(j.question_id) or _kind(j.question_id)].append(j.usage.completion_tokens)
    everything = [n for ns in got.values() for n in ns]
    if not everything:
        return dict(
            DEFAULT_COMPLETION_TOKENS
        ), f"no history in the cache: defaults {DEFAULT_COMPLETION_TOKENS}"
    overall = sum(everything) / len(everything)
    means = {k: sum(got[k]) / len(got[k]) if got.get(k) else overall for k in DEFAULT_COMPLETION_TOKENS}
    return means, f"mean of {len(everything)} cached judgments by this judge"


def _paid_in_batches(judge: Judge) -> set[str]:
    """Keys already paid for through the Batch API: kept replies and uploaded, uncollected batches."""
    if judge.store.path is None:
        return set()
    from oab_bench.judge.grading.batch.state import BATCH_FILE, BatchLog

    if not (judge.store.path.parent / BATCH_FILE).exists():
        return set()
    log = BatchLog(judge.store.path.parent, access="read")
    chunks = log.chunks()
    return set(log.kept()) | set(log.open_keys(chunks))


def _price(judge: Judge, prompt: int, completion: int) -> float | None:
    """Unknown without a price, except for nothing at all: no call costs $0 whatever the price."""
    if prompt == 0 and completion == 0:
        return 0.0
    p = prices(judge.settings)
    if p.input is None or p.output is None:
        return None
    return prompt * p.input + completion * p.output


def _discount(judge: Judge) -> float:
    value = getattr(judge.settings, "price_batch_discount", None)  # a setting of the Batch API feature
    return DEFAULT_BATCH_DISCOUNT if value is None else float(value)


def estimate(judge: Judge, pairs: list[tuple[QuestionRow, Answer]]) -> Estimate:
    """What judging `pairs` would cost now: cached judgments and empty answers cost nothing.

    A jury (its members) or a repeated judge (its runs) costs what each of its judges costs."""
    parts = getattr(judge, "members", None) or getattr(judge, "runs", None)
    if parts:
        return added([estimate(p, pairs) for p in parts], getattr(judge, "name", judge.settings.judge_model))
    kinds = {row.question_id: row.kind for row, _ in pairs}
    completion_per, source = _history(judge, kinds)
    per: dict[str, ModelEstimate] = {}
    seen = _paid_in_batches(judge)  # replies kept, or batches still to collect: nothing more to pay
    cached = to_pay = 0
    for row, answer in pairs:
        m = per.setdefault(answer.model, ModelEstimate(model=answer.model))
        key, calls = judge.prompts(row, answer)
        if not calls or key in seen:  # a second identical answer waits for the first's judgment
            cached += key in seen or judge.store.get(key) is not None  # (else nothing to judge: empty)
            continue
        seen.add(key)
        to_pay += 1
        m.calls += len(calls)
        m.prompt_tokens += sum(count_tokens(judge.settings.judge_model, c) for c in calls)
        m.completion_tokens += round(completion_per[row.kind])
    total = ModelEstimate(model="total")
    for m in per.values():
        total.calls += m.calls
        total.prompt_tokens += m.prompt_tokens
        total.completion_tokens += m.completion_tokens
    discount = _discount(judge)
    for m in [*per.values(), total]:
        m.cost_usd = _price(judge, m.prompt_tokens, m.completion_tokens)
        m.cost_usd_batch = None if m.cost_usd is None else m.cost_usd * discount
    return Estimate(
        judge_model=judge.settings.judge_model,
        completion_source=source,
        batch_discount=discount,
        models=list(per.values()),
        total=total,
        judgments_cached=cached,
        judgments_to_pay=to_pay,
    )


def added(parts: list[Estimate], judge_model: str) -> Estimate:
    """Estimates added per candidate model: several judges of the same answers (a jury, repeats), or
    the bills of different answers judged together (`--panel`)."""

    def zero(model: str) -> ModelEstimate:
        return ModelEstimate(model=model, cost_usd=0.0, cost_usd_batch=0.0)

    per: dict[str, ModelEstimate] = {}
    total = zero("total")
    for part in parts:
        for m in [*part.models, part.total]:
            into = total if m is part.total else per.setdefault(m.model, zero(m.model))
            into.calls += m.calls
            into.prompt_tokens += m.prompt_tokens
            into.completion_tokens += m.completion_tokens
            for field in ("cost_usd", "cost_usd_batch"):  # unknown as soon as one judge has no price
                known, add = getattr(into, field), getattr(m, field)
                setattr(into, field, None if known is None or add is None else known + add)
    return Estimate(
        judge_model=judge_model,
        completion_source="; ".join(sorted({p.completion_source for p in parts})),
        batch_discount=parts[0].batch_discount,
        models=list(per.values()),
        total=total,
        judgments_cached=sum(p.judgments_cached for p in parts),
        judgments_to_pay=sum(p.judgments_to_pay for p in parts),
    )


def expected_cost(judge: Judge) -> Callable[[QuestionRow, Answer], float]:
    """The budget's per-judgment expectation: counted prompt, expected completion, known prices."""
    cache: dict[str, tuple[dict[str, float], str]] = {}

    def expect(row: QuestionRow, answer: Answer) -> float:
        if "history" not in cache:  # per question kind, told from the cached judgments' ids
            cache["history"] = _history(judge, {})
        _, calls = judge.prompts(row, answer)
        prompt = sum(count_tokens(judge.settings.judge_model, c) for c in calls)
        return _price(judge, prompt, round(cache["history"][0][row.kind])) or 0.0

    return expect


def placeholder_pairs(rows: list[QuestionRow], model: str, judge: Judge) -> list[tuple[QuestionRow, Answer]]:
    """Stand-in answers of DEFAULT_ANSWER_TOKENS, for an estimate before the answers exist."""
    pairs = []
    for row in rows:
        turns = len(row.upstream.turns) if judge.settings.prompt == "upstream-v1" else 1
        words = DEFAULT_ANSWER_TOKENS[row.kind] // turns
        pairs.append((row, Answer(model=model, question_id=row.question_id, turns=["a " * words] * turns)))
    return pairs


def print_estimate(est: Estimate, fmt: str = "text", note: str = "", file=None) -> int:
    out = file or sys.stdout
    if fmt == "json":
        out.write(est.model_dump_json(indent=2) + "\n")
        return 0

    def usd(x: float | None) -> str:
        return "unknown" if x is None else f"${x:.4f}"

    print(f"estimate for judge {redact(est.judge_model)}; nothing was called. {note}".rstrip(), file=out)
    print(f"completion tokens: {est.completion_source}; batch at {est.batch_discount:g}x", file=out)
    if est.generations_cached is not None:
        print(
            f"generations: {est.generations_cached} in the answer store (cost 0), "
            f"{est.generations_to_pay} to generate (not priced here)",
            file=out,
        )
    print(
        f"judgments: {est.judgments_cached} in the judgment cache (cost 0), {est.judgments_to_pay} to pay for",
        file=out,
    )
    header = ("model", "calls", "prompt tokens", "completion tokens", "cost", "cost batch")
    lines = [
        (m.model, m.calls, m.prompt_tokens, m.completion_tokens, usd(m.cost_usd), usd(m.cost_usd_batch))
        for m in [*est.models, est.total]
    ]
    width = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=True)]
    for line in [header, *lines]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, width, strict=True)), file=out)
    return 0
