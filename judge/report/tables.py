"""The benchmark's headline table: per judge, per model, exam scores with uncertainty.

Rankings are per judge (a judge model with its prompt); two judges are never mixed.
Exam figures use only complete exams (every question judged ok); coverage says how much
is missing. The 95% interval resamples whole exams (seeded bootstrap, scipy).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel
from scipy import stats

from dataset_builder.schema import EXAM_MAX, PASS_MARK, money

from ..aggregate import QuestionResult, exam_totals
from ..validity.repeats import repeat_totals, repeats_ci
from .inputs import Record, unjudged

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0

_FAMILIES = {
    "openai": r"\b(gpt|o1|o3|o4|chatgpt|davinci)\b|^o\d",
    "anthropic": r"claude",
    "google": r"gemini|gemma|palm",
    "meta": r"llama",
    "qwen": r"qwen|qwq",
    "deepseek": r"deepseek",
    "mistral": r"mistral|mixtral|magistral|ministral",
    "maritaca": r"sabi[aá]",
    "xai": r"grok",
}


def family(model: str) -> str | None:
    """The vendor family of a model name, for flagging a judge that grades its own family."""
    name = model.lower().split("/")[-1].split(" [")[0]
    for fam, pattern in _FAMILIES.items():
        if re.search(pattern, name):
            return fam
    return None


class Row(BaseModel):
    model: str
    judge: str
    exams: int  # complete exams: every question judged ok
    passed: int
    mean_exam_score: float | None
    ci_low: float | None
    ci_high: float | None
    coverage: float
    per_area: dict[str, float]
    per_edition: dict[str, float]
    best_area: str | None
    complete: bool  # coverage 1.0: every expected question judged ok
    same_family_as_judge: bool
    exam_totals: dict[str, float]  # exam id -> total, complete exams only


def bootstrap_ci(
    values: list[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[float | None, float | None]:
    """95% percentile interval of the mean, resampling the values (whole exams). None below 2 values."""
    if len(values) < 2:
        return None, None
    data = np.asarray(values, dtype=float)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    res = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=resamples,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _mean(xs: Iterable[float]) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _best(per_area: dict[str, float]) -> str | None:
    if not per_area:
        return None
    return max(sorted(per_area), key=lambda a: per_area[a])  # ties: the first alphabetically


def _disagrees(r: Record, ref: Record) -> bool:
    """A judgment whose question value or exam differs from the dataset's (or the other inputs')."""
    return r.exam_id != ref.exam_id or abs(r.max_score - ref.max_score) > 1e-6


def model_row(
    model: str, judge: str, records: list[Record], expected: dict[str, Record], *, resamples: int, seed: int
) -> Row:
    """`expected`: one record per question the table expects (any model's), for max scores and areas."""
    mine = {r.question_id: r for r in records}
    results = []
    for qid, ref in expected.items():
        r = mine.get(qid)
        status = r.status if r else "missing"
        if r and _disagrees(r, ref):
            status = "mismatch"
        results.append(
            QuestionResult(
                question_id=qid,
                exam_id=ref.exam_id,
                status=status,
                score=r.score if r else None,
                max_score=ref.max_score,
            )
        )
    totals = {e.exam_id: e.total for e in exam_totals(results).values() if e.complete}
    by_repeat = repeat_totals(mine, expected)  # a run with --repeats K: the mean of its repeats
    if by_repeat is not None:
        totals = {e: money(float(np.mean(v))) for e, v in by_repeat.items()}
    meta = {ref.exam_id: ref for ref in expected.values()}
    by_area: dict[str, list[float]] = defaultdict(list)
    by_edition: dict[str, list[float]] = defaultdict(list)
    for exam, total in totals.items():
        by_area[meta[exam].area].append(total)
        by_edition[str(meta[exam].edition)].append(total)
    per_area = {a: _mean(v) for a, v in sorted(by_area.items())}
    if by_repeat is None:
        low, high = bootstrap_ci(list(totals.values()), resamples=resamples, seed=seed)
    else:
        low, high = repeats_ci(by_repeat, resamples=resamples, seed=seed)
    ok = sum(1 for r in results if r.ok)
    return Row(
        model=model,
        judge=judge,
        exams=len(totals),
        passed=sum(t >= PASS_MARK for t in totals.values()),
        mean_exam_score=_mean(totals.values()),
        ci_low=low,
        ci_high=high,
        coverage=ok / len(results) if results else 0.0,
        per_area=per_area,
        per_edition={e: _mean(v) for e, v in sorted(by_edition.items(), key=lambda kv: int(kv[0]))},
        best_area=_best(per_area),
        complete=ok == len(results),
        same_family_as_judge=family(model) is not None and family(model) == family(judge),
        exam_totals=totals,
    )


def _exam_notes(judge: str, expected: dict[str, Record]) -> list[str]:
    """Exams that can never count (their questions' values do not make 10.00): said, not dropped silently."""
    worth: dict[str, float] = defaultdict(float)
    for r in expected.values():
        worth[r.exam_id] += r.max_score
    return [
        f"{judge}: exam {exam}: its judged questions are worth {money(total):.2f}, not {EXAM_MAX:.2f}: "
        "it is left out of every model's exam figures (see coverage)"
        for exam, total in sorted(worth.items())
        if abs(total - EXAM_MAX) > 1e-6
    ]


class Table(BaseModel):
    judge: str
    rows: list[Row]


def _sort_key(row: Row):
    return (-(row.mean_exam_score if row.mean_exam_score is not None else -math.inf), -row.passed, row.model)


def build_tables(
    records: list[Record],
    *,
    expected_ids: set[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[list[Table], list[str]]:
    """One ranked table per judge, and notes (duplicates, several judges) to show the reader."""
    notes: list[str] = []
    by_judge: dict[str, dict[str, dict[str, Record]]] = defaultdict(lambda: defaultdict(dict))
    duplicates = 0
    for r in records:
        slot = by_judge[r.judge][r.model]
        if r.question_id in slot:
            duplicates += 1
        slot[r.question_id] = r  # the later input wins
    if duplicates:
        notes.append(
            f"{duplicates} records repeat a (judge, model, question) already read; the later input was used"
        )
    if len(by_judge) > 1:
        notes.append(
            f"the inputs come from {len(by_judge)} judges: one table each, never one ranking across judges"
        )
    tables = []
    for judge, models in sorted(by_judge.items()):
        expected: dict[str, Record] = {}
        for recs in models.values():
            for qid, r in recs.items():
                if expected_ids is None or qid in expected_ids:
                    expected.setdefault(qid, r)
        if expected_ids is not None:
            missing_everywhere = sorted(expected_ids - set(expected))
            if missing_everywhere:
                notes.append(
                    f"{judge}: {len(missing_everywhere)} expected questions have no judgment from any model"
                )
            expected.update({qid: unjudged(qid, judge) for qid in missing_everywhere})
        notes += _exam_notes(judge, expected)
        rows = [
            model_row(m, judge, list(recs.values()), expected, resamples=resamples, seed=seed)
            for m, recs in models.items()
        ]
        for m, recs in models.items():
            bad = sorted(
                q
                for q, r in recs.items()
                if q in expected and (r.status == "mismatch" or _disagrees(r, expected[q]))
            )
            if bad:
                notes.append(
                    f"{judge}: {m}: {len(bad)} judgments disagree with the dataset or the other inputs on a "
                    f"question's value or exam (e.g. {bad[0]}): their exams are left out (see coverage)"
                )
        for row in rows:
            if not row.complete:
                notes.append(
                    f"{judge}: {row.model} has coverage {row.coverage:.0%}; its exam figures use its {row.exams} complete exams only"
                )
            if row.same_family_as_judge:
                notes.append(
                    f"{judge}: {row.model} is graded by a judge of its own family ({family(row.model)})"
                )
        tables.append(Table(judge=judge, rows=sorted(rows, key=_sort_key)))
    return tables, notes


# --- paired comparison -----------------------------------------------------------------------


class Comparison(BaseModel):
    judge: str
    model_a: str
    model_b: str
    exams: int  # complete for both
    mean_difference: float | None  # A - B, exam points
    ci_low: float | None
    ci_high: float | None
    a_passed_b_failed: int
    b_passed_a_failed: int


def compare(
    tables: list[Table],
    model_a: str,
    model_b: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[Comparison]:
    out = []
    for t in tables:
        rows = {r.model: r for r in t.rows}
        if model_a not in rows or model_b not in rows:
            continue
        a, b = rows[model_a].exam_totals, rows[model_b].exam_totals
        both = sorted(set(a) & set(b))
        diffs = [a[e] - b[e] for e in both]
        low, high = bootstrap_ci(diffs, resamples=resamples, seed=seed)  # paired: resample exams, keep pairs
        out.append(
            Comparison(
                judge=t.judge,
                model_a=model_a,
                model_b=model_b,
                exams=len(both),
                mean_difference=_mean(diffs),
                ci_low=low,
                ci_high=high,
                a_passed_b_failed=sum(a[e] >= PASS_MARK > b[e] for e in both),
                b_passed_a_failed=sum(b[e] >= PASS_MARK > a[e] for e in both),
            )
        )
    return out
