"""Run-to-run noise of a judge: a run made with `--repeats K`, each answer graded K times.

`oab-bench agreement --repeats RUN` reports the per-question standard deviation, the share of
exams whose verdict changes between repeats and Krippendorff's alpha across repeats. The
leaderboard scores a repeated run by the mean of its repeats, and its interval resamples exams
and, within each drawn exam, one of its K gradings: the interval carries the judge's noise as
well as the exams' sampling.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from oab_bench.conventions import JUDGMENTS_FILE
from oab_bench.dataset_builder.schema import EXAM_MAX, PASS_MARK, QuestionRow, money
from oab_bench.judge.results_source import open_shared
from oab_bench.judge.validity import stats
from oab_bench.judge.validity.agreement import alpha_over
from oab_bench.judge.validity.agreement_text import figure_text, listed, with_notes
from oab_bench.judge.validity.nested import agreeing_row, read_nested
from oab_bench.judge.validity.sources import Graded, Source


def repeat_sources(records: list[dict]) -> list[Source]:
    """One source per repeat, from the records' `repeats`."""
    graded: dict[int, dict] = defaultdict(dict)
    for r in records:
        for m in r.get("repeats") or []:
            graded[m["repeat"]][(r["model"], r["question_id"])] = Graded.of_member(r, m)
    return [
        Source(name=f"R{k}", path="repeat", judge=f"repeat {k}", graded=graded[k]) for k in sorted(graded)
    ]


def read_repeated(path: Path, dataset: dict[str, QuestionRow] | None = None) -> list[dict]:
    """The records of a repeated run (a judgments file, or the judgments file of a `run` folder);
    with the dataset, each checked against its question's rubric as `agreement` checks a source."""
    path = Path(path)
    if path.is_dir() and open_shared(path) is None:
        found = sorted(path.glob("*judgments*.jsonl"))
        if (path / JUDGMENTS_FILE).is_file():  # what `oab-bench run` writes
            found = [path / JUDGMENTS_FILE]
        if len(found) != 1:
            names = ", ".join(p.name for p in found) or "none"
            raise ValueError(
                f"{path}: not one judgments file (*judgments*.jsonl) in this folder ({names}): give the file"
            )
        path = found[0]
    records = read_nested(path, "repeats", rows=dataset)
    if not records:
        raise ValueError(f"{path}: no repeated judgments in it (judge with --repeats K, K >= 2)")
    return records


def repeats_report(
    records: list[dict], *, resamples: int, seed: int, dataset: dict[str, QuestionRow] | None = None
) -> dict:
    """With the dataset (`--dataset`): only records of its questions that agree with it on exam and
    value count, and an exam is complete when every one of its questions is there; without, an
    exam is complete when its questions add up to the exam's 10 points."""
    notes: list[str] = []
    dataset = dataset or {}
    if dataset:
        kept = [r for r in records if agreeing_row(r, dataset) is not None]
        if len(kept) < len(records):
            notes.append(
                f"{len(records) - len(kept)} (model, question)s not in --dataset, or disagreeing with it on "
                "the exam or the value: left out"
            )
        records = kept
    sources = repeat_sources(records)
    k = len(sources)
    per_question = []
    for r in records:
        scores = [m["score"] for m in r["repeats"] if m["status"] == "ok"]
        if len(scores) >= 2:
            per_question.append(
                {
                    "model": r["model"],
                    "question_id": r["question_id"],
                    "max_score": r["max_score"],
                    "scores": scores,
                    "sd": float(np.std(scores, ddof=1)),
                }
            )
    exams: dict[tuple[str, str], list[float | None]] = {}
    by_exam: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        by_exam[(r["model"], r["exam_id"])].append(r)
    expected: dict[str, set[str]] = defaultdict(set)
    for row in dataset.values():
        expected[row.exam_id].add(row.question_id)
    for key, rs in sorted(by_exam.items()):
        if dataset and {r["question_id"] for r in rs} != expected[key[1]]:
            continue
        if abs(money(sum(r["max_score"] for r in rs)) - EXAM_MAX) > 1e-6:
            continue
        totals = []
        for rep in range(k):
            got = [next((m for m in r["repeats"] if m["repeat"] == rep), None) for r in rs]
            ok = all(m is not None and m["status"] == "ok" for m in got)
            totals.append(money(sum(m["score"] for m in got)) if ok else None)
        if all(t is not None for t in totals):
            exams[key] = totals
    statuses = Counter(m["status"] for r in records for m in r["repeats"])
    failed = sum(v for status, v in statuses.items() if status != "ok")
    if failed:
        notes.append(
            f"{failed} of {statuses.total()} repeat gradings failed ("
            + ", ".join(f"{status} {v}" for status, v in sorted(statuses.items()) if status != "ok")
            + "): a question's SD needs 2 ok repeats, an exam's figures every repeat of every question ok"
        )
    if len(exams) < len(by_exam):
        notes.append(
            f"{len(by_exam) - len(exams)} of {len(by_exam)} (model, exam)s left out of the exam figures "
            "(a failed repeat, or a question without repeats)"
        )
    changed = [
        {"model": m, "exam_id": e, "totals": t}
        for (m, e), t in exams.items()
        if len({x >= PASS_MARK for x in t}) > 1
    ]
    sds = [q["sd"] for q in per_question]
    question_cols = {
        "exam": stats.columns([{"exam": q["question_id"].rsplit("_", 2)[0]} for q in per_question], "exam")[
            "exam"
        ]
        if per_question
        else np.zeros(0, dtype=int),
        "matrix": np.asarray(
            [
                [100 * s / q["max_score"] for s in q["scores"]] + [np.nan] * (k - len(q["scores"]))
                for q in per_question
            ],
            dtype=float,
        ).reshape(len(per_question), k),
    }
    return {
        "repeats": k,
        "n_questions": len(per_question),
        "n_exam_results": len(exams),
        "repeat_statuses": dict(sorted(statuses.items())),
        "question_sd": {
            "mean": float(np.mean(sds)) if sds else None,
            "max": float(np.max(sds)) if sds else None,
            "noisiest": sorted(per_question, key=lambda q: (-q["sd"], q["model"], q["question_id"]))[:10],
        },
        "exam_sd_mean": float(np.mean([np.std(t, ddof=1) for t in exams.values()]))
        if exams and k > 1
        else None,
        "verdict_changes": {
            "share": len(changed) / len(exams) if exams else None,
            "count": len(changed),
            "exams": changed,
        },
        "alpha": alpha_over(sources, dataset, notes, resamples=resamples, seed=seed),
        "alpha_question": stats.figure(
            "alpha_question", stats.alpha, question_cols, notes, resamples=resamples, seed=seed
        ).model_dump(),
        "notes": notes,
    }


def render_repeats(report: dict) -> str:
    sd, vc = report["question_sd"], report["verdict_changes"]
    lines = [
        f"Run-to-run noise: {report['repeats']} repeats, {report['n_questions']} (model, question)s graded ok "
        f"at least twice, {report['n_exam_results']} (model, exam)s complete in every repeat",
        "",
        f"  per-question SD (points): mean {_num(sd['mean'])}, max {_num(sd['max'])}",
        f"  exam total SD (points): mean {_num(report['exam_sd_mean'])}",
        f"  exams whose verdict changes between repeats: {vc['count']} of {report['n_exam_results']}"
        + (f" ({vc['share']:.0%})" if vc["share"] is not None else ""),
        f"  Krippendorff's alpha across repeats, exam totals: {figure_text(report['alpha'])}",
        f"  Krippendorff's alpha across repeats, question scores (% of max): {figure_text(report['alpha_question'])}",
    ]
    lines += [
        f"    {c['model']} {c['exam_id']}: {', '.join(f'{t:.2f}' for t in c['totals'])}" for c in vc["exams"]
    ]
    lines += listed(
        "Noisiest questions (points per repeat)",
        [
            f"  {q['model'][:30]:<30} {q['question_id']:<45} SD {q['sd']:.3f}: {', '.join(f'{s:.2f}' for s in q['scores'])}"
            for q in sd["noisiest"]
        ],
    )
    return with_notes(lines, report["notes"])


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
