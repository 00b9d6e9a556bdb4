"""The delta-method tests of a clustered comparison: ``t`` and ``sequential``.

Each unit's linearized value L_u = (M_u - R D_u) / mean(D) has mean 0, so Var(R) ~
var(L) / n and the difference's variance is the sum of the arms' (Deng, Knoblich & Lu, KDD
2018). ``t`` is Welch-style (t quantiles with Welch-Satterthwaite degrees of freedom), with
the relative lift's interval on the log ratio; ``sequential`` is the always-valid
confidence sequence of the same estimate (:mod:`abrank.stats.sequential`). They are the
tests of the delta-method estimate, the only ones a CUPED adjustment applies to.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy.special import stdtrit

from abrank.stats.clustered_sample import ClusteredSample
from abrank.stats.estimation import UNBOUNDED, TestOutcome, lift, t_interval
from abrank.stats.results import Interval
from abrank.stats.sequential import lift_of_log, log_ratio_sequence, mean_sequence
from abrank.stats.unit_sums import ArmEstimate
from abrank.stats.unit_t import difference_test, welch_degrees

DELTA_METHOD_TESTS = ("t", "sequential")
"""The tests of the delta-method estimate: the only ones a CUPED adjustment applies to."""


def welch_df(v_c: float, v_t: float, n_c: int, n_t: int) -> float:
    """Welch-Satterthwaite degrees of freedom of the sum of two variances of means
    (:func:`abrank.stats.unit_t.welch_degrees` on n - 1 each)."""
    return float(welch_degrees(v_c, v_t, n_c - 1, n_t - 1))


def delta_method_test(s: ClusteredSample) -> TestOutcome:
    """The delta-method test of the difference of the arms' estimates (Welch-style t).

    When no unit deviates from its arm's ratio (no variance), the exact unit-label
    permutation test of two constant arms stands in (p = 1 / C(n_c + n_t, n_t), twice that
    for arms of equal size).
    """
    if not s.enough:
        return TestOutcome(math.nan, lambda level: UNBOUNDED, "t")
    c, t, obs = s.control, s.treatment, s.obs
    found = difference_test(obs, c.variance, t.variance, c.n, t.n, s.tol)
    se, df, p = (float(value) for value in found)
    if se <= s.tol:
        if abs(obs) <= s.tol:
            return TestOutcome(1.0, lambda level: (obs, obs), "t")

        def exact_at(level: float) -> Interval:
            return (obs, obs) if p < 1.0 - level else UNBOUNDED

        return TestOutcome(p, exact_at, "t")
    return TestOutcome(
        p,
        lambda level: t_interval(obs, se, df, level),
        "t",
        relative=log_ratio_interval(c, t),
    )


def log_ratio_interval(c: ArmEstimate, t: ArmEstimate) -> Callable[[float], Interval | None] | None:
    """The delta-method interval of t / c - 1 on the log ratio, as a function of its
    level; None when the lift is not reported or the ratio is not positive."""
    rc, rt = c.estimate, t.estimate
    if lift(rc, rt, True) is None or not rt / rc > 0:
        return None
    a, b = t.variance / rt**2, c.variance / rc**2
    se = math.sqrt(a + b)
    df = welch_df(b, a, c.n, t.n)
    centre = math.log(rt / rc)

    def relative(level: float) -> Interval | None:
        if not math.isfinite(se):
            return None
        half = float(stdtrit(df, 0.5 + level / 2.0)) * se if se > 0 else 0.0
        return (lift_of_log(centre - half), lift_of_log(centre + half))

    return relative


def delta_method_sequence(s: ClusteredSample) -> TestOutcome:
    """The always-valid test of the difference of the arms' estimates: the confidence
    sequence over n = units in both arms with per-unit variance n (Var R_c + Var R_t), and
    the relative lift's on the log ratio. Too few units or no variance: the delta-method
    test's stand-ins."""
    c, t = s.control, s.treatment
    if not s.enough or math.sqrt(c.variance + t.variance) <= s.tol:
        return delta_method_test(s)
    n = c.n + t.n
    relative = None
    if lift(c.estimate, t.estimate, True) is not None:
        relative = log_ratio_sequence(
            c.estimate, t.estimate, c.variance, t.variance, 0.0, n, s.sequential
        )
    variance = n * (c.variance + t.variance)
    return mean_sequence(s.obs, n, variance, s.sequential, relative=relative)
