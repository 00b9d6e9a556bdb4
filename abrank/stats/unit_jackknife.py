"""The jackknife test of a clustered comparison: the verdict where few units hold most
of the impressions.

The delta method's variance of an arm's ratio R = sum M / sum D is sum (M_u - R D_u)^2 /
(sum D)^2 (times n / (n - 1)), and its t-test takes the units as the degrees of freedom.
Both fail when a few heavy units hold much of the denominator (see
:mod:`abrank.stats.concentration`): a heavy unit pulls R towards its own value, so its
residual is too small (the leverage h_u = D_u / sum D of a weighted mean), and the
variance rests on those few units, so it is far noisier than n degrees of freedom say.

The jackknife (leave one unit out) corrects the first: R_(-u) - R = -(M_u - R D_u) /
(sum D - D_u), each unit's residual inflated by 1 / (1 - h_u) (the CR3 cluster-robust
variance; Bell & McCaffrey 2002, MacKinnon & White 1985), and

    Var_J(R) = (n - 1) / n * sum_u (R_(-u) - mean R_(-.))^2.

The degrees of freedom are the arm's effective number of units, Kish's n_eff = (sum D)^2
/ sum D^2 times (n - 1) / n (n - 1 for equal denominators, as the delta method): the
Satterthwaite degrees of freedom of a variance summed over units whose terms grow with
D_u. The two arms combine as Welch's, Var_J(R_t) + Var_J(R_c) with Welch-Satterthwaite
degrees of freedom. On simulated A/A logs the test rejects 5.9% (500 users per arm, 5 at
100 times the impressions) and 4.2% (100 per arm, 2 heavy) of true nulls at alpha 0.05,
where the delta method rejects 14% and 33%; on ordinary traffic the two agree
(``benchmarks/bench_calibration_heavy_users.py``).

The interval is the test's own t-interval, and the relative lift's is Fieller's with the
jackknife variances (the lifts r for which the same test of R_t - (1 + r) R_c does not
reject): both exclude 0 exactly when the test rejects. Under CUPED the same variance is
taken of the adjusted linearized values (theta held at its estimate).

An interleaving log is one sample of units (:mod:`abrank.stats.interleaved`: the
preference R - 1/2 of the ratio R of the units' credited wins to their impressions); its
test (:func:`jackknife_one_sample_test`) is the same variance of that one ratio on its own
degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import nctdtr, stdtr, stdtrit

from abrank.stats.concentration import CONCENTRATED_SHARE, Concentration
from abrank.stats.estimation import TestOutcome, fieller_interval, lift, t_interval
from abrank.stats.results import Interval
from abrank.stats.unit_sums import ArmEstimate
from abrank.stats.unit_t import jackknife_degrees, jackknife_variance_rows, one_row, welch_t

JACKKNIFE = "jackknife"
"""The test's name in ``p_values``, ``primary_test`` and ``ci_method``."""


def jackknife_regime(
    figures: Mapping[str, Concentration], configured: str, se: float, df: float
) -> dict[str, Any]:
    """A comparison's ``regime`` when the jackknife gave its verdict: the concentration
    figures by arm (``all`` for an interleaved log), the test configured and the jackknife's
    standard error and degrees of freedom."""
    return {
        "reasons": ["concentrated"],
        "threshold": CONCENTRATED_SHARE,
        **{arm: found.to_dict() for arm, found in figures.items()},
        "configured_test": configured,
        "test": JACKKNIFE,
        "se": se,
        "df": df,
    }


def jackknife_variance(arm: ArmEstimate, denominator: np.ndarray) -> float:
    """Var_J = (n - 1) / n * sum (a_u - mean a)^2 over each unit's leave-one-out change
    a_u = R - R_(-u) (NaN below 2 units): :func:`abrank.stats.unit_t.jackknife_variance_rows`
    of this one arm."""
    if arm.n < 2:
        return math.nan
    every = np.ones((1, arm.n), dtype=bool)
    return float(jackknife_variance_rows(one_row(arm.deviations), one_row(denominator), every)[0])


def arm_degrees(denominator: np.ndarray) -> float:
    """An arm's degrees of freedom: Kish's n_eff of its denominators times (n - 1) / n
    (:func:`abrank.stats.unit_t.jackknife_degrees` of this one arm)."""
    d = one_row(denominator)
    return float(jackknife_degrees(d, np.ones(d.shape, dtype=bool))[0])


def jackknife_test(
    obs: float,
    control: ArmEstimate,
    treatment: ArmEstimate,
    d_control: np.ndarray,
    d_treatment: np.ndarray,
) -> tuple[TestOutcome, float, float] | None:
    """The jackknife test of ``obs`` = treatment - control: (its outcome, its standard
    error, its degrees of freedom); None when its variance is not positive (no test to
    give: the caller keeps its own)."""
    v_c = jackknife_variance(control, d_control)
    v_t = jackknife_variance(treatment, d_treatment)
    if not math.isfinite(v_c + v_t) or not v_c + v_t > 0:
        return None
    found = welch_t(obs, v_c, v_t, arm_degrees(d_control), arm_degrees(d_treatment))
    se, df, p = (float(value) for value in found)
    relative = fieller_lift(control.estimate, treatment.estimate, v_c, v_t, df)
    outcome = TestOutcome(
        min(1.0, p),
        lambda level: t_interval(obs, se, df, level),
        JACKKNIFE,
        relative=relative,
    )
    return outcome, se, df


def jackknife_one_sample_test(
    obs: float, arm: ArmEstimate, denominator: np.ndarray
) -> tuple[TestOutcome, float, float] | None:
    """The jackknife test of ``obs`` = R - R_0 for one sample of units (an interleaving
    log's preference, R_0 = 1/2): :func:`jackknife_variance` of its ratio on
    :func:`arm_degrees` degrees of freedom; (its outcome, its standard error, its degrees
    of freedom), None when the variance is not positive. With equal denominators this is
    the delta method's t-test on n - 1 degrees of freedom."""
    se = math.sqrt(jackknife_variance(arm, denominator)) if arm.n >= 2 else math.nan
    if not se > 0:
        return None
    df = arm_degrees(denominator)
    p = float(2.0 * stdtr(df, -abs(obs) / se))
    return TestOutcome(min(1.0, p), lambda level: t_interval(obs, se, df, level), JACKKNIFE), se, df


def fieller_lift(
    r_c: float, r_t: float, v_c: float, v_t: float, df: float
) -> Callable[[float], Interval | None] | None:
    """Fieller's interval of R_t / R_c - 1 with the arms' jackknife variances (independent
    arms: no covariance) on ``df`` degrees of freedom, as a function of its level; None
    when the lift is not reported."""
    if lift(r_c, r_t, True) is None:
        return None

    def relative(level: float) -> Interval | None:
        return fieller_interval(r_c, r_t, v_c, v_t, 0.0, df, level)

    return relative


def t_test_mde(se: float, df: float, alpha: float, power: float) -> float | None:
    """The smallest |delta| a two-sided t-test of standard error ``se`` on ``df`` degrees
    of freedom detects at ``alpha`` with probability ``power`` (the noncentral t, as
    statsmodels' power solver); None without a finite se."""
    if not (math.isfinite(se) and df > 0 and 0.0 < alpha < 1.0):
        return None
    if se == 0:
        return 0.0
    q = float(stdtrit(df, 1.0 - alpha / 2.0))

    def shortfall(shift: float) -> float:
        near = 1.0 - float(nctdtr(df, shift, q))
        if not math.isfinite(near):  # the special function gives up: the slower series
            from scipy.stats import nct

            near = float(nct.sf(q, df, shift))
        far = float(nctdtr(df, shift, -q))  # NaN where it underflows, at about 0
        return near + (far if math.isfinite(far) else 0.0) - power

    upper = q + 4.0
    for _ in range(64):
        if shortfall(upper) >= 0.0:
            break
        upper *= 2.0
    else:
        return None
    return float(brentq(shortfall, 0.0, upper, xtol=1e-12 * upper)) * se
