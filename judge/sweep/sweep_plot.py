"""The sweep as a picture: validity against dollars per model, one point per judge, numbered as in
the table; κ on exam pass/fail (the Pareto front joined) and exam-score CCC with the reference,
each with its 95% interval. A judge whose calls failed, or whose cost or figure is unknown, is
named in the key beside the axes, never placed."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")  # files only, no screen

import matplotlib.pyplot as plt

from oab_bench.judge.leaderboard.plot import png_bytes
from oab_bench.judge.sweep.decide import JudgeRow, SweepReport

AXES = (
    ("kappa_pass", "κ on exam pass/fail with the reference"),
    ("exam_ccc", "exam-score CCC with the reference"),
)
NOISE = re.compile(r",(api_base|price_[a-z_]+)=[^,|]*")  # settings that do not tell judges apart on a label


def label(n: int, judge: str, width: int = 44) -> str:
    """`n. judge`, short and safe for matplotlib (a `$` would start math text)."""
    short = NOISE.sub("", judge)
    short = short if len(short) <= width else short[: width - 1] + "…"
    return f"{n}. {short}".replace("$", r"\$")


def _point(row: JudgeRow, key: str, reference: bool) -> tuple[float, float, float] | None:
    """(value, low, high) on an axis: the reference agrees with itself (1, no interval)."""
    if reference:
        return 1.0, 1.0, 1.0
    fig = getattr(row.agreement, key, None)
    if fig is None or fig.value is None:
        return None
    low = fig.ci_low if fig.ci_low is not None else fig.value
    high = fig.ci_high if fig.ci_high is not None else fig.value
    return fig.value, low, high


def _apart(row: JudgeRow, reference: bool) -> str | None:
    if row.failed:
        return "failed"
    if row.cost_usd_per_model is None:
        return "cost unknown"
    if row.agreement is None and not reference:
        return "no agreement figures"
    return None


def _scale(ax, costs: list[float]) -> None:
    positive = [c for c in costs if c > 0]
    if len(positive) < len(costs):  # a judge at $0 (a GPU already paid for): log near zero, linear at it
        ax.set_xscale("symlog", linthresh=min(positive, default=1e-3))
    elif positive and max(positive) / min(positive) > 20:
        ax.set_xscale("log")


def figure(report: SweepReport):
    rows = list(enumerate(report.judges, start=1))
    fig, axes = plt.subplots(1, len(AXES), figsize=(16, max(5.0, 1.2 + 0.2 * len(rows))), squeeze=False)
    apart = {n: why for n, r in rows if (why := _apart(r, r.judge == report.reference))}
    undefined: dict[int, list[str]] = {}
    for ax, (key, title) in zip(axes[0], AXES, strict=True):
        front = []
        for n, r in rows:
            ref = r.judge == report.reference
            point = None if n in apart else _point(r, key, ref)
            if point is None:
                if n not in apart:
                    undefined.setdefault(n, []).append(key)
                continue
            y, low, high = point
            x = r.cost_usd_per_model
            good = ref or (r.probe is not None and r.probe.verdict == "discriminates")
            marker, color = ("*", "#10243e") if ref else ("o", "#1b7d3a") if good else ("X", "#b3261e")
            ax.errorbar(
                [x],
                [y],
                yerr=[[max(y - low, 0)], [max(high - y, 0)]],
                fmt=marker,
                color=color,
                ms=9,
                capsize=3,
            )
            if r.pareto:
                ax.plot([x], [y], "o", ms=15, mfc="none", mec="#5c6bc0", mew=1.5)
                front.append((x, y))
            ax.annotate(
                str(n), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9, fontweight="bold"
            )
        if key == "kappa_pass" and front:
            xs, ys = zip(*sorted(front), strict=True)
            ax.plot(xs, ys, "--", color="#5c6bc0", lw=1.2, label="Pareto front")
            ax.legend(loc="lower right", fontsize=8)
        _scale(ax, [r.cost_usd_per_model for n, r in rows if n not in apart])
        ax.set_xlabel("dollars per model, whole dataset (scaled from the questions judged)")
        ax.set_ylabel(title)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    notes = apart | {n: " and ".join(keys) + " undefined" for n, keys in undefined.items()}
    key = [label(n, r.judge) + (f"  (not placed: {notes[n]})" if n in notes else "") for n, r in rows]
    fig.text(0.755, 0.95, "\n".join(["judges (numbered as in the table)", *key]), fontsize=9, va="top")
    fig.tight_layout(rect=(0, 0, 0.75, 1))
    return fig


def sweep_png(report: SweepReport) -> bytes:
    return png_bytes(figure(report))
