"""The sweep's page (sweep.html, or a page of `oab-bench report`): the decision, validity per dollar."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from oab_bench.conventions import SWEEP_FILE
from oab_bench.dataset_builder.errors import SourceError
from oab_bench.judge.audit.write import data_url, environment, write_report
from oab_bench.judge.leaderboard.plot import plt, png_bytes
from oab_bench.judge.output import write_atomic
from oab_bench.judge.redact import redact
from oab_bench.judge.sweep.decide import HEADER, SweepReport, cells

AXES = (
    ("kappa_pass", "κ on exam pass/fail with the reference"),
    ("exam_ccc", "exam-score CCC with the reference"),
)
NOISE = re.compile(r",(api_base|price_[a-z_]+)=[^,|]*")  # settings that do not tell judges apart on a label


def figure(report: SweepReport):
    """One numbered point per judge per axis with its interval, the Pareto front joined."""
    rows = list(enumerate(report.judges, start=1))
    fig, axes = plt.subplots(1, len(AXES), figsize=(16, max(5.0, 1.2 + 0.2 * len(rows))), squeeze=False)
    apart, undefined = {}, defaultdict(list)
    for n, r in rows:
        ref = r.judge == report.reference
        why = "failed" if r.failed else "cost unknown" if r.cost_usd_per_model is None else None
        apart[n] = why or (None if ref or r.agreement else "no agreement figures")
    for ax, (key, title) in zip(axes[0], AXES, strict=True):
        front = []
        for n, r in rows:
            ref, f = r.judge == report.reference, getattr(r.agreement, key, None)
            if apart[n] or (not ref and (f is None or f.value is None)):
                undefined[n] += [] if apart[n] else [key]
                continue
            y, low, high = (1.0, 1.0, 1.0) if ref else (f.value, f.ci_low, f.ci_high)  # agrees with itself
            x, low, high = r.cost_usd_per_model, y if low is None else low, y if high is None else high
            good = ref or (r.probe is not None and r.probe.verdict == "discriminates")
            marker, color = ("*", "#10243e") if ref else ("o", "#1b7d3a") if good else ("X", "#b3261e")
            err = [[max(y - low, 0)], [max(high - y, 0)]]
            ax.errorbar([x], [y], yerr=err, fmt=marker, color=color, ms=9, capsize=3)
            if r.pareto:
                ax.plot([x], [y], "o", ms=15, mfc="none", mec="#5c6bc0", mew=1.5)
                front.append((x, y))
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9, weight="bold")
        if key == "kappa_pass" and front:
            ax.plot(*zip(*sorted(front), strict=True), "--", color="#5c6bc0", lw=1.2, label="Pareto front")
            ax.legend(loc="lower right", fontsize=8)
        costs = [r.cost_usd_per_model for n, r in rows if not apart[n]]
        positive = [c for c in costs if c > 0]
        if len(positive) < len(costs):  # a judge at $0 (a GPU already paid for): log near zero, linear at it
            ax.set_xscale("symlog", linthresh=min(positive, default=1e-3))
        elif positive and max(positive) / min(positive) > 20:
            ax.set_xscale("log")
        ax.set(xlabel="dollars per model, whole dataset (scaled from the questions judged)", ylabel=title)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    key = ["judges (numbered as in the table)"]
    for n, r in rows:
        label = NOISE.sub("", r.judge)
        label = f"{n}. {label if len(label) <= 44 else label[:43] + '…'}".replace("$", r"\$")  # no math text
        why = apart[n] or (" and ".join(undefined[n]) + " undefined" if undefined[n] else None)
        key.append(label + (f"  (not placed: {why})" if why else ""))
    fig.text(0.755, 0.95, "\n".join(key), fontsize=9, va="top")
    fig.tight_layout(rect=(0, 0, 0.75, 1))
    return fig


def sweep_view(report: SweepReport, *, why=None, scaled=None, name: str = "", anchor: str = "sweep") -> dict:
    """What the template shows (sweep_section.html.j2); `why` and `scaled` when the sweep has just run."""
    rows = []
    for n, (r, line) in enumerate(zip(report.judges, cells(report), strict=True), start=1):
        marks = {"reference": r.judge == report.reference, "recommended": r.judge == report.recommended}
        on = [m for m, yes in (marks | {"failed": r.failed}).items() if yes]
        rows.append({"n": n, "judge": r.judge, "cells": [r.judge, *line[1:]], "marks": on})
    failed = {r.judge: r.failed for r in report.judges if r.failed}
    return {
        "anchor": anchor,
        "name": name,
        "header": HEADER,
        "rows": rows,  # the reference is a badge here, not a suffix
        "recommended": report.recommended,
        "rule": report.rule,
        "scaled": scaled,
        "plot": data_url(png_bytes(figure(report))) if report.judges else None,
        "failed": [{"judge": j, "why": w} for j, w in failed.items()],
        "why": [{"judge": j, "why": w} for j, w in (why or {}).items() if j not in failed],
    }


def write_sweep_page(views: Sequence[dict], path: Path, title: str) -> Path:
    """One file: the sweeps' pages alone, keys redacted (a judge's spec may name its server)."""
    html = environment().get_template("sweep.html.j2").render(title=title, sweeps=list(views))
    return write_atomic(Path(path), redact(html))


def read_sweep(path: Path) -> SweepReport | None:
    """The sweep an input names (sweep.json or its folder); None when it is none."""
    path = Path(path) / SWEEP_FILE if Path(path).is_dir() else Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not set(SweepReport.model_fields) <= set(data):
        return None
    try:
        return SweepReport.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise SourceError(f"not a judge sweep's report: {err['msg']}", file=str(path), field=field) from None


def write_report_with_sweeps(inputs: Sequence[Path], output: Path, **report_options) -> Path:
    """`oab-bench report`: sweeps among the inputs are pages of the report (alone, if all there is)."""
    found = sorted((str(p), s) for p in inputs if (s := read_sweep(p)) is not None)  # any input order
    others = [p for p in inputs if str(p) not in dict(found)]
    views = [sweep_view(s, name=name, anchor=f"sweep-{i}") for i, (name, s) in enumerate(found, 1)]
    if others:
        return write_report(others, output, sweeps=views, **report_options)
    print("oab-bench report: only judge sweeps given: their pages alone", file=sys.stderr)
    return write_sweep_page(views, output, title="OAB-Bench: judge sweep")
