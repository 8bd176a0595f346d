"""Agreement figures with 95% intervals that resample whole exams.

Each figure is a statistic of paired columns (numpy arrays, one row per unit: item, question or
exam result) computed by a library (numpy, scipy, scikit-learn, krippendorff); Lin's CCC has no
library function, so it is the textbook formula on numpy moments. The interval is a seeded
percentile bootstrap over exams (a cluster bootstrap: every unit of a drawn exam comes along), so
units of one exam are never treated as independent. Resamples where a statistic is undefined
(e.g. every drawn exam a pass) are dropped; when more than half are, there is no interval.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel
from scipy import stats

from oab_bench.dataset_builder.schema import PASS_MARK
from oab_bench.judge.intervals import (
    AGREEMENT_RESAMPLES,
    DEFAULT_SEED,
    Columns,
    Stat,
    bootstrap_interval,
    quiet,
)

DEFAULT_RESAMPLES = AGREEMENT_RESAMPLES
MIN_RANKED = 3  # models a ranking_tau needs: with two, tau is +1 or -1, a coin's toss, not evidence


class Figure(BaseModel):
    value: float | None
    ci_low: float | None
    ci_high: float | None


NULL = Figure(value=None, ci_low=None, ci_high=None)


# --- statistics of paired columns a, b ------------------------------------------------------


def exact(c: Columns) -> float:
    return float(np.mean(np.isclose(c["a"], c["b"], atol=1e-6)))


def mae(c: Columns) -> float:
    return float(np.mean(np.abs(c["b"] - c["a"])))


def bias(c: Columns) -> float:
    return float(np.mean(c["b"] - c["a"]))


def pearson(c: Columns) -> float:
    return stats.pearsonr(c["a"], c["b"]).statistic


def spearman(c: Columns) -> float:
    return stats.spearmanr(c["a"], c["b"]).statistic


def kendall(c: Columns) -> float:
    return stats.kendalltau(c["a"], c["b"]).statistic


def ccc(c: Columns) -> float:
    """Lin's concordance: agreement with the identity line (a shift or a scale lowers it, unlike Pearson)."""
    a, b = c["a"], c["b"]
    if np.ptp(a) == 0 or np.ptp(b) == 0:  # a constant side: no concordance to speak of (null, as Pearson)
        return math.nan
    denominator = a.var() + b.var() + (a.mean() - b.mean()) ** 2
    return 2 * np.mean((a - a.mean()) * (b - b.mean())) / denominator


def qwk(c: Columns) -> float:
    """Quadratic-weighted kappa; categories: the grid positions (`ga`, `gb`) of the item scores."""
    from sklearn.metrics import cohen_kappa_score

    return cohen_kappa_score(c["ga"], c["gb"], labels=c["labels"], weights="quadratic")


def kappa_pass(c: Columns) -> float:
    from sklearn.metrics import cohen_kappa_score

    return cohen_kappa_score(c["a"] >= PASS_MARK, c["b"] >= PASS_MARK, labels=[False, True])


def ranking_tau(c: Columns) -> float:
    """Kendall tau between the models' mean exam scores under A and under B."""
    models = c["model"]
    present = np.unique(models)
    if present.size < MIN_RANKED:
        return math.nan
    count = np.bincount(models)[present]
    mean_a = np.bincount(models, weights=c["a"])[present] / count
    mean_b = np.bincount(models, weights=c["b"])[present] / count
    return stats.kendalltau(mean_a, mean_b).statistic


def alpha(c: Columns) -> float:
    """Krippendorff's alpha (interval) over the units' rows; NaN marks a source that lacks a unit."""
    import krippendorff

    m = c["matrix"]
    if np.sum(np.isfinite(m).sum(axis=1) >= 2) < 2:
        return math.nan
    return krippendorff.alpha(reliability_data=m.T, level_of_measurement="interval")


NEEDS_VARIANCE = {pearson, spearman, kendall}
ONE_IS_ENOUGH = {exact, mae, bias}  # the others compare two values or more (n = 1 is never 0 or 1)


# --- the figure: value, interval, and why not ------------------------------------------------


def _why_undefined(stat: Stat, cols: Columns) -> str:
    n = len(cols["exam"])
    if n < 2:
        return f"{n} value{'s' if n != 1 else ''}: too few"
    if stat in NEEDS_VARIANCE or stat is ccc:
        flat = [side for side in ("a", "b") if np.ptp(cols[side]) == 0]
        if flat:
            return f"side {' and '.join(s.upper() for s in flat)} is constant"
    if stat is kappa_pass:
        return "every exam has the same verdict on both sides (kappa is 0/0)"
    if stat is ranking_tau:
        return "the models' mean exam scores tie on one side"
    if stat is qwk:
        return "every item score is the same category on both sides (kappa is 0/0)"
    return "undefined on these data"


def figure(
    name: str,
    stat: Stat,
    cols: Columns,
    notes: list[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Figure:
    """`stat` on `cols` with its interval; null (and a note saying why) where it cannot be computed."""
    n = len(cols["exam"])
    value = quiet(stat, cols) if n >= (1 if stat in ONE_IS_ENOUGH else 2) else math.nan
    if not math.isfinite(value):
        notes.append(f"{name}: null: {_why_undefined(stat, cols)}")
        return NULL
    low, high, why = bootstrap_interval(stat, cols, resamples=resamples, seed=seed)
    if why:
        notes.append(f"{name}: {why}")
    return Figure(value=value, ci_low=low, ci_high=high)


def columns(rows: list[dict], *names: str) -> Columns:
    """Columns of `rows` as arrays; `exam` (the resampling unit) and `model` become integer codes."""
    out: Columns = {}
    for name in names:
        values = [r[name] for r in rows]
        if name in ("exam", "model"):
            _, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
            out[name] = codes.astype(int)
        else:
            out[name] = np.asarray(values, dtype=float)
    return out
