"""The agreement report as text (a short report to read) or JSON (the contract's keys)."""

from __future__ import annotations

import json

ITEM_LABELS = {"exact": "exact agreement", "mae": "MAE (points)", "qwk": "quadratic-weighted kappa"}
QUESTION_LABELS = {"mae": "MAE (pct points)", "bias": "bias B - A (pct points)", "pearson": "Pearson"}
QUESTION_LABELS |= {"spearman": "Spearman", "kendall": "Kendall", "ccc": "Lin's CCC"}
EXAM_LABELS = {"mae": "MAE (points)", "bias": "bias B - A (points)", "pearson": "Pearson"}
EXAM_LABELS |= {"spearman": "Spearman", "ccc": "Lin's CCC", "kappa_pass": "pass/fail kappa"}


def figure_text(f: dict | None, digits: int = 3) -> str:
    """A figure with its 95% interval, as every validity report prints it ("n/a" when unknown)."""
    if not f or f.get("value") is None:
        return "n/a"
    text = f"{f['value']:.{digits}f}"
    if f.get("ci_low") is not None:
        text += f" [{f['ci_low']:.{digits}f}, {f['ci_high']:.{digits}f}]"
    return text


def _model(model: str | None) -> str:
    return "(no model named)" if model is None else model


def listed(title: str, rows: list[str]) -> list[str]:
    """A titled list after a blank line; nothing when it has no rows."""
    return ["", title, *rows] if rows else []


def with_notes(lines: list[str], notes: list[str]) -> str:
    """A text report: its lines, then its notes (if any)."""
    return "\n".join(lines + listed("Notes", [f"  - {n}" for n in notes])) + "\n"


def render_text(report: dict) -> str:
    lines = ["Judge agreement (95% intervals resample whole exams)", ""]
    lines += [f"  {s['name']}: {s['judge']}  ({s['path']})" for s in report["sources"]]
    lines += [
        "",
        f"{report['n_pairs']} (model, question)s graded ok by both A and B, over {report['n_exams']} exams "
        f"({report['n_exam_results']} complete model-exam results); {report['left_out']} left out",
        *(f"  left out: {k}: {v}" for k, v in report["left_out_reasons"].items()),
    ]
    lines.append("")
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
