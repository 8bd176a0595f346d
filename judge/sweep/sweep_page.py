"""The sweep's page: the decision, the picture of validity against dollars per model, the table.
`judge-sweep` writes it beside sweep.json as sweep.html (one file, no script); `oab-bench report`
shows a sweep given as an input (its sweep.json, or its folder) as a page of the audit report,
or alone when nothing else is given. The page is the audit report's (its templates and styles)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from oab_bench.conventions import SWEEP_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.folders import json_with_keys
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact
from oab_bench.judge.sweep.decide import SweepReport
from oab_bench.judge.sweep.sweep_table import HEADER, cells

SWEEP_KEYS = set(SweepReport.model_fields)


def sweep_view(
    report: SweepReport,
    *,
    why: dict[str, str] | None = None,
    scaled: str | None = None,
    name: str = "",
    anchor: str = "sweep",
) -> dict:
    """What the template shows (sweep_section.html.j2); `why` and `scaled` when the sweep has just run."""
    from oab_bench.judge.audit.write import data_url
    from oab_bench.judge.sweep.sweep_plot import sweep_png

    rows = []
    for n, (r, line) in enumerate(zip(report.judges, cells(report), strict=True), start=1):
        marks = [("reference", r.judge == report.reference), ("recommended", r.judge == report.recommended)]
        rows.append(
            {
                "n": n,
                "judge": r.judge,
                "cells": [r.judge, *line[1:]],  # the reference is a badge here, not a suffix
                "marks": [m for m, on in [*marks, ("failed", bool(r.failed))] if on],
            }
        )
    failed = {r.judge: r.failed for r in report.judges if r.failed}
    return {
        "anchor": anchor,
        "name": name,
        "header": HEADER,
        "rows": rows,
        "recommended": report.recommended,
        "rule": report.rule,
        "scaled": scaled,
        "plot": data_url(sweep_png(report)) if report.judges else None,
        "failed": [{"judge": j, "why": w} for j, w in failed.items()],
        "why": [{"judge": j, "why": w} for j, w in (why or {}).items() if j not in failed],
    }


def write_sweep_page(views: Sequence[dict], path: Path, title: str) -> Path:
    """One file: the sweeps' pages alone, keys redacted (a judge's spec may name its server)."""
    from oab_bench.judge.audit.write import environment

    html = environment().get_template("sweep.html.j2").render(title=title, sweeps=list(views))
    return write_atomic(Path(path), redact(html))


def sweep_file(path: Path) -> Path | None:
    """The sweep.json an input of `oab-bench report` names: the file itself, or a sweep folder's."""
    path = Path(path)
    if path.is_dir():
        path = path / SWEEP_FILE
    elif path.suffix != ".json":
        return None
    return path if json_with_keys(path, SWEEP_KEYS) else None


def read_sweep(path: Path) -> SweepReport:
    try:
        return SweepReport.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise SourceError(f"not a judge sweep's report: {err['msg']}", file=str(path), field=field) from None


def write_report_with_sweeps(inputs: Sequence[Path], output: Path, **report_options) -> Path:
    """`oab-bench report`: sweeps among the inputs are pages of the report (alone, when they are
    all there is); the rest is read as always (judge/audit/write.py)."""
    from oab_bench.judge.audit.write import write_report

    found = sorted((str(p), f) for p in inputs if (f := sweep_file(p)) is not None)  # any input order
    others = [p for p in inputs if sweep_file(p) is None]
    views = [
        sweep_view(read_sweep(f), name=name, anchor=f"sweep-{i}") for i, (name, f) in enumerate(found, 1)
    ]
    if others:
        return write_report(others, output, sweeps=views, **report_options)
    print("oab-bench report: only judge sweeps given: their pages alone", file=sys.stderr)
    return write_sweep_page(views, output, title="OAB-Bench: judge sweep")
