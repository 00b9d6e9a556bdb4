"""Few heavy users: the concentration of an arm's impressions (Kish's effective number of
units) and the jackknife test that gives a clustered verdict when it is high.

Expected values are worked by hand, by slow leave-one-unit-out loops written here and by
scipy's t and noncentral t distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

import abrank.stats.concentration as concentration_module
from abrank.stats import UnitSums, adjust, compare_clustered
from abrank.stats.concentration import concentration, effective_units
from abrank.stats.unit_jackknife import t_test_mde


def heavy_arm(rng: np.random.Generator, n: int, heavy: int, lift: float = 0.0) -> UnitSums:
    """Users with about 6 impressions, ``heavy`` of them with about 600; a Beta click
    propensity per user (the source of the within-user correlation)."""
    d = rng.geometric(1 / 6, n).astype(np.float64)
    d[:heavy] = rng.geometric(1 / 600, heavy)
    p = np.clip(rng.beta(0.5, 1.2, n) * (1 + lift), 0, 1)
    m = rng.binomial(d.astype(np.int64), p).astype(np.float64)
    return UnitSums(m, d)


def ordinary_arm(rng: np.random.Generator, n: int) -> UnitSums:
    """Users with 1 + Poisson(5) impressions: ordinary traffic."""
    d = 1.0 + rng.poisson(5, n)
    m = rng.binomial(d.astype(np.int64), rng.beta(0.5, 1.2, n)).astype(np.float64)
    return UnitSums(m, d)


def leave_one_out_variance(sums: UnitSums) -> float:
    """The jackknife variance of sum M / sum D by a slow loop over the units."""
    m, d = sums.numerator, sums.denominator
    n = m.size
    ratios = np.array([(m.sum() - m[u]) / (d.sum() - d[u]) for u in range(n)])
    return (n - 1) / n * float(np.sum((ratios - ratios.mean()) ** 2))


def kish(d: np.ndarray) -> float:
    return float(d.sum() ** 2 / np.sum(d**2))


def jackknife_reference(c: UnitSums, t: UnitSums) -> tuple[float, float, float, float]:
    """(delta, se, df, p) of the jackknife test, from the slow variances and scipy's t."""
    v_c, v_t = leave_one_out_variance(c), leave_one_out_variance(t)
    n_c, n_t = c.n_units, t.n_units
    df_c = kish(c.denominator) * (n_c - 1) / n_c
    df_t = kish(t.denominator) * (n_t - 1) / n_t
    df = (v_c + v_t) ** 2 / (v_c**2 / df_c + v_t**2 / df_t)
    se = math.sqrt(v_c + v_t)
    delta = t.ratio - c.ratio
    return delta, se, df, float(2 * sps.t.sf(abs(delta) / se, df))


# --------------------------------------------------------------------------- concentration


def test_kish_effective_units_by_hand() -> None:
    # (1 + 1 + 1 + 1 + 6)^2 / (1 + 1 + 1 + 1 + 36) = 100 / 40
    figures = concentration(np.array([1.0, 1.0, 6.0, 1.0, 1.0]))
    assert figures.effective_units == pytest.approx(2.5, rel=1e-15)
    assert figures.effective_share == pytest.approx(0.5, rel=1e-15)
    assert figures.top_units == 1  # the top 1% of 5 units, rounded up
    assert figures.top_share == pytest.approx(6 / 10, rel=1e-15)
    assert figures.top_10_share == 1.0  # fewer than 10 units: all of them
    assert figures.concentrated is False
    assert effective_units(np.full(7, 3.0)) == pytest.approx(7.0, rel=1e-15)


def test_two_heavy_users_in_two_hundred_are_concentrated() -> None:
    d = np.ones(200)
    d[[17, 150]] = 99.0
    figures = concentration(d)
    # sum D = 198 + 198 = 396, sum D^2 = 198 + 2 * 9801 = 19800
    assert figures.effective_units == pytest.approx(396**2 / 19800, rel=1e-15)
    assert figures.effective_share == pytest.approx(396**2 / 19800 / 200, rel=1e-15)
    assert figures.top_units == 2
    assert figures.top_share == pytest.approx(198 / 396, rel=1e-15)
    assert figures.top_10_share == pytest.approx((198 + 8) / 396, rel=1e-15)
    assert figures.concentrated is True
    assert concentration(d).to_dict()["concentrated"] is True


# --------------------------------------------------------------------------- the jackknife


def test_jackknife_verdict_matches_a_slow_leave_one_out_reference() -> None:
    rng = np.random.default_rng(11)
    c, t = heavy_arm(rng, 200, 2), heavy_arm(rng, 150, 2, lift=0.3)
    got = compare_clustered(c, t, tests=("t",), metric="ctr")
    delta, se, df, p = jackknife_reference(c, t)
    assert got.primary_test == "jackknife"
    assert got.ci_method == "jackknife, clustered by user_id"
    assert got.delta == pytest.approx(delta, abs=1e-15)
    assert got.p_value == pytest.approx(p, rel=1e-9)
    assert got.p_values["jackknife"] == got.p_value
    q = sps.t.ppf(0.975, df)
    assert got.ci == pytest.approx((delta - q * se, delta + q * se), rel=1e-9)
    assert got.regime["df"] == pytest.approx(df, rel=1e-12)
    assert got.regime["se"] == pytest.approx(se, rel=1e-12)
    # the delta-method t stays beside it, with its own (smaller) p-value
    assert "t" in got.p_values and got.p_values["t"] != got.p_value


def test_the_lift_interval_is_fiellers_with_the_jackknife_variances() -> None:
    rng = np.random.default_rng(5)
    c, t = heavy_arm(rng, 400, 4), heavy_arm(rng, 400, 4, lift=0.4)
    got = compare_clustered(c, t, tests=("t",))
    v_c, v_t = leave_one_out_variance(c), leave_one_out_variance(t)
    q = sps.t.ppf(0.975, got.regime["df"])
    low, high = got.relative_ci
    for r in (low, high):  # at each bound the test of R_t - (1 + r) R_c sits on q
        stat = (t.ratio - (1 + r) * c.ratio) / math.sqrt(v_t + (1 + r) ** 2 * v_c)
        assert abs(stat) == pytest.approx(q, rel=1e-9)
    assert low < got.relative_lift < high
    # and so it excludes 0 exactly when the verdict is a win or a loss
    assert (low > 0 or high < 0) == (got.verdict != "inconclusive")


def test_interval_lift_interval_and_verdict_agree_at_the_holm_level() -> None:
    rng = np.random.default_rng(8)
    comparisons = []
    for lift in (0.0, 0.25, 0.5):
        c, t = heavy_arm(rng, 300, 3), heavy_arm(rng, 300, 3, lift=lift)
        comparisons.append(compare_clustered(c, t, tests=("t",), metric=f"m{lift}"))
    for got in adjust(comparisons, method="holm"):
        assert got.primary_test == "jackknife"
        assert got.ci_agrees
        decided = got.verdict != "inconclusive"
        assert (got.ci[0] > 0 or got.ci[1] < 0) == decided
        if got.relative_ci is not None:
            assert (got.relative_ci[0] > 0 or got.relative_ci[1] < 0) == decided


def test_the_mde_is_the_jackknife_t_tests() -> None:
    rng = np.random.default_rng(2)
    c, t = heavy_arm(rng, 300, 3), heavy_arm(rng, 300, 3)
    got = compare_clustered(c, t, tests=("t",))
    se, df = got.regime["se"], got.regime["df"]
    q = sps.t.ppf(0.975, df)
    power = sps.nct.sf(q, df, got.mde / se) + sps.nct.cdf(-q, df, got.mde / se)
    assert power == pytest.approx(0.8, abs=1e-9)
    assert t_test_mde(se, df, 0.05, 0.8) == pytest.approx(got.mde, rel=1e-12)


def test_the_regime_says_which_test_decided_and_why() -> None:
    rng = np.random.default_rng(3)
    c, t = heavy_arm(rng, 500, 5), heavy_arm(rng, 500, 5)
    got = compare_clustered(c, t, tests=("t",))
    regime = got.regime
    assert regime["reasons"] == ["concentrated"]
    assert regime["configured_test"] == "t" and regime["test"] == "jackknife"
    assert regime["threshold"] == 0.25
    for arm, sums in (("control", c), ("treatment", t)):
        assert regime[arm]["effective_units"] == pytest.approx(kish(sums.denominator), rel=1e-12)
        assert regime[arm]["units"] == 500
    assert any(note.startswith("impressions concentrated in few units") for note in got.notes)
    saved = got.to_dict()
    assert saved["primary_test"] == "jackknife" and saved["regime"]["test"] == "jackknife"


@pytest.mark.parametrize(
    ("configured", "decides"),
    [("t", "jackknife"), ("bootstrap", "jackknife"), ("permutation", "permutation")],
)
def test_the_delta_method_and_the_bootstrap_give_way_the_permutation_test_does_not(
    configured: str, decides: str
) -> None:
    rng = np.random.default_rng(4)
    c, t = heavy_arm(rng, 200, 2), heavy_arm(rng, 200, 2)
    got = compare_clustered(c, t, primary_test=configured, n_resamples=999, seed=1)
    assert got.primary_test == decides
    assert (got.regime is not None) == (decides == "jackknife")


def test_the_sequential_test_keeps_its_verdict() -> None:
    rng = np.random.default_rng(4)
    c, t = heavy_arm(rng, 200, 2), heavy_arm(rng, 200, 2)
    got = compare_clustered(c, t, primary_test="sequential", tests=("sequential",))
    assert got.primary_test == "sequential" and got.regime is None


def test_cuped_on_concentrated_units_takes_the_jackknife_of_the_adjusted_values() -> None:
    rng = np.random.default_rng(6)
    c, t = heavy_arm(rng, 300, 3), heavy_arm(rng, 300, 3)
    pre_c = UnitSums(c.numerator * 0.8 + rng.random(300), c.denominator)
    pre_t = UnitSums(t.numerator * 0.8 + rng.random(300), t.denominator)
    got = compare_clustered(c, t, tests=("t",), covariate=(pre_c, pre_t))
    assert got.primary_test == "jackknife"
    assert got.ci_method == "jackknife + CUPED, clustered by user_id"
    assert got.cuped["unadjusted"]["ci_method"] == "jackknife, clustered by user_id"


# --------------------------------------------------------------------------- ordinary traffic


def test_ordinary_traffic_keeps_the_delta_method_bit_for_bit(monkeypatch) -> None:
    rng = np.random.default_rng(9)
    c, t = ordinary_arm(rng, 400), ordinary_arm(rng, 380)
    got = compare_clustered(c, t, seed=3, n_resamples=999)
    assert concentration(c.denominator).effective_share > 0.5
    assert got.primary_test == "t" and got.regime is None and "jackknife" not in got.p_values
    assert got.ci_method == "delta method, clustered by user_id"
    # the delta method's p-value, from its formula
    v = []
    for sums in (c, t):
        r = sums.ratio
        resid = sums.numerator - r * sums.denominator
        n = sums.n_units
        v.append(float(resid @ resid) / sums.denominator.sum() ** 2 * n / (n - 1))
    df = (v[0] + v[1]) ** 2 / (v[0] ** 2 / 399 + v[1] ** 2 / 379)
    p = 2 * sps.t.sf(abs(t.ratio - c.ratio) / math.sqrt(sum(v)), df)
    assert got.p_value == pytest.approx(p, rel=1e-10)
    # every field is what it is with the rule switched off, to the last bit ...
    monkeypatch.setattr(concentration_module, "CONCENTRATED_SHARE", 0.0)
    off = compare_clustered(c, t, seed=3, n_resamples=999)
    assert got.to_dict() == off.to_dict()
    # ... and the rule, forced on, would have changed them
    monkeypatch.setattr(concentration_module, "CONCENTRATED_SHARE", 1.0)
    forced = compare_clustered(c, t, seed=3, n_resamples=999)
    assert forced.primary_test == "jackknife" and forced.p_value != got.p_value


# --------------------------------------------------------------------------- the planner


def test_the_planners_clustered_test_takes_the_same_verdict() -> None:
    from abrank.stats.unit_t import ratio_difference_test

    rng = np.random.default_rng(12)
    rows, expected = [], []
    for heavy in (3, 0, 2):
        c, t = heavy_arm(rng, 150, heavy), heavy_arm(rng, 150, heavy, lift=0.2)
        got = compare_clustered(c, t, tests=("t",))
        expected.append((got.primary_test, got.p_value))
        rows.append(
            (
                np.concatenate([c.numerator, t.numerator]),
                np.concatenate([c.denominator, t.denominator]),
            )
        )
    m = np.vstack([r[0] for r in rows])
    d = np.vstack([r[1] for r in rows])
    treated = np.tile(np.r_[np.zeros(150, bool), np.ones(150, bool)], (3, 1))
    _, se, p = ratio_difference_test(m, d, treated)
    assert [name for name, _ in expected] == ["jackknife", "t", "jackknife"]
    assert p == pytest.approx([value for _, value in expected], rel=1e-9)
