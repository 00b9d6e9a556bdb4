"""abrank.stats.resampling: exact enumeration, scipy's BCa, and distribution checks between methods."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from abrank.stats import compare
from abrank.stats import resampling as rs


def _mc_band(p: float, draws: int) -> float:
    """Five Monte-Carlo standard errors plus the +1 correction's shift."""
    return 5 * math.sqrt(max(p * (1 - p), 1e-4) / draws) + 2 / draws


def test_exact_atoms_group_equal_rows() -> None:
    atoms = rs.exact_atoms(np.array([0.5, 0.1, 0.5, 1.0, 0.1, 0.5]))
    assert atoms.values[:, 0].tolist() == [0.1, 0.5, 1.0]
    assert atoms.counts.tolist() == [2, 3, 1]
    pairs = rs.exact_atoms(np.array([[1.0, 2.0], [0.0, 2.0], [1.0, 2.0], [1.0, 0.0]]))
    assert pairs.values.tolist() == [[0.0, 2.0], [1.0, 0.0], [1.0, 2.0]]
    assert pairs.counts.tolist() == [1, 1, 2]
    assert rs.exact_atoms(np.empty(0)).m == 0


def test_last_bit_variants_of_a_value_are_one_atom() -> None:
    values = np.array([0.1 + 0.2, 0.3, 0.3, 1 / 3, 0.7])  # 0.30000000000000004 and 0.3
    atoms = rs.exact_atoms(values)
    assert atoms.counts.tolist() == [3, 1, 1]
    assert atoms.values[:, 0] == pytest.approx([0.3, 1 / 3, 0.7], abs=1e-15)
    rows = np.column_stack([values, [1.0, 2.0, np.nextafter(2.0, 3.0), 2.0, 1.0]])
    pairs = rs.exact_atoms(rows)
    assert pairs.counts.tolist() == [1, 2, 1, 1]
    expected = [[0.3, 1.0], [0.3, 2.0], [1 / 3, 2.0], [0.7, 1.0]]
    assert pairs.values.ravel() == pytest.approx(np.ravel(expected), abs=1e-15)


def test_a_value_on_a_grid_edge_stays_in_its_cell_whatever_its_last_bits() -> None:
    below = np.nextafter(0.5, 0.0)  # 0.5 summed in another order
    atoms = rs.grid_atoms(np.array([0.0, 0.5, below, 1.0]), (2,))  # edge at 0.5
    assert atoms.counts.tolist() == [1, 3]


def _ndcg_values(rng: np.random.Generator, n: int, other_engine: bool) -> np.ndarray:
    """NDCG@10 of n random binary lists with 1-3 relevant documents each (values such as
    1, 0.5 and 0: on the edges of a grid over [0, 1]); with ``other_engine``, computed as
    an SQL engine may: discounts as ln(i + 2) / ln 2, each list's terms summed in an
    order of its own."""
    hits = rng.random((n, 10)) < 0.15
    relevant = np.maximum(hits.sum(axis=1), rng.integers(1, 4, n))
    positions = np.arange(10) + 2.0
    discount = np.log(positions) / np.log(2.0) if other_engine else np.log2(positions)
    terms = np.where(hits, 1.0 / discount, 0.0)
    ideal_terms = np.where(np.arange(10) < relevant[:, None], 1.0 / discount, 0.0)
    if other_engine:
        order = np.argsort(np.random.default_rng(99).random((n, 10)), axis=1)
        terms = np.take_along_axis(terms, order, axis=1)
    dcg, ideal = np.zeros(n), np.zeros(n)
    for column in range(10):
        dcg, ideal = dcg + terms[:, column], ideal + ideal_terms[:, column]
    return dcg / ideal


def test_metrics_summed_in_another_order_give_the_same_comparison() -> None:
    n = 150_000  # the bootstraps pool rows into grid cells
    c, t = (_ndcg_values(np.random.default_rng(seed), n, False) for seed in (31, 32))
    c2, t2 = (_ndcg_values(np.random.default_rng(seed), n, True) for seed in (31, 32))
    assert np.any(c != c2) and np.all(np.abs(c - c2) < 1e-15)
    first = compare(c, t, n_resamples=2000, seed=5).to_dict()
    second = compare(c2, t2, n_resamples=2000, seed=5).to_dict()
    for key in ("bootstrap_ci", "relative_ci_bootstrap"):
        assert second[key] == pytest.approx(first[key], abs=1e-12)
    assert second["p_values"] == pytest.approx(first["p_values"], abs=1e-12)


def test_grid_atoms_hold_cell_means() -> None:
    x = np.array([0.0, 0.1, 0.45, 0.55, 1.0])
    atoms = rs.grid_atoms(x, (2,))  # cells [0, 0.5) and [0.5, 1]
    assert atoms.counts.tolist() == [3, 2]
    assert atoms.values[:, 0] == pytest.approx([0.55 / 3, 0.775], abs=1e-15)
    assert atoms.widths.tolist() == [0.5]


@pytest.mark.parametrize("method", ["exact", "index"])
def test_sign_flip_p_value_matches_exact_enumeration(method: str) -> None:
    rng = np.random.default_rng(1)
    # 14 deltas with repeated magnitudes, as metric deltas have
    d = rng.choice([-0.5, -0.25, 0.1, 0.25, 0.5, 1.0, 0.0], size=14)
    observed = abs(d.sum())
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=d.size)))
    exact = np.mean(np.abs(signs @ np.abs(d)) >= observed - 1e-12)
    draws = 20_000
    sample = rs.prepare(np.abs(d), draws, (64,), force=method)
    null = rs.signflip_sums(sample, draws, np.random.default_rng(2))
    p = (np.count_nonzero(np.abs(null) >= observed - 1e-12) + 1) / (draws + 1)
    assert abs(p - exact) < _mc_band(exact, draws)


def test_compare_permutation_matches_exact_enumeration() -> None:
    rng = np.random.default_rng(3)
    c = rng.random(16)
    t = c + rng.normal(0.1, 0.3, 16)
    d = t - c
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=16)))
    exact = np.mean(np.abs(signs @ np.abs(d)) >= abs(d.sum()) - 1e-12)
    result = compare(c, t, tests=("permutation",), n_resamples=20_000)
    assert abs(result.p_values["permutation"] - exact) < _mc_band(exact, 20_000)


@pytest.mark.parametrize("method", ["exact", "index"])
def test_relabelling_matches_exact_enumeration(method: str) -> None:
    c = np.array([0.0, 0.1, 0.1, 0.5, 0.25, 0.0])
    t = np.array([0.5, 1.0, 0.1, 0.5, 1.0, 0.25, 0.33])
    pooled = np.concatenate([t, c])
    observed = t.mean() - c.mean()
    stats_ = []
    for chosen in itertools.combinations(range(pooled.size), t.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(chosen)] = True
        stats_.append(pooled[mask].mean() - pooled[~mask].mean())
    exact = np.mean(np.abs(stats_) >= abs(observed) - 1e-12)
    draws = 20_000
    sample = rs.prepare(pooled, draws, (64,), force=method)
    sum_t = rs.relabel_sums(sample, t.size, draws, np.random.default_rng(4))
    null = sum_t / t.size - (pooled.sum() - sum_t) / c.size
    p = (np.count_nonzero(np.abs(null) >= abs(observed) - 1e-12) + 1) / (draws + 1)
    assert abs(p - exact) < _mc_band(exact, draws)
    result = compare(c, t, design="independent", tests=("permutation",), n_resamples=draws)
    assert abs(result.p_values["permutation"] - exact) < _mc_band(exact, draws)


def test_bca_formula_equals_scipy_on_scipy_draws() -> None:
    rng = np.random.default_rng(5)
    x = rng.exponential(1.0, 40)
    res = sps.bootstrap((x,), np.mean, n_resamples=5000, method="BCa", rng=6)
    jack = (x.sum() - x) / (x.size - 1)
    ours = rs.bca_interval(x.mean(), res.bootstrap_distribution, [(jack, np.ones(x.size))], 0.95)
    assert ours == pytest.approx(tuple(res.confidence_interval), abs=1e-12)
    # the same with the jackknife over distinct values (weights = multiplicities)
    atoms = rs.exact_atoms(np.round(x, 1))
    xr = np.round(x, 1)
    res = sps.bootstrap((xr,), np.mean, n_resamples=5000, method="BCa", rng=7)
    jack = (xr.sum() - atoms.values[:, 0]) / (xr.size - 1)
    ours = rs.bca_interval(xr.mean(), res.bootstrap_distribution, [(jack, atoms.counts)], 0.9)
    expected = sps.bootstrap(
        (xr,), np.mean, n_resamples=5000, method="BCa", rng=7, confidence_level=0.9
    ).confidence_interval
    assert ours == pytest.approx(tuple(expected), abs=1e-12)


def test_two_sample_bca_formula_equals_scipy() -> None:
    rng = np.random.default_rng(8)
    c, t = rng.exponential(1.0, 30), rng.exponential(1.3, 25)

    def diff(a, b, axis=-1):
        return np.mean(b, axis=axis) - np.mean(a, axis=axis)

    res = sps.bootstrap((c, t), diff, n_resamples=4000, method="BCa", rng=9)
    jack_c = t.mean() - (c.sum() - c) / (c.size - 1)
    jack_t = (t.sum() - t) / (t.size - 1) - c.mean()
    ours = rs.bca_interval(
        t.mean() - c.mean(), res.bootstrap_distribution,
        [(jack_c, np.ones(c.size)), (jack_t, np.ones(t.size))], 0.95,
    )  # fmt: skip
    assert ours == pytest.approx(tuple(res.confidence_interval), abs=1e-12)


def _scipy_tolerance(res) -> float:
    # endpoints of two independent 10,000-draw BCa intervals agree within about 0.04
    # standard errors; 0.25 leaves a wide margin
    return 0.25 * float(res.standard_error)


def test_paired_bootstrap_ci_close_to_scipy() -> None:
    rng = np.random.default_rng(10)
    c = rng.beta(2, 3, 80)
    t = np.clip(c + rng.normal(0.05, 0.15, 80), 0, 1)
    result = compare(c, t, n_resamples=10_000)
    res = sps.bootstrap((t - c,), np.mean, n_resamples=10_000, method="BCa", rng=11)
    assert result.bootstrap_ci == pytest.approx(
        tuple(res.confidence_interval), abs=_scipy_tolerance(res)
    )

    def lift(a, b, axis=-1):
        return np.mean(b, axis=axis) / np.mean(a, axis=axis) - 1

    res = sps.bootstrap((c, t), lift, paired=True, n_resamples=10_000, method="BCa", rng=12)
    assert result.relative_ci == pytest.approx(
        tuple(res.confidence_interval), abs=_scipy_tolerance(res)
    )


def test_independent_bootstrap_ci_close_to_scipy() -> None:
    rng = np.random.default_rng(13)
    c, t = rng.exponential(0.4, 60), rng.exponential(0.5, 45)
    result = compare(c, t, design="independent", n_resamples=10_000)

    def diff(a, b, axis=-1):
        return np.mean(b, axis=axis) - np.mean(a, axis=axis)

    def lift(a, b, axis=-1):
        return np.mean(b, axis=axis) / np.mean(a, axis=axis) - 1

    res = sps.bootstrap((c, t), diff, n_resamples=10_000, method="BCa", rng=14)
    assert result.bootstrap_ci == pytest.approx(
        tuple(res.confidence_interval), abs=_scipy_tolerance(res)
    )
    res = sps.bootstrap((c, t), lift, n_resamples=10_000, method="BCa", rng=15)
    assert result.relative_ci == pytest.approx(
        tuple(res.confidence_interval), abs=_scipy_tolerance(res)
    )


def _mrr_deltas(rng: np.random.Generator, n: int) -> np.ndarray:
    def rr(size):
        ranks = rng.integers(1, 14, size=size)
        return np.where(ranks <= 10, 1.0 / ranks, 0.0)

    return rr(n) - rr(n)


def test_compressed_and_index_bootstrap_have_the_same_distribution() -> None:
    rng = np.random.default_rng(16)
    d = _mrr_deltas(rng, 500)
    draws = 4000
    fast = rs.prepare(d, draws, (64,), force="exact")
    plain = rs.prepare(d, draws, (64,), force="index")
    assert fast.atoms.m < 130  # RR@10 deltas take few values
    a = rs.bootstrap_sums(fast, draws, np.random.default_rng(17))[:, 0]
    b = rs.bootstrap_sums(plain, draws, np.random.default_rng(18))[:, 0]
    assert sps.ks_2samp(a, b).pvalue > 0.001
    assert a.mean() / d.size == pytest.approx(d.mean(), abs=5 * d.std() / math.sqrt(d.size * draws))
    assert a.std() == pytest.approx(d.std() * math.sqrt(d.size), rel=0.08)


def test_compressed_and_index_sign_flips_have_the_same_distribution() -> None:
    rng = np.random.default_rng(19)
    a = np.abs(_mrr_deltas(rng, 500))
    draws = 4000
    x = rs.signflip_sums(
        rs.prepare(a, draws, (64,), force="exact"), draws, np.random.default_rng(20)
    )
    y = rs.signflip_sums(
        rs.prepare(a, draws, (64,), force="index"), draws, np.random.default_rng(21)
    )
    assert sps.ks_2samp(x, y).pvalue > 0.001
    # the sign-flip sum has mean 0 and variance sum(a^2)
    assert x.std() == pytest.approx(math.sqrt((a**2).sum()), rel=0.08)


def test_grid_cells_stay_within_the_stated_bound() -> None:
    # Couple the grid to exact resampling: draw per-row counts, pool them per cell, and
    # compare the exact resampled mean with the cell-mean one.
    rng = np.random.default_rng(22)
    x = rng.beta(2, 5, 2000)
    atoms = rs.grid_atoms(x, (16,))
    cell = np.floor((x - x.min()) / atoms.widths[0]).clip(0, 15).astype(int)
    cell_index = np.searchsorted(np.unique(cell), cell)
    bound = rs.grid_error_bound(atoms.widths[0], x.size)
    worst = 0.0
    for _ in range(300):
        w = rng.multinomial(x.size, np.full(x.size, 1 / x.size))
        pooled = np.bincount(cell_index, weights=w, minlength=atoms.m)
        worst = max(worst, abs(w @ x - pooled @ atoms.values[:, 0]) / x.size)
    assert 0 < worst <= bound
    # and the cells' resampling distribution matches index resampling
    draws = 3000
    g = rs.bootstrap_sums(
        rs.prepare(x, draws, (16,), force="grid"), draws, np.random.default_rng(23)
    )
    i = rs.bootstrap_sums(
        rs.prepare(x, draws, (16,), force="index"), draws, np.random.default_rng(24)
    )
    assert sps.ks_2samp(g[:, 0], i[:, 0]).pvalue > 0.001


def test_large_samples_of_distinct_values_switch_to_grid_cells() -> None:
    rng = np.random.default_rng(25)
    n = 150_000
    c = rng.random(n)
    t = np.clip(c + rng.normal(0.002, 0.2, n), 0, 1)
    result = compare(c, t, n_resamples=2000)
    assert result.approximation is not None
    for part in ("delta bootstrap", "relative-lift bootstrap"):
        assert part in result.approximation
    # one random sign per query is cheap enough to stay exact at this size
    assert "sign-flip test" not in result.approximation
    half = (result.ci[1] - result.ci[0]) / 2
    # with 2,000 draws the BCa endpoints carry ~0.03 half-widths of Monte-Carlo error
    assert result.bootstrap_ci == pytest.approx(result.ci, abs=0.15 * half)
    assert result.p_values["permutation"] == pytest.approx(result.p_values["t"], abs=0.03)
    assert "approximation" in result.to_dict()
    # delta-method interval of the relative lift: influence (t - R c) / mean(c)
    ratio = t.mean() / c.mean()
    se = np.std(t - ratio * c, ddof=1) / c.mean() / math.sqrt(n)
    expected = (ratio - 1 - 1.96 * se, ratio - 1 + 1.96 * se)
    assert result.relative_ci == pytest.approx(expected, abs=0.15 * 1.96 * se)


def test_repeated_values_at_scale_stay_exact() -> None:
    rng = np.random.default_rng(26)
    d = _mrr_deltas(rng, 200_000)
    result = compare(np.zeros(d.size) + 0.5, 0.5 + d, n_resamples=2000)
    assert result.approximation is None


def test_adaptive_grid_keeps_the_bound_below_the_stated_share_of_the_standard_error():
    rng = np.random.default_rng(11)
    n = 200_000
    d = rng.normal(0.05, 0.2, n).clip(-1, 1)
    (bins,) = rs.adaptive_bins(d, (4096,))
    width = float(np.ptp(d)) / bins
    bound = rs.grid_error_bound(width, n)
    standard_error = float(d.std()) / np.sqrt(n)
    assert bound <= rs.GRID_SE_SHARE * standard_error
    # one cell fewer would break it: the grid is no finer than it needs to be
    assert rs.grid_error_bound(float(np.ptp(d)) / (bins - 1), n) > rs.GRID_SE_SHARE * standard_error
    # the cap wins when the data would need more cells
    assert rs.adaptive_bins(d, (100,)) == (100,)


def test_shared_bootstrap_sums_are_the_index_draws_counted_into_every_block() -> None:
    rng = np.random.default_rng(31)
    n, draws = 257, 700
    blocks = [rng.standard_normal((n, 3)), rng.random(n), rng.integers(0, 4, (n, 2)) * 1.0]
    sums = rs.shared_bootstrap_sums(blocks, draws, np.random.default_rng(32))
    # the slow obvious way: the same row indices, summed resample by resample
    replay = np.random.default_rng(32)
    chunk = rs._rows_per_chunk(n)
    idx = np.concatenate(
        [
            replay.integers(0, n, size=(min(chunk, draws - s), n), dtype=rs.index_dtype(n))
            for s in range(0, draws, chunk)
        ]
    )
    for block, got in zip(blocks, sums, strict=True):
        rows = block.reshape(n, -1)
        expected = np.stack([rows[i].sum(axis=0) for i in idx])
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-9)
    # a block's sums do not depend on the blocks beside it, to the last bit
    alone = rs.shared_bootstrap_sums([blocks[1]], draws, np.random.default_rng(32))[0]
    np.testing.assert_array_equal(alone, sums[1])


def test_shared_sign_flips_match_the_exact_distribution_and_ignore_other_columns() -> None:
    rng = np.random.default_rng(33)
    a, b = np.abs(_mrr_deltas(rng, 400)), rng.random(400)
    draws = 4000
    both = rs.shared_signflip_sums([a, b], draws, np.random.default_rng(34))
    alone = rs.shared_signflip_sums([a], draws, np.random.default_rng(34))[0]
    np.testing.assert_array_equal(both[0], alone)
    exact = rs.signflip_sums(
        rs.prepare(a, draws, (64,), force="exact"), draws, np.random.default_rng(35)
    )
    assert sps.ks_2samp(both[0], exact).pvalue > 0.001
    # mean 0, variance sum(a^2)
    assert abs(both[0].mean()) < 5 * math.sqrt((a**2).sum() / draws)
    assert both[0].std() == pytest.approx(math.sqrt((a**2).sum()), rel=0.08)


def _whole_chunk_shared_sums(blocks, draws: int, rng: np.random.Generator):
    """The shared bootstrap and sign-flip sums as first written: each chunk's counts and
    signs made whole, as fresh arrays, then multiplied into every column."""
    n = blocks[0].shape[0]
    chunk = rs._rows_per_chunk(n)
    boot = [np.zeros((draws, block.shape[1])) for block in blocks]
    for start in range(0, draws, chunk):
        b = min(chunk, draws - start)
        idx = rng.integers(0, n, size=(b, n), dtype=rs.index_dtype(n)).astype(np.intp)
        idx += np.arange(b, dtype=np.intp)[:, None] * n
        counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        for block, out in zip(blocks, boot, strict=True):
            out[start : start + b] = counts @ block
    flips = [np.zeros(draws) for _ in blocks]
    for start in range(0, draws, chunk):
        b = min(chunk, draws - start)
        packed = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
        positive = np.unpackbits(packed, axis=1, count=n).astype(np.float64)
        for block, out in zip(blocks, flips, strict=True):
            out[start : start + b] = 2.0 * (positive @ block[:, 0]) - float(block[:, 0].sum())
    return boot, flips


@pytest.mark.parametrize("n", [2, 161, 1910, 2500, 70_000])
def test_shared_sums_are_the_whole_chunk_products_to_the_last_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    blocks = [rng.standard_normal((n, 3)), rng.integers(0, 4, (n, 3)) / 3.0]
    draws = 10_000 if n < 10_000 else 130
    expected_boot, expected_flips = _whole_chunk_shared_sums(
        blocks, draws, np.random.default_rng(7)
    )
    replay = np.random.default_rng(7)
    boot = rs.shared_bootstrap_sums(blocks, draws, replay)
    flips = rs.shared_signflip_sums([block[:, 0] for block in blocks], draws, replay)
    for got, expected in zip([*boot, *flips], [*expected_boot, *expected_flips], strict=True):
        np.testing.assert_array_equal(got, expected)
