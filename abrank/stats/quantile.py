"""Quantile metrics of impressions clustered in units: the point, its clustered interval and
the difference of two independent arms (Deng, Knoblich & Lu, KDD 2018).

A quantile metric (``latency_p95``) is the q-th sample quantile of the *pooled* impression
values of an arm, while users, not impressions, are randomized: the impressions of one
user are correlated, and an interval that treats them as independent is too narrow. The
paper's way around both the clustering and the density at the quantile (which the usual
asymptotic variance q(1 - q) / (n f(Q)^2) needs, and which is hard to estimate) is:

1. The point Q = the sample quantile of the N pooled values (:func:`quantile_point`:
   numpy's ``linear`` interpolation, :data:`QUANTILE_METHOD`: the order statistic at
   0-based virtual index h = (N - 1) q, interpolated between its two neighbours).
2. The indicator mean I = mean(1{X <= Q}) is a ratio of per-unit sums, sum_u S_u / sum_u N_u
   (S_u: the unit's impressions at or below Q, N_u: its impressions), so its variance comes
   from the clustered (ratio) delta method over the n units, as for every clustered metric
   (:mod:`abrank.stats.unit_sums`)::

       L_u = (S_u - I N_u) / mean(N),      sigma_I^2 = var(L, ddof=1) / n.

3. By Bahadur's representation Q_hat - Q ~ (q - I(Q)) / f(Q), so the quantile's SD is
   sigma_I / f(Q), and an interval of I maps to one of Q through the quantile function
   itself: the interval of Q is the pair of order statistics at the ranks
   N (q -+ z sigma_I), z = Phi^-1(1 - alpha / 2)::

       [Q_lo, Q_hi] = [Qhat(q - z sigma_I), Qhat(q + z sigma_I)],

   where Qhat(p) is the same interpolated sample quantile as the point (the order statistic
   at virtual rank (N - 1) p, so the ranks are N p up to one rank), p clipped to [0, 1].
   No density is estimated: the empirical distribution supplies it.
4. The standard error the paper derives from that interval, for differences and ratios of
   quantiles, is its width over 2 z: se = (Q_hi - Q_lo) / (2 z) (the density estimate
   implied is 2 z sigma_I / (Q_hi - Q_lo)).

Two arms are independent samples, so Delta = Q_t - Q_c has SE sqrt(se_t^2 + se_c^2), a
two-sided normal p-value and interval Delta -+ z SE; the relative lift r = Q_t / Q_c - 1
has the delta-method SE of a ratio of independent estimates,
sqrt(se_t^2 / Q_c^2 + Q_t^2 se_c^2 / Q_c^4), and interval r -+ z SE_r (GrowthBook's
quantile metrics combine the arms' order-statistic SEs the same way).

Beside it, for comparison, the per-impression ("naive", iid) interval is the same
construction with every impression its own unit (sigma_I^2 = I (1 - I) / (N - 1)): it
ignores the clustering and under-covers when users differ. A unit bootstrap, the second
opinion, lives in :mod:`abrank.stats.quantile_bootstrap`.

Missing values are the caller's to count and report: every function here takes finite
values only and refuses NaN or infinity with a DataError naming the first one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from abrank.errors import ConfigError, DataError
from abrank.stats.results import Interval, json_safe

QUANTILE_METHOD = "linear"
"""numpy.quantile's ``method`` that every quantile here equals (numpy's default)."""

NOTE_ONE_UNIT = "fewer than 2 units in an arm: the quantile has no clustered interval"
NOTE_ZERO_WIDTH = (
    "both arms' quantile intervals have zero width (the values near the quantile are all "
    "equal): the p-value is 1 when the quantiles are equal, else 0"
)
NOTE_NO_LIFT = "the control's quantile is 0: no relative lift"

METHOD = "delta method on the quantile's indicator, order-statistic interval"


def z_score(confidence_level: float) -> float:
    """The two-sided normal quantile of ``confidence_level`` (1.96 at 0.95)."""
    return float(stats.norm.ppf(0.5 + confidence_level / 2.0))


def checked_level(confidence_level: float) -> float:
    """``confidence_level`` when it lies strictly between 0 and 1, else ConfigError."""
    level = float(confidence_level)
    if not 0.0 < level < 1.0:
        raise ConfigError(f"confidence_level: expected a number in (0, 1), got {confidence_level}")
    return level


def checked_q(q: float) -> float:
    """``q`` when it lies in [0, 1], else ConfigError."""
    try:
        value = float(q)
    except (TypeError, ValueError):
        raise ConfigError(f"q: expected a number in [0, 1], got {q!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"q: expected a number in [0, 1], got {q!r}")
    return value


def checked_values(values: Any, argument: str = "values") -> np.ndarray:
    """``values`` as a 1-D float64 array of at least one finite number, else DataError.

    NaN and infinities are refused: missing values are counted by the caller, which passes
    the finite values only.
    """
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{argument}: expected numbers, got {type(values).__name__}") from None
    if array.ndim != 1:
        raise DataError(f"{argument}: expected one value per impression, got shape {array.shape}")
    if array.size == 0:
        raise DataError(f"{argument}: expected at least one value, got none")
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array))[0])
        raise DataError(
            f"{argument}[{bad}]: expected a finite number, got {array[bad]} (missing values "
            "are counted by the caller: pass the finite values only)"
        )
    return array


def interpolated(sorted_values: np.ndarray, p: float) -> float:
    """The ``linear`` sample quantile at probability ``p`` of values already sorted: the
    order statistic at 0-based virtual index h = (N - 1) p, interpolated (numpy's rule)."""
    n = sorted_values.size
    h = (n - 1) * p
    below = min(int(math.floor(h)), n - 1)
    above = min(below + 1, n - 1)
    frac = h - below
    lo, hi = float(sorted_values[below]), float(sorted_values[above])
    # numpy's _lerp: exact at both ends, no overshoot
    value = lo + (hi - lo) * frac if frac < 0.5 else hi - (hi - lo) * (1.0 - frac)
    return lo if hi == lo else value


def quantile_point(values: Any, q: float) -> float:
    """The q-th sample quantile of ``values`` (finite numbers), equal to
    ``numpy.quantile(values, q, method="linear")``.

    ``linear`` (numpy's default, Hyndman & Fan's type 7) is the order statistic at 0-based
    index (N - 1) q, interpolated between its neighbours: q = 0 is the minimum, q = 1 the
    maximum. Deng et al. use the sample quantile; with thousands of impressions per arm the
    interpolation rules differ by less than one rank.
    """
    array = checked_values(values)
    return interpolated(np.sort(array), checked_q(q))


def _dense_units(units: Any, n: int, argument: str) -> tuple[np.ndarray, int]:
    """Unit codes 0..n_units-1 per impression, and n_units (units with an impression)."""
    codes = np.asarray(units)
    if codes.ndim != 1 or codes.size != n:
        raise DataError(f"{argument}: expected one unit per value ({n}), got shape {codes.shape}")
    if codes.dtype.kind in "iub":
        codes = codes.astype(np.int64, copy=False)
        low, high = int(codes.min()), int(codes.max())
        if low >= 0 and high <= 4 * n + 1024:
            present = np.bincount(codes, minlength=high + 1) > 0
            dense = np.cumsum(present) - 1
            return dense[codes], int(present.sum())
    if codes.dtype.kind == "f" and not np.isfinite(codes).all():
        bad = int(np.flatnonzero(~np.isfinite(codes))[0])
        raise DataError(f"{argument}[{bad}]: expected a unit id, got {codes[bad]}")
    labels, inverse = np.unique(codes, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(labels.size)


@dataclass(frozen=True)
class QuantileArm:
    """One arm's impressions, ready for any number of quantiles: the values (as given), their
    sorted copy (one sort per arm), each impression's unit (dense codes 0..n_units - 1) and
    each unit's number of impressions. Build it with :func:`quantile_arm`."""

    values: np.ndarray
    sorted_values: np.ndarray
    units: np.ndarray
    counts: np.ndarray

    @property
    def n_impressions(self) -> int:
        return int(self.values.size)

    @property
    def n_units(self) -> int:
        return int(self.counts.size)


def quantile_arm(values: Any, units: Any = None, argument: str = "values") -> QuantileArm:
    """An arm of finite ``values`` (one per impression) and their ``units`` (one id per
    impression: integers, fastest as non-negative codes, or any labels); ``units=None``
    makes every impression its own unit (the iid case)."""
    array = checked_values(values, argument)
    n = array.size
    if units is None:
        codes, n_units = np.arange(n, dtype=np.int64), n
    else:
        codes, n_units = _dense_units(units, n, f"{argument} units")
    counts = np.bincount(codes, minlength=n_units).astype(np.float64)
    return QuantileArm(array, np.sort(array), codes, counts)


@dataclass(frozen=True)
class QuantileEstimate:
    """One arm's q-th quantile with its clustered and per-impression intervals.

    ``point``: the sample quantile of the pooled impressions; ``indicator_mean``: I, the
    share of impressions at or below it; ``indicator_se``: sigma_I, I's clustered
    delta-method SE over units; ``interval``: [Qhat(q - z sigma_I), Qhat(q + z sigma_I)]
    at ``confidence_level``; ``se``: its width / (2 z). ``naive_*``: the same with every
    impression its own unit (sigma_I^2 = I (1 - I) / (N - 1)). SEs and intervals are NaN
    with fewer than 2 units (resp. impressions).
    """

    q: float
    point: float
    n_impressions: int
    n_units: int
    indicator_mean: float
    indicator_se: float
    se: float
    interval: Interval
    naive_indicator_se: float
    naive_se: float
    naive_interval: Interval
    confidence_level: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-safe builtins (intervals as lists, NaN as None)."""
        return {k: json_safe(v) for k, v in asdict(self).items()}


def indicator_variance(below: np.ndarray, counts: np.ndarray) -> float:
    """sigma_I^2 of I = sum(S) / sum(N) by the clustered delta method: var(L, ddof=1) / n
    with L_u = (S_u - I N_u) / mean(N); NaN with fewer than 2 units."""
    n = counts.size
    if n < 2:
        return math.nan
    total = float(counts.sum())
    share = float(below.sum()) / total
    deviations = (below - share * counts) / (total / n)
    return float(np.var(deviations, ddof=1)) / n


def estimate_through(
    quantile_at: Callable[[float], float],
    q: float,
    level: float,
    *,
    point: float,
    n_impressions: int,
    n_units: int,
    share: float,
    indicator_se: float,
) -> QuantileEstimate:
    """A :class:`QuantileEstimate` from an arm's quantile function ``quantile_at`` (its
    sorted values, or an engine's sketch) and the indicator's share and clustered SE: the
    interval [Q(q - z sigma_I), Q(q + z sigma_I)], p clipped to [0, 1], and beside it the
    per-impression one, sigma_I^2 = I (1 - I) / (N - 1)."""
    z = z_score(level)
    n = n_impressions
    naive_sigma = math.sqrt(share * (1.0 - share) / (n - 1)) if n > 1 else math.nan

    def interval(spread: float) -> Interval:
        if not math.isfinite(spread):
            return (math.nan, math.nan)
        return (quantile_at(max(0.0, q - spread)), quantile_at(min(1.0, q + spread)))

    clustered = interval(z * indicator_se)
    naive = interval(z * naive_sigma)
    return QuantileEstimate(
        q=q,
        point=point,
        n_impressions=n,
        n_units=n_units,
        indicator_mean=share,
        indicator_se=indicator_se,
        se=(clustered[1] - clustered[0]) / (2.0 * z),
        interval=clustered,
        naive_indicator_se=naive_sigma,
        naive_se=(naive[1] - naive[0]) / (2.0 * z),
        naive_interval=naive,
        confidence_level=level,
    )


def estimate_from_arm(
    arm: QuantileArm, q: float, confidence_level: float = 0.95
) -> QuantileEstimate:
    """The :class:`QuantileEstimate` of a prepared arm (see the module's formulas).

    Cost: one pass over the impressions (S_u counts the impressions at or below the point,
    by one comparison and one bincount) and a few look-ups in the sorted values.
    """
    q, level = checked_q(q), checked_level(confidence_level)
    sorted_values = arm.sorted_values
    n = arm.n_impressions
    point = interpolated(sorted_values, q)
    at_or_below = int(np.searchsorted(sorted_values, point, side="right"))
    share = at_or_below / n
    if arm.n_units == n:  # every impression its own unit: S_u is 0 or 1
        variance = share * (1.0 - share) / (n - 1) if n > 1 else math.nan
    else:
        below = np.bincount(arm.units[arm.values <= point], minlength=arm.n_units)
        variance = indicator_variance(below.astype(np.float64), arm.counts)
    return estimate_through(
        lambda p: interpolated(sorted_values, p),
        q,
        level,
        point=point,
        n_impressions=n,
        n_units=arm.n_units,
        share=share,
        indicator_se=math.sqrt(variance),
    )


def quantile_estimate(
    values: Any, units: Any, q: float, confidence_level: float = 0.95
) -> QuantileEstimate:
    """One arm's q-th quantile of ``values`` (finite, one per impression) clustered by
    ``units`` (one id per impression; None: every impression its own unit)."""
    return estimate_from_arm(quantile_arm(values, units), q, confidence_level)


@dataclass(frozen=True)
class QuantileDifference:
    """The difference of two independent arms' q-th quantiles, treatment - control.

    ``delta`` = Q_t - Q_c with ``se`` = sqrt(se_t^2 + se_c^2) (each arm's se from its
    order-statistic interval), ``ci`` = delta -+ z se and a two-sided normal ``p_value``;
    ``relative_lift`` = Q_t / Q_c - 1 with the delta-method ``relative_se`` of a ratio of
    independent estimates and ``relative_ci`` (NaN when Q_c is 0). ``naive_se``,
    ``naive_ci``, ``naive_p_value``: the same from the per-impression intervals (they ignore
    the clustering). ``bootstrap_ci`` / ``bootstrap_se``: the unit bootstrap's percentile
    interval and standard deviation of delta over ``n_resamples`` resamples
    (:mod:`abrank.stats.quantile_bootstrap`; None / NaN when none was drawn). ``control``
    and ``treatment`` are the arms' estimates; ``notes`` name every rule applied.
    """

    q: float
    control: QuantileEstimate
    treatment: QuantileEstimate
    delta: float
    se: float
    ci: Interval
    p_value: float
    relative_lift: float
    relative_se: float
    relative_ci: Interval
    naive_se: float
    naive_ci: Interval
    naive_p_value: float
    confidence_level: float
    method: str = METHOD
    bootstrap_ci: Interval | None = None
    bootstrap_se: float = math.nan
    n_resamples: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-safe builtins, the arms as their own ``to_dict``."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.to_dict() if isinstance(value, QuantileEstimate) else json_safe(value)
        return out


def _normal_p(delta: float, se: float) -> float:
    if not (math.isfinite(delta) and math.isfinite(se)):
        return math.nan
    if se == 0.0:
        return 1.0 if delta == 0.0 else 0.0
    return float(2.0 * stats.norm.sf(abs(delta) / se))


def quantile_difference(
    control: QuantileEstimate, treatment: QuantileEstimate
) -> QuantileDifference:
    """Delta = Q_t - Q_c of two independent arms' estimates (at the same q and level), its
    SE, interval and p-value, and the relative lift's (see :class:`QuantileDifference`)."""
    if control.q != treatment.q or control.confidence_level != treatment.confidence_level:
        raise ConfigError(
            "quantile_difference: expected both arms at the same q and level, got "
            f"q {control.q} / {treatment.q}, level {control.confidence_level} / "
            f"{treatment.confidence_level}"
        )
    level = control.confidence_level
    z = z_score(level)
    notes: list[str] = []
    delta = treatment.point - control.point
    se = math.hypot(control.se, treatment.se)
    naive_se = math.hypot(control.naive_se, treatment.naive_se)
    if not math.isfinite(se):
        notes.append(NOTE_ONE_UNIT)
    elif se == 0.0:
        notes.append(NOTE_ZERO_WIDTH)
    qc, qt = control.point, treatment.point
    if qc != 0.0:
        relative = qt / qc - 1.0
        relative_se = math.sqrt(treatment.se**2 / qc**2 + qt**2 * control.se**2 / qc**4)
    else:
        relative, relative_se = math.nan, math.nan
        notes.append(NOTE_NO_LIFT)
    return QuantileDifference(
        q=control.q,
        control=control,
        treatment=treatment,
        delta=delta,
        se=se,
        ci=(delta - z * se, delta + z * se),
        p_value=_normal_p(delta, se),
        relative_lift=relative,
        relative_se=relative_se,
        relative_ci=(relative - z * relative_se, relative + z * relative_se),
        naive_se=naive_se,
        naive_ci=(delta - z * naive_se, delta + z * naive_se),
        naive_p_value=_normal_p(delta, naive_se),
        confidence_level=level,
        notes=tuple(notes),
    )
