"""Run-to-run noise of a judge (`agreement --repeats RUN`, a run judged with `--repeats K`): per-question
SD, exams whose verdict changes between repeats, Krippendorff's alpha across repeats."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from oab_bench.conventions import JUDGMENTS_FILE
from oab_bench.dataset_builder.schema import PASS_MARK, QuestionRow
from oab_bench.judge.results_layout import open_shared
from oab_bench.judge.validity import stats
from oab_bench.judge.validity.agreement import alpha_over, exam_totals, figure_text, listed, with_notes
from oab_bench.judge.validity.sources import Source, nested_graded, one_record_each, read_nested_lines


def read_repeated(path: Path, dataset: dict[str, QuestionRow] | None = None) -> list[dict]:
    """The records of a repeated run (a judgments file, or the judgments file of a `run` folder),
    one per (model, question); with the dataset, each checked against its question's rubric."""
    if path.is_dir() and open_shared(path) is None:
        ours = path / JUDGMENTS_FILE
        found = [ours] if ours.is_file() else sorted(path.glob("*judgments*.jsonl"))
        if len(found) != 1:
            names = ", ".join(p.name for p in found) or "none"
            raise ValueError(
                f"{path}: not one judgments file (*judgments*.jsonl) in this folder ({names}): give the file"
            )
        path = found[0]
    records = one_record_each(read_nested_lines(path, "repeats", dataset), path)
    if not records:
        raise ValueError(f"{path}: no repeated judgments in it (judge with --repeats K, K >= 2)")
    return records


def repeats_report(records: list[dict], *, dataset: dict[str, QuestionRow] | None = None, **boot) -> dict:
    """With the dataset, only records agreeing with it on exam and value count, and an exam needs its
    every question; without, its questions adding up to 10 points. `boot`: resamples, seed."""
    notes: list[str] = []
    dataset = dataset or {}
    if dataset:
        kept = [
            r
            for r in records
            if (row := dataset.get(r["question_id"]))
            and r["exam_id"] == row.exam_id
            and abs(r["max_score"] - row.max_score) < 1e-6
        ]
        if len(kept) < len(records):
            notes.append(
                f"{len(records) - len(kept)} (model, question)s not in --dataset, or disagreeing with it on "
                "the exam or the value: left out"
            )
        records = kept
    by_repeat = nested_graded(records, "repeats", lambda r, m: m["repeat"])
    sources = [
        Source(name=f"R{k}", path="repeat", judge=f"repeat {k}", graded=g) for k, g in by_repeat.items()
    ]
    k = len(sources)
    per_question, question_rows = [], []
    for r in records:
        scores = [m["score"] for m in r["repeats"] if m["status"] == "ok"]
        if len(scores) >= 2:
            sd = float(np.std(scores, ddof=1))
            per_question.append(
                {f: r[f] for f in ("model", "question_id", "max_score")} | {"scores": scores, "sd": sd}
            )
            question_rows.append({"exam": r["exam_id"], "pct": [100 * s / r["max_score"] for s in scores]})
    exams = {key: t for key, t in exam_totals(sources, dataset).items() if not np.isnan(t).any()}
    statuses = Counter(m["status"] for r in records for m in r["repeats"])
    if failed := {status: n for status, n in sorted(statuses.items()) if status != "ok"}:
        notes.append(
            f"{sum(failed.values())} of {statuses.total()} repeat gradings failed ("
            + ", ".join(f"{status} {n}" for status, n in failed.items())
            + "): a question's SD needs 2 ok repeats, an exam's figures every repeat of every question ok"
        )
    if len(exams) < (n_exams := len({(r["model"], r["exam_id"]) for r in records})):
        notes.append(
            f"{n_exams - len(exams)} of {n_exams} (model, exam)s left out of the exam figures "
            "(a failed repeat, or a question without repeats)"
        )
    changed = [
        {"model": m, "exam_id": e, "totals": t}
        for (m, e), t in exams.items()
        if len({x >= PASS_MARK for x in t}) > 1
    ]
    sds = [q["sd"] for q in per_question]
    exam_sds = [np.std(t, ddof=1) for t in exams.values()] if k > 1 else []
    question_cols = stats.columns(question_rows, "exam")
    padded = [q["pct"] + [np.nan] * (k - len(q["pct"])) for q in question_rows]
    question_cols["matrix"] = np.asarray(padded, dtype=float).reshape(len(padded), k)
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
        "exam_sd_mean": float(np.mean(exam_sds)) if exam_sds else None,
        "verdict_changes": {
            "share": len(changed) / len(exams) if exams else None,
            "count": len(changed),
            "exams": changed,
        },
        "alpha": alpha_over(sources, dataset, notes, **boot),
        "alpha_question": stats.figure("alpha_question", question_cols, notes, "alpha", **boot),
        "notes": notes,
    }


def render_repeats(report: dict) -> str:
    sd, vc = report["question_sd"], report["verdict_changes"]

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        f"Run-to-run noise: {report['repeats']} repeats, {report['n_questions']} (model, question)s graded ok "
        f"at least twice, {report['n_exam_results']} (model, exam)s complete in every repeat",
        "",
        f"  per-question SD (points): mean {num(sd['mean'])}, max {num(sd['max'])}",
        f"  exam total SD (points): mean {num(report['exam_sd_mean'])}",
        f"  exams whose verdict changes between repeats: {vc['count']} of {report['n_exam_results']}"
        + (f" ({vc['share']:.0%})" if vc["share"] is not None else ""),
        f"  Krippendorff's alpha across repeats, exam totals: {figure_text(report['alpha'])}",
        f"  Krippendorff's alpha across repeats, question scores (% of max): {figure_text(report['alpha_question'])}",
        *(
            f"    {c['model']} {c['exam_id']}: {', '.join(f'{t:.2f}' for t in c['totals'])}"
            for c in vc["exams"]
        ),
    ]
    lines += listed(
        "Noisiest questions (points per repeat)",
        [
            f"  {q['model'][:30]:<30} {q['question_id']:<45} SD {q['sd']:.3f}: {', '.join(f'{s:.2f}' for s in q['scores'])}"
            for q in sd["noisiest"]
        ],
    )
    return with_notes(lines, report["notes"])
