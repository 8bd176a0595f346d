"""The agreement report as text (a short report to read) or JSON (the contract's keys)."""

from __future__ import annotations

import json


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


def _block(title: str, figures: dict, names: list[tuple[str, str]], digits: int = 3) -> list[str]:
    out = [f"{title} (n={figures.get('n', 0)})"]
    out += [f"  {label:<28} {figure_text(figures.get(key), digits)}" for key, label in names]
    return out


def render_text(report: dict) -> str:
    src = report["sources"]
    lines = ["Judge agreement (95% intervals resample whole exams)", ""]
    lines += [f"  {s['name']}: {s['judge']}  ({s['path']})" for s in src]
    lines += [
        "",
        f"{report['n_pairs']} (model, question)s graded ok by both A and B, over {report['n_exams']} exams "
        f"({report.get('n_exam_results', 0)} complete model-exam results); {report['left_out']} left out",
    ]
    lines += [f"  left out: {k}: {v}" for k, v in report["left_out_reasons"].items()]
    lines.append("")
    lines += _block(
        "Items",
        report["item"],
        [("exact", "exact agreement"), ("mae", "MAE (points)"), ("qwk", "quadratic-weighted kappa")],
    )
    lines += _block(
        "Questions (% of max)",
        report["question"],
        [
            ("mae", "MAE (pct points)"),
            ("bias", "bias B - A (pct points)"),
            ("pearson", "Pearson"),
            ("spearman", "Spearman"),
            ("kendall", "Kendall"),
            ("ccc", "Lin's CCC"),
        ],
    )
    ex = report["exam"]
    lines += _block(
        "Exams (out of 10, complete on both sides)",
        ex,
        [
            ("mae", "MAE (points)"),
            ("bias", "bias B - A (points)"),
            ("pearson", "Pearson"),
            ("spearman", "Spearman"),
            ("ccc", "Lin's CCC"),
            ("kappa_pass", "pass/fail kappa"),
        ],
    )
    c = ex["confusion"]
    lines += [
        "",
        "Pass/fail (>= 6.00)     B pass   B fail",
        f"  A pass             {c['pass_pass']:>7}  {c['pass_fail']:>7}",
        f"  A fail             {c['fail_pass']:>7}  {c['fail_fail']:>7}",
        f"  flips: {ex['flips']}"
        + "".join(
            f"\n    {_model(f['model'])} {f['exam_id']}: A {f['a']:.2f}, B {f['b']:.2f}"
            for f in ex["flipped"]
        ),
    ]
    if report["models"]:
        lines += ["", f"{'Model':<34} {'exams':>5} {'mean A':>7} {'mean B':>7} {'pass A':>6} {'pass B':>6}"]
        for m in report["models"]:
            lines.append(
                f"{_model(m['model'])[:34]:<34} {m['exams']:>5} {m['mean_a']:>7.2f} {m['mean_b']:>7.2f} "
                f"{m['passed_a']:>6} {m['passed_b']:>6}"
            )
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
        names = " vs ".join(s["judge"] for s in b["sources"])
        lines += [
            "",
            f"Human baseline: {names}: {b['n_pairs']} pairs; question MAE {figure_text(b['question']['mae'], 2)}, "
            f"exam MAE {figure_text(b['exam']['mae'], 2)}, exam CCC {figure_text(b['exam']['ccc'])}, "
            f"item QWK {figure_text(b['item']['qwk'])}",
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
