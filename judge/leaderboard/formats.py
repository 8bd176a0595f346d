"""Leaderboard tables as markdown (upstream's columns), CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

from oab_bench.dataset_builder.ids import AREAS
from oab_bench.judge.leaderboard.tables import Comparison, Table


def points(x: float, sign: bool = False) -> str:
    """A score to the cent as a person rounds it: its decimal value, halves up (9.075 -> 9.08).
    Binary floats round 9.075 (stored as 9.07499...) down; a mean of cents is often such a half."""
    value = Decimal(f"{x:.9f}").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) + 0  # + 0: no "-0.00"
    return f"{value:+}" if sign else f"{value}"


def _f(x: float | None, sign: bool = False) -> str:
    return "n/a" if x is None else points(x, sign)


def area_name(slug: str) -> str:
    """The area as the exam names it (Portuguese), in tables and plots alike."""
    return AREAS.get(slug, slug)


def ordered_areas(slugs) -> list[str]:
    """Areas in one order everywhere (tables, plots): that of `AREAS` (upstream's), unknown ones last."""
    known = list(AREAS)
    return sorted(set(slugs), key=lambda a: (known.index(a) if a in known else len(known), a))


def _cell(text: str) -> str:
    """A name from the inputs as one markdown table cell: its pipes escaped, its line breaks spaces."""
    return " ".join(text.split("\n")).replace("\r", " ").replace("|", "\\|")


def render_markdown(tables: list[Table], notes: list[str], *, by: str | None = None) -> str:
    out = []
    for t in tables:
        out += [f"### Judge: {_cell(t.judge)}", ""]
        out += [
            "| Model | Average Score | Passing Rate | Best Area | 95% CI | Coverage |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in t.rows:
            mark = " *" if not r.complete else ""
            mark += " †" if r.same_family_as_judge else ""
            mark += f" {PANEL_MARK}" if r.panel else ""
            rate = f"{r.passed / r.exams:.0%} ({r.passed}/{r.exams})" if r.exams else "n/a (0 exams)"
            best = f"{area_name(r.best_area)} ({points(r.per_area[r.best_area])})" if r.best_area else "n/a"
            ci = f"{_f(r.ci_low)}–{_f(r.ci_high)}" if r.ci_low is not None else "n/a"
            out.append(
                f"| {_cell(r.model)}{mark} | {_f(r.mean_exam_score)} | {rate} | {best} | {ci} | {r.coverage:.0%} |"
            )
        if by:
            seen = {k for r in t.rows for k in (r.per_area if by == "area" else r.per_edition)}
            keys = ordered_areas(seen) if by == "area" else sorted(seen, key=lambda k: (len(k), k))
            names = [area_name(k) if by == "area" else f"Exame {k}" for k in keys]
            out += ["", "| Model | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(keys)]
            for r in t.rows:
                values = r.per_area if by == "area" else r.per_edition
                name = _cell(r.model) + (f" {PANEL_MARK}" if r.panel else "")
                out.append(f"| {name} | " + " | ".join(_f(values.get(k)) for k in keys) + " |")
        out.append("")
    legend = ["Average Score: mean exam total (0-10) over complete exams; Passing Rate: exams >= 6.00."]
    if any(not r.complete for t in tables for r in t.rows):
        legend.append("* incomplete coverage: exam figures use complete exams only.")
    if any(r.same_family_as_judge for t in tables for r in t.rows):
        legend.append("† graded by a judge of the same model family.")
    legend += panel_legend(tables)
    out += legend + [f"Note: {n}" for n in notes]
    return "\n".join(out) + "\n"


JSON_KEYS = [
    "model",
    "judge",
    "exams",
    "passed",
    "mean_exam_score",
    "ci_low",
    "ci_high",
    "coverage",
    "per_area",
    "per_edition",
    "best_area",
]


PANEL_MARK = "(panel)"


def panel_legend(tables: list[Table]) -> list[str]:
    """One line per panel source: which rows are published answers, and where they came from."""
    sources = sorted({r.panel for t in tables for r in t.rows if r.panel})
    return [
        f"{PANEL_MARK} published answers ({source}), judged here by the same judge with the same settings."
        for source in sources
    ]


def render_json(tables: list[Table], notes: list[str]) -> str:
    rows = [
        r.model_dump(include=set(JSON_KEYS) | {"complete", "same_family_as_judge"})
        | {"panel": r.panel is not None, "panel_source": r.panel}
        for t in tables
        for r in t.rows
    ]
    return json.dumps({"rows": rows, "notes": notes}, indent=2, ensure_ascii=False) + "\n"


def render_csv(tables: list[Table]) -> str:
    rows = [r for t in tables for r in t.rows]
    areas = sorted({a for r in rows for a in r.per_area})
    editions = sorted({e for r in rows for e in r.per_edition}, key=int)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [k for k in JSON_KEYS if k not in ("per_area", "per_edition")]
        + ["complete", "same_family_as_judge", "panel", "panel_source"]
        + [f"area_{a}" for a in areas]
        + [f"edition_{e}" for e in editions]
    )
    for r in rows:
        w.writerow(
            [
                r.model,
                r.judge,
                r.exams,
                r.passed,
                r.mean_exam_score,
                r.ci_low,
                r.ci_high,
                r.coverage,
                r.best_area,
                r.complete,
                r.same_family_as_judge,
                r.panel is not None,
                r.panel or "",
            ]
            + [r.per_area.get(a) for a in areas]
            + [r.per_edition.get(e) for e in editions]
        )
    return buf.getvalue()


def render_comparisons(comparisons: list[Comparison]) -> str:
    out = []
    for c in comparisons:
        ci = f"[{_f(c.ci_low)}, {_f(c.ci_high)}]" if c.ci_low is not None else "n/a"
        out.append(
            f"judge {c.judge}: {c.model_a} - {c.model_b} = {_f(c.mean_difference, sign=True)} exam points over {c.exams} exams "
            f"both completed (95% paired bootstrap CI {ci}); {c.model_a} passed {c.a_passed_b_failed} that "
            f"{c.model_b} failed, {c.model_b} passed {c.b_passed_a_failed} that {c.model_a} failed"
        )
    return "\n".join(out) + "\n"
