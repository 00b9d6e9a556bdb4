"""benchmarks/bench_calibration_interleaving.py at a small, fixed-seed count: a fresh merge
per impression holds the A/A level where one list per query reused does not; the SRM check
stays below alpha with about 20 units per arm; CUPED on a constant covariate changes nothing."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_calibration_interleaving.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_calibration_interleaving", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_aa_per_impression_merges_hold_the_level(bench) -> None:
    runs = 300
    rates = bench.aa_rates(runs, n_queries=60, users=40, visits=10, seed=1)
    se = math.sqrt(0.05 * 0.95 / runs)  # 0.0126: 3 SE is [0.012, 0.088]
    assert abs(rates["per impression"][0] - 0.05) <= 3 * se
    # one list per query, reused by all 10 visits: well above the level
    assert rates["fixed lists"][0] > 0.05 + 3 * se


def test_srm_check_stays_below_alpha_at_twenty_per_arm(bench) -> None:
    rates = bench.srm_rates()
    assert rates["chi2"][1] > 0.001  # the chi-square alone: above alpha at some totals
    assert rates["exact"][1] <= 0.001


def test_cuped_constant_covariate_changes_nothing(bench) -> None:
    figures = bench.cuped_constant()
    assert figures["theta"] == 0.0 and figures["variance_reduction"] == 0.0
    assert figures["delta"] == figures["delta_unadjusted"]
    assert figures["p"] == figures["p_unadjusted"]


def test_balanced_credit_differs_from_the_rows_team_on_some_clicked_impressions(bench) -> None:
    figures = bench.balanced_disagreement(n_queries=400)
    assert figures["clicked"] > 100
    assert 0.02 < figures["disagree"] < 0.3
