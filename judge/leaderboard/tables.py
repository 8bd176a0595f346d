"""The benchmark's headline table: per judge, per model, exam scores with uncertainty.

Rankings are per judge (a judge model with its prompt); two judges are never mixed.
Exam figures use only complete exams (every question judged ok); coverage says how much
is missing. The 95% interval resamples whole exams (seeded bootstrap, scipy).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel

from oab_bench.dataset_builder.errors import SourceError
from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, money
from oab_bench.judge.aggregate import QuestionResult, exam_totals
from oab_bench.judge.intervals import DEFAULT_SEED, LEADERBOARD_RESAMPLES, bootstrap_ci, repeats_ci
from oab_bench.judge.leaderboard.judged import Facts, Record, facts_of_id

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
    panel: str | None = None  # published answers judged beside a candidate (`--panel`): their source


def _mean(xs: Iterable[float]) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _best(per_area: dict[str, float]) -> str | None:
    if not per_area:
        return None
    return max(sorted(per_area), key=lambda a: per_area[a])  # ties: the first alphabetically


def _disagrees(r: Record, facts: Facts) -> bool:
    """A judgment whose question value or exam differs from the dataset's (or the inputs' majority)."""
    return r.exam_id != facts.exam_id or abs(r.max_score - facts.max_score) > 1e-6


def model_row(
    model: str, judge: str, records: list[Record], expected: dict[str, Facts], *, resamples: int, seed: int
) -> Row:
    """`records`: checked against `expected` (settle_facts), one per question the table expects.

    Coverage counts a question only when it is `ok` and its exam can count (worth 10.00): an exam
    left out of the figures is never hidden behind a full coverage.
    """
    mine = {r.question_id: r for r in records}
    results = []
    for qid, facts in expected.items():
        r = mine.get(qid)
        results.append(
            QuestionResult(
                question_id=qid,
                exam_id=facts.exam_id,
                status=r.status if r else "missing",
                score=r.score if r else None,
                max_score=facts.max_score,
            )
        )
    totals = {e.exam_id: e.total for e in exam_totals(results).values() if e.complete}
    by_repeat = repeat_totals(mine, expected)  # a run with --repeats K: the mean of its repeats
    if by_repeat is not None:
        totals = {e: money(float(np.mean(v))) for e, v in by_repeat.items()}
    meta = {f.exam_id: f for f in expected.values()}
    worth = _exam_worth(expected)
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
    ok = sum(1 for r in results if r.ok and abs(worth[r.exam_id] - EXAM_MAX) < 1e-6)
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
        panel=min((r.panel for r in records if r.panel), default=None),
    )


def _exam_worth(expected: dict[str, Facts]) -> dict[str, float]:
    worth: dict[str, float] = defaultdict(float)
    for f in expected.values():
        worth[f.exam_id] += f.max_score
    return {exam: money(total) for exam, total in worth.items()}


def _exam_notes(judge: str, expected: dict[str, Facts]) -> list[str]:
    """Exams that can never count (their questions' values do not make 10.00): said, not dropped silently."""
    return [
        f"{judge}: exam {exam}: its judged questions are worth {total:.2f}, not {EXAM_MAX:.2f}: "
        "it is left out of every model's exam figures and coverage"
        for exam, total in sorted(_exam_worth(expected).items())
        if abs(total - EXAM_MAX) > 1e-6
    ]


class Table(BaseModel):
    judge: str
    rows: list[Row]


def _sort_key(row: Row):
    return (-(row.mean_exam_score if row.mean_exam_score is not None else -math.inf), -row.passed, row.model)


def settle_facts(
    records: list[Record], truth: dict[str, Facts]
) -> tuple[dict[str, Facts], set[str], list[str]]:
    """Each judged question's facts: `truth`'s (the dataset), else the majority of the inputs.

    A vote is one (judge, model) record's (exam, value); a tie goes to what the question id
    says (facts_of_id), and with no such winner the question is unresolved: every record of it
    is a mismatch. Returns (facts, unresolved ids, notes); nothing depends on the records' order.
    """
    votes: dict[str, set[tuple[str, str, str, float]]] = defaultdict(set)
    for r in records:
        if r.question_id not in truth:
            votes[r.question_id].add((r.judge, r.model, r.exam_id, round(r.max_score, 6)))
    facts = {q: truth[q] for q in {r.question_id for r in records} if q in truth}
    unresolved, notes = set(), []
    for qid, ballots in sorted(votes.items()):
        count = Counter((exam, value) for _, _, exam, value in ballots)
        default = facts_of_id(qid)
        top = max(count.values())
        best = sorted(k for k, n in count.items() if n == top)
        pick = (default.exam_id, default.max_score) if (default.exam_id, default.max_score) in best else None
        if pick is None and len(best) == 1:
            pick = best[0]
        if pick is not None:
            default = default.model_copy(update={"exam_id": pick[0], "max_score": pick[1]})
        facts[qid] = default
        if len(count) > 1:
            said = ", ".join(f"{v:.2f} in exam {e} ({n} records)" for (e, v), n in sorted(count.items()))
            if pick is None:
                unresolved.add(qid)
                what = "no majority: every judgment of it counts as a mismatch"
            else:
                how = (
                    "the majority" if sorted(count.values())[-2] < count[pick] else "a tie: what its id says"
                )
                what = f"{how} ({pick[1]:.2f} in exam {pick[0]}) is used; the others count against their own models"
            notes.append(
                f"{qid}: the inputs disagree on its value or exam ({said}): {what}; pass --dataset to settle it"
            )
    return facts, unresolved, notes


def _checked(r: Record, facts: Facts, unresolved: bool) -> Record:
    """`r` in the question's settled exam, area and edition; a mismatch if it says otherwise."""
    update = {"area": facts.area, "edition": facts.edition}
    if unresolved or _disagrees(r, facts):
        update |= {"status": "mismatch", "score": None}
    return r.model_copy(update=update)


def one_each(records: list[Record]) -> tuple[dict[str, dict[str, dict[str, Record]]], list[str]]:
    """One record per (judge, model, question), chosen whatever the order of the inputs.

    Copies with the same result are one; an `ok` beats failures (a judgment made again); two
    different `ok` scores are an error naming both places: no input may silently win.
    """
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.judge, r.model, r.question_id)].append(r)
    out: dict[str, dict[str, dict[str, Record]]] = defaultdict(lambda: defaultdict(dict))
    copies = retried = 0
    for (judge, model, qid), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: (r.status != "ok", r.status, r.source, r.line))
        scores = sorted({(r.source, r.line, round(r.score, 6)) for r in rs if r.status == "ok"})
        if len({s for _, _, s in scores}) > 1:
            (fa, la, a), (fb, lb, b) = scores[0], next(x for x in scores if x[2] != scores[0][2])
            raise SourceError(
                f"{model} on {qid} (judge {judge}) scores {a} here and {b} in {fb}:{lb}: pass one of them",
                file=fa,
                line=la or None,
            )
        if len(rs) > 1:
            if len({(r.status, r.score) for r in rs}) == 1:
                copies += len(rs) - 1
            else:
                retried += 1
        out[judge][model][qid] = rs[0]
    notes = []
    if copies:
        notes.append(
            f"{copies} records repeat a (judge, model, question) with the same result: each counted once"
        )
    if retried:
        notes.append(
            f"{retried} (judge, model, question) have different outcomes in different inputs: "
            "an ok judgment, if any, is used over failures"
        )
    return out, notes


def build_tables(
    records: list[Record],
    *,
    expected_ids: set[str] | None = None,
    truth: dict[str, Facts] | None = None,
    resamples: int = LEADERBOARD_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[list[Table], list[str]]:
    """One ranked table per judge, and notes (conflicts, duplicates, several judges) to show the reader.

    `truth`: the dataset's facts per question; each record is checked against them (or the
    inputs' majority), so a disagreeing record counts against its own model only.
    """
    facts, unresolved, notes = settle_facts(records, truth or {})
    checked = [_checked(r, facts[r.question_id], r.question_id in unresolved) for r in records]
    by_judge, more = one_each(checked)
    notes += more
    if len(by_judge) > 1:
        notes.append(
            f"the inputs come from {len(by_judge)} judges: one table each, never one ranking across judges"
        )
    tables = []
    for judge, models in sorted(by_judge.items()):
        seen = {qid for recs in models.values() for qid in recs}
        ids = seen if expected_ids is None else expected_ids
        expected = {qid: facts.get(qid) or (truth or {}).get(qid) or facts_of_id(qid) for qid in sorted(ids)}
        if expected_ids is not None:
            missing_everywhere = sorted(expected_ids - seen)
            if missing_everywhere:
                notes.append(
                    f"{judge}: {len(missing_everywhere)} expected questions have no judgment from any model"
                )
        notes += _exam_notes(judge, expected)
        rows = [
            model_row(m, judge, list(recs.values()), expected, resamples=resamples, seed=seed)
            for m, recs in sorted(models.items())
        ]
        for m, recs in sorted(models.items()):
            bad = sorted(q for q, r in recs.items() if q in expected and r.status == "mismatch")
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
    resamples: int = LEADERBOARD_RESAMPLES,
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


def repeat_totals(mine: dict, expected: dict) -> dict[str, list[float]] | None:
    """Exam -> its total in each repeat (exams complete in every repeat); None when not a repeated run.

    `mine`, `expected`: question id -> leaderboard Record (judge.leaderboard.inputs).
    """
    if not any(r.repeat_scores for r in mine.values()):
        return None
    by_exam: dict[str, list[str]] = defaultdict(list)
    for qid, ref in expected.items():
        by_exam[ref.exam_id].append(qid)
    out = {}
    for exam, qids in by_exam.items():
        if abs(money(sum(expected[q].max_score for q in qids)) - EXAM_MAX) > 1e-6:
            continue
        rows = [mine.get(q) for q in qids]
        if any(r is None or not r.repeat_scores or r.status == "mismatch" for r in rows):
            continue
        k = min(len(r.repeat_scores) for r in rows)
        totals = [[r.repeat_scores[i] for r in rows] for i in range(k)]
        if k and all(s is not None for t in totals for s in t):
            out[exam] = [money(sum(t)) for t in totals]
    return out
