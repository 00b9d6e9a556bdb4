"""The sequential test's tuning, its minimum detectable effect, and what it does not draw.

* tuned at the comparison's own sample size unless ``sequential_tuning`` names N*;
* the MDE of a sequential primary test is the delta its confidence sequence excludes 0
  at with 80% probability at the current n (not the fixed-horizon t's);
* a sequential primary test has an interval of its own: no bootstrap is drawn for it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from abrank.stats import compare
from abrank.stats.draws import plan_shared_draws


def test_a_sequential_primary_test_draws_no_bootstrap() -> None:
    rng = np.random.default_rng(1)
    c, t = rng.random(400), rng.random(400)
    pairs = {"m": (c, t)}
    for run in (("sequential",), ("sequential", "t"), ("sequential", "t", "permutation")):
        shared = plan_shared_draws(pairs, {"m": run}, 10_000, 0, "treatment", None)
        assert shared.get("m") is None or shared["m"].delta is None, run
    # a primary test without an interval of its own still needs the bootstrap's
    shared = plan_shared_draws(pairs, {"m": ("permutation",)}, 10_000, 0, "treatment", None)
    assert shared["m"].delta is not None


def _boundary(n: int, variance: float, alpha: float, horizon: int) -> float:
    """The normal-mixture half-width by hand: rho^2 = (-2 log a + log(-2 log a + 1)) / N*."""
    a = -2.0 * math.log(alpha)
    r2 = (a + math.log(a + 1.0)) / horizon
    g = n * r2 + 1.0
    return math.sqrt(variance) * math.sqrt(2.0 * g / (n * n * r2) * math.log(math.sqrt(g) / alpha))


def test_the_default_tuning_is_the_comparisons_own_sample_size() -> None:
    rng = np.random.default_rng(3)
    for n_per_arm in (50, 100, 250):
        c, t = rng.random(n_per_arm) + 1.0, rng.random(n_per_arm) + 1.0
        got = compare(
            c, t, design="independent", primary_test="sequential", tests=("t", "sequential")
        )
        n = 2 * n_per_arm
        v = n * (c.var(ddof=1) / c.size + t.var(ddof=1) / t.size)
        half = _boundary(n, v, 0.05, n)
        assert got.ci[1] - got.ci[0] == pytest.approx(2 * half, rel=1e-9)
        # at its horizon the sequence is under 1.8 times the Welch interval (5,000: 2-3.4x)
        welch = sps.ttest_ind(t, c, equal_var=False).confidence_interval(0.95)
        assert (got.ci[1] - got.ci[0]) / (welch.high - welch.low) < 1.8


def test_the_sequential_mde_is_detected_80_percent_of_the_time() -> None:
    rng = np.random.default_rng(5)
    n = 200

    def standard(x: np.ndarray) -> np.ndarray:  # sample sd exactly 1, so the MDE is sd 1's
        return (x - x.mean()) / x.std(ddof=1) + 10.0

    c, t = standard(rng.standard_normal(n)), standard(rng.standard_normal(n))
    options = dict(design="independent", tests=("t", "sequential"))
    sequential_mde = compare(c, t, primary_test="sequential", **options).mde
    fixed_mde = compare(c, t, primary_test="t", **options).mde
    runs = 400  # power 0.8: binomial sd 0.02, so 3 sd is [0.74, 0.86]
    hits = {"sequential": 0, "fixed": 0}
    for name, delta in (("sequential", sequential_mde), ("fixed", fixed_mde)):
        for _ in range(runs):
            x, y = rng.standard_normal(n) + 10.0, rng.standard_normal(n) + 10.0 + delta
            got = compare(
                x, y, design="independent", primary_test="sequential", tests=("sequential",)
            )
            hits[name] += got.p_value < 0.05
    assert 0.74 <= hits["sequential"] / runs <= 0.86
    assert hits["fixed"] / runs < 0.6  # the fixed-horizon MDE is far below 80% power
