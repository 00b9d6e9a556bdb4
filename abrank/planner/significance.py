"""The planner's tests: the same delta-method t-tests a real analysis runs, over many
simulated experiments at once (one row per experiment).

* :func:`clustered_t` is :func:`abrank.stats.compare_clustered`'s ``t`` test: per arm the
  ratio R = sum M / sum D and the delta-method variance
  sum (M_u - R D_u)^2 / (sum D)^2 * n / (n - 1), a Welch-style t with
  Welch-Satterthwaite degrees of freedom; with no variance, p = 1 for equal ratios and
  the exact permutation p (1 + [n_c = n_t]) / C(n_c + n_t, n_t) otherwise; NaN below two units an arm.
  Where an arm's impressions are concentrated in few units (Kish's effective number of
  units below :data:`abrank.stats.concentration.CONCENTRATED_SHARE` of them), the
  jackknife test gives the p-value and the standard error instead, as there
  (:mod:`abrank.stats.unit_jackknife`: leave-one-unit-out variance, the effective units
  times (n - 1) / n as each arm's degrees of freedom, Welch-Satterthwaite across arms).
* :func:`interleaved_t` is :func:`abrank.stats.interleaved.compare_interleaved`'s ``t``:
  M_u = wins + ties / 2, D_u = impressions, Delta = sum M / sum D - 1/2 with the same
  variance over the G units and a t on G - 1 degrees of freedom; p = 1 when every
  impression ties, 2^(1 - G) with no variance.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, stdtr

from abrank.stats.concentration import CONCENTRATED_SHARE
from abrank.stats.estimation import REL_TOL


def _arm(m: np.ndarray, d: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: units, ratio and delta-method variance of the units where ``mask``."""
    n = mask.sum(axis=1)
    total_d = np.where(mask, d, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(mask, m, 0.0).sum(axis=1) / total_d
        residual = np.where(mask, (m - ratio[:, None] * d) ** 2, 0.0).sum(axis=1)
        variance = residual / total_d**2 * n / (n - 1)
    return n, ratio, variance


def clustered_t(
    numerator: np.ndarray, denominator: np.ndarray, treated: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(delta, se, p) per row of the per-unit sums: the treatment's ratio minus the
    control's, its delta-method standard error and the test's two-sided p-value (module
    text)."""
    m, d = np.asarray(numerator, float), np.asarray(denominator, float)
    n_c, r_c, v_c = _arm(m, d, ~treated)
    n_t, r_t, v_t = _arm(m, d, treated)
    delta = r_t - r_c
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(v_c + v_t)
        spread = v_c**2 / (n_c - 1) + v_t**2 / (n_t - 1)
        df = np.where(spread > 0, (v_c + v_t) ** 2 / spread, np.inf)
        p = np.minimum(1.0, 2.0 * stdtr(df, -np.abs(delta) / se))
    tol = REL_TOL * (np.abs(r_c) + np.abs(r_t) + np.abs(delta))
    extremes = np.where(n_c == n_t, 2.0, 1.0)  # a full swap reaches -delta only then
    exact = np.minimum(1.0, np.exp(np.log(extremes) - _log_choose(n_c + n_t, n_t)))
    p = np.where(se <= tol, np.where(np.abs(delta) <= tol, 1.0, exact), p)
    enough = (n_c >= 2) & (n_t >= 2)
    p = np.where(enough, p, np.nan)
    kish_c, kish_t = _effective_units(d, ~treated), _effective_units(d, treated)
    concentrated = enough & (se > tol)
    concentrated &= (kish_c / n_c < CONCENTRATED_SHARE) | (kish_t / n_t < CONCENTRATED_SHARE)
    if concentrated.any():  # the jackknife, on those rows only
        rows = np.flatnonzero(concentrated)
        v_c = _jackknife_variance(m[rows], d[rows], ~treated[rows])
        v_t = _jackknife_variance(m[rows], d[rows], treated[rows])
        df_c = kish_c[rows] * (n_c[rows] - 1) / n_c[rows]
        df_t = kish_t[rows] * (n_t[rows] - 1) / n_t[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            se_j = np.sqrt(v_c + v_t)
            spread = v_c**2 / df_c + v_t**2 / df_t
            df_j = np.where(spread > 0, (v_c + v_t) ** 2 / spread, np.inf)
            p_j = np.minimum(1.0, 2.0 * stdtr(df_j, -np.abs(delta[rows]) / se_j))
        rows = rows[se_j > 0]
        p[rows], se[rows] = p_j[se_j > 0], se_j[se_j > 0]
    return delta, se, p


def _effective_units(d: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row, Kish's effective number of the units where ``mask``: (sum D)^2 / sum D^2."""
    d_in = np.where(mask, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return d_in.sum(axis=1) ** 2 / (d_in * d_in).sum(axis=1)


def _jackknife_variance(m: np.ndarray, d: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row, over the units where ``mask``: the jackknife variance of the ratio,
    (n - 1) / n sum (a_u - mean a)^2 with a_u = (M_u - R D_u) / (sum D - D_u)."""
    n = mask.sum(axis=1)
    total_d = np.where(mask, d, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(mask, m, 0.0).sum(axis=1) / total_d
        a = np.where(mask, (m - ratio[:, None] * d) / (total_d[:, None] - d), 0.0)
        centred = np.where(mask, a - (a.sum(axis=1) / n)[:, None], 0.0)
        return (n - 1) / n * (centred * centred).sum(axis=1)


def interleaved_t(
    wins: np.ndarray, losses: np.ndarray, impressions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Delta_AB, se, p) per row of per-unit win and loss counts and impressions."""
    w, lost, d = (np.asarray(a, float) for a in (wins, losses, impressions))
    m = w + (d - w - lost) / 2.0
    every = np.ones(m.shape, dtype=bool)
    g, ratio, variance = _arm(m, d, every)
    delta = ratio - 0.5
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(variance)
        p = np.minimum(1.0, 2.0 * stdtr(g - 1, -np.abs(delta) / se))
    p = np.where(se <= REL_TOL, np.minimum(1.0, 2.0 ** (1.0 - g)), p)
    p = np.where(g >= 2, p, np.nan)
    p = np.where((w.sum(axis=1) == 0) & (lost.sum(axis=1) == 0), 1.0, p)
    return delta, se, p


def _log_choose(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
