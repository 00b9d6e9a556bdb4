"""benchmarks/bench_calibration_heavy_users.py at a small, fixed-seed count: with a few heavy
users the delta-method t rejects far too often, the verdict abrank gives holds its level and
its interval covers; on ordinary traffic the verdict is the delta method's, unchanged."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from abrank.stats.concentration import concentration

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_calibration_heavy_users.py"
RUNS = 300
SE = math.sqrt(0.05 * 0.95 / RUNS)  # Monte-Carlo SE of a rate of 0.05 (0.0126)
COVERAGE_SE = SE  # the same for a coverage of 0.95


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_calibration_heavy_users", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_heavy_users_hold_100_times_the_impressions(bench) -> None:
    rng = np.random.default_rng(0)
    sums = bench.simulate_arm(rng, 500, 5, 0.5)
    assert sums.n_units == 500
    # geometric impressions with means 600 (heavy) and 6 (the others)
    heavy, rest = sums.denominator[:5], sums.denominator[5:]
    assert 100 < heavy.mean() < 2000 and 5 < rest.mean() < 7
    assert concentration(sums.denominator).concentrated


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1], ids=["1pct-of-500", "2-of-100"])
def test_the_verdict_holds_its_level_with_heavy_users(bench, which: int) -> None:
    figures = bench.calibration(bench.POPULATIONS[which], RUNS, seed=0)
    after, before = figures["fpr_after"][0], figures["fpr_before"][0]
    assert abs(after - 0.05) <= 3 * SE  # [0.012, 0.088]
    assert before > 0.05 + 3 * SE  # the delta method's 0.14 / 0.33 (full run)
    assert abs(figures["coverage_after"][0] - 0.95) <= 3 * COVERAGE_SE
    assert figures["coverage_before"][0] < 0.95 - 3 * COVERAGE_SE
    assert figures["jackknife"][0] > 0.95


@pytest.mark.slow
def test_ordinary_traffic_keeps_the_delta_method_and_its_power(bench) -> None:
    figures = bench.calibration(bench.POPULATIONS[2], RUNS, seed=0)
    assert figures["jackknife"][0] == 0.0
    for name in ("fpr", "coverage", "power"):
        assert figures[f"{name}_after"] == figures[f"{name}_before"]
    assert abs(figures["fpr_after"][0] - 0.05) <= 3 * SE


def test_the_script_prints_its_table(bench, capsys) -> None:
    bench.main(["--runs", "10"])
    out = capsys.readouterr().out
    for population in bench.POPULATIONS:
        assert population.name in out
    assert "A/A FPR before" in out and "coverage before" in out and "power before" in out
