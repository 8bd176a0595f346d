"""Agreement between two or more judgment sources, as one JSON-able report.

The first two sources (A, B) are compared in full: on the (model, question) pairs both graded
`ok`, at item, question and exam level, per model and for the ranking. With three or more,
every pair gets its exam-level CCC and all of them Krippendorff's alpha. Human graders in a
CSV are compared with each other the same way: the baseline a judge should reach.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict

import numpy as np

from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, QuestionRow, money
from oab_bench.judge.validity import stats
from oab_bench.judge.validity.sources import Graded, Key, Source

TOP_DISAGREEMENTS = 10


def _match(a: Source, b: Source) -> tuple[list[tuple[Graded, Graded]], Counter]:
    """Pairs both sides graded ok, and why the others were left out.

    A grade with no model (a human CSV without a `model` column) pairs with the other side's
    grade of that question when the other side graded exactly one model on it.
    """
    why: Counter = Counter()
    b_by_q: dict[str, list[Key]] = defaultdict(list)
    for key in b.graded:
        b_by_q[key[1]].append(key)
    a_by_q: dict[str, list[Key]] = defaultdict(list)
    for key in a.graded:
        a_by_q[key[1]].append(key)
    pairs, used_b = [], set()
    named = a.graded.keys() & b.graded.keys()  # pairs by model: never a partner for a grade naming none
    for key, ga in sorted(a.graded.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        if key in b.graded:
            other = key
        else:
            wild = [k for k in b_by_q[key[1]] if k[0] is None or key[0] is None]
            peers = a_by_q[key[1]] if (wild and wild[0][0] is None) else b_by_q[key[1]]
            if len(wild) == 1 and len(peers) == 1 and wild[0] in named:
                why["a grade names no model and the other side's grade of its question pairs by model"] += 1
                continue
            if len(wild) == 1 and len(peers) == 1:
                other = wild[0]
            elif wild:
                why["a grade names no model and the other side graded several models on its question"] += 1
                used_b.update(wild)
                continue
            else:
                why[f"only in {a.name}"] += 1
                continue
        used_b.add(other)
        gb = b.graded[other]
        if ga.status != "ok" or gb.status != "ok":
            for side, g in ((a.name, ga), (b.name, gb)):
                if g.status != "ok":
                    why[f"{side}: {g.status}"] += 1
            continue
        if ga.exam_id != gb.exam_id or abs(ga.max_score - gb.max_score) > 1e-6:
            why["the sides disagree on the question's value or exam"] += 1
            continue
        model = ga.model if ga.model is not None else gb.model
        pairs.append((ga.model_copy(update={"model": model}), gb.model_copy(update={"model": model})))
    why[f"only in {b.name}"] += sum(1 for k in b.graded if k not in used_b)
    return pairs, Counter({k: v for k, v in why.items() if v})


def model_key(model: str | None) -> tuple[bool, str]:
    """Sorts models, None (human grades naming no model on both sides) first."""
    return model is not None, model or ""


def _grid_position(score: float, grid: list[float]) -> int:
    """The score's place on the item's grid, rounded down (a score between two steps earns the lower)."""
    return max(0, bisect.bisect_right(grid, score + 1e-6) - 1)


def _item_rows(pairs, dataset: dict[str, QuestionRow], notes: list[str]) -> tuple[list[dict], list[int]]:
    """Item pairs with their grid positions: from the dataset's allowed scores, else from the scores seen."""
    rows = []
    for ga, gb in pairs:
        if not ga.items or not gb.items:
            continue
        for item in sorted(set(ga.items) & set(gb.items)):
            rows.append(
                {
                    "exam": ga.exam_id,
                    "q": ga.question_id,
                    "item": item,
                    "a": ga.items[item],
                    "b": gb.items[item],
                }
            )
    grids: dict[tuple[str, str], list[float]] = {}
    seen: dict[tuple[str, str], set[float]] = defaultdict(set)
    for r in rows:
        seen[(r["q"], r["item"])] |= {r["a"], r["b"]}
    from_data = 0
    for key, values in seen.items():
        row = dataset.get(key[0])
        rubric = {i.item_id: i for i in row.rubric} if row else {}
        if key[1] in rubric:
            grids[key] = list(rubric[key[1]].allowed_scores)
            from_data += 1
        else:
            grids[key] = sorted(values)
    if seen and from_data < len(seen):
        notes.append(
            f"item.qwk: {len(seen) - from_data} of {len(seen)} items have no known grid (no --dataset?): "
            "their categories are the scores seen on either side"
        )
    for r in rows:
        grid = grids[(r["q"], r["item"])]
        r["ga"], r["gb"] = _grid_position(r["a"], grid), _grid_position(r["b"], grid)
    labels = list(range(max((len(g) for g in grids.values()), default=1)))
    return rows, labels


def _exam_rows(pairs, a: Source, b: Source, dataset: dict[str, QuestionRow], notes: list[str]) -> list[dict]:
    """Exam totals of the (model, exam)s complete on both sides: every question of the exam paired.

    An exam's questions are the dataset's (with --dataset), else every question of it either
    source graded for any model.
    """
    expected: dict[str, set[str]] = defaultdict(set)
    worth: dict[str, float] = {}
    if dataset:
        for r in dataset.values():
            expected[r.exam_id].add(r.question_id)
    else:
        for g in [*a.graded.values(), *b.graded.values()]:
            expected[g.exam_id].add(g.question_id)
    got: dict[tuple[str, str], list[tuple[Graded, Graded]]] = defaultdict(list)
    for ga, gb in pairs:
        got[(ga.model, ga.exam_id)].append((ga, gb))
    rows, incomplete = [], 0
    for (model, exam), ps in sorted(got.items(), key=lambda kv: (model_key(kv[0][0]), kv[0][1])):
        worth[exam] = money(sum(ga.max_score for ga, _ in ps))
        if {ga.question_id for ga, _ in ps} != expected[exam] or abs(worth[exam] - EXAM_MAX) > 1e-6:
            incomplete += 1
            continue
        rows.append(
            {
                "model": model,
                "exam": exam,
                "a": money(sum(ga.score for ga, _ in ps)),
                "b": money(sum(gb.score for _, gb in ps)),
            }
        )
    if incomplete:
        notes.append(
            f"exam: {incomplete} (model, exam)s are not complete on both sides (a question unpaired): "
            "left out of the exam figures"
        )
    return rows


def _confusion(rows: list[dict]) -> dict[str, int]:
    def verdict(x: float) -> str:
        return "pass" if x >= PASS_MARK else "fail"

    counts = Counter(f"{verdict(r['a'])}_{verdict(r['b'])}" for r in rows)
    return {k: counts.get(k, 0) for k in ("pass_pass", "pass_fail", "fail_pass", "fail_fail")}


def _models(rows: list[dict]) -> list[dict]:
    by_model: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_model[r["model"]].append(r)
    out = []
    for model, rs in sorted(by_model.items(), key=lambda kv: model_key(kv[0])):
        out.append(
            {
                "model": model,
                "exams": len(rs),
                "mean_a": float(np.mean([r["a"] for r in rs])),
                "mean_b": float(np.mean([r["b"] for r in rs])),
                "passed_a": sum(r["a"] >= PASS_MARK for r in rs),
                "passed_b": sum(r["b"] >= PASS_MARK for r in rs),
            }
        )
    return sorted(out, key=lambda m: -m["mean_a"])


def compare_two(
    a: Source,
    b: Source,
    dataset: dict[str, QuestionRow] | None = None,
    *,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
) -> dict:
    """Every figure of A against B (B - A for differences)."""
    dataset = dataset or {}
    notes: list[str] = []
    pairs, why = _match(a, b)
    kw = {"resamples": resamples, "seed": seed}

    def fig(name, stat, cols):
        return stats.figure(name, stat, cols, notes, **kw).model_dump()

    items, labels = _item_rows(pairs, dataset, notes)
    ic = stats.columns(items, "exam", "a", "b", "ga", "gb")
    ic["labels"] = np.asarray(labels)
    if not items:
        notes.append(
            "item: no item scores on both sides (upstream files and question-level grades have none)"
        )
    questions = [
        {
            "exam": ga.exam_id,
            "model": ga.model,
            "question_id": ga.question_id,
            "a": 100 * ga.score / ga.max_score,
            "b": 100 * gb.score / gb.max_score,
            "a_points": ga.score,
            "b_points": gb.score,
            "max_score": ga.max_score,
        }
        for ga, gb in pairs
    ]
    qc = stats.columns(questions, "exam", "a", "b")
    exams = _exam_rows(pairs, a, b, dataset, notes)
    ec = stats.columns(exams, "exam", "model", "a", "b")
    flipped = [
        {"model": r["model"], "exam_id": r["exam"], "a": r["a"], "b": r["b"]}
        for r in exams
        if (r["a"] >= PASS_MARK) != (r["b"] >= PASS_MARK)
    ]
    biggest = sorted(
        questions, key=lambda q: (-abs(q["b"] - q["a"]), model_key(q["model"]), q["question_id"])
    )
    models = _models(exams)
    report = {
        "sources": [{"name": s.name, "path": s.path, "judge": s.judge} for s in (a, b)],
        "n_pairs": len(pairs),
        "n_exams": len({r["exam"] for r in exams}),
        "n_exam_results": len(exams),
        "left_out": sum(why.values()),
        "left_out_reasons": dict(sorted(why.items())),
        "item": {
            "n": len(items),
            "exact": fig("item.exact", stats.exact, ic),
            "mae": fig("item.mae", stats.mae, ic),
            "qwk": fig("item.qwk", stats.qwk, ic),
        },
        "question": {
            "n": len(questions),
            "mae": fig("question.mae", stats.mae, qc),
            "bias": fig("question.bias", stats.bias, qc),
            "pearson": fig("question.pearson", stats.pearson, qc),
            "spearman": fig("question.spearman", stats.spearman, qc),
            "kendall": fig("question.kendall", stats.kendall, qc),
            "ccc": fig("question.ccc", stats.ccc, qc),
        },
        "exam": {
            "n": len(exams),
            "mae": fig("exam.mae", stats.mae, ec),
            "bias": fig("exam.bias", stats.bias, ec),
            "pearson": fig("exam.pearson", stats.pearson, ec),
            "spearman": fig("exam.spearman", stats.spearman, ec),
            "ccc": fig("exam.ccc", stats.ccc, ec),
            "kappa_pass": fig("exam.kappa_pass", stats.kappa_pass, ec),
            "confusion": _confusion(exams),
            "flips": len(flipped),
            "flipped": flipped,
        },
        "models": models,
        "ranking_tau": fig("ranking_tau", stats.ranking_tau, ec)
        if len(models) >= stats.MIN_RANKED
        else _none(
            notes,
            "ranking_tau",
            f"{len(models)} model(s) with complete exams: a ranking of fewer than {stats.MIN_RANKED} is no evidence "
            "(two models agree or disagree by a coin's chance)",
        ),
        "disagreements": [
            {
                "model": q["model"],
                "question_id": q["question_id"],
                "a": q["a_points"],
                "b": q["b_points"],
                "max_score": q["max_score"],
            }
            for q in biggest[:TOP_DISAGREEMENTS]
            if abs(q["b"] - q["a"]) > 1e-9
        ],
    }
    if why:
        notes.insert(
            0,
            f"{sum(why.values())} (model, question)s left out: "
            + "; ".join(f"{k} {v}" for k, v in sorted(why.items())),
        )
    report["notes"] = notes
    return report


def _none(notes: list[str], name: str, why: str) -> dict:
    notes.append(f"{name}: null: {why}")
    return stats.NULL.model_dump()


def _exam_table(sources: list[Source], dataset) -> dict[tuple[str, str], list[float]]:
    """(model, exam) -> each source's total (NaN where that source did not complete it)."""
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [np.nan] * len(sources))
    for i, s in enumerate(sources):
        for r in _exam_rows([(g, g) for g in s.graded.values() if g.status == "ok"], s, s, dataset, []):
            totals[(r["model"], r["exam"])][i] = r["a"]
    return totals


def compare_all(
    sources: list[Source],
    dataset: dict[str, QuestionRow] | None = None,
    *,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
) -> dict:
    """A against B in full; with 3+ sources, the pairwise exam CCC matrix and Krippendorff's alpha."""
    if len(sources) < 2:
        raise ValueError("agreement needs two sources or more")
    dataset = dataset or {}
    kw = {"resamples": resamples, "seed": seed}
    report = _paired(compare_two(sources[0], sources[1], dataset, **kw), sources[0], sources[1])
    report["sources"] = [{"name": s.name, "path": s.path, "judge": s.judge} for s in sources]
    report["notes"] = [f"{s.name}: {n}" for s in sources for n in s.notes] + report["notes"]
    if len(sources) >= 3:
        report["pairwise"] = []
        for x, y in itertools.combinations(sources, 2):
            r = compare_two(x, y, dataset, **kw)
            if not r["n_pairs"]:  # a jury member that failed everywhere: its figures null, said
                report["notes"].append(f"{x.name} vs {y.name}: {_no_pairs(r)}")
            row = {"a": x.name, "b": y.name, "n_exam_results": r["exam"]["n"]}
            report["pairwise"].append(row | {"mae": r["exam"]["mae"], "ccc": r["exam"]["ccc"]})
        report["alpha"] = alpha_over(sources, dataset, report["notes"], **kw)
    baseline = []
    for s in sources:
        for x, y in itertools.combinations(s.graders.values(), 2):
            r = compare_two(x, y, dataset, **kw)
            baseline.append({k: r[k] for k in ("sources", "n_pairs", "item", "question", "exam", "notes")})
    if baseline:
        report["human_baseline"] = baseline
    return report


def _no_pairs(report: dict) -> str:
    why = "; ".join(f"{k} {v}" for k, v in report["left_out_reasons"].items()) or "nothing graded"
    return f"no (model, question) graded ok by both ({why})"


def _paired(report: dict, a: Source, b: Source) -> dict:
    """A and B with no (model, question) both graded ok: every figure would be n/a, in a report
    that reads like one. Said as an error, with why each pair was left out (further pairs of 3+
    sources, a jury's members among them, get a note instead)."""
    if report["n_pairs"]:
        return report
    raise ValueError(f"{a.label} and {b.label}: {_no_pairs(report)}")


def alpha_over(sources: list[Source], dataset, notes: list[str], **kw) -> dict:
    """Krippendorff's alpha (interval) on exam totals, every source a coder; incomplete exams are missing values."""
    table = _exam_table(sources, dataset)
    keys = sorted(table)
    cols = {
        "exam": stats.columns([{"exam": k[1]} for k in keys], "exam")["exam"]
        if keys
        else np.zeros(0, dtype=int),
        "matrix": np.asarray([table[k] for k in keys], dtype=float).reshape(len(keys), len(sources)),
    }
    return stats.figure("alpha", stats.alpha, cols, notes, **kw).model_dump()
