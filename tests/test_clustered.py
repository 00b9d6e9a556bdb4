"""abrank.stats.compare_clustered: ratio-of-sums comparisons clustered by unit, and CUPED.

Expected values come from hand-worked examples, statsmodels' cluster-robust OLS, scipy's
bootstrap, slow plain-numpy resampling loops written here, and the CUPED theory.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from abrank.errors import ConfigError, DataError
from abrank.stats import UnitSums, adjust, compare_clustered, compare_clustered_metrics
from abrank.stats.unit_draws import plan_unit_draws


def clicks_like(rng: np.random.Generator, n: int, rank_p: float = 0.5) -> UnitSums:
    """Users with ~6 impressions and a Beta click propensity; click_rr-like values."""
    d = 1 + rng.poisson(5, n)
    p = rng.beta(0.6, 1.4, n)
    clicks = rng.binomial(d, p)
    ranks = np.minimum(rng.geometric(rank_p, clicks.sum()), 10)
    m = np.bincount(np.repeat(np.arange(n), clicks), weights=1.0 / ranks, minlength=n)
    return UnitSums(m, d.astype(np.float64))


def impressions(sums: UnitSums, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-impression values whose per-unit sums are ``sums``, and each one's unit."""
    d = sums.denominator.astype(int)
    unit = np.repeat(np.arange(d.size), d)
    share = rng.random(unit.size) + 0.1  # uneven split of M_u over the unit's impressions
    total = np.bincount(unit, weights=share)
    return sums.numerator[unit] * share / total[unit], unit


def rows_of(sums: UnitSums) -> np.ndarray:
    return np.column_stack([sums.numerator, sums.denominator])


def delta_var(sums: UnitSums) -> float:
    """Var(R) by the formula of Deng, Knoblich & Lu with the unbiased sample moments."""
    m, d = sums.numerator, sums.denominator
    n = m.size
    r = m.sum() / d.sum()
    cov = np.cov(np.vstack([m, d]), ddof=1)
    return (cov[0, 0] - 2 * r * cov[0, 1] + r**2 * cov[1, 1]) / (n * d.mean() ** 2)


# --------------------------------------------------------------------------- by hand


def test_tiny_example_worked_by_hand() -> None:
    control = UnitSums(np.array([1.0, 0.5, 0.0]), np.array([2.0, 1.0, 1.0]))
    treatment = UnitSums(np.array([1.0, 1.0]), np.array([1.0, 3.0]))
    result = compare_clustered(control, treatment, metric="ctr@3", tests=("t",))
    # R_c = 1.5 / 4, R_t = 2 / 4; 5 units, 4 impressions per arm
    assert result.control_mean == 0.375
    assert result.treatment_mean == 0.5
    assert result.delta == 0.125
    assert (result.n, result.n_control, result.n_treatment) == (5, 4, 4)
    assert result.n_units == {"control": 3, "treatment": 2}
    assert result.unit == "user_id" and result.design == "independent"
    assert result.ci_method == "delta method, clustered by user_id"
    # control: mean D 4/3, L = (M - 0.375 D) * 3/4 = [3/16, 3/32, -9/32]
    #   var(L) = (9/256 + 9/1024 + 81/1024) / 2 = 63/1024, Var(R_c) = 21/1024
    # treatment: mean D 2, L = [1/4, -1/4], var(L) = 1/8, Var(R_t) = 1/16
    v_c, v_t = 21 / 1024, 1 / 16
    se = math.sqrt(v_c + v_t)
    df = (v_c + v_t) ** 2 / (v_c**2 / 2 + v_t**2 / 1)
    assert result.p_value == pytest.approx(2 * sps.t.sf(0.125 / se, df), rel=1e-12)
    half = sps.t.ppf(0.975, df) * se
    assert result.ci == pytest.approx((0.125 - half, 0.125 + half), rel=1e-12)
    assert result.relative_lift == pytest.approx(0.5 / 0.375 - 1, rel=1e-15)
    # log-ratio interval: se^2 = Var(R_t)/R_t^2 + Var(R_c)/R_c^2
    a, b = v_t / 0.25, v_c / 0.375**2
    df_log = (a + b) ** 2 / (b**2 / 2 + a**2 / 1)
    half_log = sps.t.ppf(0.975, df_log) * math.sqrt(a + b)
    centre = math.log(0.5 / 0.375)
    assert result.relative_ci == pytest.approx(
        (math.exp(centre - half_log) - 1, math.exp(centre + half_log) - 1), rel=1e-12
    )
    assert (result.wins, result.ties, result.losses) == (None, None, None)
    # effect size: delta over sqrt((v_c + v_t) / (1/3 + 1/2))
    assert result.effect_size == pytest.approx(0.125 / math.sqrt((v_c + v_t) / (5 / 6)))
    json.dumps(result.to_dict(), allow_nan=False)


def test_unit_sums_to_dict() -> None:
    sums = UnitSums([1, 2, 0.5], [2, 2, 1])
    assert sums.numerator.dtype == np.float64
    assert sums.to_dict() == {"n_units": 3, "sums": {"numerator": 3.5, "denominator": 5.0}}
    assert sums.ratio == 0.7


def test_delta_method_variance_is_the_papers_formula() -> None:
    rng = np.random.default_rng(3)
    control, treatment = clicks_like(rng, 400), clicks_like(rng, 300, 0.6)
    result = compare_clustered(control, treatment, tests=("t",))
    se = math.sqrt(delta_var(control) + delta_var(treatment))
    v_c, v_t = delta_var(control), delta_var(treatment)
    df = (v_c + v_t) ** 2 / (v_c**2 / 399 + v_t**2 / 299)
    half = sps.t.ppf(0.975, df) * se
    assert result.ci == pytest.approx((result.delta - half, result.delta + half), rel=1e-10)


# --------------------------------------------------------------------------- statsmodels


def test_agrees_with_statsmodels_cluster_robust_ols_equal_arms() -> None:
    rng = np.random.default_rng(11)
    n = 150
    control, treatment = clicks_like(rng, n), clicks_like(rng, n, 0.6)
    y_c, g_c = impressions(control, rng)
    y_t, g_t = impressions(treatment, rng)
    y = np.concatenate([y_c, y_t])
    arm = np.concatenate([np.zeros(y_c.size), np.ones(y_t.size)])
    groups = np.concatenate([g_c, g_t + n])
    fit = sm.OLS(y, sm.add_constant(arm)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    result = compare_clustered(control, treatment, tests=("t",))
    assert fit.params[1] == pytest.approx(result.delta, abs=1e-13)
    # statsmodels scales the sandwich by G/(G-1) * (N-1)/(N-K); ours is the sum of the
    # arms' sample variances, i.e. the raw sandwich times n/(n-1) per arm.
    big_g, big_n = 2 * n, y.size
    raw = fit.bse[1] ** 2 / (big_g / (big_g - 1) * (big_n - 1) / (big_n - 2))
    ours = (result.ci[1] - result.delta) / sps.t.ppf(0.975, _welch_df(control, treatment))
    assert ours**2 == pytest.approx(raw * n / (n - 1), rel=1e-9)


def test_agrees_with_statsmodels_per_arm_cluster_variances_unequal_arms() -> None:
    rng = np.random.default_rng(12)
    control, treatment = clicks_like(rng, 220), clicks_like(rng, 90, 0.6)
    variances = []
    for sums in (control, treatment):
        y, g = impressions(sums, rng)
        fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": g})
        assert fit.params[0] == pytest.approx(sums.ratio, rel=1e-12)
        # intercept only: statsmodels' factor is G/(G-1), the unbiased per-unit moments
        variances.append(fit.bse[0] ** 2)
    result = compare_clustered(control, treatment, tests=("t",))
    se = (result.ci[1] - result.delta) / sps.t.ppf(0.975, _welch_df(control, treatment))
    assert se**2 == pytest.approx(sum(variances), rel=1e-9)


def _welch_df(control: UnitSums, treatment: UnitSums) -> float:
    v_c, v_t = delta_var(control), delta_var(treatment)
    n_c, n_t = control.n_units, treatment.n_units
    return (v_c + v_t) ** 2 / (v_c**2 / (n_c - 1) + v_t**2 / (n_t - 1))


# --------------------------------------------------------------------------- resampling


def test_delta_method_se_matches_a_slow_unit_bootstrap() -> None:
    rng = np.random.default_rng(21)
    control, treatment = clicks_like(rng, 300), clicks_like(rng, 300, 0.6)
    result = compare_clustered(control, treatment, tests=("t",))
    se = math.sqrt(delta_var(control) + delta_var(treatment))
    boot = np.empty(20_000)
    slow = np.random.default_rng(5)
    for b in range(boot.size):  # plain loop: resample units of each arm
        i = slow.integers(0, 300, 300)
        j = slow.integers(0, 300, 300)
        boot[b] = (
            treatment.numerator[j].sum() / treatment.denominator[j].sum()
            - control.numerator[i].sum() / control.denominator[i].sum()
        )
    # the bootstrap's sd estimates se * sqrt((n-1)/n); its own Monte-Carlo error ~0.5%
    assert boot.std() == pytest.approx(se * math.sqrt(299 / 300), rel=0.03)
    assert result.delta == pytest.approx(treatment.ratio - control.ratio)


def integer_clicks(rng: np.random.Generator, n: int, p_mean: float) -> UnitSums:
    """ctr-like sums: clicked impressions of 1-4 per user (few distinct (M, D) rows)."""
    d = rng.integers(1, 5, n)
    p = rng.beta(4 * p_mean, 4 * (1 - p_mean), n)
    return UnitSums(rng.binomial(d, p).astype(np.float64), d.astype(np.float64))


def permutation_case(which: str) -> tuple[UnitSums, UnitSums]:
    if which == "shared draws":  # many distinct rows: index permutations shared by metrics
        rng = np.random.default_rng(45)
        control, treatment = clicks_like(rng, 200), clicks_like(rng, 180)
        return control, UnitSums(treatment.numerator * 1.3, treatment.denominator)
    rng = np.random.default_rng(46)  # few distinct rows: hypergeometric draws of its own
    return integer_clicks(rng, 1500, 0.3), integer_clicks(rng, 1400, 0.32)


@pytest.mark.parametrize("which", ["shared draws", "own draws"])
def test_unit_permutation_p_matches_a_slow_permutation_loop(which: str) -> None:
    control, treatment = permutation_case(which)
    n_t = treatment.n_units
    rows = {"m": (rows_of(control), rows_of(treatment))}
    shared = plan_unit_draws(rows, {"m": ("t", "permutation")}, 10_000, 2, "treatment", None)
    assert ("m" in shared) == (which == "shared draws")
    result = compare_clustered(control, treatment, tests=("t", "permutation"), seed=2, metric="m")
    m = np.concatenate([treatment.numerator, control.numerator])
    d = np.concatenate([treatment.denominator, control.denominator])
    observed = treatment.ratio - control.ratio
    slow = np.random.default_rng(8)
    count, big_b = 0, 20_000
    for _ in range(big_b):
        order = slow.permutation(m.size)
        first, rest = order[:n_t], order[n_t:]
        null = m[first].sum() / d[first].sum() - m[rest].sum() / d[rest].sum()
        count += abs(null) >= abs(observed) - 1e-12
    reference = (count + 1) / (big_b + 1)
    p = result.p_values["permutation"]
    assert 0.01 < reference < 0.5  # a p-value with Monte-Carlo error worth checking
    mc = math.sqrt(reference * (1 - reference) * (1 / big_b + 1 / 10_000))
    assert p == pytest.approx(reference, abs=4 * mc)


@pytest.mark.parametrize("which", ["shared draws", "own draws"])
def test_unit_bootstrap_interval_matches_scipy_bca(which: str) -> None:
    if which == "shared draws":  # many distinct rows: index draws shared by metrics
        rng = np.random.default_rng(22)
        control, treatment = clicks_like(rng, 250), clicks_like(rng, 200, 0.6)
    else:  # few distinct rows: multinomial draws of its own
        rng = np.random.default_rng(28)
        control, treatment = integer_clicks(rng, 1500, 0.3), integer_clicks(rng, 1400, 0.32)
    shared = plan_unit_draws(
        {"m": (rows_of(control), rows_of(treatment))},
        {"m": ("t", "bootstrap")},
        10_000,
        4,
        "treatment",
        None,
    )
    assert ("m" in shared) == (which == "shared draws")
    n_c, n_t = control.n_units, treatment.n_units
    result = compare_clustered(control, treatment, tests=("t", "bootstrap"), seed=4, metric="m")

    def statistic(ic: np.ndarray, it: np.ndarray, axis: int = -1) -> np.ndarray:
        ic, it = ic.astype(int), it.astype(int)
        r_c = control.numerator[ic].sum(axis) / control.denominator[ic].sum(axis)
        r_t = treatment.numerator[it].sum(axis) / treatment.denominator[it].sum(axis)
        return r_t - r_c

    reference = sps.bootstrap(
        (np.arange(n_c), np.arange(n_t)),
        statistic,
        n_resamples=20_000,
        method="BCa",
        vectorized=True,
        random_state=np.random.default_rng(9),
    ).confidence_interval
    se = math.sqrt(delta_var(control) + delta_var(treatment))
    # Monte-Carlo sd of a 2.5% quantile: sqrt(0.025 * 0.975 / B) / phi(1.96) * se, about
    # 0.027 se at B = 10,000 and 0.019 se at 20,000 (0.035 se together): 4 sd, plus
    # Hesterberg's expansion (t_199 and sqrt(n / (n - 1)) against z: ~0.01 se)
    assert result.bootstrap_ci[0] == pytest.approx(reference.low, abs=0.15 * se)
    assert result.bootstrap_ci[1] == pytest.approx(reference.high, abs=0.15 * se)
    assert result.bootstrap_ci[1] - result.bootstrap_ci[0] == pytest.approx(
        reference.high - reference.low, rel=0.05
    )
    assert result.p_values["bootstrap"] is not None


def test_same_seed_same_numbers_and_other_seed_other_draws() -> None:
    rng = np.random.default_rng(24)
    control, treatment = clicks_like(rng, 120), clicks_like(rng, 100, 0.6)
    one = compare_clustered(control, treatment, seed=7, metric="click_rr@10")
    two = compare_clustered(control, treatment, seed=7, metric="click_rr@10")
    other = compare_clustered(control, treatment, seed=8, metric="click_rr@10")
    assert one.to_dict() == two.to_dict()
    assert np.array_equal(one.resampled_deltas, two.resampled_deltas)
    assert one.p_values["permutation"] != other.p_values["permutation"] or (
        one.bootstrap_ci != other.bootstrap_ci
    )
    assert one.p_values["t"] == other.p_values["t"]


def test_compare_clustered_metrics_equals_each_metric_alone() -> None:
    rng = np.random.default_rng(25)
    base_c, base_t = clicks_like(rng, 150), clicks_like(rng, 140, 0.6)
    controls = {
        "click_rr@10": base_c,
        "ctr@3": UnitSums(np.minimum(base_c.numerator * 2, base_c.denominator), base_c.denominator),
    }
    treatments = {
        "click_rr@10": base_t,
        "ctr@3": UnitSums(np.minimum(base_t.numerator * 2, base_t.denominator), base_t.denominator),
    }
    pre = (clicks_like(rng, 150), clicks_like(rng, 140))
    many = compare_clustered_metrics(
        controls, treatments, covariates={"ctr@3": pre}, seed=3, treatment_name="new"
    )
    for result, metric in zip(many, controls, strict=True):
        alone = compare_clustered(
            controls[metric],
            treatments[metric],
            seed=3,
            metric=metric,
            treatment_name="new",
            covariate=pre if metric == "ctr@3" else None,
        )
        assert result.to_dict() == alone.to_dict()
    assert many[0].cuped is None and many[1].cuped is not None


def test_metrics_of_the_same_units_share_their_unit_resamples() -> None:
    # a metric with twice the numerators has exactly twice every resampled ratio when the
    # two are drawn from the same unit resamples (their own draws are seeded by metric)
    rng = np.random.default_rng(27)
    c, t = clicks_like(rng, 200), clicks_like(rng, 180, 0.6)
    doubled = (UnitSums(2 * c.numerator, c.denominator), UnitSums(2 * t.numerator, t.denominator))
    one, two = compare_clustered_metrics({"a": c, "b": doubled[0]}, {"a": t, "b": doubled[1]})
    assert np.allclose(two.resampled_deltas, 2 * one.resampled_deltas, rtol=1e-12, atol=0)
    assert two.p_values["permutation"] == one.p_values["permutation"]
    alone = compare_clustered(doubled[0], doubled[1], metric="b")
    assert np.array_equal(alone.resampled_deltas, two.resampled_deltas)


def test_multiple_testing_adjust_redraws_the_delta_method_intervals() -> None:
    rng = np.random.default_rng(26)
    pairs = [(clicks_like(rng, 300), clicks_like(rng, 300, 0.58)) for _ in range(3)]
    results = [
        compare_clustered(c, t, tests=("t",), metric=f"m{i}") for i, (c, t) in enumerate(pairs)
    ]
    adjusted = adjust(results, "holm")
    expected = multipletests([r.p_value for r in results], method="holm")[1]
    for before, after, p in zip(results, adjusted, expected, strict=True):
        assert after.p_adjusted == pytest.approx(p, rel=1e-12)
        level = after.ci_level
        assert level >= before.ci_level
        half = (before.ci[1] - before.ci[0]) / 2
        df_q = sps.t.ppf(0.5 + before.ci_level / 2, _welch_df(*pairs[results.index(before)]))
        se = half / df_q
        wide = sps.t.ppf(0.5 + level / 2, _welch_df(*pairs[results.index(before)])) * se
        assert after.ci == pytest.approx((before.delta - wide, before.delta + wide), rel=1e-9)
        assert after.ci_agrees


# --------------------------------------------------------------------------- CUPED


def test_cuped_variance_reduction_is_one_minus_rho_squared() -> None:
    rng = np.random.default_rng(31)
    n, rho = 20_000, 0.6
    arms = []
    for shift in (0.0, 0.1):
        z = rng.standard_normal((n, 2))
        x = z[:, 0]
        y = rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1] + shift
        ones = np.ones(n)
        arms.append((UnitSums(y, ones), UnitSums(x, ones)))
    (y_c, x_c), (y_t, x_t) = arms
    result = compare_clustered(y_c, y_t, tests=("t",), covariate=(x_c, x_t))
    assert result.cuped["variance_reduction"] == pytest.approx(rho**2, abs=0.02)
    assert result.cuped["theta"] == pytest.approx(rho, abs=0.02)
    assert result.ci_method == "delta method + CUPED, clustered by user_id"
    assert result.delta == pytest.approx(0.1, abs=4 * 0.8 / math.sqrt(n / 2))


def _pre_and_post(rng: np.random.Generator, n: int, effect: float) -> tuple[UnitSums, UnitSums]:
    """Per-unit sums of a per-impression metric p_u + effect + noise, and of the pre-period
    (no effect; about 2% of units have no pre-period impression)."""
    p = rng.beta(2, 3, n)
    d = 1 + rng.poisson(4, n)
    xd = rng.poisson(4, n)
    m = d * (p + effect) + np.sqrt(d) * 0.3 * rng.standard_normal(n)
    xm = xd * p + np.sqrt(xd) * 0.3 * rng.standard_normal(n)
    return UnitSums(m, d.astype(float)), UnitSums(xm, xd.astype(float))


def test_cuped_is_unbiased_and_its_variance_shrinks_as_reported() -> None:
    rng = np.random.default_rng(32)
    effect, runs = 0.03, 300
    adjusted, raw, ses, reductions = [], [], [], []
    for _ in range(runs):
        y_c, x_c = _pre_and_post(rng, 400, 0.0)
        y_t, x_t = _pre_and_post(rng, 400, effect)
        result = compare_clustered(y_c, y_t, tests=("t",), covariate=(x_c, x_t))
        adjusted.append(result.delta)
        raw.append(result.cuped["unadjusted"]["delta"])
        df = 798
        ses.append((result.ci[1] - result.delta) / sps.t.ppf(0.975, df))
        reductions.append(result.cuped["variance_reduction"])
    adjusted, raw = np.array(adjusted), np.array(raw)
    # the true delta of the ratio is `effect` (D independent of p)
    assert adjusted.mean() == pytest.approx(effect, abs=4 * adjusted.std() / math.sqrt(runs))
    assert raw.mean() == pytest.approx(effect, abs=4 * raw.std() / math.sqrt(runs))
    # the spread of the adjusted deltas shrank by the reported reduction, and the
    # reported standard error is the spread's (within the error of 300 runs, ~8% on var)
    shrink = 1 - adjusted.var() / raw.var()
    assert np.mean(reductions) > 0.3
    assert shrink == pytest.approx(np.mean(reductions), abs=0.12)
    assert np.mean(ses) == pytest.approx(adjusted.std(), rel=0.1)


def test_cuped_keeps_the_unadjusted_comparison_beside_it() -> None:
    rng = np.random.default_rng(33)
    y_c, x_c = _pre_and_post(rng, 300, 0.0)
    y_t, x_t = _pre_and_post(rng, 250, 0.02)
    plain = compare_clustered(y_c, y_t, metric="m", seed=5)
    result = compare_clustered(y_c, y_t, metric="m", seed=5, covariate=(x_c, x_t))
    unadjusted = result.cuped["unadjusted"]
    assert unadjusted["delta"] == plain.delta
    assert unadjusted["ci"] == list(plain.ci)
    assert unadjusted["p_value"] == plain.p_value
    assert unadjusted["relative_lift"] == plain.relative_lift
    assert unadjusted["relative_ci"] == list(plain.relative_ci)
    assert unadjusted["p_values"] == plain.p_values
    assert (result.control_mean, result.treatment_mean) == (
        plain.control_mean,
        plain.treatment_mean,
    )
    assert result.p_values["permutation"] is None or math.isnan(result.p_values["permutation"])
    assert result.p_value == result.p_values["t"]
    assert result.cuped["units_with_covariate"] == {
        "control": int(np.count_nonzero(x_c.denominator)),
        "treatment": int(np.count_nonzero(x_t.denominator)),
    }
    json.dumps(result.to_dict(), allow_nan=False)


def test_cuped_by_hand_units_without_pre_period_add_no_adjustment() -> None:
    # one unit per arm per value; D = 1 everywhere the covariate exists
    control = UnitSums([1.0, 2.0, 3.0, 5.0], [1, 1, 1, 1])
    treatment = UnitSums([2.0, 3.0, 5.0, 9.0], [1, 1, 1, 1])
    pre_c = UnitSums([1.0, 2.0, 4.0, 0.0], [1, 1, 1, 0])  # last unit: no pre-period
    pre_t = UnitSums([1.0, 3.0, 5.0, 0.0], [1, 1, 1, 0])
    result = compare_clustered(control, treatment, tests=("t",), covariate=(pre_c, pre_t))
    # covariate ratio over units with data: control 7/3, treatment 3; mean D 3/4 per arm,
    # so deviations (x - R_x) / (3/4) on the first three units and 0 on the last
    xc = np.array([1 - 7 / 3, 2 - 7 / 3, 4 - 7 / 3, 0]) / 0.75
    xt = np.array([1 - 3, 3 - 3, 5 - 3, 0]) / 0.75
    yc = np.array([1, 2, 3, 5]) - 11 / 4
    yt = np.array([2, 3, 5, 9]) - 19 / 4
    theta = (yc @ xc + yt @ xt) / (xc @ xc + xt @ xt)
    assert result.cuped["theta"] == pytest.approx(theta, rel=1e-12)
    assert result.delta == pytest.approx((19 / 4 - 11 / 4) - theta * (3 - 7 / 3), rel=1e-12)
    v = np.var(yc - theta * xc, ddof=1) / 4 + np.var(yt - theta * xt, ddof=1) / 4
    v_raw = np.var(yc, ddof=1) / 4 + np.var(yt, ddof=1) / 4
    assert result.cuped["variance_reduction"] == pytest.approx(1 - v / v_raw, rel=1e-12)


def test_cuped_without_any_pre_period_changes_nothing() -> None:
    control = UnitSums([1.0, 2.0, 3.0], [1, 2, 1])
    treatment = UnitSums([2.0, 3.0, 5.0], [2, 1, 1])
    empty = UnitSums(np.zeros(3), np.zeros(3))
    plain = compare_clustered(control, treatment, tests=("t",))
    result = compare_clustered(control, treatment, tests=("t",), covariate=(empty, empty))
    assert result.cuped["theta"] == 0.0
    assert result.delta == plain.delta and result.ci == plain.ci
    assert any("nothing was adjusted" in note for note in result.notes)


# --------------------------------------------------------------------------- degenerate


def test_one_unit_per_arm_gives_no_test() -> None:
    result = compare_clustered(UnitSums([1.0], [2.0]), UnitSums([2.0], [2.0]))
    assert result.delta == 0.5
    assert math.isnan(result.p_value)
    assert result.ci == (-math.inf, math.inf)
    assert result.verdict == "inconclusive"
    json.dumps(result.to_dict(), allow_nan=False)


def test_units_on_their_arms_ratio_have_no_variance() -> None:
    # every unit at its arm's ratio: no variance; the exact permutation p stands in
    control = UnitSums([1.0, 2.0, 3.0], [2.0, 4.0, 6.0])
    treatment = UnitSums([3.0, 6.0], [4.0, 8.0])
    result = compare_clustered(control, treatment, tests=("t",))
    assert result.delta == 0.25
    # arms of 3 and 2 units: only the observed labelling reaches the delta (no full swap)
    assert result.p_value == pytest.approx(1 / math.comb(5, 2))
    assert compare_clustered(control, control, tests=("t",)).p_value == 1.0


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("control", "message"),
    [
        (
            UnitSums([1.0, 2.0], [1.0, 0.0]),
            "control: denominator[1]: expected a positive number of impressions per unit, got 0",
        ),
        (
            UnitSums([1.0, math.nan], [1.0, 1.0]),
            "control: numerator[1]: expected a finite number, got nan",
        ),
        (
            UnitSums([1.0, 2.0], [1.0, 1.0, 1.0]),
            "control: expected numerator and denominator of one value per unit, "
            "got shapes (2,) and (3,)",
        ),
    ],
)
def test_bad_unit_sums_name_the_argument_and_unit(control: UnitSums, message: str) -> None:
    with pytest.raises(DataError) as caught:
        compare_clustered(control, UnitSums([1.0], [1.0]))
    assert str(caught.value) == message


def test_bad_arguments() -> None:
    good = UnitSums([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ConfigError, match="control: expected UnitSums, got list"):
        compare_clustered([1.0, 2.0], good)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="tests: expected one of 't', 'permutation', 'boot"):
        compare_clustered(good, good, tests=("mannwhitney",))
    with pytest.raises(ConfigError, match="unit: expected the name of the clustering column"):
        compare_clustered(good, good, unit="")
    with pytest.raises(
        ConfigError, match="primary_test: expected 't' or 'sequential' with a CUPED covariate"
    ):
        compare_clustered(good, good, primary_test="permutation", covariate=(good, good))
    with pytest.raises(DataError, match=r"covariate\[treatment\]: expected one value per unit"):
        compare_clustered(good, good, covariate=(good, UnitSums([1.0], [1.0])))
    with pytest.raises(DataError, match=r"covariate\[control\]: numerator\[0\]: expected 0"):
        compare_clustered(good, good, covariate=(UnitSums([1.0, 1.0], [0.0, 1.0]), good))
    with pytest.raises(DataError, match=r"covariate\[treatment\]: denominator\[1\]: expected a"):
        compare_clustered(good, good, covariate=(good, UnitSums([1.0, 0.0], [1.0, -1.0])))
    with pytest.raises(ConfigError, match="covariate: expected a .control, treatment. pair"):
        compare_clustered(good, good, covariate=good)  # type: ignore[arg-type]
    with pytest.raises(DataError, match="UnitSums.numerator: expected numbers, got values"):
        UnitSums(["a", "b"], [1.0, 1.0])
    with pytest.raises(ConfigError, match="primary_test: expected one of 't', 'permutation'"):
        compare_clustered(good, good, primary_test="mannwhitney")
    with pytest.raises(ConfigError, match="covariates: expected metrics of controls"):
        compare_clustered_metrics({"a": good}, {"a": good}, covariates={"b": (good, good)})
    with pytest.raises(ConfigError, match="treatments: expected the metrics of controls"):
        compare_clustered_metrics({"a": good}, {"b": good})


def test_a_clustered_comparison_round_trips_through_the_typed_summary() -> None:
    from abrank.readout.model import ComparisonSummary

    rng = np.random.default_rng(34)
    y_c, x_c = _pre_and_post(rng, 120, 0.0)
    y_t, x_t = _pre_and_post(rng, 110, 0.02)
    result = compare_clustered(y_c, y_t, metric="m", unit="session_id", covariate=(x_c, x_t))
    saved = result.saved()
    assert saved.unit == "session_id"
    assert saved.n_units == {"control": 120, "treatment": 110}
    assert saved.cuped["theta"] == result.cuped["theta"]
    assert saved.to_dict() == result.to_dict()
    text = json.dumps(saved.to_dict(), allow_nan=False)
    assert ComparisonSummary.from_dict(json.loads(text)).to_dict() == saved.to_dict()
