"""abrank.stats.unit_lattice: the lattice bootstrap of a ratio's linearization.

References: the exact n-fold convolution of a small distribution worked out by repeated
np.convolve, and plain resampling of the units' (M, D) rows (index draws written here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from abrank.stats import UnitSums, compare_clustered
from abrank.stats import resampling as rs
from abrank.stats.unit_grid import bernstein_bound
from abrank.stats.unit_lattice import LATTICE_SE_SHARE, fft_points, lattice_bootstrap
from abrank.stats.unit_sums import linearized


def clicks_like(rng: np.random.Generator, n: int, rank_p: float = 0.5) -> UnitSums:
    """Users with ~6 impressions and a Beta click propensity; click_rr-like values."""
    d = 1 + rng.poisson(5, n)
    p = rng.beta(0.6, 1.4, n)
    clicks = rng.binomial(d, p)
    ranks = np.minimum(rng.geometric(rank_p, clicks.sum()), 10)
    m = np.bincount(np.repeat(np.arange(n), clicks), weights=1.0 / ranks, minlength=n)
    return UnitSums(m, d.astype(np.float64))


def slow_ratio_bootstrap(sums: UnitSums, n_resamples: int, seed: int) -> np.ndarray:
    """R* - R by plain index resampling of units, one resample at a time."""
    rng = np.random.default_rng(seed)
    n = sums.n_units
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        i = rng.integers(0, n, n)
        out[b] = sums.numerator[i].sum() / sums.denominator[i].sum()
    return out - sums.ratio


def test_the_distribution_is_the_exact_convolution_of_lattice_values() -> None:
    # the exact distribution of the mean of n draws of the units' lattice values, checked
    # against repeated np.convolve of their pmf (8 units: 8 convolutions)
    values = np.array([0.0, 0.5, 0.5, 1.0, 2.0, 2.0, 2.0, 3.5])
    n = values.size
    lb = lattice_bootstrap(values)
    assert lb is not None
    k = np.rint((values - values.min()) / lb.step).astype(int)
    offset = (values - (values.min() + lb.step * k)).mean()
    pmf = np.bincount(k) / n
    dist = np.array([1.0])
    for _ in range(n):
        dist = np.convolve(dist, pmf)
    means = values.min() + offset + lb.step * np.arange(dist.size) / n
    expected_cdf = np.cumsum(dist)
    assert means.mean() * 0 == 0 and lb.means[0] <= means[0] and lb.means[-1] >= means[-1]
    at = np.searchsorted(lb.means, means - lb.step / (4 * n))
    assert np.allclose(lb.means[at], means, rtol=0, atol=1e-9)
    assert np.allclose(lb.cdf[at], expected_cdf, rtol=0, atol=1e-12)
    assert lb.cdf[-1] == pytest.approx(1.0, abs=1e-12)


def test_draws_follow_the_cdf_and_the_seed() -> None:
    values = np.random.default_rng(1).exponential(size=500)
    lb = lattice_bootstrap(values)
    assert lb is not None
    one = lb.draw(20_000, np.random.default_rng(3))
    assert np.array_equal(one, lb.draw(20_000, np.random.default_rng(3)))
    # a plain bootstrap of the mean: same centre and spread within Monte-Carlo error
    rng = np.random.default_rng(4)
    plain = values[rng.integers(0, 500, (20_000, 500))].mean(axis=1)
    se = values.std() / math.sqrt(500)
    assert one.mean() == pytest.approx(plain.mean(), abs=0.04 * se)
    assert one.std() == pytest.approx(plain.std(), rel=0.03)
    for q in (0.025, 0.5, 0.975):
        assert np.quantile(one, q) == pytest.approx(np.quantile(plain, q), abs=0.06 * se)


def test_the_bound_is_bernsteins_and_within_its_share_of_the_se() -> None:
    values = linearized(clicks_like(np.random.default_rng(5), 20_000)).deviations
    lb = lattice_bootstrap(values)
    assert lb is not None
    k = np.rint((values - values.min()) / lb.step)
    residual = values - (values.min() + lb.step * k)
    centred = residual - residual.mean()
    expected = bernstein_bound(centred @ centred / values.size, np.abs(centred).max(), 20_000)
    assert lb.bound == pytest.approx(expected, rel=1e-12)
    assert lb.bound <= LATTICE_SE_SHARE * values.std() / math.sqrt(20_000)
    # the same drawn units, exact and on the lattice: within the bound
    lattice_values = values.min() + residual.mean() + lb.step * k
    rng = np.random.default_rng(6)
    for _ in range(50):
        i = rng.integers(0, 20_000, 20_000)
        assert abs(values[i].mean() - lattice_values[i].mean()) <= lb.bound


def test_fft_points_hold_the_sum() -> None:
    # the period covers the Bernstein tail: at least 2 * 9 sd of the sum of n draws
    points = fft_points(10_000, 4.0, 10.0)
    assert points >= 2 * 9 * math.sqrt(10_000 * 4.0)
    assert points & (points - 1) == 0
    assert lattice_bootstrap(np.ones(10)) is None


@pytest.mark.parametrize("n", [3_000, 60_000])
def test_the_linearized_bootstrap_agrees_with_the_exact_unit_bootstrap(n: int) -> None:
    rng = np.random.default_rng(n)
    sums = clicks_like(rng, n)
    values = linearized(sums).deviations
    lb = lattice_bootstrap(values)
    assert lb is not None
    ours = lb.draw(10_000, np.random.default_rng(7))
    reference = (
        slow_ratio_bootstrap(sums, 4_000, 8)
        if n <= 3_000
        else (lambda s: s[:, 0] / s[:, 1] - sums.ratio)(
            rs.bootstrap_sums(
                rs.prepare(
                    np.column_stack([sums.numerator, sums.denominator]),
                    4_000,
                    (1, 1),
                    force="index",
                ),
                4_000,
                np.random.default_rng(8),
            )
        )
    )
    se = values.std() / math.sqrt(n)
    # Monte-Carlo sd of a 2.5% quantile ~0.04 se at 4,000 resamples; 4 sd of both
    assert reference.std() == pytest.approx(ours.std(), rel=0.05)
    for q in (0.025, 0.5, 0.975):
        assert np.quantile(ours, q) == pytest.approx(np.quantile(reference, q), abs=0.2 * se)


def test_a_large_comparison_uses_the_lattice_and_says_so() -> None:
    rng = np.random.default_rng(11)
    control, treatment = clicks_like(rng, 40_000), clicks_like(rng, 40_000, 0.52)
    result = compare_clustered(control, treatment, tests=("t", "bootstrap"), metric="m")
    assert "lattice" in result.approximation and "O(1/n)" in result.approximation
    # the bootstrap interval matches the delta method's at this size (to ~Monte-Carlo error)
    se = math.sqrt(linearized(control).variance + linearized(treatment).variance)
    assert result.bootstrap_ci[0] == pytest.approx(result.ci[0], abs=0.1 * se)
    assert result.bootstrap_ci[1] == pytest.approx(result.ci[1], abs=0.1 * se)
    again = compare_clustered(control, treatment, tests=("t", "bootstrap"), metric="m")
    assert again.to_dict() == result.to_dict()


def test_metrics_side_by_side_give_what_one_core_gives(monkeypatch) -> None:
    from abrank.stats import clustered

    rng = np.random.default_rng(12)
    controls = {f"m{i}": clicks_like(rng, 300) for i in range(3)}
    treatments = {f"m{i}": clicks_like(rng, 280, 0.55) for i in range(3)}
    monkeypatch.setattr(clustered, "usable_cores", lambda: 2)
    two = clustered.compare_clustered_metrics(controls, treatments, seed=5)
    monkeypatch.setattr(clustered, "usable_cores", lambda: 1)
    one = clustered.compare_clustered_metrics(controls, treatments, seed=5)
    assert [r.to_dict() for r in two] == [r.to_dict() for r in one]
    assert [r.metric for r in two] == ["m0", "m1", "m2"]


def test_linear_cells_keep_the_sum_and_their_bound() -> None:
    from abrank.stats.unit_lattice import linear_cells

    values = linearized(clicks_like(np.random.default_rng(13), 20_000)).deviations
    cells = linear_cells(values, 10_000)
    atoms = cells.sample.atoms
    assert cells.sample.method == "grid" and atoms.m < np.unique(values).size
    assert atoms.counts @ atoms.values[:, 0] == pytest.approx(values.sum(), abs=1e-9)
    target = rs.GRID_SE_SHARE * values.std() / math.sqrt(10_000)
    assert 0 < cells.bound(10_000) <= target
    expected = bernstein_bound(cells.residual_var, cells.width, 10_000)
    assert cells.bound(10_000) == pytest.approx(expected, rel=1e-15)
    few = np.repeat([0.0, 1.0, 3.0], 50)  # three values: exact, no bound
    assert linear_cells(few, 100).sample.method == "exact"
    assert linear_cells(few, 100).bound(100) == 0.0


def test_the_linearized_permutation_p_matches_a_slow_permutation_loop() -> None:
    rng = np.random.default_rng(14)
    control, treatment = clicks_like(rng, 1_500), clicks_like(rng, 1_400)
    treatment = UnitSums(treatment.numerator * 1.06, treatment.denominator)
    result = compare_clustered(control, treatment, tests=("t", "permutation"), seed=2, metric="m")
    assert "permutation test (the pooled ratio's delta-method linearization" in (
        result.approximation
    )
    m = np.concatenate([treatment.numerator, control.numerator])
    d = np.concatenate([treatment.denominator, control.denominator])
    observed = treatment.ratio - control.ratio
    slow = np.random.default_rng(8)
    count, big_b = 0, 20_000
    for _ in range(big_b):  # plain loop: relabel units, exact ratios
        order = slow.permutation(m.size)
        first, rest = order[:1_400], order[1_400:]
        null = m[first].sum() / d[first].sum() - m[rest].sum() / d[rest].sum()
        count += abs(null) >= abs(observed) - 1e-12
    reference = (count + 1) / (big_b + 1)
    assert 0.01 < reference < 0.5
    mc = math.sqrt(reference * (1 - reference) * (1 / big_b + 1 / 10_000))
    assert result.p_values["permutation"] == pytest.approx(reference, abs=4 * mc)
