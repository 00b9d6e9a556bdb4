"""Quantile metrics of clustered impressions (abrank.stats.quantile and quantile_bootstrap):
the point is numpy's quantile, the clustered variance equals a slow loop written straight
from Deng, Knoblich & Lu (2018), a hand-worked example, the difference and lift, the unit
bootstrap, edge cases, and a small A/A calibration of benchmarks/bench_quantile_calibration.py.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from abrank.errors import ConfigError, DataError
from abrank.stats.quantile import (
    NOTE_NO_LIFT,
    NOTE_ONE_UNIT,
    NOTE_ZERO_WIDTH,
    quantile_arm,
    quantile_difference,
    quantile_estimate,
    quantile_point,
)
from abrank.stats.quantile_bootstrap import (
    bootstrap_deltas,
    bootstrap_quantiles,
    compare_quantiles,
    percentile_interval,
    weighted_quantiles,
)
from abrank.stats.quantile_comparison import compare_quantile_arms
from abrank.stats.quantile_sketch import SketchArm, sketch_grid
from abrank.stats.seeding import generator

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_quantile_calibration.py"
NORMAL = __import__("statistics").NormalDist()


# --- the slow reference: plain loops, straight from the paper ------------------------------


def ref_quantile(values: list[float], p: float) -> float:
    """The order statistic at 0-based rank (N - 1) p, linearly interpolated (numpy's rule)."""
    xs = sorted(values)
    h = (len(xs) - 1) * p
    k = min(int(math.floor(h)), len(xs) - 1)
    nxt = min(k + 1, len(xs) - 1)
    return xs[k] + (h - k) * (xs[nxt] - xs[k])


def ref_indicator_variance(values: list[float], units: list, point: float) -> float:
    """Var(I) of I = sum_u S_u / sum_u N_u by the delta method for a ratio of means (Deng et
    al. 2018, eq. for mean(S) / mean(N)): (1/n) [s_S^2 / m_N^2 - 2 m_S s_SN / m_N^3
    + m_S^2 s_N^2 / m_N^4], sample moments over the n units with divisor n - 1."""
    s: dict = {}
    c: dict = {}
    for x, u in zip(values, units, strict=True):
        s[u] = s.get(u, 0) + (1 if x <= point else 0)
        c[u] = c.get(u, 0) + 1
    keys = list(c)
    n = len(keys)
    m_s = sum(s[k] for k in keys) / n
    m_n = sum(c[k] for k in keys) / n
    v_s = sum((s[k] - m_s) ** 2 for k in keys) / (n - 1)
    v_n = sum((c[k] - m_n) ** 2 for k in keys) / (n - 1)
    c_sn = sum((s[k] - m_s) * (c[k] - m_n) for k in keys) / (n - 1)
    return (v_s / m_n**2 - 2 * m_s * c_sn / m_n**3 + m_s**2 * v_n / m_n**4) / n


def ref_estimate(values: list[float], units: list, q: float, level: float) -> dict:
    """Point, sigma_I, the interval at ranks N (q -+ z sigma_I) and se = width / (2 z)."""
    z = NORMAL.inv_cdf(0.5 + level / 2)
    point = ref_quantile(values, q)
    sigma = math.sqrt(ref_indicator_variance(values, units, point))
    low = ref_quantile(values, max(0.0, q - z * sigma))
    high = ref_quantile(values, min(1.0, q + z * sigma))
    return {"point": point, "sigma": sigma, "interval": (low, high), "se": (high - low) / (2 * z)}


def fixture(seed: int, n_units: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    counts = 1 + rng.poisson(rng.gamma(0.7, 4.0, size=n_units))
    units = np.repeat(np.arange(n_units), counts)
    effect = rng.normal(0, 0.7, size=n_units)[units]
    values = np.exp(effect + rng.normal(0, 0.5, size=units.size))
    if ties:
        values = np.round(values * 4)
    order = rng.permutation(units.size)  # impressions of a unit need not be adjacent
    return values[order], units[order]


# --- the point ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1001])
def test_the_point_is_numpys_linear_quantile(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (rng.lognormal(size=n), rng.integers(0, 5, size=n).astype(float)):
        for q in (0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0, 1 / 3):
            assert quantile_point(values, q) == np.quantile(values, q, method="linear")
            assert quantile_point(values, q) == pytest.approx(ref_quantile(list(values), q))


# --- the clustered variance against the slow reference ---------------------------------------


@pytest.mark.parametrize("seed,n_units,ties", [(0, 40, False), (1, 200, True), (2, 7, False)])
@pytest.mark.parametrize("q", [0.05, 0.5, 0.95, 0.99])
def test_the_clustered_variance_equals_the_papers_formula(seed, n_units, ties, q) -> None:
    values, units = fixture(seed, n_units, ties)
    fast = quantile_estimate(values, units, q, confidence_level=0.9)
    ref = ref_estimate(list(values), list(units), q, 0.9)
    assert fast.point == pytest.approx(ref["point"], rel=1e-12)
    assert fast.indicator_se**2 == pytest.approx(ref["sigma"] ** 2, rel=1e-9, abs=1e-15)
    assert fast.interval == pytest.approx(ref["interval"], rel=1e-9)
    assert fast.se == pytest.approx(ref["se"], rel=1e-9, abs=1e-12)
    assert fast.n_units == n_units and fast.n_impressions == values.size


def test_the_per_impression_interval_is_the_clustered_one_with_one_impression_per_unit() -> None:
    values, units = fixture(3, 60, True)
    clustered = quantile_estimate(values, np.arange(values.size), 0.95)
    naive = quantile_estimate(values, units, 0.95)
    ref = ref_estimate(list(values), list(range(values.size)), 0.95, 0.95)
    assert naive.naive_indicator_se == pytest.approx(clustered.indicator_se, rel=1e-12)
    assert naive.naive_interval == pytest.approx(clustered.interval, rel=1e-12)
    assert naive.naive_se == pytest.approx(ref["se"], rel=1e-9)
    assert quantile_estimate(values, None, 0.95) == clustered


def test_any_unit_labels_give_the_same_estimate_as_dense_codes() -> None:
    values, units = fixture(4, 30, False)
    base = quantile_estimate(values, units, 0.9)
    assert quantile_estimate(values, units * 7 + 3, 0.9) == base  # sparse codes
    assert quantile_estimate(values, units.astype(np.int64) + 10**12, 0.9) == base  # huge
    assert quantile_estimate(values, units - 15, 0.9) == base  # negative
    labelled = quantile_estimate(values, np.array([f"user{u}" for u in units]), 0.9)
    assert labelled.interval == base.interval and labelled.point == base.point
    assert labelled.indicator_se == pytest.approx(base.indicator_se, rel=1e-12)  # unit order


# --- a hand-worked example --------------------------------------------------------------------


LEVEL_Z1 = 2 * NORMAL.cdf(1.0) - 1  # z = 1: the interval is [Qhat(q - sigma), Qhat(q + sigma)]


def test_a_hand_worked_example() -> None:
    # units a: {1, 2}, b: {3, 5}, c: {4, 6}; pooled sorted 1..6, q = 0.5: h = 2.5, Q = 3.5.
    # S = (2, 1, 0), N = (2, 2, 2), I = 3/6 = 0.5; L = (S - 0.5 N) / 2 = (0.5, 0, -0.5),
    # var(L) = 0.25, sigma_I^2 = 0.25 / 3 = 1/12. At z = 1, p = 0.5 -+ 0.288675:
    # h = 5 p = 1.056624 and 3.943376, so Q_lo = 2.056624, Q_hi = 4.943376, se = 1.443376.
    values = [1.0, 2.0, 3.0, 5.0, 4.0, 6.0]
    units = ["a", "a", "b", "b", "c", "c"]
    est = quantile_estimate(values, units, 0.5, confidence_level=LEVEL_Z1)
    sigma = math.sqrt(1 / 12)
    assert est.point == 3.5 and est.indicator_mean == 0.5
    assert est.indicator_se == pytest.approx(sigma, rel=1e-12)
    assert est.interval == pytest.approx((2 + 5 * (0.5 - sigma) - 1, 4 + 5 * (0.5 + sigma) - 3))
    assert est.interval == pytest.approx((2.0566243, 4.9433757))
    assert est.se == pytest.approx(5 * sigma, rel=1e-9)
    # per impression: sigma^2 = I (1 - I) / (N - 1) = 0.05, h = 5 (0.5 -+ 0.223607)
    assert est.naive_indicator_se == pytest.approx(math.sqrt(0.05))
    assert est.naive_interval == pytest.approx((2.381966, 4.618034), rel=1e-6)
    assert est.naive_se == pytest.approx(5 * math.sqrt(0.05), rel=1e-9)

    # treatment: every value + 1. Delta = 1, SE = sqrt(2) 5 sigma, the lift 4.5/3.5 - 1
    shifted = quantile_estimate([v + 1 for v in values], units, 0.5, confidence_level=LEVEL_Z1)
    diff = quantile_difference(est, shifted)
    se = math.sqrt(2) * 5 * sigma
    assert diff.delta == pytest.approx(1.0) and diff.se == pytest.approx(se, rel=1e-9)
    assert diff.ci == pytest.approx((1 - se, 1 + se), rel=1e-9)
    assert diff.p_value == pytest.approx(2 * (1 - NORMAL.cdf(1 / se)), rel=1e-9)
    r_se = math.sqrt((5 * sigma) ** 2 / 3.5**2 + 4.5**2 * (5 * sigma) ** 2 / 3.5**4)
    assert diff.relative_lift == pytest.approx(4.5 / 3.5 - 1)
    assert diff.relative_se == pytest.approx(r_se, rel=1e-9)
    assert diff.relative_ci == pytest.approx((1 / 3.5 - r_se, 1 / 3.5 + r_se), rel=1e-9)
    naive_se = math.sqrt(2) * 5 * math.sqrt(0.05)
    assert diff.naive_se == pytest.approx(naive_se, rel=1e-9)
    assert diff.naive_p_value == pytest.approx(2 * (1 - NORMAL.cdf(1 / naive_se)), rel=1e-9)
    assert diff.notes == ()


def test_compare_quantiles_gives_each_quantile_as_if_alone() -> None:
    vc, uc = fixture(5, 80, False)
    vt, ut = fixture(6, 90, True)
    together = compare_quantiles(vc, uc, vt, ut, [0.5, 0.95, 0.99])
    for q, result in zip([0.5, 0.95, 0.99], together, strict=True):
        alone = quantile_difference(quantile_estimate(vc, uc, q), quantile_estimate(vt, ut, q))
        assert result == alone
    (one,) = compare_quantiles(vc, uc, vt, ut, 0.95)
    assert one == together[1] and one.bootstrap_ci is None and one.n_resamples == 0
    payload = json.dumps(one.to_dict(), allow_nan=False)
    assert '"control": {"q": 0.95' in payload and '"bootstrap_ci": null' in payload


# --- edge cases -------------------------------------------------------------------------------


def test_one_unit_has_a_point_but_no_interval() -> None:
    est = quantile_estimate([3.0, 1.0, 2.0], ["u", "u", "u"], 0.5)
    assert est.point == 2.0 and est.n_units == 1
    assert math.isnan(est.indicator_se) and math.isnan(est.se)
    assert all(math.isnan(x) for x in est.interval)
    assert est.naive_interval[0] <= 2.0 <= est.naive_interval[1]  # 3 impressions: defined
    other = quantile_estimate([1.0, 2.0, 5.0, 6.0], ["a", "a", "b", "b"], 0.5)
    diff = quantile_difference(est, other)
    assert math.isnan(diff.se) and math.isnan(diff.p_value) and NOTE_ONE_UNIT in diff.notes
    assert json.loads(json.dumps(diff.to_dict(), allow_nan=False))["se"] is None
    # a single impression: no interval of either kind
    single = quantile_estimate([4.0], None, 0.95)
    assert single.point == 4.0 and math.isnan(single.naive_se)


def test_all_values_equal_gives_a_zero_width_interval() -> None:
    est = quantile_estimate([7.0] * 12, np.repeat(np.arange(4), 3), 0.95)
    assert est.point == 7.0 and est.interval == (7.0, 7.0) and est.se == 0.0
    assert est.indicator_mean == 1.0 and est.indicator_se == 0.0
    same = quantile_difference(est, est)
    assert same.p_value == 1.0 and same.ci == (0.0, 0.0) and NOTE_ZERO_WIDTH in same.notes
    higher = quantile_estimate([8.0] * 12, np.repeat(np.arange(4), 3), 0.95)
    assert quantile_difference(est, higher).p_value == 0.0


@pytest.mark.parametrize("q", [0.0, 1.0])
def test_q_at_0_and_1_is_the_minimum_and_the_maximum(q: float) -> None:
    values, units = fixture(7, 50, False)
    est = quantile_estimate(values, units, q)
    assert est.point == (values.min() if q == 0 else values.max())
    assert values.min() <= est.interval[0] <= est.point <= est.interval[1] <= values.max()
    assert est.interval[int(q)] == est.point  # clipped at the end it sits on
    ref = ref_estimate(list(values), list(units), q, 0.95)
    assert est.interval == pytest.approx(ref["interval"], rel=1e-9)


def test_a_control_quantile_of_zero_has_no_lift() -> None:
    zero = quantile_estimate([0.0, 0.0, 1.0, 2.0], [0, 1, 2, 3], 0.25)
    other = quantile_estimate([1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3], 0.25)
    diff = quantile_difference(zero, other)
    assert math.isnan(diff.relative_lift) and NOTE_NO_LIFT in diff.notes


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_missing_and_infinite_values_are_refused_naming_the_first(bad: float) -> None:
    with pytest.raises(DataError, match=r"values\[2\]: expected a finite number.*missing"):
        quantile_point([1.0, 2.0, bad, 3.0], 0.5)
    with pytest.raises(DataError, match=r"treatment_values\[0\]"):
        compare_quantiles([1.0, 2.0], None, [bad], None, 0.5)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(DataError, match="at least one value"):
        quantile_point([], 0.5)
    with pytest.raises(DataError, match="one value per impression"):
        quantile_point([[1.0, 2.0]], 0.5)
    with pytest.raises(DataError, match="expected numbers"):
        quantile_point(["a"], 0.5)
    with pytest.raises(DataError, match="one unit per value"):
        quantile_estimate([1.0, 2.0], [0], 0.5)
    for q in (-0.1, 1.5, "x"):
        with pytest.raises(ConfigError, match="q: expected a number in"):
            quantile_point([1.0], q)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="confidence_level"):
        quantile_estimate([1.0, 2.0], None, 0.5, confidence_level=1.0)
    a = quantile_estimate([1.0, 2.0], None, 0.5)
    with pytest.raises(ConfigError, match="same q and level"):
        quantile_difference(a, quantile_estimate([1.0, 2.0], None, 0.6))


# --- the unit bootstrap -----------------------------------------------------------------------


def test_weighted_quantiles_are_numpys_quantiles_of_the_repeated_data() -> None:
    rng = np.random.default_rng(8)
    values = np.sort(np.round(rng.lognormal(size=300), 1))
    weights = rng.integers(0, 3, size=(20, 300))
    weights[:, 0] += 1 - np.minimum(weights.sum(axis=1), 1)  # no empty row
    qs = [0.0, 0.1, 0.5, 0.95, 0.99, 1.0]
    got = weighted_quantiles(values, weights, qs)
    for r in range(20):
        expected = np.quantile(np.repeat(values, weights[r]), qs)
        np.testing.assert_allclose(got[r], expected, rtol=1e-15, atol=0)


def test_a_bootstrap_draw_is_the_quantile_of_the_resampled_units() -> None:
    values, units = fixture(9, 25, True)
    arm = quantile_arm(values, units)
    draws = bootstrap_quantiles(arm, [0.5, 0.9], 5, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    for r in range(5):  # the same draws, resampled by hand
        picked = rng.integers(0, 25, size=25)
        resample = np.concatenate([values[units == u] for u in picked])
        np.testing.assert_allclose(draws[r], np.quantile(resample, [0.5, 0.9]), rtol=1e-14)


@pytest.mark.parametrize("window", [(8.0, 64), (0.5, 0), (0.0, 0)])
def test_the_windowed_bootstrap_equals_the_search_over_all_impressions(window) -> None:
    # narrow windows miss often: those resamples are redone over all N, to the same value
    values, units = fixture(14, 400, True)
    arm = quantile_arm(values, units)
    qs = [0.0, 0.5, 0.95, 0.99, 1.0]
    full = bootstrap_quantiles(arm, qs, 300, np.random.default_rng(4), window=None)
    windowed = bootstrap_quantiles(arm, qs, 300, np.random.default_rng(4), window=window)
    np.testing.assert_array_equal(windowed, full)


def test_the_bootstrap_is_reproducible_from_its_seed() -> None:
    vc, uc = fixture(10, 100, False)
    vt, ut = fixture(11, 100, False)
    kwargs = {"n_resamples": 200, "metric": "latency", "treatment_name": "b", "segment": None}
    first = compare_quantiles(vc, uc, vt, ut, [0.5, 0.95], seed=5, **kwargs)
    again = compare_quantiles(vc, uc, vt, ut, [0.5, 0.95], seed=5, **kwargs)
    other = compare_quantiles(vc, uc, vt, ut, [0.5, 0.95], seed=6, **kwargs)
    assert first == again and first[0].bootstrap_ci != other[0].bootstrap_ci
    assert first[1].n_resamples == 200 and first[1].bootstrap_ci is not None
    # the draws come from abrank's seeding: (seed, ["quantile", metric], treatment, segment),
    # the control's first; they do not depend on which quantiles are read off them
    c, t = quantile_arm(vc, uc), quantile_arm(vt, ut)
    rng = generator(5, ["quantile", "latency"], "b", None, "bootstrap")
    control = bootstrap_quantiles(c, [0.5], 200, rng)[:, 0]
    deltas = bootstrap_quantiles(t, [0.5], 200, rng)[:, 0] - control
    assert first[0].bootstrap_ci == percentile_interval(deltas, 0.95)
    assert first[0].bootstrap_se == np.std(deltas, ddof=1)


def test_the_bootstrap_agrees_with_the_delta_interval_on_a_large_sample() -> None:
    bench = _bench()
    rng = np.random.default_rng(12)
    xc, uc = bench.simulate_arm(rng, 3000)
    xt, ut = bench.simulate_arm(rng, 3000)
    for result in compare_quantiles(xc, uc, xt, ut, [0.5, 0.95], n_resamples=1000, seed=1):
        # the SD of 1000 resamples is within about 2.2% of the bootstrap's; the delta
        # method and the bootstrap agree to O(1/sqrt(n)) beyond that
        assert result.bootstrap_se == pytest.approx(result.se, rel=0.12)
        width = result.ci[1] - result.ci[0]
        assert result.bootstrap_ci[0] == pytest.approx(result.ci[0], abs=0.15 * width)
        assert result.bootstrap_ci[1] == pytest.approx(result.ci[1], abs=0.15 * width)
        # the per-impression interval is far narrower: the users' random effect
        assert result.naive_se < 0.8 * result.se


def test_bootstrap_deltas_are_treatment_minus_control() -> None:
    vc, uc = fixture(13, 30, False)
    c = quantile_arm(vc, uc)
    deltas = bootstrap_deltas(c, c, [0.5], 50, seed=0, metric="m", treatment_name="t", segment=None)
    assert deltas.shape == (50, 1) and np.abs(deltas).max() > 0  # the arms draw their own
    assert all(math.isnan(x) for x in percentile_interval(np.array([]), 0.95))


# --- the calibration benchmark at a small size ------------------------------------------------


def _bench():
    spec = importlib.util.spec_from_file_location("bench_quantile_calibration", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_true_quantile_is_the_simulations() -> None:
    bench = _bench()
    x, _ = bench.simulate_arm(np.random.default_rng(0), 100_000)
    for q in (0.5, 0.95, 0.99):
        assert np.quantile(x, q) == pytest.approx(bench.true_quantile(q), rel=0.02)


def test_a_small_calibration() -> None:
    bench = _bench()
    runs = 200
    figures = bench.aa_calibration(runs, 2000, seed=0)
    for q in bench.QS:
        # coverage 0.95 over 200 experiments: MC SE 0.0154, 3 SE is [0.904, 0.996]
        assert 0.904 <= figures["clustered"][q] <= 0.996
        # per impression: about 0.55-0.75 here, far below
        assert figures["per_impression"][q] <= 0.85
    power = bench.planted_power(runs, 10_000, seed=0)
    sd = bench.mc_se(power["power"], runs)
    assert abs(power["power"] - power["predicted"]) <= 3 * sd + 0.01
    assert power["naive_power"] > power["power"]  # too confident


def test_the_script_prints_its_table(capsys) -> None:
    _bench().main(
        ["--experiments", "10", "--users", "200", "--power-users", "500", "--speed-rows", "20000"]
    )
    out = capsys.readouterr().out
    assert "clustered delta" in out and "per-impression" in out and "p95" in out
    assert "predicted from the clustered SE" in out and "speed: p50, p95, p99" in out


# --------------------------------------------------------------------------- sketches


def _perfect_sketch(values: np.ndarray, units: np.ndarray, q: float) -> SketchArm:
    """The sketch of an engine without error: numpy's quantiles, read on a fine grid."""
    point = quantile_point(values, q)
    codes, dense = np.unique(units, return_inverse=True)
    below = np.bincount(dense[values <= point], minlength=codes.size).astype(np.float64)
    counts = np.bincount(dense, minlength=codes.size).astype(np.float64)
    draft = SketchArm(q, point, below, counts, np.empty(0), np.empty(0), "exact", "none")
    grid = np.union1d(np.linspace(0, 1, 100_001), sketch_grid(q, draft.indicator_se, 0.95))
    values_at = np.quantile(values, grid)
    return SketchArm(q, point, below, counts, grid, values_at, "exact", "none")


def test_an_errorless_sketch_gives_the_exact_comparison() -> None:
    rng = np.random.default_rng(5)
    arms = []
    for shift in (0.0, 0.1):
        units = rng.integers(0, 300, size=2_000)
        level = rng.normal(0, 0.4, size=300)[units]
        arms.append((np.exp(5 + shift + level + rng.normal(0, 0.5, units.size)), units))
    q = 0.9
    exact = compare_quantile_arms(quantile_arm(*arms[0]), quantile_arm(*arms[1]), q, unit="user_id")
    sketched = compare_quantile_arms(
        _perfect_sketch(*arms[0], q),
        _perfect_sketch(*arms[1], q),
        q,
        unit="user_id",
        n_resamples=200,
        notes=("the sketch",),
    )
    assert sketched.delta == pytest.approx(exact.delta, abs=1e-12)
    assert sketched.ci == pytest.approx(exact.ci, abs=1e-9)  # the ends lie on the grid
    assert sketched.p_value == pytest.approx(exact.p_value, abs=1e-12)
    assert sketched.n_units == exact.n_units
    # another level (Holm's): read between grid points, 1e-5 apart in probability
    assert sketched.levels is not None and exact.levels is not None
    assert sketched.levels.primary(0.99) == pytest.approx(exact.levels.primary(0.99), rel=1e-3)
    assert sketched.bootstrap_ci is None  # the impressions stayed in the engine
    assert "the sketch" in sketched.notes


def test_a_sketch_grid_holds_the_intervals_ends_at_its_level() -> None:
    grid = sketch_grid(0.95, 0.01, 0.95)
    z = 1.959963984540054
    assert grid == sorted(grid) and 0.95 in grid
    assert any(abs(p - (0.95 - z * 0.01)) < 1e-15 for p in grid)
    assert max(grid) == 1.0 and min(grid) == pytest.approx(0.95 - 0.06)
    assert sketch_grid(0.5, math.nan, 0.95) == [0.5]
