"""benchmarks/bench_calibration_online.py at a small, fixed-seed count: the clustered test
holds its level where a per-impression test does not, intervals cover, SRM alarms fire."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_calibration_online.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_calibration_online", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_true_mean_is_the_simulations_expectation(bench) -> None:
    # E[propensity] = 0.5 / 1.7; P(rank r) = p (1 - p)^(r - 1), click_rr = 1 / r up to 10
    per_click = sum(0.5 * 0.5 ** (r - 1) / r for r in range(1, 11))
    assert bench.true_mean(0.5) == pytest.approx(0.5 / 1.7 * per_click, rel=1e-12)


def test_calibration_at_a_small_count(bench) -> None:
    figures = bench.calibration(runs=200, n_users=500, seed=0)
    # 200 runs: a rate of 0.05 has a binomial sd of 0.015, so 3 sd is [0.004, 0.096]
    assert 0.004 <= figures["false_positive_rate"] <= 0.096
    # impressions treated as independent: about 0.3, far outside that band
    assert 0.2 <= figures["per_impression_false_positive_rate"] <= 0.45
    # coverage 0.95 has a binomial sd of 0.015 at 200 runs
    assert 0.9 <= figures["coverage"] <= 0.995
    assert 0.9 <= figures["relative_coverage"] <= 0.995


def test_sample_ratio_alarms_at_a_small_count(bench) -> None:
    # 3% of one arm lost at 20,000 per arm: chi2 ~ 9.1 on average (p ~ 0.0025), so the
    # alarm at p < 0.001 fires in about 40% of runs; at 100,000 per arm nearly always
    assert 0.3 <= bench.srm_alarm_rate(2000, 20_000, 0.03, seed=0) <= 0.5
    assert bench.srm_alarm_rate(2000, 100_000, 0.03, seed=0) >= 0.98
    # balanced arms: 0.001 expected, at most a handful of 2000 runs
    assert bench.srm_alarm_rate(2000, 20_000, 0.0, seed=0) <= 0.005


def test_the_script_prints_its_figures(bench, capsys) -> None:
    bench.main(["--runs", "20", "--users", "200", "--srm-runs", "200"])
    out = capsys.readouterr().out
    assert "clustered delta method" in out and "per-impression Welch" in out
    assert "SRM alarms" in out
