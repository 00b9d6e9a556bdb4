"""Degenerate samples: two constant arms (the exact permutation fallback) and CUPED on a
covariate without variance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from abrank.stats import UnitSums, compare, compare_clustered
from abrank.stats.constant_arms import constant_arms_p


def enumerated_permutation_p(control: list[float], treatment: list[float]) -> float:
    """The two-sided label-permutation p by brute force: the share of the ways to label
    n_t of the pooled values "treatment" whose |difference of means| reaches the observed."""
    pooled = np.array(control + treatment, dtype=float)
    n_t = len(treatment)
    observed = abs(np.mean(treatment) - np.mean(control))
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), n_t):
        mask = np.zeros(len(pooled), dtype=bool)
        mask[list(chosen)] = True
        diff = abs(pooled[mask].mean() - pooled[~mask].mean())
        hits += diff >= observed - 1e-12
        total += 1
    return hits / total


@pytest.mark.parametrize(("n_c", "n_t"), [(2, 3), (4, 2), (3, 3), (5, 7), (4, 4)])
def test_constant_arms_p_is_the_enumerated_permutation_p(n_c: int, n_t: int) -> None:
    control, treatment = [1.0] * n_c, [2.0] * n_t
    # by hand: only the observed labelling reaches |b - a| unless n_c = n_t (then the full
    # swap does too): 1 / C(n, n_t) or 2 / C(n, n_t)
    by_hand = (2 if n_c == n_t else 1) / math.comb(n_c + n_t, n_t)
    assert enumerated_permutation_p(control, treatment) == pytest.approx(by_hand, rel=1e-12)
    assert constant_arms_p(n_c, n_t) == pytest.approx(by_hand, rel=1e-12)


def test_independent_design_two_constant_arms_of_unequal_size() -> None:
    # 2 units at 1.0 and 3 at 2.0: C(5, 3) = 10 labellings, only the observed one reaches 1.0
    result = compare([1.0, 1.0], [2.0, 2.0, 2.0], design="independent", tests=("t",))
    assert result.p_value == pytest.approx(1 / 10, rel=1e-12)
    equal = compare([1.0] * 3, [2.0] * 3, design="independent", tests=("t",))
    assert equal.p_value == pytest.approx(2 / 20, rel=1e-12)


def test_clustered_two_constant_arms_of_unequal_size() -> None:
    # every unit's ratio is its arm's (0.5 in the control, 0.75 in the treatment), the
    # units' sizes differ: no variance; 3 and 4 units give C(7, 4) = 35 labellings
    control = UnitSums([1.0, 2.0, 0.5], [2.0, 4.0, 1.0])
    treatment = UnitSums([1.5, 3.0, 0.75, 2.25], [2.0, 4.0, 1.0, 3.0])
    result = compare_clustered(control, treatment, tests=("t",))
    assert result.delta == pytest.approx(0.25, rel=1e-12)
    assert result.p_value == pytest.approx(1 / 35, rel=1e-12)
    equal = compare_clustered(control, UnitSums([1.5, 3.0, 0.75], [2.0, 4.0, 1.0]), tests=("t",))
    assert equal.p_value == pytest.approx(2 / 20, rel=1e-12)


def test_cuped_on_a_constant_covariate_adjusts_nothing() -> None:
    rng = np.random.default_rng(11)
    n = 400
    d_c, d_t = rng.integers(1, 9, n).astype(float), rng.integers(1, 9, n).astype(float)
    y_c = UnitSums(rng.binomial(d_c.astype(int), 0.30).astype(float), d_c)
    y_t = UnitSums(rng.binomial(d_t.astype(int), 0.33).astype(float), d_t)
    # every unit's pre-period mean is 0.1 (its sums 0.1 * D: rounding noise in the ratio)
    p_c, p_t = rng.integers(1, 7, n).astype(float), rng.integers(1, 7, n).astype(float)
    x_c, x_t = UnitSums(0.1 * p_c, p_c), UnitSums(0.1 * p_t, p_t)
    plain = compare_clustered(y_c, y_t, tests=("t",))
    adjusted = compare_clustered(y_c, y_t, tests=("t",), covariate=(x_c, x_t))
    assert adjusted.cuped["theta"] == 0.0
    assert adjusted.cuped["variance_reduction"] == 0.0
    assert adjusted.delta == plain.delta
    assert adjusted.p_value == plain.p_value
    assert adjusted.ci == plain.ci
    assert any("no variance" in note or "nothing was adjusted" in note for note in adjusted.notes)


def test_cuped_on_a_covariate_that_varies_a_little_still_adjusts() -> None:
    rng = np.random.default_rng(12)
    n = 300
    d = np.full(n, 4.0)
    pre = rng.normal(1.0, 1e-3, (2, n))  # small but real variance: 1e-3 relative
    y_c = UnitSums(4 * pre[0] + rng.normal(0, 1e-3, n), d)
    y_t = UnitSums(4 * pre[1] + rng.normal(0, 1e-3, n), d)
    adjusted = compare_clustered(
        y_c, y_t, tests=("t",), covariate=(UnitSums(4 * pre[0], d), UnitSums(4 * pre[1], d))
    )
    assert adjusted.cuped["theta"] == pytest.approx(1.0, abs=0.1)
    assert adjusted.cuped["variance_reduction"] > 0.3
