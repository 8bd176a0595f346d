"""What one judge costs per candidate model for the whole dataset, from the calls' own usage.

The judged questions are a sample of the dataset: a question's cost is the mean over the models'
answers to it, per question kind (a peça costs more than a questão), and the whole dataset is
that mean times its questions of each kind: a scaled figure, and said to be one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from oab_bench.dataset_builder.schema import QuestionRow
from oab_bench.judge.records import Judgment


def leaves(judge, judgments: Sequence[Judgment]) -> list[tuple[object, Judgment]]:
    """(the judge that called, its judgment) for every grading: a jury's members each on their own
    (their judgments keep what a cached call first cost, unlike the jury's combined record)."""
    members = getattr(judge, "members", None)
    if members is None:
        return [(judge, j) for j in judgments]
    models = {j.model for j in judgments}
    return [(m, j) for m, got in zip(members, judge.graded, strict=True) for j in got if j.model in models]


def fresh_calls(pairs: Sequence[tuple[object, Judgment]]) -> int:
    """API calls this run made (retries counted): what the provider saw; cached gradings made none."""
    return sum(j.attempts for _, j in pairs if not j.cached)


def direct_and_batch(who, j: Judgment) -> tuple[float | None, float | None]:
    """One grading at the direct and at the batch price (whichever way it was paid)."""
    cost = j.cost_usd
    if cost is None:
        return (0.0, 0.0) if j.usage.prompt_tokens == 0 and j.usage.completion_tokens == 0 else (None, None)
    discount = who.settings.price_batch_discount
    if who.settings.batch:
        return (cost / discount if discount else None), cost
    return cost, cost * discount


def per_model(
    pairs: Sequence[tuple[object, Judgment]], judged: Sequence[QuestionRow], dataset: Sequence[QuestionRow]
) -> tuple[float | None, float | None, str]:
    """(direct, batch) dollars per model for the whole `dataset`, scaled from the gradings of the
    `judged` questions, and the sentence that says how."""
    kind = {r.question_id: r.kind for r in judged}
    by_kind: dict[str, dict[str, list]] = defaultdict(lambda: {"direct": [], "batch": []})
    models: dict[str, set[str]] = defaultdict(set)
    for who, j in pairs:
        if j.question_id not in kind:
            continue
        direct, batch = direct_and_batch(who, j)
        by_kind[kind[j.question_id]]["direct"].append(direct)
        by_kind[kind[j.question_id]]["batch"].append(batch)
        models[j.question_id].add(j.model)
    n_judged = Counter(kind[q] for q in models)
    wanted = Counter(r.kind for r in dataset)
    n_models = max((len(m) for m in models.values()), default=0)
    if not n_models:
        return None, None, "no answer judged: no cost to scale"
    out = []
    for side in ("direct", "batch"):
        costs = [c for k in by_kind for c in by_kind[k][side]]
        if any(c is None for c in costs):
            out.append(None)
            continue
        mean_all = sum(costs) / n_models / sum(n_judged.values())
        total = 0.0
        for k, n in wanted.items():
            got = by_kind.get(k)
            total += n * (sum(got[side]) / n_models / n_judged[k] if got and n_judged[k] else mean_all)
        out.append(total)
    how = (
        f"scaled: {sum(n_judged.values())} of {len(dataset)} questions judged "
        f"({', '.join(f'{k} {n_judged[k]} of {wanted[k]}' for k in sorted(wanted))}), {n_models} models"
    )
    return out[0], out[1], how
