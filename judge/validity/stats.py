"""Agreement statistics of paired columns (`a`, `b`), each a library's but Lin's CCC, with the 95%
interval of judge/intervals.py (whole exams resampled); null, with a note saying why, where undefined."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel
from scipy import stats

from oab_bench.dataset_builder.schema import PASS_MARK
from oab_bench.judge.intervals import AGREEMENT_RESAMPLES, DEFAULT_SEED, Columns, bootstrap_interval, quiet

MIN_RANKED = 3  # models a ranking_tau needs: with two, tau is +1 or -1, a coin's toss, not evidence


class Figure(BaseModel):
    value: float | None
    ci_low: float | None
    ci_high: float | None


NULL = Figure(value=None, ci_low=None, ci_high=None)


def _kappa(a, b, labels, weights: str | None = None) -> float:
    """Cohen's kappa (unweighted or "quadratic"): sklearn's `cohen_kappa_score` to 1e-12
    (tests/test_agreement.py checks), in numpy: the bootstrap computes it thousands of times, where
    sklearn's input checks cost ~1 ms a call (docs/performance.md). `labels` sorted, holding every value."""
    labels = np.asarray(labels)
    k = labels.size
    seen = np.bincount(np.searchsorted(labels, a) * k + np.searchsorted(labels, b), minlength=k * k)
    observed = seen.reshape(k, k)
    expected = np.outer(observed.sum(axis=0), observed.sum(axis=1)) / observed.sum()
    d = np.subtract.outer(np.arange(k), np.arange(k))
    w = d**2 if weights == "quadratic" else (d != 0).astype(int)
    return 1 - np.sum(w * observed) / np.sum(w * expected)


def _ccc(c: Columns) -> float:
    """Lin's concordance: agreement with the identity line (a shift or a scale lowers it, unlike Pearson)."""
    a, b = c["a"], c["b"]
    if np.ptp(a) == 0 or np.ptp(b) == 0:  # a constant side: no concordance to speak of (null, as Pearson)
        return math.nan
    return 2 * np.mean((a - a.mean()) * (b - b.mean())) / (a.var() + b.var() + (a.mean() - b.mean()) ** 2)


def _ranking_tau(c: Columns) -> float:
    """Kendall tau between the models' mean exam scores under A and under B."""
    present = np.unique(c["model"])
    if present.size < MIN_RANKED:
        return math.nan
    count = np.bincount(c["model"])[present]
    means = [np.bincount(c["model"], weights=c[side])[present] / count for side in ("a", "b")]
    return stats.kendalltau(*means).statistic


def _alpha(c: Columns) -> float:
    """Krippendorff's alpha (interval) over the units' rows; NaN marks a source that lacks a unit."""
    import krippendorff

    m = c["matrix"]
    if np.sum(np.isfinite(m).sum(axis=1) >= 2) < 2:
        return math.nan
    return krippendorff.alpha(reliability_data=m.T, level_of_measurement="interval")


STATS = {  # name -> statistic of the columns; a figure's name ends with its statistic's ("exam.ccc")
    "exact": lambda c: np.mean(np.isclose(c["a"], c["b"], atol=1e-6)),
    "mae": lambda c: np.mean(np.abs(c["b"] - c["a"])),
    "bias": lambda c: np.mean(c["b"] - c["a"]),
    "pearson": lambda c: stats.pearsonr(c["a"], c["b"]).statistic,
    "spearman": lambda c: stats.spearmanr(c["a"], c["b"]).statistic,
    "kendall": lambda c: stats.kendalltau(c["a"], c["b"]).statistic,
    "ccc": _ccc,
    # quadratic-weighted kappa; its categories are the item scores' grid positions (`ga`, `gb`)
    "qwk": lambda c: _kappa(c["ga"], c["gb"], labels=c["labels"], weights="quadratic"),
    "kappa_pass": lambda c: _kappa(c["a"] >= PASS_MARK, c["b"] >= PASS_MARK, labels=[False, True]),
    "ranking_tau": _ranking_tau,
    "alpha": _alpha,
}
UNDEFINED = {  # why a statistic is null, beyond too few values or a constant side
    "kappa_pass": "every exam has the same verdict on both sides (kappa is 0/0)",
    "ranking_tau": "the models' mean exam scores tie on one side",
    "qwk": "every item score is the same category on both sides (kappa is 0/0)",
}


def _why_undefined(stat: str, cols: Columns) -> str:
    n = len(cols["exam"])
    if n < 2:
        return f"{n} value{'s' if n != 1 else ''}: too few"
    variance = stat in ("pearson", "spearman", "kendall", "ccc")
    if variance and (flat := [side.upper() for side in ("a", "b") if np.ptp(cols[side]) == 0]):
        return f"side {' and '.join(flat)} is constant"
    return UNDEFINED.get(stat, "undefined on these data")


def figure(name: str, cols: Columns, notes: list[str], stat: str = "", **boot) -> dict:
    """The figure `name` (of `stat`, else of its name's end: "exam.ccc") on `cols`, with its interval
    (`boot`: resamples, seed), as Figure's keys; null with a note saying why where undefined."""
    stat = stat or name.rpartition(".")[2]
    n = len(cols["exam"])
    value = quiet(STATS[stat], cols) if n >= (1 if stat in ("exact", "mae", "bias") else 2) else math.nan
    if not math.isfinite(value):
        notes.append(f"{name}: null: {_why_undefined(stat, cols)}")
        return NULL.model_dump()
    boot = {"resamples": AGREEMENT_RESAMPLES, "seed": DEFAULT_SEED} | boot
    low, high, why = bootstrap_interval(STATS[stat], cols, **boot)
    if why:
        notes.append(f"{name}: {why}")
    return {"value": value, "ci_low": low, "ci_high": high}


def columns(rows: list[dict], *names: str) -> Columns:
    """Columns of `rows` as arrays; `exam` (the resampling unit) and `model` become integer codes."""

    def column(name: str) -> np.ndarray:
        if name in ("exam", "model"):
            return np.unique(np.asarray([str(r[name]) for r in rows]), return_inverse=True)[1].astype(int)
        return np.asarray([r[name] for r in rows], dtype=float)

    return {name: column(name) for name in names}
