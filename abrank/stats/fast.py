"""scipy.stats and statsmodels results that abrank needs on every run, without their cost.

Importing ``scipy.stats`` and ``statsmodels`` takes about a second, and their generic
machinery costs far more per call than the arithmetic behind it (statsmodels' power solver
re-evaluates the same t quantile on every step of its root search). The few results a
paired readout needs are computed here from ``scipy.special`` directly:

* :func:`ttest_1samp`: ``scipy.stats.ttest_1samp(x, 0)`` and its ``confidence_interval``,
  with the same operations in the same order, so the same bits;
* :func:`multipletests`: ``statsmodels.stats.multitest.multipletests`` for Holm,
  Bonferroni and Benjamini-Hochberg (the same bits; other methods go to statsmodels);
* :func:`ttest_effect_size`: the standardized effect that a two-sided t-test detects with
  a given power, statsmodels' ``TTestPower`` / ``TTestIndPower.solve_power``: the same
  root search over the same power function, evaluated with ``scipy.special`` directly
  (statsmodels goes through ``scipy.stats.t`` on each of its ~70 evaluations), so the
  same bits, and cached per design.

Tests check each against the library it stands in for.
"""

from __future__ import annotations

import math
from functools import lru_cache
from types import ModuleType

import numpy as np
from scipy import special

_PORTED_CORRECTIONS = ("bonferroni", "holm", "fdr_bh")


def ttest_1samp(x: np.ndarray, confidence_level: float) -> tuple[float, float, float]:
    """Two-sided one-sample t-test of mean 0: (p-value, CI low, CI high).

    The same numbers, bit for bit, as ``res = scipy.stats.ttest_1samp(x, 0.0)`` with
    ``res.pvalue`` and ``res.confidence_interval(confidence_level)``: the mean, the
    two-pass variance scaled by n / (n - 1), and the t distribution's ``stdtr`` and
    ``stdtrit``, in scipy's order of operations. ``x`` is a 1-D float array of size >= 2.
    """
    x = np.asarray(x, dtype=np.float64)
    n = float(x.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.mean(x)
        centred = x - np.mean(x, keepdims=True)
        var = np.mean(centred**2) * (n / (n - 1.0))
        se = np.sqrt(var / n)
        t = np.divide(mean, se)
        p = 2 * special.stdtr(n - 1.0, -np.abs(t))
        tail = (1.0 - np.float64(confidence_level)) / 2
        low, high = special.stdtrit(x.size - 1, np.stack((tail, 1 - tail)))
        return float(p), float(low * se + mean), float(high * se + mean)


def multipletests(pvals: np.ndarray, alpha: float = 0.05, method: str = "holm") -> tuple:
    """``statsmodels.stats.multitest.multipletests(pvals, alpha, method)[:2]``:
    (reject, adjusted p-values), in the input order.

    Holm, Bonferroni and Benjamini-Hochberg (``fdr_bh``) are computed here with
    statsmodels' operations, giving the same bits; any other method is passed on to
    statsmodels.
    """
    if method not in _PORTED_CORRECTIONS:
        from statsmodels.stats.multitest import multipletests as statsmodels_multipletests

        return tuple(statsmodels_multipletests(pvals, alpha=alpha, method=method)[:2])
    pvals = np.asarray(pvals)
    order = np.argsort(pvals)
    p = np.take(pvals, order)
    ntests = len(p)
    if method == "bonferroni":
        reject = p <= (alpha / float(ntests) if ntests else np.nan)
        corrected = p * float(ntests)
    elif method == "holm":
        notreject = p > alpha / np.arange(ntests, 0, -1)
        nonzero = np.nonzero(notreject)[0]
        notreject[(nonzero.min() if nonzero.size else ntests) :] = True
        reject = ~notreject
        corrected = np.maximum.accumulate(p * np.arange(ntests, 0, -1))
    else:  # fdr_bh
        ecdf = np.arange(1, ntests + 1) / float(ntests)
        reject = p <= ecdf * alpha
        if reject.any():
            reject[: max(np.nonzero(reject)[0])] = True
        corrected = np.minimum.accumulate((p / ecdf)[::-1])[::-1]
    corrected[corrected > 1] = 1
    adjusted = np.empty_like(corrected)
    adjusted[order] = corrected
    rejected = np.empty_like(reject)
    rejected[order] = reject
    return rejected, adjusted


def ttest_effect_size(
    nobs: int, alpha: float, power: float, ratio: float | None = None
) -> float | None:
    """Standardized effect (mean / sd) that a two-sided t-test detects with ``power``.

    ``statsmodels.stats.power.TTestPower().solve_power(effect_size=None, nobs=nobs,
    alpha=alpha, power=power)`` when ``ratio`` is None, else ``TTestIndPower`` with
    ``nobs1=nobs`` and ``ratio``: the same root search (statsmodels' bracket expansion,
    scipy's ``brentq`` with its ``xtol=1e-5``, then ``fsolve`` from 0.01 and a last
    ``brentq`` on (1e-8, 1 - 1e-8)) over the same power function, so the same bits; the
    power is evaluated with ``scipy.special`` directly instead of through
    ``scipy.stats``' distribution objects, which cost a millisecond per call. Returns
    None where statsmodels fails or gives a non-finite or non-positive effect. Cached:
    a readout asks the same question for every metric of a segment.
    """
    return _effect_size(
        int(nobs), float(alpha), float(power), None if ratio is None else float(ratio)
    )


@lru_cache(maxsize=4096)
def _effect_size(nobs: int, alpha: float, power: float, ratio: float | None) -> float | None:
    try:
        with np.errstate(all="ignore"):  # inf - inf while bracketing, as in statsmodels
            es = _solve_effect_size(_PowerGap(nobs, alpha, power, ratio))
    except Exception:  # the solver fails only for hopeless designs (n of 2 or 3)
        return None
    value = float(np.asarray(es).reshape(-1)[0])
    return value if math.isfinite(value) and value > 0 else None


class _PowerGap:
    """statsmodels' ``solve_power`` objective for the effect size: power(effect) - power.

    ``ttest_power(effect, nobs, alpha, df)`` with its operations in its order; inf where
    it would be NaN, and at most 500 evaluations, as statsmodels counts them.
    """

    def __init__(self, nobs: int, alpha: float, power: float, ratio: float | None):
        df: float
        effective: float
        if ratio is None:
            df, effective = nobs - 1, nobs
        else:
            other = nobs * ratio
            df, effective = nobs - 1 + other - 1, 1.0 / (1.0 / nobs + 1.0 / other)
        half = alpha / 2.0
        self.df = df
        self.upper = -special.stdtrit(df, half)  # scipy.stats.t.isf(alpha / 2, df)
        self.lower = special.stdtrit(df, half)  # scipy.stats.t.ppf(alpha / 2, df)
        self.root_n = np.sqrt(effective)
        self.power = power
        self.calls = 0

    def __call__(self, effect: float | np.ndarray) -> float | np.ndarray:
        self.calls += 1
        if self.calls > 500:
            raise RuntimeError("possible endless loop (500 NaNs)")
        if np.isnan(self.upper) or np.isnan(self.lower):
            return np.inf
        nc = effect * self.root_n
        achieved = 1 - special.nctdtr(self.df, nc, self.upper)
        achieved += special.nctdtr(self.df, nc, self.lower)
        gap = achieved - self.power
        return np.inf if np.isnan(gap) else gap


def _solve_effect_size(func: _PowerGap) -> float | np.ndarray:
    """statsmodels' ``Power.solve_power`` for the effect size, step for step."""
    from scipy import optimize

    try:
        val, converged = _brentq_expanding(func, optimize)
        failed = False
    except ValueError:
        failed = True
    if failed or not converged:
        val, info, ier, _ = optimize.fsolve(func, 0.01, full_output=True)
        if not (ier == 1 and np.abs(info["fvec"]) < 1e-4):
            val, result = optimize.brentq(func, 1e-8, 1 - 1e-8, full_output=True)
            if not result.converged:
                return math.nan
    return val


def _brentq_expanding(func: _PowerGap, optimize: ModuleType) -> tuple[float, bool]:
    """``statsmodels.tools.rootfinding.brentq_expanding`` with its defaults (no bounds,
    no start values, ``xtol=1e-5``, ``factor=10``, ``max_it=100``): (root, converged)."""
    sl, su = -1.0, 1.0
    f_low, f_upp = func(sl), func(su)
    if np.max(np.abs(f_upp - f_low)) < 1e-15:  # symmetric around zero: start above it
        sl = 1e-8
        f_low = func(sl)
    increasing = f_low < f_upp  # the objective is never NaN (NaN becomes inf)
    left = right = None
    if not increasing:
        sl, su = su, sl
    n_it = 0
    if sl != 0:
        left = sl
        while func(left) > 0:
            right = left
            left *= 10
            if n_it >= 100:
                break
            n_it += 1
    if right is None and su != 0:
        right = su
        while func(right) < 0:
            left = right
            right *= 10
            if n_it >= 100:
                break
            n_it += 1
    if n_it >= 100:  # statsmodels evaluates both bounds again (they count as calls)
        func(sl)
        func(su)
    root, result = optimize.brentq(func, left, right, xtol=1e-5, maxiter=100, full_output=True)
    return root, result.converged
