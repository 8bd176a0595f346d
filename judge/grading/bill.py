"""The bill before it is paid (`--estimate`): calls, tokens and cost of the judgments still to make, per
judged model and in total; prompts counted on the exact messages, completions from the cache's history."""

from __future__ import annotations

import pandas
from pydantic import BaseModel

from oab_bench.conventions import BATCH_FILE
from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.answers import Answer
from oab_bench.judge.grading.batch.state import BatchLog
from oab_bench.judge.grading.grader import Judge, PerKind, completion_history, count_tokens, price_of
from oab_bench.judge.redact import redact

# Expected answer length when the answers do not exist yet (`run --estimate`, before generation).
DEFAULT_ANSWER_TOKENS = PerKind(peca=2000, questao=600)


class ModelEstimate(BaseModel):
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cost_usd_batch: float | None = None

    def add(self, other: ModelEstimate) -> None:
        for field in ("calls", "prompt_tokens", "completion_tokens", "cost_usd", "cost_usd_batch"):
            mine, theirs = getattr(self, field), getattr(other, field)  # a cost: unknown if one part's is
            setattr(self, field, None if mine is None or theirs is None else mine + theirs)


class Estimate(BaseModel):
    """`--format json`'s contract (docs/operations.md)."""

    judge_model: str
    completion_source: str
    batch_discount: float
    models: list[ModelEstimate] = []
    total: ModelEstimate = ModelEstimate(model="total")
    judgments_cached: int = 0  # in the judgment cache (or paid through a batch): cost 0
    judgments_to_pay: int = 0
    generations_cached: int | None = None  # in the answer store: cost 0
    generations_to_pay: int | None = None


def _paid_in_batches(judge: Judge) -> set[str]:
    """Keys already paid for through the Batch API: kept replies and uploaded, uncollected batches."""
    if judge.store.path is None or not (judge.store.path.parent / BATCH_FILE).exists():
        return set()
    log = BatchLog(judge.store.path.parent, access="read")
    return set(log.kept()) | set(log.open_keys())


def estimate(judge, pairs: list[tuple[QuestionRow, Answer]]) -> Estimate:
    """What judging `pairs` would cost now (cached and empty: nothing); a jury or repeats: each judge's."""
    parts = getattr(judge, "members", None) or getattr(judge, "runs", None)
    if parts:
        return added([estimate(p, pairs) for p in parts], getattr(judge, "name", judge.settings.judge_model))
    completion_per, source = completion_history(judge)
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
    discount = judge.settings.price_batch_discount
    for m in per.values():
        m.cost_usd = price_of(judge, m.prompt_tokens, m.completion_tokens)
        m.cost_usd_batch = None if m.cost_usd is None else m.cost_usd * discount
    one = Estimate(judge_model=judge.settings.judge_model, completion_source=source, batch_discount=discount)
    one.models, one.judgments_cached, one.judgments_to_pay = list(per.values()), cached, to_pay
    return added([one], one.judge_model)  # the total: its models' added


def added(parts: list[Estimate], judge_model: str) -> Estimate:
    """Estimates added per candidate model (a jury's judges, repeats, or `--panel`'s answers beside)."""
    per: dict[str, ModelEstimate] = {}
    for m in (m for part in parts for m in part.models):
        per.setdefault(m.model, ModelEstimate(model=m.model, cost_usd=0.0, cost_usd_batch=0.0)).add(m)
    total = ModelEstimate(model="total", cost_usd=0.0, cost_usd_batch=0.0)
    for m in per.values():
        total.add(m)
    return Estimate(
        judge_model=judge_model,
        completion_source="; ".join(sorted({p.completion_source for p in parts})),
        batch_discount=parts[0].batch_discount,
        models=list(per.values()),
        total=total,
        judgments_cached=sum(p.judgments_cached for p in parts),
        judgments_to_pay=sum(p.judgments_to_pay for p in parts),
    )


def placeholder_pairs(rows: list[QuestionRow], model: str, judge) -> list[tuple[QuestionRow, Answer]]:
    """Stand-in answers of DEFAULT_ANSWER_TOKENS, for an estimate before the answers exist."""
    pairs = []
    for row in rows:
        turns = len(row.upstream.turns) if judge.settings.prompt == "upstream-v1" else 1
        words = DEFAULT_ANSWER_TOKENS[row.kind] // turns
        pairs.append((row, Answer(model=model, question_id=row.question_id, turns=["a " * words] * turns)))
    return pairs


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:.4f}"


def print_estimate(est: Estimate, fmt: str = "text", note: str = "") -> int:
    if fmt == "json":
        print(est.model_dump_json(indent=2))
        return 0
    print(f"estimate for judge {redact(est.judge_model)}; nothing was called. {note}".rstrip())
    print(f"completion tokens: {est.completion_source}; batch at {est.batch_discount:g}x")
    if est.generations_cached is not None:
        to_make = f"{est.generations_to_pay} to generate (not priced here)"
        print(f"generations: {est.generations_cached} in the answer store (cost 0), {to_make}")
    to_pay = f"{est.judgments_to_pay} to pay for"
    print(f"judgments: {est.judgments_cached} in the judgment cache (cost 0), {to_pay}")
    rows = [
        [m.model, m.calls, m.prompt_tokens, m.completion_tokens, _usd(m.cost_usd), _usd(m.cost_usd_batch)]
        for m in [*est.models, est.total]
    ]
    header = ["model", "calls", "prompt tokens", "completion tokens", "cost", "cost batch"]
    print(pandas.DataFrame(rows, columns=header).to_string(index=False))
    if est.total.cost_usd is None:
        print(
            f"cost unknown: litellm's cost map has no price for the judge {redact(est.judge_model)}; give its "
            "prices in USD per 1M tokens with --price-input and --price-output (`oab-bench run`: "
            "--judge-price-input and --judge-price-output)"
        )
    return 0
