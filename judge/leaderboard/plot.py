"""The leaderboard as a picture per judge: mean exam score with its interval, and a model x area heatmap."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # files only, no screen

import matplotlib.pyplot as plt
import numpy as np

from oab_bench.dataset_builder.schema import PASS_MARK
from oab_bench.judge.leaderboard.tables import PANEL_MARK, Table, area_name, cents, marks, ordered_areas


def plot_png_bytes(tables: list[Table]) -> bytes:
    return png_bytes(figure(tables))


def png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=130)
    plt.close(fig)
    return buf.getvalue()


def figure(tables: list[Table]):
    size = (14, len(tables) * (2.2 + 0.55 * max((len(t.rows) for t in tables), default=1)))
    fig, axes = plt.subplots(
        len(tables), 2, figsize=size, squeeze=False, gridspec_kw={"width_ratios": [1, 1.3]}
    )
    for (bars, heat), table in zip(axes, tables, strict=True):
        rows = [r for r in table.rows if r.mean_exam_score is not None][::-1]  # best on top
        y, means = np.arange(len(rows)), np.array([r.mean_exam_score for r in rows])
        colors = ["#2e7d32" if m >= PASS_MARK else "#c62828" for m in means]
        for bar, r in zip(bars.barh(y, means, color=colors, alpha=0.85, height=0.6), rows, strict=True):
            if r.panel:  # published answers (--panel): lighter and hatched, the candidate stands out
                bar.set(alpha=0.45, hatch="//")
        lows = np.array([r.mean_exam_score if r.ci_low is None else r.ci_low for r in rows])
        highs = np.array([r.mean_exam_score if r.ci_high is None else r.ci_high for r in rows])
        # clipped: a mean of equal totals may land a float's width outside its interval (0.1 * 3 / 3)
        err = [np.clip(means - lows, 0, None), np.clip(highs - means, 0, None)]
        bars.errorbar(means, y, xerr=err, fmt="none", ecolor="black", capsize=4, lw=1.2)
        bars.axvline(PASS_MARK, color="black", ls="--", lw=1)
        at_bottom = bars.get_xaxis_transform()
        bars.text(PASS_MARK + 0.08, 0.02, "pass mark (6.00)", transform=at_bottom, fontsize=8, rotation=90)
        bars.set_yticks(y, [f"{r.model}{marks(r)} ({r.passed}/{r.exams})" for r in rows], fontsize=9)
        for yi, m in zip(y, means, strict=True):
            bars.text(0.1, yi, cents(m), va="center", color="white", fontsize=8, fontweight="bold")
        bars.set(xlim=(0, 10), xlabel="mean exam score (0-10), 95% interval; (exams passed/exams)")
        bars.set_title(f"Judge: {table.judge}", fontsize=10, loc="left")

        areas = ordered_areas(a for r in table.rows for a in r.per_area)
        models = [r for r in table.rows if r.per_area][::-1]
        if models:
            grid = np.array([[r.per_area.get(a, np.nan) for a in areas] for r in models])
            im = heat.imshow(
                np.ma.masked_invalid(grid), cmap="RdYlGn", vmin=0, vmax=10, aspect="auto", origin="lower"
            )
            heat.set_xticks(range(len(areas)), map(area_name, areas), rotation=30, ha="right", fontsize=9)
            names = [r.model + f" {PANEL_MARK}" * bool(r.panel) for r in models]
            heat.set_yticks(range(len(models)), names, fontsize=9)
            for (i, j), v in np.ndenumerate(grid):
                if not np.isnan(v):
                    heat.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8)
            fig.colorbar(im, ax=heat, fraction=0.04, pad=0.02, label="mean exam score")
        heat.set_title("Mean exam score by area", fontsize=10, loc="left")
    fig.tight_layout()
    return fig
