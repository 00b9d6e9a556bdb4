"""The minimum detectable effect: the smallest |delta| a test of this size would detect.

Solved with statsmodels' power solver (through the bit-equal fast path of
:mod:`abrank.stats.fast`) at :data:`POWER`, for the comparison's n and variance.
"""

from __future__ import annotations

import math

from abrank.stats import fast as fast_stats

POWER = 0.8
"""The power at which the minimum detectable effect is stated."""


def minimum_detectable_effect(
    n: int, sd: float, alpha: float, ratio: float | None = None
) -> float | None:
    """Smallest |delta| detectable with :data:`POWER` by a two-sided t-test at ``alpha``.

    ``n`` is the number of pairs (paired design) or the control arm's size with
    ``ratio`` = n_treatment / n_control (independent design); ``sd`` the standard
    deviation of the deltas or the pooled one. None with fewer than 2 values or where the
    solver finds no effect; 0 when nothing varies.
    """
    if n < 2 or not math.isfinite(sd):
        return None
    if sd == 0:
        return 0.0
    # statsmodels' TTestPower / TTestIndPower.solve_power, the same bits, cached per design
    es = fast_stats.ttest_effect_size(n, alpha, POWER, ratio)
    return es * sd if es is not None else None


def normal_detectable_effect(se: float, alpha: float) -> float | None:
    """Smallest |delta| a two-sided normal (z) test at ``alpha`` detects with
    :data:`POWER`, for an estimate of standard error ``se``: (z_{1-alpha/2} + z_POWER) se.
    None when ``se`` is not finite."""
    from scipy.stats import norm

    if not math.isfinite(se):
        return None
    return float((norm.ppf(1.0 - alpha / 2.0) + norm.ppf(POWER)) * se)
