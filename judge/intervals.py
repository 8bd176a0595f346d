"""Every 95% interval: a seeded percentile bootstrap resampling whole exams (their questions depend)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

DEFAULT_SEED = 0
LEADERBOARD_RESAMPLES = 10_000  # a mean of exam totals: cheap, so many
AGREEMENT_RESAMPLES = 2_000  # kappa, CCC... recomputed per resample: costlier each

Columns = dict[str, Any]  # name -> numpy array (numpy imported when used: the CLI reads the constants)
Stat = Callable[[Columns], float]


def quiet(stat: Stat, cols: Columns) -> float:
    """A statistic's value, NaN where it is undefined (no warnings: undefined is an answer here)."""
    import numpy as np

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = float(stat(cols))
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
    return value if math.isfinite(value) else math.nan


def bootstrap_ci(values: list[float], *, resamples: int = LEADERBOARD_RESAMPLES, seed: int = DEFAULT_SEED):
    """(low, high) of the mean, resampling the values (whole exams); (None, None) below 2 values."""
    if len(set(values)) == 1 < len(values):  # exactly the value: a mean of copies may be a float off
        return float(values[0]), float(values[0])
    return repeats_ci({i: [v] for i, v in enumerate(values)}, resamples=resamples, seed=seed)


def repeats_ci(by_exam: dict[str, list[float]], *, resamples: int, seed: int):
    """(low, high) of the mean exam score resampling exams, then one repeat within each drawn exam."""
    import numpy as np

    if len(by_exam) < 2:
        return None, None
    k = min(len(v) for v in by_exam.values())
    table, rng = np.asarray([v[:k] for v in by_exam.values()], dtype=float), np.random.default_rng(seed)
    n = table.shape[0]
    means = table[rng.integers(0, n, (resamples, n)), rng.integers(0, k, (resamples, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_interval(stat: Stat, cols: Columns, *, resamples: int, seed: int):
    """(low, high, why there is none) of `stat` over the rows of `cols`, resampling whole exams."""
    import numpy as np

    uniq, inverse = np.unique(cols["exam"], return_inverse=True)
    if uniq.size < 2:
        return None, None, "one exam only: no interval"
    groups = [np.flatnonzero(inverse == k) for k in range(uniq.size)]
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    for r in range(resamples):
        idx = np.concatenate([groups[k] for k in rng.integers(0, uniq.size, uniq.size)])
        values[r] = quiet(stat, {k: (v if k == "labels" else v[idx]) for k, v in cols.items()})
    finite = values[np.isfinite(values)]
    if finite.size < resamples / 2:
        return None, None, f"undefined in {resamples - finite.size} of {resamples} resamples: no interval"
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high), None
