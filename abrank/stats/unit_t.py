"""The t-tests of per-unit sums, for one comparison or for many at once.

A clustered comparison (two arms of units, each unit with its sums M_u and D_u) and an
interleaving comparison (one sample of units, M_u = wins + ties / 2, D_u = impressions)
end in the same few formulas: the delta-method variance of a ratio, a Welch-style t with
the exact permutation p of two constant arms, and, where an arm's impressions are
concentrated in few units, the leave-one-unit-out jackknife. They are written here once,
over rows of units: a run asks for one row, its comparison
(:mod:`abrank.stats.clustered_delta`, :mod:`abrank.stats.unit_jackknife`,
:mod:`abrank.stats.interleaved`), and the planner (``abrank simulate``) for one row per
simulated experiment, so that a plan's power is the power of the very test a run does.

Arrays are (rows, units); ``mask`` marks the units of a row that belong to the arm (the
others are ignored), so that rows of different sizes share one array.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtr

from abrank.stats.concentration import CONCENTRATED_SHARE
from abrank.stats.constant_arms import constant_arms_p_rows
from abrank.stats.estimation import REL_TOL

Rows = np.ndarray
"""A float array of shape (rows, units)."""


def linearized_rows(m: Rows, d: Rows, mask: Rows) -> tuple[np.ndarray, np.ndarray, Rows]:
    """Per row: the arm's units n, its ratio R = sum M / sum D, and each unit's deviation
    L_u = (M_u - R D_u) / mean(D) (0 outside ``mask``; Deng, Knoblich & Lu, KDD 2018)."""
    n = mask.sum(axis=1)
    total_d = np.where(mask, d, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(mask, m, 0.0).sum(axis=1) / total_d
        deviations = np.where(mask, (m - ratio[:, None] * d) / (total_d / n)[:, None], 0.0)
    return n, ratio, deviations


def variance_rows(deviations: Rows, mask: Rows) -> np.ndarray:
    """Per row, the delta-method variance of the arm's estimate: var(L, ddof=1) / n over
    the units in ``mask`` (NaN below two units)."""
    n = mask.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask, deviations, 0.0).sum(axis=1) / n
        centred = np.where(mask, deviations - mean[:, None], 0.0)
        variance = (centred * centred).sum(axis=1) / (n - 1) / n
    return np.where(n >= 2, variance, np.nan)


def jackknife_variance_rows(deviations: Rows, d: Rows, mask: Rows) -> np.ndarray:
    """Per row, the jackknife variance of the arm's ratio: (n - 1) / n sum (a_u - mean a)^2
    with a_u = R - R_(-u) = L_u / (n (1 - h_u)) and the leverages h_u = D_u / sum D (exactly
    the leave-one-unit-out ratios of an unadjusted arm); NaN below two units."""
    n = mask.sum(axis=1)
    total_d = np.where(mask, d, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(mask, deviations / (n[:, None] * (1.0 - d / total_d[:, None])), 0.0)
        centred = np.where(mask, a - (a.sum(axis=1) / n)[:, None], 0.0)
        variance = (n - 1) / n * (centred * centred).sum(axis=1)
    return np.where(n >= 2, variance, np.nan)


def effective_units_rows(d: Rows, mask: Rows) -> np.ndarray:
    """Per row, Kish's effective number of the arm's units: (sum D)^2 / sum D^2."""
    inside = np.where(mask, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return inside.sum(axis=1) ** 2 / (inside * inside).sum(axis=1)


def jackknife_degrees(d: Rows, mask: Rows) -> np.ndarray:
    """Per row, an arm's degrees of freedom under the jackknife: Kish's effective units
    times (n - 1) / n (NaN below two units)."""
    n = mask.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, effective_units_rows(d, mask) * (n - 1) / n, np.nan)


def welch_degrees(v_c: ArrayLike, v_t: ArrayLike, df_c: ArrayLike, df_t: ArrayLike) -> np.ndarray:
    """The Welch-Satterthwaite degrees of freedom of v_c + v_t, each on its own degrees of
    freedom (infinite where neither varies)."""
    v_c, v_t = np.asarray(v_c, dtype=np.float64), np.asarray(v_t, dtype=np.float64)
    df_c, df_t = np.asarray(df_c, dtype=np.float64), np.asarray(df_t, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = v_c**2 / df_c + v_t**2 / df_t
        return np.where(spread > 0, (v_c + v_t) ** 2 / spread, np.inf)


def welch_t(
    delta: ArrayLike, v_c: ArrayLike, v_t: ArrayLike, df_c: ArrayLike, df_t: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(se, df, p) of ``delta`` with the variance v_c + v_t, each arm's on its own degrees
    of freedom: the Welch-Satterthwaite df and the two-sided t p-value (capped at 1)."""
    delta, v_c, v_t = (np.asarray(a, dtype=np.float64) for a in (delta, v_c, v_t))
    df = welch_degrees(v_c, v_t, df_c, df_t)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(v_c + v_t)
        p = np.minimum(1.0, 2.0 * stdtr(df, -np.abs(delta) / se))
    return se, df, p


def difference_test(
    delta: ArrayLike,
    v_c: ArrayLike,
    v_t: ArrayLike,
    n_c: ArrayLike,
    n_t: ArrayLike,
    tol: ArrayLike,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(se, df, p) of the delta-method t-test of a difference of two arms' estimates.

    The arms' variances are on n - 1 degrees of freedom. Where no unit deviates (se within
    ``tol``) the exact permutation test of two constant arms stands in: p = 1 for equal
    estimates, :func:`abrank.stats.constant_arms.constant_arms_p` otherwise (df is then meaningless). NaN below two
    units an arm.
    """
    n_c, n_t = np.asarray(n_c, dtype=np.float64), np.asarray(n_t, dtype=np.float64)
    delta, tol = np.asarray(delta, dtype=np.float64), np.asarray(tol, dtype=np.float64)
    se, df, p = welch_t(delta, v_c, v_t, n_c - 1.0, n_t - 1.0)
    constant = np.where(np.abs(delta) <= tol, 1.0, constant_arms_p_rows(n_c, n_t))
    p = np.where(se <= tol, constant, p)
    return se, df, np.where((n_c >= 2) & (n_t >= 2), p, np.nan)


def ratio_difference_test(
    numerator: Rows, denominator: Rows, treated: Rows
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(delta, se, p) per row of per-unit sums, ``treated`` marking the treatment's units:
    the delta-method t-test of the treatment's ratio minus the control's
    (:func:`difference_test`), or, where an arm's impressions are concentrated (Kish's
    effective units below :data:`CONCENTRATED_SHARE` of its units) and the arms vary, the
    jackknife's t (its variance on Kish's degrees of freedom), as a run decides it
    (:mod:`abrank.stats.clustered_regime`)."""
    m, d = np.asarray(numerator, float), np.asarray(denominator, float)
    control = ~treated
    n_c, r_c, dev_c = linearized_rows(m, d, control)
    n_t, r_t, dev_t = linearized_rows(m, d, treated)
    delta = r_t - r_c
    tol = REL_TOL * (np.abs(r_c) + np.abs(r_t) + np.abs(delta))
    se, _, p = difference_test(
        delta, variance_rows(dev_c, control), variance_rows(dev_t, treated), n_c, n_t, tol
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        concentrated = (n_c >= 2) & (n_t >= 2) & (se > tol)
        share_c = effective_units_rows(d, control) / n_c
        share_t = effective_units_rows(d, treated) / n_t
    concentrated &= (share_c < CONCENTRATED_SHARE) | (share_t < CONCENTRATED_SHARE)
    if concentrated.any():  # the jackknife, on those rows only
        rows = np.flatnonzero(concentrated)
        c, t = control[rows], treated[rows]
        v_c = jackknife_variance_rows(dev_c[rows], d[rows], c)
        v_t = jackknife_variance_rows(dev_t[rows], d[rows], t)
        se_j, _, p_j = welch_t(
            delta[rows], v_c, v_t, jackknife_degrees(d[rows], c), jackknife_degrees(d[rows], t)
        )
        kept = se_j > 0  # no jackknife variance: the delta method's test stays
        p[rows[kept]], se[rows[kept]] = p_j[kept], se_j[kept]
    return delta, se, p


def preference_p(
    delta: ArrayLike, variance: ArrayLike, units: ArrayLike, all_ties: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """(se, p) of an interleaving preference Delta = R - 1/2 over G units: a t on G - 1
    degrees of freedom; p = 1 when every impression ties, 2^(1 - G) when no unit deviates,
    NaN below two units."""
    g = np.asarray(units, dtype=np.float64)
    delta, variance = np.asarray(delta, dtype=np.float64), np.asarray(variance, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(variance)
        p = np.minimum(1.0, 2.0 * stdtr(g - 1.0, -np.abs(delta) / se))
    p = np.where(se <= REL_TOL, np.minimum(1.0, 2.0 ** (1.0 - g)), p)
    p = np.where(g >= 2, p, np.nan)
    return se, np.where(all_ties, 1.0, p)


def preference_test(
    wins: Rows, losses: Rows, impressions: Rows
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Delta_AB, se, p) per row of per-unit win and loss counts and impressions: M_u =
    wins + ties / 2, D_u = impressions, Delta = sum M / sum D - 1/2 with the delta-method
    variance over the units (:func:`preference_p`)."""
    w, lost, d = (np.asarray(a, float) for a in (wins, losses, impressions))
    m = w + (d - w - lost) / 2.0
    every = np.ones(m.shape, dtype=bool)
    g, ratio, deviations = linearized_rows(m, d, every)
    delta = ratio - 0.5
    all_ties = (w.sum(axis=1) == 0) & (lost.sum(axis=1) == 0)
    se, p = preference_p(delta, variance_rows(deviations, every), g, all_ties)
    return delta, se, p


def one_row(values: np.ndarray) -> Rows:
    """One comparison's units as a single row, every unit in it."""
    return np.asarray(values, dtype=np.float64).reshape(1, -1)
