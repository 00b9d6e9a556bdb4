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
:func:`compare_quantiles` gives each quantile's difference with this second opinion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.quantile import (
    QuantileArm,
    QuantileDifference,
    checked_level,
    checked_q,
    estimate_from_arm,
    quantile_arm,
    quantile_difference,
)
from abrank.stats.results import Interval
from abrank.stats.seeding import generator


def _sorted_units(arm: QuantileArm) -> np.ndarray:
    """The unit of each impression in the order of the sorted values (ties in any order:
    they carry the same value)."""
    order = np.argsort(arm.values, kind="stable")
    return arm.units[order]


def _crossing(cum: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row r of ``cum`` (b, m; non-decreasing rows), the first column whose value
    exceeds targets[r] (m when none does): one binary search over the flattened rows."""
    b, m = cum.shape
    stride = max(int(cum[:, -1].max()), int(targets.max()), 0) + 1
    offsets = np.arange(b, dtype=np.int64) * stride
    flat = (cum + offsets[:, None]).ravel()
    found = np.searchsorted(flat, targets + offsets, side="right") - np.arange(b) * m
    return np.minimum(found, m)


def _lerp(lo: np.ndarray, hi: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """numpy.quantile's interpolation: exact at both ends, from the nearer one."""
    diff = hi - lo
    value = np.where(gamma >= 0.5, hi - diff * (1.0 - gamma), lo + diff * gamma)
    return np.where(diff == 0.0, lo, value)


def _window_quantile(
    values: np.ndarray, cum: np.ndarray, base: np.ndarray, totals: np.ndarray, q: float
) -> tuple[np.ndarray, np.ndarray]:
    """The ``linear`` q-quantile of each row's resampled data from a window of the sorted
    values: ``cum`` (b, m) is the cumulative weight up to each of the window's impressions
    (the weight before the window included), ``base`` (b,) the weight before the window, ``totals`` (b,) each resample's size. Returns the
    quantiles and whether both order statistics needed lie in the window (where not, the
    quantile is NaN)."""
    h = (totals - 1) * q
    below = np.floor(h).astype(np.int64)
    above = np.minimum(below + 1, totals - 1)
    # the impression holding 0-based position k of the resampled data: the first cum > k
    i_below = _crossing(cum, below)
    i_above = _crossing(cum, above)
    m = values.size
    ok = (base <= below) & (i_above < m)
    lo = values[np.minimum(i_below, m - 1)]
    hi = values[np.minimum(i_above, m - 1)]
    return np.where(ok, _lerp(lo, hi, h - below), np.nan), ok


def weighted_quantiles(
    sorted_values: np.ndarray, weights: np.ndarray, qs: Sequence[float]
) -> np.ndarray:
    """``linear`` quantiles of data sets given as repeat counts of sorted values.

    ``weights`` is (b, N): row r repeats sorted impression i weights[r, i] times (integers
    >= 0, each row summing to at least 1). Returns (b, len(qs)), each entry equal to
    ``numpy.quantile(numpy.repeat(sorted_values, weights[r]), q)``.
    """
    cum = np.cumsum(weights, axis=1, dtype=np.int64)
    totals = cum[:, -1]
    base = np.zeros(weights.shape[0], dtype=np.int64)
    out = np.empty((weights.shape[0], len(qs)))
    for j, q in enumerate(qs):
        out[:, j] = _window_quantile(sorted_values, cum, base, totals, q)[0]
    return out


WINDOW = (8.0, 64)
"""The sorted positions a resample's quantile is first looked for in: the arm's quantile
-+ 8 clustered SEs of its indicator (in ranks N q -+ 8 N sigma_I) and 64 ranks more."""


@dataclass(frozen=True)
class _Window:
    start: int
    stop: int
    before: np.ndarray  # impressions of each unit at sorted positions < start


def _window(
    arm: QuantileArm, sorted_units: np.ndarray, q: float, window: tuple[float, int] | None
) -> _Window:
    n = arm.n_impressions
    start, stop = 0, n
    if window is not None:
        sds, margin = window
        estimate = estimate_from_arm(arm, q)
        sigma = max(estimate.indicator_se, estimate.naive_indicator_se)
        if math.isfinite(sigma):
            start = max(0, int(math.floor((q - sds * sigma) * (n - 1))) - margin)
            stop = min(n, int(math.ceil((q + sds * sigma) * (n - 1))) + margin + 2)
    before = np.bincount(sorted_units[:start], minlength=arm.n_units).astype(np.float64)
    return _Window(start, stop, before)


def bootstrap_quantiles(
    arm: QuantileArm,
    qs: Sequence[float],
    n_resamples: int,
    rng: np.random.Generator,
    window: tuple[float, int] | None = WINDOW,
) -> np.ndarray:
    """(n_resamples, len(qs)) quantiles of unit resamples of ``arm`` (units drawn with
    replacement, n_units per resample), exactly numpy's quantile of each resample.

    A resample's quantile is looked for in a window of the sorted values around the arm's
    own (:data:`WINDOW`; the weight before it is one product of the unit weights with each
    unit's impressions before it), so a resample costs the window's impressions, not all
    N; the rare resample whose order statistics fall outside is done over all N.
    ``window=None`` always uses all N.
    """
    n_units = arm.n_units
    sorted_units = _sorted_units(arm)
    values = arm.sorted_values
    windows = [_window(arm, sorted_units, q, window) for q in qs]
    widest = max((w.stop - w.start for w in windows), default=1)
    out = np.empty((n_resamples, len(qs)))
    step = max(1, rs.CHUNK_ELEMENTS // max(widest, n_units, 1))
    for first in range(0, n_resamples, step):
        b = min(step, n_resamples - first)
        drawn = rng.integers(0, n_units, size=(b, n_units))
        drawn += (np.arange(b, dtype=np.int64) * n_units)[:, None]
        unit_weights = np.bincount(drawn.ravel(), minlength=b * n_units).reshape(b, n_units)
        as_float = unit_weights.astype(np.float64)  # exact: sums below 2^53
        totals = np.rint(as_float @ arm.counts).astype(np.int64)
        for j, (q, w) in enumerate(zip(qs, windows, strict=True)):
            base = np.rint(as_float @ w.before).astype(np.int64)
            cum = np.cumsum(unit_weights[:, sorted_units[w.start : w.stop]], axis=1)
            cum += base[:, None]
            found, ok = _window_quantile(values[w.start : w.stop], cum, base, totals, q)
            missed = np.flatnonzero(~ok)
            if missed.size:  # outside the window: over all N
                full = unit_weights[missed][:, sorted_units]
                found[missed] = weighted_quantiles(values, full, [q])[:, 0]
            out[first : first + b, j] = found
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


def compare_quantiles(
    control_values: Any,
    control_units: Any,
    treatment_values: Any,
    treatment_units: Any,
    qs: float | Sequence[float],
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 0,
    seed: int | None = 0,
    metric: str = "quantile",
    treatment_name: str = "treatment",
    segment: str | None = None,
) -> tuple[QuantileDifference, ...]:
    """Treatment - control at each quantile of ``qs``, one :class:`QuantileDifference` each,
    in order.

    Each arm is given as its finite impression values and their units (None: every
    impression its own unit); each arm is sorted once for all ``qs``. With ``n_resamples``
    > 0 a unit bootstrap (units resampled with replacement within each arm, seeded from
    (seed, metric, treatment_name, segment) as in :mod:`abrank.stats.seeding`) adds its
    percentile interval of each delta, all quantiles from the same resamples.
    """
    levels = [checked_q(q) for q in ([qs] if isinstance(qs, (int, float)) else qs)]
    level = checked_level(confidence_level)
    control = quantile_arm(control_values, control_units, "control_values")
    treatment = quantile_arm(treatment_values, treatment_units, "treatment_values")
    results = [
        quantile_difference(
            estimate_from_arm(control, q, level), estimate_from_arm(treatment, q, level)
        )
        for q in levels
    ]
    if n_resamples <= 0 or min(control.n_units, treatment.n_units) < 2:
        return tuple(results)
    deltas = bootstrap_deltas(
        control,
        treatment,
        levels,
        n_resamples,
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
    )
    return tuple(
        replace(
            result,
            bootstrap_ci=percentile_interval(deltas[:, j], level),
            bootstrap_se=float(np.std(deltas[:, j], ddof=1)),
            n_resamples=int(n_resamples),
        )
        for j, result in enumerate(results)
    )
