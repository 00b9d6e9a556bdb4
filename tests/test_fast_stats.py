"""The fast paths give the libraries' numbers to the last bit: abrank.stats.fast against
scipy.stats and statsmodels, and the index-bootstrap sums against NumPy's own gather-and-sum.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests as statsmodels_multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower

from abrank.stats import fast as fast_stats
from abrank.stats import resampling as rs


def _samples(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, 3000))
        kind = i % 3
        if kind == 0:  # continuous deltas at various scales
            x = rng.standard_normal(n) * 10 ** rng.uniform(-4, 2)
        elif kind == 1:  # shifted away from zero
            x = rng.standard_normal(n) * 0.3 + rng.uniform(-1, 1)
        else:  # few distinct values, as MRR or hit deltas
            x = rng.choice([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0], size=n)
            if np.ptp(x) == 0:
                continue
        yield x, (0.95, 0.9, 0.99, 0.8)[i % 4]


def test_ttest_1samp_is_scipys_to_the_last_bit() -> None:
    for x, level in _samples(600, seed=1):
        res = sps.ttest_1samp(x, 0.0)
        low, high = res.confidence_interval(level)
        assert fast_stats.ttest_1samp(x, level) == (float(res.pvalue), float(low), float(high))


@pytest.mark.parametrize("method", ["holm", "fdr_bh", "bonferroni"])
def test_multipletests_is_statsmodels_to_the_last_bit(method: str, monkeypatch) -> None:
    import gc

    # statsmodels' Holm step calls gc.collect() on every call, which costs a tenth of a
    # second in a test process holding the whole suite's objects; results do not depend on it
    monkeypatch.setattr(gc, "collect", lambda *args: 0)
    rng = np.random.default_rng(2)
    for i in range(400):
        p = rng.random(int(rng.integers(1, 40))) ** 3
        if i % 4 == 0:
            p[: p.size // 2] = p[0]  # ties
        if i % 7 == 0:
            p[-1] = 1.0
        for alpha in (0.05, 0.1):
            reject, adjusted = fast_stats.multipletests(p, alpha=alpha, method=method)
            expected = statsmodels_multipletests(p, alpha=alpha, method=method)
            np.testing.assert_array_equal(reject, expected[0])
            np.testing.assert_array_equal(adjusted, expected[1])


def test_multipletests_passes_other_methods_to_statsmodels() -> None:
    p = np.array([0.01, 0.02, 0.03, 0.5])
    for method in ("hommel", "fdr_by", "sidak", "holm-sidak", "simes-hochberg"):
        np.testing.assert_array_equal(
            fast_stats.multipletests(p, method=method)[1],
            statsmodels_multipletests(p, method=method)[1],
        )


def _statsmodels_effect(n: int, alpha: float, ratio: float | None) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if ratio is None:
                es = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=0.8)
            else:
                es = TTestIndPower().solve_power(
                    effect_size=None, nobs1=n, alpha=alpha, power=0.8, ratio=ratio
                )
        except Exception:
            return None
    es = float(np.asarray(es).reshape(-1)[0])
    return es if math.isfinite(es) and es > 0 else None


SIZES = [*range(2, 41), 57, 100, 161, 223, 272, 331, 721, 1028, 1057, 1910, 5000, 10**5, 10**6]


@pytest.mark.parametrize("ratio", [None, 0.5, 1.0, 1.37, 3.0])
def test_effect_size_is_statsmodels_solve_power_to_the_last_bit(ratio: float | None) -> None:
    # Its root search stops at xtol=1e-5 or falls back on fsolve (n = 223, 272, 331 and
    # 1057 in the demo do), so only the same search over the same power gives its numbers.
    for n, alpha in itertools.product(SIZES, (0.001, 0.01, 0.05, 0.2)):
        fast_stats._effect_size.cache_clear()
        assert fast_stats.ttest_effect_size(n, alpha, 0.8, ratio) == _statsmodels_effect(
            n, alpha, ratio
        ), (n, alpha, ratio)


def test_effect_size_power_function_is_statsmodels() -> None:
    from statsmodels.stats.power import ttest_power

    gap = fast_stats._PowerGap(331, 0.05, 0.8, None)
    for effect in (1e-8, 0.01, 0.15443880438943108, 0.5, 1.0, -1.0, 10.0):
        expected = ttest_power(effect, 331, 0.05) - 0.8
        assert gap(effect) == (np.inf if np.isnan(expected) else expected)


def _numpy_index_sums(sample: rs.Prepared, n_resamples: int, rng: np.random.Generator):
    """The index bootstrap as first written: gather the (b, n, k) draws, sum over n."""
    n, k = sample.raw.shape
    out = np.zeros((n_resamples, k))
    rows = rs._rows_per_chunk(n * k)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n), dtype=rs.index_dtype(n))
        out[start : start + b] = sample.raw[idx].sum(axis=1)
    return out


@pytest.mark.parametrize("k", [1, 2, 3])
def test_index_bootstrap_sums_are_numpys_gather_and_sum_to_the_last_bit(k: int) -> None:
    rng = np.random.default_rng(3)
    cases = [(int(rng.integers(2, 6000)), 3000) for _ in range(12)]
    cases += [(1, 5), (2, 7), (4869, 3000), (20_000, 105), (200_000, 21), (1_100_000, 9)]
    for trial, (n, draws) in enumerate(cases):
        x = rng.standard_normal((n, k)) * 10 ** rng.uniform(-3, 3, size=k)
        sample = rs.prepare(x[:, 0] if k == 1 else x, draws, (64,) * k, force="index")
        fast = rs.bootstrap_sums(sample, draws, np.random.default_rng(trial))
        plain = _numpy_index_sums(sample, draws, np.random.default_rng(trial))
        np.testing.assert_array_equal(fast, plain, err_msg=f"n={n}, draws={draws}")
