"""The planner's tests: the same delta-method t-tests a real analysis runs, over many
simulated experiments at once (one row per experiment).

* :func:`clustered_t` is :func:`abrank.stats.compare_clustered`'s ``t`` test: per arm the
  ratio R = sum M / sum D and the delta-method variance
  sum (M_u - R D_u)^2 / (sum D)^2 * n / (n - 1), a Welch-style t with
  Welch-Satterthwaite degrees of freedom; with no variance, p = 1 for equal ratios and
  the exact permutation p (1 + [n_c = n_t]) / C(n_c + n_t, n_t) otherwise; NaN below two units an arm.
* :func:`interleaved_t` is :func:`abrank.stats.interleaved.compare_interleaved`'s ``t``:
  M_u = wins + ties / 2, D_u = impressions, Delta = sum M / sum D - 1/2 with the same
  variance over the G units and a t on G - 1 degrees of freedom; p = 1 when every
  impression ties, 2^(1 - G) with no variance.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, stdtr

from abrank.stats.estimation import REL_TOL


def _arm(m: np.ndarray, d: np.ndarray, mask: np.ndarray):
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
    p = np.where((n_c >= 2) & (n_t >= 2), p, np.nan)
    return delta, se, p


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
