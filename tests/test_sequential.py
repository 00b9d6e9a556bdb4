"""Always-valid inference: the ``sequential`` test (abrank.stats.sequential).

Expected values: the width formula worked out by hand (and with mpmath's 30 digits), the
error rates and coverage of simulated experiments looked at on 10 days (vectorized here,
each design's variance computed in this file from its own sums), scipy's t-intervals,
and the inversion of the p-value read off the interval itself.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

import abrank
from abrank.config import parse_experiment
from abrank.errors import ConfigError
from abrank.readout.model import Summary
from abrank.render import render_markdown
from abrank.stats import UnitSums, compare, compare_clustered
from abrank.stats.sequential import half_width, p_values, tuned_rho

ROOT = Path(__file__).resolve().parent.parent
LOOKS = 10
EXPERIMENTS = 2000


# --------------------------------------------------------------------------- the formula


def test_half_width_worked_by_hand() -> None:
    # n = 1000 observations of per-observation variance V = 4, alpha = 0.05, N* = 5000:
    #   -2 log 0.05 = 5.991465; log(5.991465 + 1) = 1.944691
    #   rho^2 = (5.991465 + 1.944691) / 5000 = 0.001587231
    #   n rho^2 + 1 = 2.587231; log(sqrt(2.587231) / 0.05) = log(32.16977) = 3.471028
    #   2 * 2.587231 / (1000^2 * 0.001587231) = 0.003260118
    #   half-width = sqrt(4) * sqrt(0.003260118 * 3.471028) = 2 * 0.1063755 = 0.212751
    # (mpmath at 30 digits: 0.212750940131150084529...)
    rho = tuned_rho(5000, 0.05)
    assert rho**2 == pytest.approx(0.001587230920347513, rel=1e-13)
    assert float(half_width(1000, 4.0, 0.05, rho)) == pytest.approx(0.2127509401311501, rel=1e-13)
    assert float(half_width(1000, 4.0, 0.05, rho)) == pytest.approx(0.212751, abs=1e-6)


def test_the_sequence_is_tightest_near_its_tuning() -> None:
    # per observation, sqrt(n) * half-width / sqrt(V) is smallest near n = N*
    n = np.arange(100, 50_001, 100)
    scaled = np.sqrt(n) * half_width(n, 1.0, 0.05, tuned_rho(5000, 0.05))
    assert 3000 <= n[np.argmin(scaled)] <= 8000


# --------------------------------------------------------------------------- simulations


def _paired_looks(rng: np.random.Generator, shift: float) -> tuple[np.ndarray, ...]:
    """(mean delta, per-query variance, n) at each of 10 cumulative looks of 2,000 paired
    experiments, 100 new queries a day; lumpy reciprocal-rank-like values."""
    per_day = 100
    shape = (EXPERIMENTS, LOOKS, per_day)
    c = 1.0 / rng.integers(1, 12, shape)
    c[c < 1 / 10] = 0.0
    t = 1.0 / rng.integers(1, 12, shape)
    t[t < 1 / 10] = 0.0
    d = t - c + shift
    n = per_day * np.arange(1, LOOKS + 1)
    s1 = np.cumsum(d.sum(axis=2), axis=1)
    s2 = np.cumsum((d * d).sum(axis=2), axis=1)
    mean = s1 / n
    var = (s2 - n * mean**2) / (n - 1)
    return mean, var, n


def _independent_looks(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(delta, Welch se^2, df, n_c + n_t) at each look: 80 control and 120 treatment values
    a day, both lognormal (skewed) with the same distribution."""
    sums = {}
    for arm, per_day in (("c", 80), ("t", 120)):
        x = rng.lognormal(0.0, 0.8, (EXPERIMENTS, LOOKS, per_day))
        n = per_day * np.arange(1, LOOKS + 1)
        s1 = np.cumsum(x.sum(axis=2), axis=1)
        s2 = np.cumsum((x * x).sum(axis=2), axis=1)
        mean = s1 / n
        sums[arm] = (mean, (s2 - n * mean**2) / (n - 1), n)
    (m_c, v_c, n_c), (m_t, v_t, n_t) = sums["c"], sums["t"]
    a, b = v_c / n_c, v_t / n_t
    df = (a + b) ** 2 / (a**2 / (n_c - 1) + b**2 / (n_t - 1))
    return m_t - m_c, a + b, df, n_c + n_t


def _users(rng: np.random.Generator, shape: tuple, p_alpha: float) -> tuple[np.ndarray, ...]:
    """Users with heterogeneous activity (1 + Poisson of a Gamma rate: 1 to 30+ impressions)
    and click propensity (Beta): per-user clicks M and impressions D."""
    d = 1.0 + rng.poisson(rng.gamma(1.5, 3.0, shape))
    p = rng.beta(p_alpha, 1.4, shape)
    m = rng.binomial(d.astype(np.int64), p).astype(np.float64)
    return m, d


def _clustered_looks(rng: np.random.Generator, p_alpha_t: float) -> tuple[np.ndarray, ...]:
    """(delta, delta-method variance of the delta, units in both arms) at each look of
    clustered experiments: 60 new users per arm a day; CTR = sum(clicks) / sum(impressions)."""
    per_day = 60
    arms = []
    for p_alpha in (0.6, p_alpha_t):
        m, d = _users(rng, (EXPERIMENTS, LOOKS, per_day), p_alpha)
        n = per_day * np.arange(1, LOOKS + 1)
        cum = {
            key: np.cumsum(value.sum(axis=2), axis=1)
            for key, value in (("m", m), ("d", d), ("mm", m * m), ("dd", d * d), ("md", m * d))
        }
        ratio = cum["m"] / cum["d"]
        mean_m, mean_d = cum["m"] / n, cum["d"] / n
        s_mm = (cum["mm"] - n * mean_m**2) / (n - 1)
        s_dd = (cum["dd"] - n * mean_d**2) / (n - 1)
        s_md = (cum["md"] - n * mean_m * mean_d) / (n - 1)
        var_ratio = (s_mm - 2 * ratio * s_md + ratio**2 * s_dd) / (mean_d**2 * n)
        arms.append((ratio, var_ratio, n))
    (r_c, v_c, n_c), (r_t, v_t, n_t) = arms
    return r_t - r_c, v_c + v_t, n_c + n_t


def _ever(p: np.ndarray) -> float:
    """Share of experiments with p < 0.05 at one look at least."""
    return float(np.mean(np.any(p < 0.05, axis=1)))


def test_aa_paired_ten_daily_looks() -> None:
    rho = tuned_rho(5000, 0.05)
    mean, var, n = _paired_looks(np.random.default_rng(11), 0.0)
    fixed = 2 * sps.t.sf(np.abs(mean) / np.sqrt(var / n), n - 1)
    sequential = p_values(mean, n, var, rho)  # per-query variance V = n se^2 = s^2
    print(
        f"paired A/A, P(ever p < 0.05) over 10 looks: t {_ever(fixed):.3f}, "
        f"sequential {_ever(sequential):.3f}"
    )
    assert _ever(fixed) > 0.12  # peeking at a fixed-horizon test is the problem
    assert _ever(sequential) <= 0.06


def test_aa_independent_ten_daily_looks() -> None:
    rho = tuned_rho(5000, 0.05)
    delta, se2, df, n = _independent_looks(np.random.default_rng(12))
    fixed = 2 * sps.t.sf(np.abs(delta) / np.sqrt(se2), df)
    sequential = p_values(delta, n, n * se2, rho)
    print(
        f"independent A/A, P(ever p < 0.05) over 10 looks: Welch {_ever(fixed):.3f}, "
        f"sequential {_ever(sequential):.3f}"
    )
    assert _ever(fixed) > 0.12
    assert _ever(sequential) <= 0.06


def test_aa_clustered_ten_daily_looks() -> None:
    rho = tuned_rho(5000, 0.05)
    delta, var, n = _clustered_looks(np.random.default_rng(13), 0.6)
    fixed = 2 * sps.norm.sf(np.abs(delta) / np.sqrt(var))
    sequential = p_values(delta, n, n * var, rho)
    print(
        f"clustered A/A, P(ever p < 0.05) over 10 looks: delta method "
        f"{_ever(fixed):.3f}, sequential {_ever(sequential):.3f}"
    )
    assert _ever(fixed) > 0.12
    assert _ever(sequential) <= 0.06


def test_coverage_at_every_look_with_a_true_effect() -> None:
    rho = tuned_rho(5000, 0.05)
    # paired: the true mean delta is the shift (the two arms' values are alike)
    mean, var, n = _paired_looks(np.random.default_rng(14), 0.03)
    covered = np.abs(mean - 0.03) <= half_width(n, var, 0.05, rho)
    assert float(np.mean(np.all(covered, axis=1))) >= 0.94
    # clustered: CTR = E[clicks] / E[impressions] = E[p] (propensity independent of
    # activity), 0.6 / 2.0 = 0.3 against 0.7 / 2.1 = 1/3: a true delta of +1/30
    delta, var, n = _clustered_looks(np.random.default_rng(15), 0.7)
    covered = np.abs(delta - (1 / 3 - 0.3)) <= half_width(n, n * var, 0.05, rho)
    assert float(np.mean(np.all(covered, axis=1))) >= 0.94


# --------------------------------------------------------------------------- the designs


def test_each_design_uses_its_own_estimator_and_variance() -> None:
    rng = np.random.default_rng(21)
    c, t = rng.random(400), rng.random(400) + 0.03
    rho = tuned_rho(5000, 0.05)
    # paired: n queries, V = n se^2 = sample variance of the deltas
    d = t - c
    got = compare(c, t, primary_test="sequential", sequential_tuning=5000)
    assert got.p_value == pytest.approx(float(p_values(d.mean(), d.size, d.var(ddof=1), rho)))
    half = float(half_width(d.size, d.var(ddof=1), 0.05, rho))
    assert got.ci == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert got.ci_method == "confidence sequence" and got.p_values["t"] < got.p_value
    # independent: n = n_c + n_t, V = n (s_c^2 / n_c + s_t^2 / n_t)
    t2 = t[:300]
    got = compare(c, t2, design="independent", primary_test="sequential", sequential_tuning=5000)
    n = c.size + t2.size
    v = n * (c.var(ddof=1) / c.size + t2.var(ddof=1) / t2.size)
    delta = t2.mean() - c.mean()
    assert got.p_value == pytest.approx(float(p_values(delta, n, v, rho)))
    assert got.ci[1] - got.ci[0] == pytest.approx(2 * float(half_width(n, v, 0.05, rho)))
    # the relative lift: the same width on the log ratio
    se2 = c.var(ddof=1) / c.size / c.mean() ** 2 + t2.var(ddof=1) / t2.size / t2.mean() ** 2
    centre, half = math.log(t2.mean() / c.mean()), float(half_width(n, n * se2, 0.05, rho))
    assert got.relative_ci == pytest.approx((math.expm1(centre - half), math.expm1(centre + half)))


def test_clustered_sequence_uses_the_delta_method_variance_over_units() -> None:
    rng = np.random.default_rng(22)
    (m_c, d_c), (m_t, d_t) = _users(rng, (700,), 0.6), _users(rng, (650,), 0.66)
    control, treatment = UnitSums(m_c, d_c), UnitSums(m_t, d_t)
    got = compare_clustered(
        control, treatment, primary_test="sequential", tests=["t"], sequential_tuning=5000
    )

    def var_ratio(m, d):  # Deng, Knoblich & Lu with unbiased sample moments
        r = m.sum() / d.sum()
        cov = np.cov(np.vstack([m, d]), ddof=1)
        return (cov[0, 0] - 2 * r * cov[0, 1] + r**2 * cov[1, 1]) / (m.size * d.mean() ** 2)

    n = 700 + 650
    v = n * (var_ratio(m_c, d_c) + var_ratio(m_t, d_t))
    delta = m_t.sum() / d_t.sum() - m_c.sum() / d_c.sum()
    rho = tuned_rho(5000, 0.05)
    assert got.p_value == pytest.approx(float(p_values(delta, n, v, rho)), rel=1e-9)
    half = float(half_width(n, v, 0.05, rho))
    assert got.ci == pytest.approx((delta - half, delta + half), rel=1e-9)
    assert got.ci_method == "confidence sequence (delta method), clustered by user_id"
    # another N* moves the sequence: tighter at n = 1,350 when tuned there, the default
    tuned = compare_clustered(control, treatment, primary_test="sequential")
    assert tuned.ci[1] - tuned.ci[0] < got.ci[1] - got.ci[0]
    assert tuned.ci[1] - tuned.ci[0] == pytest.approx(
        2 * float(half_width(n, v, 0.05, tuned_rho(n, 0.05))), rel=1e-9
    )


@pytest.mark.parametrize("design", ["paired", "independent", "clustered"])
def test_the_sequence_at_level_one_minus_p_has_zero_on_its_edge(design) -> None:
    rng = np.random.default_rng(23)
    if design == "clustered":
        (m_c, d_c), (m_t, d_t) = _users(rng, (3000,), 0.6), _users(rng, (3000,), 0.8)
        got = compare_clustered(UnitSums(m_c, d_c), UnitSums(m_t, d_t), primary_test="sequential")
    else:
        c, t = rng.random(500), rng.random(500) + 0.12
        got = compare(c, t, design=design, primary_test="sequential")
    p = got.p_value
    assert 1e-6 < p < 0.05
    low, high = got.levels.primary(1.0 - p)
    assert min(abs(low), abs(high)) == pytest.approx(0.0, abs=1e-12 * abs(got.delta))
    assert got.delta > 0  # a narrower sequence excludes 0, a wider one holds it
    assert got.levels.primary(1.0 - 1.1 * p)[0] > 0 > got.levels.primary(1.0 - 0.9 * p)[0]


def test_p_value_is_capped_at_one_and_never_zero() -> None:
    assert float(p_values(0.0, 100, 1.0, tuned_rho(5000, 0.05))) == 1.0
    assert float(p_values(1e6, 100, 1.0, tuned_rho(5000, 0.05))) > 0.0


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "many"])
def test_a_bad_tuning_is_an_error_naming_the_argument(bad) -> None:
    with pytest.raises(ConfigError, match=r"^sequential_tuning: expected a positive integer"):
        compare([0.1, 0.2, 0.4], [0.3, 0.2, 0.6], primary_test="sequential", sequential_tuning=bad)
    sums = UnitSums(np.ones(5), np.ones(5) * 2)
    with pytest.raises(ConfigError, match=r"^sequential_tuning: expected a positive integer"):
        compare_clustered(sums, sums, primary_test="sequential", sequential_tuning=bad)


# --------------------------------------------------------------------------- end to end


DEMO = (ROOT / "experiments" / "demo-reranker.yaml").read_text(encoding="utf-8")


def _demo(replace: str, by: str):
    assert replace in DEMO
    text = DEMO.replace(replace, by).replace("resamples: 10000", "resamples: 200")
    return parse_experiment(text, source="demo-seq.yaml", base_dir=ROOT / "experiments")


@pytest.fixture(scope="module")
def sequential_demo():
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        return abrank.run_experiment(_demo("  primary_test: t\n", "  sequential: true\n"))


def test_demo_with_sequential_inference(sequential_demo) -> None:
    summary = sequential_demo.summary
    assert summary["primary_test"] == "sequential"
    assert summary["tests"] == ["t", "permutation", "bootstrap", "sequential"]
    seq = summary["sequential"]
    assert seq["method"] == "asymptotic confidence sequence (Waudby-Smith et al.)"
    # tuned at the sample size by default: the primary metric's queries
    first = next(
        c
        for c in summary["comparisons"]
        if c["metric"] == summary["primary_metric"] and c["segment"] is None
    )
    assert seq["tuning"] == first["n"] and seq["tuning_source"] == "sample_size"
    table = sequential_demo.per_query
    for comp in summary["comparisons"]:
        assert comp["primary_test"] == "sequential" and comp["ci_method"] == "confidence sequence"
        if comp["segment"] is not None:
            continue
        # the fixed-horizon paired t-interval of the same queries, by scipy
        values = table.pivot(index="query_id", columns="arm", values=comp["metric"]).dropna()
        d = values["reranker"] - values["bm25"]
        t_low, t_high = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=sps.sem(d))
        low, high = comp["ci_unadjusted"]
        assert comp["n"] == d.size and comp["delta"] == pytest.approx(d.mean(), rel=1e-12)
        assert low < t_low and high > t_high
        if comp["metric"] == summary["primary_metric"]:
            assert seq["width_ratio"] == pytest.approx((high - low) / (t_high - t_low), rel=1e-9)
            assert 1.2 < seq["width_ratio"] < 1.8
    for comp in summary["comparisons"]:  # the verdicts agree with the (adjusted) intervals
        low, high = comp["ci"]
        assert (low > 0 or high < 0) == (comp["verdict"] != "inconclusive")
        assert (comp["p_adjusted"] < 0.05) == (comp["verdict"] != "inconclusive")


def test_demo_report_says_it_is_sequential_and_what_it_costs(sequential_demo) -> None:
    text = render_markdown(sequential_demo, charts=[])
    ratio = sequential_demo.summary["sequential"]["width_ratio"]
    assert "The intervals and p-values are sequential (always valid under daily looks" in text
    assert f"intervals {ratio:.1f}x as wide as fixed-horizon ones at this sample size" in text
    assert re.search(r"p < 0\.001 \(always-valid, Holm\)", text)
    assert "| p (seq.) |" in text


def test_summary_round_trips_the_sequential_field(sequential_demo) -> None:
    summary = Summary.from_dict(sequential_demo.summary)
    assert summary.sequential is not None and summary.sequential.tuning_source == "sample_size"
    assert summary.to_dict() == sequential_demo.summary


def test_sequential_off_is_null_and_old_summaries_still_load() -> None:
    assert _demo("  primary_test: t\n", "  primary_test: t\n").analysis.sequential is False
    golden = json.loads((ROOT / "tests" / "golden" / "demo-summary.json").read_text())
    assert "sequential" in golden and golden["sequential"] is None
    assert Summary.from_dict(golden).to_dict() == golden
    older = {key: value for key, value in golden.items() if key != "sequential"}
    assert Summary.from_dict(older).sequential is None


def test_conflicting_primary_test_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        _demo("  primary_test: t\n", "  primary_test: t\n  sequential: true\n")
    message = str(caught.value)
    assert "demo-seq.yaml: line " in message
    assert (
        "analysis.primary_test: expected 'sequential' (or no primary_test) with "
        "analysis.sequential: true, got 't'" in message
    )


def test_tuning_below_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"analysis\.sequential_tuning"):
        _demo("  primary_test: t\n", "  sequential: true\n  sequential_tuning: 0\n")


def test_tuning_reaches_the_comparisons() -> None:
    experiment = _demo("  primary_test: t\n", "  sequential: true\n  sequential_tuning: 1910\n")
    assert experiment.analysis.sequential_tuning == 1910
    from abrank.analysis.comparisons import test_settings

    assert test_settings(experiment).sequential_tuning == 1910


def test_online_demo_with_sequential_inference_clusters_and_keeps_cuped() -> None:
    text = (ROOT / "experiments" / "demo-online.yaml").read_text(encoding="utf-8")
    line = "  design: independent\n"
    assert line in text
    text = text.replace(line, line + "  sequential: true\n  resamples: 200\n")
    experiment = parse_experiment(text, source="online.yaml", base_dir=ROOT / "experiments")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        summary = abrank.run_experiment(experiment).summary
    assert summary["primary_test"] == "sequential"
    first = next(
        c
        for c in summary["comparisons"]
        if c["segment"] is None and c["metric"] == summary["primary_metric"]
    )
    assert summary["sequential"]["tuning"] == first["n"]  # units of both arms
    assert summary["sequential"]["tuning_source"] == "sample_size"
    methods = {c["ci_method"] for c in summary["comparisons"] if c["segment"] is None}
    assert methods == {
        "confidence sequence (delta method + CUPED), clustered by user_id",
        "confidence sequence (delta method), clustered by user_id",
        # the demo's latency_p95 guardrail: the sequence on the quantile's delta-method SE
        "confidence sequence (delta method on the quantile's influence function), clustered "
        "by user_id",
    }
    for comp in summary["comparisons"]:
        assert comp["p_values"]["sequential"] == comp["p_value"] > comp["p_values"]["t"]
        low, high = comp["ci"]
        assert (low > 0 or high < 0) == (comp["verdict"] != "inconclusive")
        if comp["cuped"] is not None:  # the adjusted delta-method tests, in the registry's order
            assert list(comp["p_values"]) == ["t", "permutation", "bootstrap", "sequential"]
            assert comp["p_values"]["permutation"] is None
