"""Calibration by simulation: false-positive rates on A/A data and coverage of intervals.

Slow (a few thousand comparisons); run with ``pytest -m slow``. The bands are about three
binomial standard errors around the nominal rates for 2,000 simulations.
"""

from __future__ import annotations

import numpy as np
import pytest

from abrank.stats import compare

SIMULATIONS = 2000
QUERIES = 60


def _rr(rng: np.random.Generator, ease: np.ndarray) -> np.ndarray:
    """Reciprocal rank at cutoff 10 of a first relevant hit at a geometric rank."""
    ranks = rng.geometric(ease)
    return np.where(ranks <= 10, 1.0 / ranks, 0.0)


@pytest.mark.slow
def test_false_positive_rate_on_a_a_data_is_nominal() -> None:
    rng = np.random.default_rng(2024)
    rejections = {"t": 0, "permutation": 0}
    for i in range(SIMULATIONS):
        ease = rng.beta(1.5, 1.5, QUERIES)  # query difficulty shared by both arms
        control, treatment = _rr(rng, ease), _rr(rng, ease)
        result = compare(control, treatment, tests=("t", "permutation"), n_resamples=1000, seed=i)
        for test in rejections:
            rejections[test] += result.p_values[test] < 0.05
    for test, count in rejections.items():
        assert 0.035 <= count / SIMULATIONS <= 0.065, (test, count / SIMULATIONS)


@pytest.mark.slow
def test_intervals_cover_a_known_delta() -> None:
    rng = np.random.default_rng(2025)
    true_delta = 0.05
    covered = {"t": 0, "bca": 0}
    for i in range(SIMULATIONS):
        control = rng.beta(2, 3, QUERIES)
        treatment = control + true_delta + rng.normal(0, 0.2, QUERIES)
        result = compare(control, treatment, tests=("t", "bootstrap"), n_resamples=1000, seed=i)
        covered["t"] += result.ci[0] <= true_delta <= result.ci[1]
        covered["bca"] += result.bootstrap_ci[0] <= true_delta <= result.bootstrap_ci[1]
    for method, count in covered.items():
        assert 0.93 <= count / SIMULATIONS <= 0.97, (method, count / SIMULATIONS)


@pytest.mark.slow
def test_small_samples_stay_honest_on_lumpy_deltas() -> None:
    """MRR-like A/A data (many ties, a few large moves). At 20 queries the bootstrap is
    refused and Fieller's relative interval covers 0; at 30, where the bootstrap starts,
    the expanded BCa interval covers and the bootstrap test holds its level."""
    rejections = {20: 0, 30: 0}
    covered = {(20, "relative"): 0, (30, "bca"): 0, (30, "relative"): 0}
    runs = 800
    for n in (20, 30):
        rng = np.random.default_rng(100 + n)
        for i in range(runs):
            ease = rng.beta(1.5, 1.5, n)
            result = compare(_rr(rng, ease), _rr(rng, ease), n_resamples=1000, seed=i)
            p = result.p_values["bootstrap"]
            if n == 20:
                assert np.isnan(p) and result.bootstrap_ci is None
            else:
                rejections[n] += p < 0.05
                covered[(n, "bca")] += result.bootstrap_ci[0] <= 0 <= result.bootstrap_ci[1]
            if result.relative_ci is not None:
                covered[(n, "relative")] += result.relative_ci[0] <= 0 <= result.relative_ci[1]
            else:
                covered[(n, "relative")] += 1  # unbounded covers everything
    assert rejections[30] / runs <= 0.075, rejections
    for key, count in covered.items():
        assert count / runs >= 0.92, (key, count / runs)
