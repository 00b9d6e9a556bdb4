"""abrank.stats.unit_grid: cells of (M, D) rows keep D exact and the stated bound holds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abrank.stats import resampling as rs
from abrank.stats.unit_draws import relabel_row_sums
from abrank.stats.unit_grid import bernstein_bound, prepared_units, unit_grid


def many_distinct_rows(n: int, seed: int) -> np.ndarray:
    """click_rr-like per-user sums: ~6 impressions, Beta propensities, 1/rank values."""
    rng = np.random.default_rng(seed)
    d = rng.geometric(1 / 6, n)
    clicks = rng.binomial(d, rng.beta(0.5, 1.2, n))
    ranks = rng.geometric(0.5, clicks.sum())
    values = np.where(ranks <= 10, 1.0 / ranks, 0.0)
    m = np.bincount(np.repeat(np.arange(n), clicks), weights=values, minlength=n)
    return np.column_stack([m, d.astype(np.float64)])


def test_bernstein_bound_by_hand() -> None:
    log_term = math.log(2 / rs.FAILURE_PROB)
    expected = math.sqrt(2 * 0.01 * log_term / 400) + 2 * 0.5 * log_term / (3 * 400)
    assert bernstein_bound(0.01, 0.5, 400) == pytest.approx(expected, rel=1e-15)
    assert bernstein_bound(0.01, 0.5, 0) == 0.0


def test_cells_keep_d_exact_and_the_sums() -> None:
    rows = many_distinct_rows(20_000, 1)
    grid = unit_grid(rows, 20_000)
    assert grid is not None
    atoms = grid.sample.atoms
    assert atoms.n == 20_000
    assert set(atoms.values[:, 1]) <= set(rows[:, 1])  # every cell holds one value of D
    assert atoms.counts @ atoms.values[:, 1] == pytest.approx(rows[:, 1].sum(), rel=1e-12)
    assert atoms.counts @ atoms.values[:, 0] == pytest.approx(rows[:, 0].sum(), rel=1e-12)
    assert atoms.m < rs.exact_atoms(rows).m


def test_the_bound_holds_for_resamples_of_the_same_units() -> None:
    # the same drawn units summed exactly and through their cells (each unit mapped to
    # the cell of its D whose M range holds it, found here by a plain search)
    rows = many_distinct_rows(5_000, 2)
    grid = unit_grid(rows, 5_000)
    assert grid is not None
    m, d = rows[:, 0], rows[:, 1]
    low, width = m.min(), grid.width
    cell_of = {}
    for value, dd in zip(grid.sample.atoms.values[:, 0], grid.sample.atoms.values[:, 1]):
        cell = min(int((value - low) // width), int(round(np.ptp(m) / width)) - 1)
        cell_of[(cell, dd)] = value
    bins = int(round(np.ptp(m) / width))
    mapped = np.array(
        [cell_of[(min(int((x - low) // width), bins - 1), dd)] for x, dd in zip(m, d)]
    )
    assert np.all(np.abs(m - mapped) < width)
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(300):
        idx = rng.integers(0, 5_000, 5_000)
        worst = max(worst, abs(m[idx].mean() - mapped[idx].mean()))
    assert worst <= grid.bound(5_000)
    assert grid.bound(5_000) <= rs.GRID_SE_SHARE * np.std(m - m.sum() / d.sum() * d) / 70.7


def test_grid_resampled_ratios_agree_with_exact_ones() -> None:
    rows = many_distinct_rows(20_000, 4)
    sample, bound = prepared_units(rows, 10_000, 20_000)
    assert sample.method == "grid" and bound is not None
    rng = np.random.default_rng(5)
    grid_ratio = rs.bootstrap_sums(sample, 2_000, rng)
    exact = rs.prepare(rows, 2_000, (4096, 256), force="index")
    exact_ratio = rs.bootstrap_sums(exact, 2_000, rng)
    a = grid_ratio[:, 0] / grid_ratio[:, 1]
    b = exact_ratio[:, 0] / exact_ratio[:, 1]
    # the two bootstrap distributions: same centre and spread within Monte-Carlo error
    assert a.mean() == pytest.approx(b.mean(), abs=4 * b.std() / math.sqrt(1_000))
    assert a.std() == pytest.approx(b.std(), rel=0.1)
    ratio, mean_d = rows[:, 0].sum() / rows[:, 1].sum(), rows[:, 1].mean()
    assert bound(20_000, ratio, mean_d) < 0.1 * b.std()
    # and a relabelling through the same cells sums to the pooled totals
    first = relabel_row_sums(sample, 8_000, 50, rng)
    assert np.all(first[:, 1] > 0) and first.shape == (50, 2)


def test_no_unit_grid_for_too_many_values_of_d() -> None:
    rows = np.column_stack([np.arange(2_000.0), np.arange(1.0, 2_001.0)])
    assert unit_grid(rows, 2_000) is None
