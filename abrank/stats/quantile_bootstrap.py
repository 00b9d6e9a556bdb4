"""The unit bootstrap of quantile differences: the second opinion beside the delta method of
:mod:`abrank.stats.quantile`.

Within each arm the units (users) are resampled with replacement, every impression of a
drawn unit coming along, and the quantile of the resampled impressions is computed; the
percentile interval of Q*_t - Q*_c over the resamples is the interval. A resample is a
vector of weights, how many times each unit was drawn (one bincount of the drawn unit
indices); the resampled data set is the arm's sorted values with each impression repeated
its unit's weight, so its ``linear`` quantile (numpy's rule, the same as the point) is read
off the cumulative weights of the sorted impressions by a binary search, with no copy of
the data. Blocks of resamples are drawn at once (as many as fit in
:data:`abrank.stats.resampling.CHUNK_ELEMENTS` weights), all quantiles from the same
resamples. Seeding follows :mod:`abrank.stats.seeding`: one generator per (seed, metric,
treatment, segment), the control's resamples drawn first, then the treatment's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.quantile import QuantileArm
from abrank.stats.results import Interval
from abrank.stats.seeding import generator


def _sorted_units(arm: QuantileArm) -> np.ndarray:
    """The unit of each impression in the order of the sorted values (ties in any order:
    they carry the same value)."""
    order = np.argsort(arm.values, kind="stable")
    return arm.units[order]


def weighted_quantiles(
    sorted_values: np.ndarray, weights: np.ndarray, qs: Sequence[float]
) -> np.ndarray:
    """``linear`` quantiles of data sets given as repeat counts of sorted values.

    ``weights`` is (b, N): row r repeats sorted impression i weights[r, i] times (integers
    >= 0, each row summing to at least 1). Returns (b, len(qs)), each entry equal to
    ``numpy.quantile(numpy.repeat(sorted_values, weights[r]), q)``.
    """
    b, n = weights.shape
    cum = np.cumsum(weights, axis=1, dtype=np.int64)
    totals = cum[:, -1]
    stride = int(totals.max()) + 1
    flat = (cum + (np.arange(b, dtype=np.int64) * stride)[:, None]).ravel()
    offsets = np.arange(b, dtype=np.int64) * stride
    out = np.empty((b, len(qs)))
    for j, q in enumerate(qs):
        h = (totals - 1) * q
        below = np.floor(h).astype(np.int64)
        above = np.minimum(below + 1, totals - 1)
        gamma = h - below
        # the impression holding 0-based position k of the resampled data: first cum > k
        i_below = np.searchsorted(flat, below + offsets, side="right") - np.arange(b) * n
        i_above = np.searchsorted(flat, above + offsets, side="right") - np.arange(b) * n
        lo, hi = sorted_values[i_below], sorted_values[i_above]
        diff = hi - lo
        value = np.where(gamma >= 0.5, hi - diff * (1.0 - gamma), lo + diff * gamma)
        out[:, j] = np.where(diff == 0.0, lo, value)
    return out


def bootstrap_quantiles(
    arm: QuantileArm, qs: Sequence[float], n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_resamples, len(qs)) quantiles of unit resamples of ``arm`` (units drawn with
    replacement, n_units per resample)."""
    n_units, n = arm.n_units, arm.n_impressions
    sorted_units = _sorted_units(arm)
    out = np.empty((n_resamples, len(qs)))
    step = max(1, rs.CHUNK_ELEMENTS // max(n, n_units, 1))
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        drawn = rng.integers(0, n_units, size=(b, n_units))
        drawn += (np.arange(b, dtype=np.int64) * n_units)[:, None]
        unit_weights = np.bincount(drawn.ravel(), minlength=b * n_units).reshape(b, n_units)
        out[start : start + b] = weighted_quantiles(
            arm.sorted_values, unit_weights[:, sorted_units], qs
        )
    return out


def bootstrap_deltas(
    control: QuantileArm,
    treatment: QuantileArm,
    qs: Sequence[float],
    n_resamples: int,
    *,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
) -> np.ndarray:
    """(n_resamples, len(qs)) resampled differences Q*_t - Q*_c, each arm's units resampled
    on its own, from the generator of (seed, ["quantile", metric], treatment_name, segment)."""
    rng = generator(seed, ["quantile", metric], treatment_name, segment, "bootstrap")
    c = bootstrap_quantiles(control, qs, n_resamples, rng)
    t = bootstrap_quantiles(treatment, qs, n_resamples, rng)
    return t - c


def percentile_interval(resampled: np.ndarray, confidence_level: float) -> Interval:
    """The percentile interval: the (1 - level) / 2 and (1 + level) / 2 quantiles of the
    resampled values (NaNs when there are none)."""
    if resampled.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    return (float(low), float(high))
