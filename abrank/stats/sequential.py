"""Always-valid inference: asymptotic confidence sequences and their p-values.

A cumulative readout looked at every day is a sequential test: a fixed-horizon t-test
checked at each of 10 daily looks calls an A/A experiment significant at some look about
one time in five, not one in twenty. A *confidence sequence* covers the true delta at
every sample size at once, so it may be looked at as often as one likes.

Method: the asymptotic confidence sequences of Waudby-Smith, Arnold, Wu, Lindon & Ramdas,
"Time-uniform central limit theory and asymptotic confidence sequences" (Annals of
Statistics, 2024), with the two-sided normal-mixture boundary in the form GrowthBook's
gbstats ships. For an estimator that averages ``n`` observations of per-observation
variance ``V``, the (1 - alpha) sequence is

    estimate +- sqrt(V) * sqrt(2 (n rho^2 + 1) / (n^2 rho^2) * log(sqrt(n rho^2 + 1) / alpha))

Tuning parameter: ``rho`` only decides at which sample size the sequence is tightest (it
is valid for every rho); it is chosen to be tightest at n = N* (``horizon``) for the
comparison's nominal alpha: rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / N*. N* is the
planned horizon when one is given (``sequential_tuning``); by default it is the
comparison's own sample size, so that at the current look the sequence is as narrow as a
sequence can be (about 1.55 times the fixed-horizon t-interval at the 95% level, where
GrowthBook's fixed N* = 5,000 is 2 to 3.4 times as wide at 100 to 500 observations). A
tuning that follows the sample size is a different rho at each look, which is no longer
one sequence: on 10 equally spaced looks of a Brownian A/A it is ever significant at 0.05
in 1.3% of runs (0.9% with N* fixed at the last look; 200,000 simulated runs),
so the default stays well within its level, and a planned N* keeps the strict guarantee.
Rho is fixed per comparison, so the
intervals at other levels (after a Holm correction) are the same sequence at another
alpha: they nest, and the always-valid p-value, the smallest alpha whose sequence
excludes 0, inverts the width in closed form:

    p = min(1, sqrt(n rho^2 + 1) * exp(-n^2 rho^2 delta^2 / (2 V (n rho^2 + 1))))

so the sequence at level 1 - p has 0 on its edge.

Each design applies it to its own estimator and variance (registered as the ``sequential``
test in :mod:`abrank.stats.paired`, :mod:`abrank.stats.independent` and
:mod:`abrank.stats.clustered`): the paired mean delta (n queries, V = n se^2), Welch's
difference of means (n = n_c + n_t, V = n (s_c^2 / n_c + s_t^2 / n_t)) and the clustered
delta-method difference of ratios (n = units in both arms, V = n (Var R_c + Var R_t)).
The relative lift's sequence has the same width on the log-ratio scale, as
:func:`abrank.stats.clustered_delta.log_ratio_interval` does for the t-interval.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri, stdtrit

from abrank.errors import ConfigError
from abrank.stats.estimation import UNBOUNDED, TestOutcome
from abrank.stats.results import Interval

METHOD = "asymptotic confidence sequence (Waudby-Smith et al.)"
"""The method's name in summary.json's ``sequential`` field."""
CI_METHOD = "confidence sequence"
"""The ``ci_method`` of a comparison whose primary test is ``sequential``."""
SMALLEST_P = sys.float_info.min
"""The smallest p-value reported (an exp() underflow is not a p-value of exactly 0)."""


@dataclass(frozen=True)
class SequenceTuning:
    """Where a confidence sequence is tightest: at ``horizon`` observations (N*; None: at
    the comparison's own sample size) for ``alpha`` (the nominal 1 - confidence level)."""

    horizon: int | None = None
    alpha: float = 0.05

    @classmethod
    def of(cls, horizon: int | None, confidence_level: float) -> SequenceTuning:
        """The tuning at N* = ``horizon`` (None: the sample size) for the nominal level."""
        return cls(None if horizon is None else int(horizon), 1.0 - confidence_level)

    def horizon_at(self, n: int) -> int:
        """N* for a comparison of ``n`` observations: the horizon, else n (at least 1)."""
        return self.horizon if self.horizon is not None else max(1, int(n))

    def rho_at(self, n: int) -> float:
        """The mixture's rho for a comparison of ``n`` observations: tightest at N* for alpha."""
        return tuned_rho(self.horizon_at(n), self.alpha)


def tuned_rho(horizon: int, alpha: float) -> float:
    """rho = sqrt((-2 log alpha + log(-2 log alpha + 1)) / N*): the normal-mixture boundary
    of level ``alpha`` is (nearly) narrowest at n = ``horizon`` = N*."""
    a = -2.0 * math.log(alpha)
    return math.sqrt((a + math.log(a + 1.0)) / horizon)


def boundary(n: np.ndarray | float, alpha: np.ndarray | float, rho: float) -> np.ndarray:
    """The half-width per unit of sqrt(V): sqrt(2 (n rho^2 + 1) / (n^2 rho^2) *
    log(sqrt(n rho^2 + 1) / alpha)); elementwise over arrays of ``n`` and ``alpha``."""
    n = np.asarray(n, dtype=np.float64)
    r2 = rho * rho
    growth = n * r2 + 1.0
    return np.sqrt(2.0 * growth / (n * n * r2) * (0.5 * np.log(growth) - np.log(alpha)))


def half_width(
    n: np.ndarray | float, variance: np.ndarray | float, alpha: np.ndarray | float, rho: float
) -> np.ndarray:
    """The (1 - alpha) sequence's half-width after ``n`` observations of per-observation
    variance ``variance``: sqrt(V) times :func:`boundary`."""
    return np.sqrt(np.asarray(variance, dtype=np.float64)) * boundary(n, alpha, rho)


def p_values(
    estimate: np.ndarray | float,
    n: np.ndarray | float,
    variance: np.ndarray | float,
    rho: float,
) -> np.ndarray:
    """The always-valid p-values of "the true value is 0": the smallest alpha whose
    sequence excludes 0, min(1, sqrt(n rho^2 + 1) exp(-n^2 rho^2 est^2 / (2 V (n rho^2 + 1)))),
    never below :data:`SMALLEST_P`; elementwise over arrays."""
    n = np.asarray(n, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    r2 = rho * rho
    growth = n * r2 + 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = 0.5 * np.log(growth) - (n * n * r2 * estimate * estimate) / (
            2.0 * np.asarray(variance, dtype=np.float64) * growth
        )
    return np.clip(np.exp(np.minimum(log_p, 0.0)), SMALLEST_P, 1.0)


@dataclass(frozen=True)
class ConfidenceSequence:
    """The confidence sequence of one estimate after ``n`` observations of per-observation
    variance ``variance``, tuned by ``rho``: its interval at any level and its p-value."""

    estimate: float
    n: int
    variance: float
    rho: float

    def interval(self, level: float) -> Interval:
        """estimate +- half-width at alpha = 1 - level (unbounded without a variance)."""
        if not (self.n >= 1 and math.isfinite(self.variance) and 0.0 < level < 1.0):
            return UNBOUNDED
        half = float(half_width(self.n, self.variance, 1.0 - level, self.rho))
        return (self.estimate - half, self.estimate + half)

    @property
    def p_value(self) -> float:
        """The smallest alpha whose sequence excludes 0 (see :func:`p_values`)."""
        if not (self.n >= 1 and math.isfinite(self.variance) and self.variance > 0):
            return math.nan
        return float(p_values(self.estimate, self.n, self.variance, self.rho))


def mean_sequence(
    estimate: float,
    n: int,
    variance: float,
    tuning: SequenceTuning,
    *,
    relative: Callable[[float], Interval | None] | None = None,
) -> TestOutcome:
    """The ``sequential`` test's outcome for an estimate averaging ``n`` observations of
    per-observation variance ``variance`` (> 0): the always-valid p-value, the sequence as
    the interval (a function of its level) and ``relative``, the lift's sequence."""
    sequence = ConfidenceSequence(estimate, n, variance, tuning.rho_at(n))
    return TestOutcome(sequence.p_value, sequence.interval, CI_METHOD, relative=relative)


def log_ratio_sequence(
    mean_c: float,
    mean_t: float,
    var_c: float,
    var_t: float,
    cov: float,
    n: int,
    tuning: SequenceTuning,
) -> Callable[[float], Interval | None] | None:
    """The relative lift's sequence, exp(log(mean_t / mean_c) +- half-width) - 1, as a
    function of its level; ``var_c``, ``var_t``, ``cov`` are the variances and covariance
    of the two *means* (delta method on the log ratio: se^2 = var_t / mean_t^2 +
    var_c / mean_c^2 - 2 cov / (mean_t mean_c), per-observation variance n se^2). None
    when the ratio is not positive or its variance not finite."""
    if not (mean_c != 0 and mean_t / mean_c > 0):
        return None
    se2 = var_t / mean_t**2 + var_c / mean_c**2 - 2.0 * cov / (mean_t * mean_c)
    if not (math.isfinite(se2) and se2 >= 0):
        return None
    sequence = ConfidenceSequence(math.log(mean_t / mean_c), n, n * se2, tuning.rho_at(n))

    def relative(level: float) -> Interval | None:
        low, high = sequence.interval(level)
        return (lift_of_log(low), lift_of_log(high))

    return relative


def lift_of_log(log_ratio: float) -> float:
    """exp(log_ratio) - 1: the relative lift at a bound of a log-ratio interval; +inf
    where exp overflows (a bound above about 709: the interval is unbounded above, as
    when the means are near 0 against their noise), -1 far below."""
    try:
        return math.expm1(log_ratio)
    except OverflowError:
        return math.inf


def detectable_delta(n: int, variance: float, alpha: float, tuning: SequenceTuning) -> float | None:
    """The minimum detectable effect of the sequential test: the |delta| at which the
    (1 - ``alpha``) sequence after ``n`` observations of per-observation variance
    ``variance`` excludes 0 with :data:`abrank.stats.power.POWER` (80%) probability,
    the estimate being normal around delta with variance ``variance`` / n:
    Phi((delta - h) / se) + Phi((-delta - h) / se) = POWER, h the sequence's half-width.
    None below 2 observations or without a finite variance; 0 when nothing varies."""
    from abrank.stats.power import POWER

    if not (n >= 2 and math.isfinite(variance) and 0.0 < alpha < 1.0):
        return None
    if variance <= 0:
        return 0.0
    se = math.sqrt(variance / n)
    h = float(half_width(n, variance, alpha, tuning.rho_at(n)))

    def shortfall(delta: float) -> float:
        return float(ndtr((delta - h) / se) + ndtr((-delta - h) / se)) - POWER

    if shortfall(0.0) >= 0.0:  # a sequence this narrow excludes 0 that often anyway
        return 0.0
    # at h + (z_POWER + 1) se the first term alone is above POWER
    upper = h + (float(ndtri(POWER)) + 1.0) * se
    # imported here: scipy.optimize takes 0.2 s to import, which every paired comparison
    # module would pay on import for the sequential test alone
    from scipy.optimize import brentq

    return float(brentq(shortfall, 0.0, upper, xtol=1e-12 * (h + se)))


def width_ratio(n: int, level: float, horizon: int, df: float) -> float:
    """How many times as wide the sequence is as the fixed-horizon t-interval of the same
    standard error and level after ``n`` observations: sqrt(n) * boundary / t quantile
    (``df`` degrees of freedom), with rho tuned at alpha = 1 - level. NaN when undefined."""
    alpha = 1.0 - level
    if not (n >= 1 and df > 0 and 0.0 < alpha < 1.0):
        return math.nan
    rho = tuned_rho(horizon, alpha)
    quantile = float(stdtrit(df, 1.0 - alpha / 2.0))
    return float(math.sqrt(n) * boundary(n, alpha, rho) / quantile)


def checked_tuning(value: Any) -> int | None:
    """The ``sequential_tuning`` argument (N*, a positive integer, or None: tuned at the
    comparison's sample size); ConfigError naming it otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(
            f"sequential_tuning: expected a positive integer (N*, the sample size at which "
            f"the confidence sequence is tightest), got {value!r}"
        )
    return int(value)
