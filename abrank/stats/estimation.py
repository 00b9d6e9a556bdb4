"""What every design shares: the outcome of one test, the per-design table of test
functions, interval helpers, small-sample thresholds and the notes they add.

A design module (:mod:`abrank.stats.paired`, :mod:`abrank.stats.independent`) holds one
:class:`DesignTests` table and registers one small function per test of
:data:`abrank.stats.registry.TESTS` that applies to it; the design then runs the tests a
comparison asks for, in the registry's order, and builds the result with
:func:`abrank.stats.results.build_comparison`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from scipy.special import stdtrit

from abrank.stats import registry
from abrank.stats.results import Interval, IntervalAt

GRID_BINS_DELTA = (4096,)
GRID_BINS_RATIO = (4096, 4)
REL_TOL = 1e-12
"""Relative tolerance under which two resampled statistics count as equal."""
MIN_BOOTSTRAP = 30
"""Fewest queries (per arm, in the independent design) for a bootstrap test or interval.

Below it even Hesterberg's expanded BCa interval covers 92-93% instead of 95% on lumpy
metric deltas (MRR-like values, simulated A/A at n = 10 and 20) and the bootstrap test
rejects 6.5-9% of true nulls; at n <= 5 no bootstrap interval can reach past the sample's
range, so one sign on every delta always "wins". Below it the readout leaves the bootstrap
out (p-value and intervals null) and says so; the relative lift's interval is Fieller's."""
MIN_LIFT_SHARE = 0.01
"""A relative lift is reported only when the control mean is at least this share of the
larger arm mean (a lift of at most +9,900%): beyond that the ratio says only that the
control scores about 0."""

UNBOUNDED: Interval = (-math.inf, math.inf)

NOTE_SMALL = (
    f"fewer than {MIN_BOOTSTRAP} queries: the bootstrap test and intervals are left out "
    "(they are too narrow at this size); the relative lift's interval is Fieller's"
)
NOTE_CONSTANT = (
    "every query moved by the same amount: the t-test is undefined (no variance), so its "
    "p-value and interval are the exact sign-flip test's (p = 2^(1 - n))"
)
NOTE_ONE = "fewer than 2 queries: no test or interval is possible"
NOTE_CUPED = (
    "CUPED: the delta, interval, p-value and relative lift are adjusted by the pre-period "
    "covariate (delta method); the permutation and bootstrap tests are not adjusted and "
    "are reported, with the unadjusted comparison, under cuped.unadjusted"
)
NOTE_LIFT = (
    f"the control mean is under {MIN_LIFT_SHARE:.0%} of the treatment's: no relative lift "
    "is reported (it would say only that the control scores about 0)"
)


# --------------------------------------------------------------------------- tests


@dataclass(frozen=True)
class TestOutcome:
    """What one test found on one comparison.

    ``interval`` is the test's own interval for the delta, as a function of its level,
    and ``interval_method`` its ``ci_method`` (``t``, ``bca``), when the test has one;
    ``relative`` an interval of the relative lift it drew on the way (the bootstrap);
    ``resampled`` its resampled deltas, for the charts; ``notes`` and ``approximations``
    the small-sample rules and grid-cell approximations it applied.
    """

    __test__ = False  # not a pytest test class

    p_value: float
    interval: IntervalAt | None = None
    interval_method: str | None = None
    relative: Callable[[float], Interval | None] | None = None
    resampled: np.ndarray | None = None
    notes: tuple[str, ...] = ()
    approximations: tuple[str, ...] = ()


Sample = TypeVar("Sample")


class DesignTests(Generic[Sample]):
    """The test functions of one design, each registered under its registry name."""

    def __init__(self, design: str) -> None:
        self.design = design
        self.functions: dict[str, Callable[[Sample], TestOutcome]] = {}

    def register(
        self, name: str
    ) -> Callable[[Callable[[Sample], TestOutcome]], Callable[[Sample], TestOutcome]]:
        """Decorator: ``function`` computes the test ``name`` (a registry test of this design)."""
        if name not in registry.test_names(self.design):
            raise ValueError(f"{name!r} is not a test of the {self.design} design in the registry")

        def add(function: Callable[[Sample], TestOutcome]) -> Callable[[Sample], TestOutcome]:
            self.functions[name] = function
            return function

        return add

    def missing(self) -> tuple[str, ...]:
        """Registry tests of this design without a function (empty when complete)."""
        return tuple(n for n in registry.test_names(self.design) if n not in self.functions)

    def run(self, names: Iterable[str], sample: Sample) -> dict[str, TestOutcome]:
        """The outcome of each named test on ``sample``, in the registry's order."""
        wanted = set(names)
        return {
            name: self.functions[name](sample)
            for name in registry.test_names(self.design)
            if name in wanted
        }


def primary_interval(primary_test: str, outcomes: dict[str, TestOutcome]) -> tuple[Any, str]:
    """The primary interval (as a function of its level) and its method: the primary
    test's own interval (the t-interval), else the bootstrap's, unbounded where the
    bootstrap was left out."""
    own = outcomes[primary_test]
    if own.interval is not None:
        return own.interval, own.interval_method or primary_test
    boot = outcomes.get("bootstrap")
    if boot is not None and boot.interval is not None:
        return boot.interval, boot.interval_method or "bca"
    return (lambda level: UNBOUNDED), "bca"


# --------------------------------------------------------------------------- helpers


def finite_or(value: float, default: float) -> float:
    """``value`` as a float, or ``default`` when it is NaN or infinite."""
    value = float(value)
    return value if math.isfinite(value) else default


def count_extreme(null: np.ndarray, observed: float, tol: float) -> int:
    """Resampled statistics at least as far from 0 as the observed one (two-sided)."""
    return int(np.count_nonzero(np.abs(null) >= abs(observed) - tol))


def lift(mean_c: float, mean_t: float, n_ok: bool) -> float | None:
    """mean_t / mean_c - 1, when the control mean is a usable base (MIN_LIFT_SHARE)."""
    if not n_ok or not (math.isfinite(mean_c) and math.isfinite(mean_t)) or mean_c == 0:
        return None
    if abs(mean_c) < MIN_LIFT_SHARE * max(abs(mean_c), abs(mean_t)):
        return None
    return mean_t / mean_c - 1.0


def t_interval(mean: float, se: float, df: float, level: float) -> Interval:
    """mean ± t quantile x se; unbounded without a finite standard error."""
    if not (math.isfinite(se) and df > 0):
        return UNBOUNDED
    half = float(stdtrit(df, 0.5 + level / 2.0)) * se
    return (mean - half, mean + half)


def constant_interval(value: float, n: int, level: float) -> Interval:
    """The exact sign-flip test inverted for n equal deltas: every other shift leaves all
    n shifted deltas with one sign, which the test calls with p = 2^(1 - n)."""
    if n < 1 or 2.0 ** (1 - n) >= 1.0 - level:
        return UNBOUNDED
    return (value, value)


def fieller_interval(
    mean_c: float,
    mean_t: float,
    var_c: float,
    var_t: float,
    cov: float,
    df: float,
    confidence_level: float,
) -> tuple[float, float] | None:
    """Fieller's interval for the relative lift mean_t / mean_c - 1.

    The set of ratios r for which mean_t - r * mean_c is not significantly different from
    0 by a t-test with ``df`` degrees of freedom; ``var_c``, ``var_t`` and ``cov`` are the
    variances and covariance of the two *means*. It accounts for the control's own noise
    and holds at small n; None when the set is unbounded (the control mean itself is not
    clearly away from 0).
    """
    if not (df > 0 and all(map(math.isfinite, (mean_c, mean_t, var_c, var_t, cov)))):
        return None
    q2 = float(stdtrit(df, 0.5 + confidence_level / 2.0)) ** 2
    a = mean_c**2 - q2 * var_c
    b = -2.0 * (mean_t * mean_c - q2 * cov)
    c = mean_t**2 - q2 * var_t
    disc = b * b - 4.0 * a * c
    if a <= 0 or disc < 0:
        return None
    root = math.sqrt(disc)
    low, high = (-b - root) / (2.0 * a), (-b + root) / (2.0 * a)
    return low - 1.0, high - 1.0
