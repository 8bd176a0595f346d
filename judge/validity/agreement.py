"""Agreement between judgment sources as a JSON-able report and as text: A and B in full on what both graded
`ok`; with 3+, each pair's exam CCC, MAE and Krippendorff's alpha; a CSV's graders against each other."""

from __future__ import annotations

import bisect
import itertools
import json
from collections import Counter, defaultdict

import numpy as np

from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, QuestionRow, money
from oab_bench.judge.validity import stats
from oab_bench.judge.validity.sources import Graded, Key, Source

TOP_DISAGREEMENTS = 10


def _match(a: Source, b: Source) -> tuple[list[tuple[Graded, Graded]], Counter]:
    """Pairs both sides graded ok, and why the others were left out. A grade naming no model pairs
    with the other side's only model on its question, unless that grade pairs by model already."""
    why: Counter = Counter()
    by_q: dict[str, dict[str, list[Key]]] = {"a": defaultdict(list), "b": defaultdict(list)}
    for side, source in (("a", a), ("b", b)):
        for key in source.graded:
            by_q[side][key[1]].append(key)
    pairs, used_b = [], set()
    named = a.graded.keys() & b.graded.keys()
    for key, ga in sorted(a.graded.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        other = key
        if key not in b.graded:
            wild = [k for k in by_q["b"][key[1]] if k[0] is None or key[0] is None]
            peers = by_q["a" if wild and wild[0][0] is None else "b"][key[1]]
            if len(wild) == 1 and len(peers) == 1 and wild[0] in named:
                why["a grade names no model and the other side's grade of its question pairs by model"] += 1
                continue
            if len(wild) != 1 or len(peers) != 1:
                several = "a grade names no model and the other side graded several models on its question"
                why[several if wild else f"only in {a.name}"] += 1
                used_b.update(wild)
                continue
            other = wild[0]
        used_b.add(other)
        gb = b.graded[other]
        if ga.status != "ok" or gb.status != "ok":
            why.update(f"{side}: {g.status}" for side, g in ((a.name, ga), (b.name, gb)) if g.status != "ok")
        elif ga.exam_id != gb.exam_id or abs(ga.max_score - gb.max_score) > 1e-6:
            why["the sides disagree on the question's value or exam"] += 1
        else:
            model = {"model": ga.model if ga.model is not None else gb.model}
            pairs.append((ga.model_copy(update=model), gb.model_copy(update=model)))
    why[f"only in {b.name}"] += sum(1 for k in b.graded if k not in used_b)
    return pairs, Counter({k: v for k, v in why.items() if v})


def model_key(model: str | None) -> tuple[bool, str]:  # None (no model named on either side) first
    return model is not None, model or ""


def _item_rows(pairs, dataset: dict[str, QuestionRow], notes: list[str]) -> tuple[list[dict], list[int]]:
    """Item pairs with their places on the item's grid of allowed scores (else those seen), rounded down."""
    rows = [
        {"exam": ga.exam_id, "q": ga.question_id, "item": i, "a": ga.items[i], "b": gb.items[i]}
        for ga, gb in pairs
        if ga.items and gb.items
        for i in sorted(set(ga.items) & set(gb.items))
    ]
    seen: dict[tuple[str, str], set[float]] = defaultdict(set)
    for r in rows:
        seen[(r["q"], r["item"])] |= {r["a"], r["b"]}
    grids, guessed = {}, 0
    for (q, item), values in seen.items():
        rubric = {i.item_id: i for i in dataset[q].rubric} if q in dataset else {}
        grids[(q, item)] = list(rubric[item].allowed_scores) if item in rubric else sorted(values)
        guessed += item not in rubric
    if guessed:
        notes.append(
            f"item.qwk: {guessed} of {len(seen)} items have no known grid (no --dataset?): "
            "their categories are the scores seen on either side"
        )
    for r in rows:
        grid = grids[(r["q"], r["item"])]
        for side in ("a", "b"):
            r[f"g{side}"] = max(0, bisect.bisect_right(grid, r[side] + 1e-6) - 1)
    return rows, list(range(max((len(g) for g in grids.values()), default=1)))


def _exam_rows(pairs, sources: list[Source], dataset: dict[str, QuestionRow], notes: list[str]) -> list[dict]:
    """Exam totals of the (model, exam)s with every question of the exam paired, worth 10 points."""
    expected: dict[str, set[str]] = defaultdict(set)
    for g in dataset.values() or [g for s in sources for g in s.graded.values()]:
        expected[g.exam_id].add(g.question_id)
    got: dict[tuple[str, str], list[tuple[Graded, Graded]]] = defaultdict(list)
    for ga, gb in pairs:
        got[(ga.model, ga.exam_id)].append((ga, gb))
    rows = []
    for (model, exam), ps in sorted(got.items(), key=lambda kv: (model_key(kv[0][0]), kv[0][1])):
        worth = money(sum(ga.max_score for ga, _ in ps))
        if {ga.question_id for ga, _ in ps} == expected[exam] and abs(worth - EXAM_MAX) <= 1e-6:
            a, b = (money(sum(p[side].score for p in ps)) for side in (0, 1))
            rows.append({"model": model, "exam": exam, "a": a, "b": b})
    if len(rows) < len(got):
        notes.append(
            f"exam: {len(got) - len(rows)} (model, exam)s are not complete on both sides (a question "
            "unpaired): left out of the exam figures"
        )
    return rows


def _models(rows: list[dict]) -> list[dict]:  # `rows` sorted by model, as _exam_rows makes them
    out = [
        {"model": model, "exams": len(rs)}
        | {f"mean_{s}": float(np.mean([r[s] for r in rs])) for s in "ab"}
        | {f"passed_{s}": sum(r[s] >= PASS_MARK for r in rs) for s in "ab"}
        for model, rs in ((m, list(g)) for m, g in itertools.groupby(rows, key=lambda r: r["model"]))
    ]
    return sorted(out, key=lambda m: -m["mean_a"])


def compare_two(a: Source, b: Source, dataset: dict[str, QuestionRow] | None = None, **boot) -> dict:
    """Every figure of A against B (B - A for differences); `boot`: stats.figure's resamples and seed."""
    dataset = dataset or {}
    notes: list[str] = []
    pairs, why = _match(a, b)

    def figures(level: str, names: str, rows: list[dict], *columns: str, **more) -> dict:
        cols = stats.columns(rows, "exam", "a", "b", *columns) | more
        return {"n": len(rows)} | {
            n: stats.figure(f"{level}.{n}", cols, notes, **boot) for n in names.split()
        }

    items, labels = _item_rows(pairs, dataset, notes)
    if not items:
        notes.append(
            "item: no item scores on both sides (upstream files and question-level grades have none)"
        )
    pct = [  # % of the question's value
        dict(exam=ga.exam_id, a=100 * ga.score / ga.max_score, b=100 * gb.score / gb.max_score, pair=(ga, gb))
        for ga, gb in pairs
    ]
    exams = _exam_rows(pairs, [a, b], dataset, notes)
    item = figures("item", "exact mae qwk", items, "ga", "gb", labels=labels)
    question = figures("question", "mae bias pearson spearman kendall ccc", pct)
    exam = figures("exam", "mae bias pearson spearman ccc kappa_pass", exams, "model")
    models = _models(exams)
    if len(models) >= stats.MIN_RANKED:
        ranking = stats.figure("ranking_tau", stats.columns(exams, "exam", "model", "a", "b"), notes, **boot)
    else:
        ranking = stats.NULL.model_dump()
        notes.append(
            f"ranking_tau: null: {len(models)} model(s) with complete exams: a ranking of fewer than "
            f"{stats.MIN_RANKED} is no evidence (two models agree or disagree by a coin's chance)"
        )
    verdicts = Counter("_".join("pass" if r[s] >= PASS_MARK else "fail" for s in "ab") for r in exams)
    exam["confusion"] = {k: verdicts[k] for k in ("pass_pass", "pass_fail", "fail_pass", "fail_fail")}
    flipped = [r for r in exams if (r["a"] >= PASS_MARK) != (r["b"] >= PASS_MARK)]
    flipped = [dict(model=r["model"], exam_id=r["exam"], a=r["a"], b=r["b"]) for r in flipped]
    exam |= {"flips": len(flipped), "flipped": flipped}
    biggest = sorted(
        pct, key=lambda q: (-abs(q["b"] - q["a"]), model_key(q["pair"][0].model), q["pair"][0].question_id)
    )
    disagreements = [
        dict(model=ga.model, question_id=ga.question_id, a=ga.score, b=gb.score, max_score=ga.max_score)
        for ga, gb in (q["pair"] for q in biggest[:TOP_DISAGREEMENTS] if abs(q["b"] - q["a"]) > 1e-9)
    ]
    if why:
        left_out = "; ".join(f"{k} {v}" for k, v in sorted(why.items()))
        notes.insert(0, f"{sum(why.values())} (model, question)s left out: {left_out}")
    return {
        "sources": [{"name": s.name, "path": s.path, "judge": s.judge} for s in (a, b)],
        "n_pairs": len(pairs),
        "n_exams": len({r["exam"] for r in exams}),
        "n_exam_results": len(exams),
        "left_out": sum(why.values()),
        "left_out_reasons": dict(sorted(why.items())),
        "item": item,
        "question": question,
        "exam": exam,
        "models": models,
        "ranking_tau": ranking,
        "disagreements": disagreements,
        "notes": notes,
    }


def compare_all(sources: list[Source], dataset: dict[str, QuestionRow] | None = None, **boot) -> dict:
    """A against B in full (an error if they share nothing graded ok); with 3+, pairwise figures, alpha."""
    report = compare_two(sources[0], sources[1], dataset, **boot)
    if not report["n_pairs"]:
        raise ValueError(f"{sources[0].label} and {sources[1].label}: {_no_pairs(report)}")
    report["sources"] = [{"name": s.name, "path": s.path, "judge": s.judge} for s in sources]
    report["notes"] = [f"{s.name}: {n}" for s in sources for n in s.notes] + report["notes"]
    if len(sources) >= 3:
        report["pairwise"] = []
        for x, y in itertools.combinations(sources, 2):
            r = compare_two(x, y, dataset, **boot)
            if not r["n_pairs"]:
                report["notes"].append(f"{x.name} vs {y.name}: {_no_pairs(r)}")
            row = {"a": x.name, "b": y.name, "n_exam_results": r["exam"]["n"]}
            report["pairwise"].append(row | {"mae": r["exam"]["mae"], "ccc": r["exam"]["ccc"]})
        report["alpha"] = alpha_over(sources, dataset or {}, report["notes"], **boot)
    baseline = [
        {k: r[k] for k in ("sources", "n_pairs", "item", "question", "exam", "notes")}
        for s in sources
        for x, y in itertools.combinations(s.graders.values(), 2)
        for r in [compare_two(x, y, dataset, **boot)]
    ]
    return report | ({"human_baseline": baseline} if baseline else {})


def _no_pairs(report: dict) -> str:
    why = "; ".join(f"{k} {v}" for k, v in report["left_out_reasons"].items()) or "nothing graded"
    return f"no (model, question) graded ok by both ({why})"


def exam_totals(sources: list[Source], dataset: dict[str, QuestionRow]) -> dict[tuple[str, str], list[float]]:
    """(model, exam) -> each source's exam total, NaN where that source did not complete it."""
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [np.nan] * len(sources))
    for i, s in enumerate(sources):
        ok = [(g, g) for g in s.graded.values() if g.status == "ok"]
        for r in _exam_rows(ok, [s], dataset, []):
            totals[(r["model"], r["exam"])][i] = r["a"]
    return dict(sorted(totals.items(), key=lambda kv: (model_key(kv[0][0]), kv[0][1])))


def alpha_over(sources: list[Source], dataset, notes: list[str], **kw) -> dict:
    """Krippendorff's alpha (interval) on exam totals, every source a coder, incomplete exams missing."""
    totals = exam_totals(sources, dataset)
    cols = stats.columns([{"exam": exam} for _, exam in totals], "exam")
    cols["matrix"] = np.asarray(list(totals.values()), dtype=float).reshape(len(totals), len(sources))
    return stats.figure("alpha", cols, notes, **kw)


ITEM_LABELS = {"exact": "exact agreement", "mae": "MAE (points)", "qwk": "quadratic-weighted kappa"}
QUESTION_LABELS = {"mae": "MAE (pct points)", "bias": "bias B - A (pct points)", "pearson": "Pearson"}
QUESTION_LABELS |= {"spearman": "Spearman", "kendall": "Kendall", "ccc": "Lin's CCC"}
EXAM_LABELS = {"mae": "MAE (points)", "bias": "bias B - A (points)", "pearson": "Pearson"}
EXAM_LABELS |= {"spearman": "Spearman", "ccc": "Lin's CCC", "kappa_pass": "pass/fail kappa"}


def figure_text(f: dict | None, digits: int = 3) -> str:
    if not f or f.get("value") is None:
        return "n/a"
    text = f"{f['value']:.{digits}f}"
    if f.get("ci_low") is not None:
        text += f" [{f['ci_low']:.{digits}f}, {f['ci_high']:.{digits}f}]"
    return text


def _model(model: str | None) -> str:
    return "(no model named)" if model is None else model


def listed(title: str, rows: list[str]) -> list[str]:
    return ["", title, *rows] if rows else []


def with_notes(lines: list[str], notes: list[str]) -> str:
    return "\n".join(lines + listed("Notes", [f"  - {n}" for n in notes])) + "\n"


def render_text(report: dict) -> str:
    lines = ["Judge agreement (95% intervals resample whole exams)", ""]
    lines += [f"  {s['name']}: {s['judge']}  ({s['path']})" for s in report["sources"]]
    lines += [
        "",
        f"{report['n_pairs']} (model, question)s graded ok by both A and B, over {report['n_exams']} exams "
        f"({report['n_exam_results']} complete model-exam results); {report['left_out']} left out",
        *(f"  left out: {k}: {v}" for k, v in report["left_out_reasons"].items()),
        "",
    ]
    levels = (("Items", "item", ITEM_LABELS), ("Questions (% of max)", "question", QUESTION_LABELS))
    for title, level, labels in (*levels, ("Exams (out of 10, complete on both sides)", "exam", EXAM_LABELS)):
        lines.append(f"{title} (n={report[level]['n']})")
        lines += [f"  {label:<28} {figure_text(report[level][key])}" for key, label in labels.items()]
    ex = report["exam"]
    c = ex["confusion"]
    lines += [
        "",
        "Pass/fail (>= 6.00)     B pass   B fail",
        f"  A pass             {c['pass_pass']:>7}  {c['pass_fail']:>7}",
        f"  A fail             {c['fail_pass']:>7}  {c['fail_fail']:>7}",
        f"  flips: {ex['flips']}",
        *(f"    {_model(f['model'])} {f['exam_id']}: A {f['a']:.2f}, B {f['b']:.2f}" for f in ex["flipped"]),
    ]
    if report["models"]:
        lines += ["", f"{'Model':<34} {'exams':>5} {'mean A':>7} {'mean B':>7} {'pass A':>6} {'pass B':>6}"]
        lines += [
            f"{_model(m['model'])[:34]:<34} {m['exams']:>5} {m['mean_a']:>7.2f} {m['mean_b']:>7.2f} "
            f"{m['passed_a']:>6} {m['passed_b']:>6}"
            for m in report["models"]
        ]
        lines.append(f"  ranking Kendall tau: {figure_text(report['ranking_tau'])}")
    if report.get("pairwise"):
        lines += ["", "Pairwise exam-level agreement"]
        lines += [
            f"  {p['a']} vs {p['b']}: CCC {figure_text(p['ccc'])}, MAE {figure_text(p['mae'], 2)} (n={p['n_exam_results']})"
            for p in report["pairwise"]
        ]
        lines.append(
            f"  Krippendorff's alpha (interval, exam totals, all sources): {figure_text(report.get('alpha'))}"
        )
    for b in report.get("human_baseline", []):
        lines += [
            "",
            f"Human baseline: {' vs '.join(s['judge'] for s in b['sources'])}: {b['n_pairs']} pairs; question MAE "
            f"{figure_text(b['question']['mae'], 2)}, exam MAE {figure_text(b['exam']['mae'], 2)}, exam CCC "
            f"{figure_text(b['exam']['ccc'])}, item QWK {figure_text(b['item']['qwk'])}",
        ]
    lines += listed(
        "Largest disagreements (points)",
        [
            f"  {_model(d['model'])[:30]:<30} {d['question_id']:<45} A {d['a']:.2f}  B {d['b']:.2f}  / {d['max_score']:.2f}"
            for d in report["disagreements"]
        ],
    )
    return with_notes(lines, report["notes"])


def render_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
