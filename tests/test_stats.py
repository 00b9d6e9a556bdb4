"""abrank.stats: comparisons checked against scipy, closed forms and hand-worked examples."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from abrank.errors import ConfigError
from abrank.stats import Comparison, adjust, compare, compare_metrics

STABLE_KEYS = {
    "metric", "treatment", "segment", "n", "control_mean", "treatment_mean", "delta",
    "relative_lift", "ci", "ci_method", "bootstrap_ci", "relative_ci", "p_value", "p_values",
    "p_adjusted", "effect_size", "mde", "wins", "ties", "losses", "verdict",
}  # fmt: skip


def _mrr_like(rng: np.random.Generator, n: int, p_top: float) -> np.ndarray:
    ranks = rng.integers(1, 12, size=n)
    ranks[rng.random(n) < p_top] = 1
    return np.where(ranks <= 10, 1.0 / ranks, 0.0)


# --------------------------------------------------------------------------- paired


def test_small_paired_example_worked_by_hand() -> None:
    # d = [0.2, 0, 0.1]: mean 0.1, sd 0.1, t = sqrt(3) on 2 df. For 2 df the t CDF is
    # 1/2 + t / (2 sqrt(2 + t^2)), so p = 1 - sqrt(3/5) and the 97.5% quantile is
    # 0.95 / sqrt(2 * 0.975 * 0.025).
    result = compare([0.2, 0.5, 0.9], [0.4, 0.5, 1.0], metric="mrr@10")
    assert result.n == 3
    assert result.control_mean == pytest.approx(1.6 / 3, abs=1e-15)
    assert result.treatment_mean == pytest.approx(1.9 / 3, abs=1e-15)
    assert result.delta == pytest.approx(0.1, abs=1e-15)
    assert result.relative_lift == pytest.approx(0.1875, abs=1e-14)
    assert result.p_values["t"] == pytest.approx(1 - math.sqrt(3 / 5), abs=1e-12)
    half = 0.95 / math.sqrt(2 * 0.975 * 0.025) * 0.1 / math.sqrt(3)
    assert result.ci == pytest.approx((0.1 - half, 0.1 + half), abs=1e-12)
    assert result.ci_method == "t"
    assert result.effect_size == pytest.approx(1.0, abs=1e-12)
    assert (result.wins, result.ties, result.losses) == (2, 1, 0)
    # sign flips of |d| = {0.2, 0.1} (the zero is inert): |sum| >= 0.3 in 2 of 4 patterns
    assert result.p_values["permutation"] == pytest.approx(0.5, abs=0.03)
    assert result.verdict == "inconclusive"


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_paired_t_test_equals_scipy(seed: int, level: float) -> None:
    rng = np.random.default_rng(seed)
    c = _mrr_like(rng, 60, 0.3)
    t = _mrr_like(rng, 60, 0.4)
    result = compare(c, t, confidence_level=level, tests=("t",))
    expected = sps.ttest_rel(t, c)
    low, high = expected.confidence_interval(level)
    assert result.p_value == pytest.approx(expected.pvalue, abs=1e-12)
    assert result.ci == pytest.approx((low, high), abs=1e-12)
    assert result.delta == pytest.approx(t.mean() - c.mean(), abs=1e-15)
    d = t - c
    assert result.effect_size == pytest.approx(d.mean() / d.std(ddof=1), abs=1e-12)
    assert (result.wins, result.ties, result.losses) == (
        int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()),
    )  # fmt: skip


def test_wilcoxon_equals_scipy() -> None:
    rng = np.random.default_rng(5)
    c = _mrr_like(rng, 80, 0.3)
    t = _mrr_like(rng, 80, 0.45)
    result = compare(c, t, tests=("wilcoxon",))
    assert set(result.p_values) == {"t", "wilcoxon"}
    expected = sps.wilcoxon(t, c, zero_method="wilcox").pvalue
    assert result.p_values["wilcoxon"] == pytest.approx(expected, abs=1e-12)


def test_mde_solves_for_eighty_percent_power() -> None:
    rng = np.random.default_rng(6)
    c, t = rng.random(50), rng.random(50)
    result = compare(c, t, tests=("t",), alpha=0.05)
    d = t - c
    sd = d.std(ddof=1)
    # At effect mde / sd the noncentral t test has power 0.8 (checked without statsmodels).
    crit = sps.t.ppf(0.975, 49)
    nc = result.mde / sd * math.sqrt(50)
    power = sps.nct.sf(crit, 49, nc) + sps.nct.cdf(-crit, 49, nc)
    assert power == pytest.approx(0.8, abs=1e-6)


def test_primary_test_choice_sets_p_value_and_interval() -> None:
    rng = np.random.default_rng(7)
    c, t = rng.random(40), rng.random(40) + 0.1
    for primary in ("permutation", "bootstrap", "wilcoxon"):
        result = compare(c, t, primary_test=primary, tests=("t",))
        assert result.primary_test == primary
        assert result.p_value == result.p_values[primary]
        assert result.ci_method == "bca"
        assert result.ci == result.bootstrap_ci
    result = compare(c, t, primary_test="wilcoxon", tests=("t",))
    assert set(result.p_values) == {"t", "wilcoxon", "bootstrap"}


def test_permutation_p_value_is_never_zero() -> None:
    result = compare(np.zeros(200), np.ones(200) * 0.5 + np.linspace(0, 0.1, 200), n_resamples=999)
    assert result.p_values["permutation"] == pytest.approx(1 / 1000, abs=1e-15)
    # the bootstrap p reads the BCa distribution at 0, clipped to one draw in B + 1: never 0;
    # the bias correction, the t expansion and two sides then widen it to a few in 1,000
    assert 1 / 1000 < result.p_values["bootstrap"] < 0.006


# --------------------------------------------------------------------------- degenerate


def test_all_deltas_zero_is_a_clear_no_change() -> None:
    values = np.array([0.1, 0.5, 0.5, 1.0, 0.2] * 7)  # 35 queries: the bootstrap runs
    result = compare(values, values.copy(), tests=("t", "permutation", "bootstrap", "wilcoxon"))
    assert result.delta == 0.0
    # 35 equal deltas: any other shift gives the exact sign-flip p = 2^-34 < 0.05
    assert result.ci == (0.0, 0.0)
    assert result.bootstrap_ci == (0.0, 0.0)
    assert result.relative_lift == 0.0
    assert result.relative_ci == (0.0, 0.0)
    assert result.p_values == {"t": 1.0, "permutation": 1.0, "bootstrap": 1.0, "wilcoxon": 1.0}
    assert result.verdict == "inconclusive"
    assert result.effect_size == 0.0
    assert (result.wins, result.ties, result.losses) == (0, 35, 0)
    json.dumps(result.to_dict(), allow_nan=False)


def test_five_unchanged_queries_cannot_rule_out_a_shift() -> None:
    """With 5 equal deltas the exact sign-flip test gives any other shift p = 2^-4 = 0.0625,
    above 0.05: no shift is excluded, so the interval is unbounded; the bootstrap, below its
    30-query minimum, is left out and the note says why."""
    values = np.array([0.1, 0.5, 0.5, 1.0, 0.2])
    result = compare(values, values.copy())
    assert result.ci == (-math.inf, math.inf)
    assert result.relative_ci == (-math.inf, math.inf)
    assert result.p_values["t"] == 1.0 and math.isnan(result.p_values["bootstrap"])
    assert result.bootstrap_ci is None
    assert any("fewer than 30 queries" in note for note in result.notes)
    assert result.verdict == "inconclusive"


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_pairs(n: int) -> None:
    """One query cannot be tested: no p-value, no effect size (not p = 1 and 0)."""
    result = compare([0.2] * n, [0.7] * n)
    assert result.n == n
    assert math.isnan(result.p_value)
    assert set(result.p_values) == {"t", "permutation", "bootstrap"}
    assert all(math.isnan(p) for p in result.p_values.values())
    assert result.ci == (-math.inf, math.inf)
    assert result.bootstrap_ci is None
    assert result.mde is None
    assert math.isnan(result.effect_size)
    assert result.verdict == "inconclusive"
    assert "fewer than 2 queries: no test or interval is possible" in result.notes
    data = result.to_dict()
    assert data["ci"] == [None, None]
    assert data["p_value"] is None and data["effect_size"] is None
    json.dumps(data, allow_nan=False)
    if n == 0:
        assert data["control_mean"] is None and data["delta"] is None


def test_constant_delta_has_zero_width_interval() -> None:
    c = np.linspace(0.1, 0.5, 12)
    result = compare(c, c + 0.25, n_resamples=4999)
    assert result.delta == pytest.approx(0.25, abs=1e-15)
    assert result.ci == pytest.approx((0.25, 0.25), abs=1e-15)
    assert result.p_values["t"] == 2.0**-11  # the exact sign-flip p for 12 equal deltas
    # all 12 deltas share one |d|: only the all-plus and all-minus patterns reach |sum|
    exact = 2 / 2**12
    mc = math.sqrt(exact / 4999)
    assert abs(result.p_values["permutation"] - (exact + 1 / 5000)) < 5 * mc + 1 / 5000
    assert result.bootstrap_ci is None  # 12 queries: below the bootstrap's minimum
    assert math.isnan(result.effect_size)  # no variance to scale a nonzero move by
    assert result.mde == 0.0
    assert result.verdict == "win"


def test_two_identical_deltas_are_no_win() -> None:
    """Two queries that both gain 0.1: the exact sign-flip p is 2^(1 - 2) = 0.5, not 0."""
    result = compare([0.2, 0.4], [0.3, 0.5])
    assert result.p_value == 0.5
    assert result.ci == (-math.inf, math.inf)
    assert result.verdict == "inconclusive"


def test_two_queries_bootstrap_primary_is_no_win() -> None:
    """At n = 2 no bootstrap interval can reach past the two deltas, so the bootstrap is
    refused: no p-value and no verdict (it said p = 1e-4 and "win")."""
    result = compare([0.2, 0.4], [0.7, 0.5], primary_test="bootstrap")
    assert math.isnan(result.p_value)
    assert result.verdict == "inconclusive"
    assert result.ci == (-math.inf, math.inf)
    assert result.ci_agrees


def test_tiny_control_mean_gives_no_relative_lift() -> None:
    rng = np.random.default_rng(3)
    result = compare(np.full(40, 1e-9), rng.random(40))
    assert result.relative_lift is None and result.relative_ci is None
    assert any("no relative lift" in note for note in result.notes)


def test_zero_control_arm_has_no_relative_lift() -> None:
    rng = np.random.default_rng(8)
    result = compare(np.zeros(30), rng.random(30))
    assert result.relative_lift is None
    assert result.relative_ci is None
    assert result.to_dict()["relative_ci"] is None
    assert result.bootstrap_ci is not None


def test_relative_ci_is_unbounded_when_control_resamples_reach_zero() -> None:
    # One nonzero control value in 40: many bootstrap resamples have control mean 0.
    c = np.zeros(40)
    c[3] = 1.0
    t = np.full(40, 0.5)
    result = compare(c, t, n_resamples=2000)
    assert result.relative_lift == pytest.approx(0.5 / (1 / 40) - 1, abs=1e-12)
    assert result.relative_ci is None


# --------------------------------------------------------------------------- alignment


def test_missing_queries_are_scored_zero_by_default() -> None:
    control = pd.Series({"q1": 0.5, "q2": 1.0, "q3": 0.25})
    treatment = pd.Series({"q2": 1.0, "q3": 0.5, "q4": 1.0})
    result = compare(control, treatment)
    # pairs: q1 (0.5, 0), q2 (1, 1), q3 (0.25, 0.5), q4 (0, 1)
    assert result.n == 4
    assert result.control_mean == pytest.approx(1.75 / 4, abs=1e-15)
    assert result.treatment_mean == pytest.approx(2.5 / 4, abs=1e-15)
    assert (result.n_control, result.n_treatment) == (3, 3)
    assert (result.wins, result.ties, result.losses) == (2, 1, 1)


def test_missing_drop_keeps_the_intersection() -> None:
    control = pd.Series({"q1": 0.5, "q2": 1.0, "q3": 0.25})
    treatment = pd.Series({"q3": 0.5, "q2": 1.0, "q4": 1.0})
    result = compare(control, treatment, missing="drop")
    assert result.n == 2
    assert result.control_mean == pytest.approx(0.625, abs=1e-15)
    assert result.treatment_mean == pytest.approx(0.75, abs=1e-15)


def test_missing_error_names_the_queries() -> None:
    control = pd.Series({"q1": 0.5, "q2": 1.0, "q3": 0.25})
    treatment = pd.Series({"q2": 1.0, "q4": 1.0})
    with pytest.raises(ConfigError) as info:
        compare(control, treatment, missing="error")
    assert str(info.value) == (
        "missing: expected every query in both arms (missing='error'), got "
        "1 missing from control ('q4'); 2 missing from treatment ('q1', 'q3')"
    )


def test_nan_values_drop_the_pair() -> None:
    control = pd.Series({"q1": 0.5, "q2": np.nan, "q3": 0.25})
    treatment = pd.Series({"q1": 1.0, "q2": 1.0, "q3": np.nan, "q4": 1.0})
    result = compare(control, treatment)
    # q2 and q3 undefined; q4 missing from control -> 0
    assert result.n == 2
    assert result.control_mean == pytest.approx(0.25, abs=1e-15)
    assert result.treatment_mean == pytest.approx(1.0, abs=1e-15)


def test_series_are_aligned_on_query_ids_not_positions() -> None:
    control = pd.Series({"a": 0.1, "b": 0.9, "c": 0.5})
    treatment = pd.Series({"c": 0.5, "b": 0.9, "a": 0.1})
    result = compare(control, treatment)
    assert (result.wins, result.ties, result.losses) == (0, 3, 0)


# --------------------------------------------------------------------------- independent


def test_independent_design_equals_scipy() -> None:
    rng = np.random.default_rng(9)
    c = rng.normal(0.4, 0.2, 70)
    t = rng.normal(0.5, 0.3, 55)
    result = compare(
        c, t, design="independent", tests=("t", "permutation", "bootstrap", "mannwhitney")
    )
    welch = sps.ttest_ind(t, c, equal_var=False)
    low, high = welch.confidence_interval(0.95)
    assert result.design == "independent"
    assert (result.n, result.n_control, result.n_treatment) == (125, 70, 55)
    assert result.p_value == pytest.approx(welch.pvalue, abs=1e-12)
    assert result.ci == pytest.approx((low, high), abs=1e-12)
    expected_mw = sps.mannwhitneyu(t, c, alternative="two-sided").pvalue
    assert result.p_values["mannwhitney"] == pytest.approx(expected_mw, abs=1e-12)
    pooled = math.sqrt((69 * c.var(ddof=1) + 54 * t.var(ddof=1)) / 123)
    assert result.effect_size == pytest.approx((t.mean() - c.mean()) / pooled, abs=1e-12)
    assert (result.wins, result.ties, result.losses) == (None, None, None)
    # the label-permutation test agrees with Welch on roughly normal data
    assert result.p_values["permutation"] == pytest.approx(welch.pvalue, abs=0.02)
    assert result.bootstrap_ci[0] < result.delta < result.bootstrap_ci[1]
    assert result.relative_ci[0] < result.relative_lift < result.relative_ci[1]


def test_independent_design_ignores_the_index_and_drops_nan() -> None:
    control = pd.Series([0.1, np.nan, 0.3], index=["a", "b", "c"])
    treatment = pd.Series([0.5, 0.7], index=["x", "y"])
    result = compare(control, treatment, design="independent")
    assert (result.n_control, result.n_treatment) == (2, 2)
    assert result.delta == pytest.approx(0.4, abs=1e-15)


def test_independent_identical_constant_arms() -> None:
    result = compare([0.5] * 5, [0.5] * 7, design="independent")
    assert result.delta == 0.0
    # any other shift: the exact label-permutation p is 2 / C(12, 7) = 2 / 792 < 0.05
    assert result.ci == (0.0, 0.0)
    assert result.p_values["t"] == 1.0 and result.p_values["permutation"] == 1.0
    assert math.isnan(result.p_values["bootstrap"])  # 5 and 7 values: below the minimum
    assert result.verdict == "inconclusive"
    json.dumps(result.to_dict(), allow_nan=False)


# --------------------------------------------------------------------------- determinism


def test_same_inputs_and_seed_give_identical_numbers() -> None:
    rng = np.random.default_rng(10)
    c, t = rng.random(300), rng.random(300)
    first = compare(c, t, seed=7, metric="ndcg@10").to_dict()
    second = compare(c, t, seed=7, metric="ndcg@10").to_dict()
    assert first == second
    other_seed = compare(c, t, seed=8, metric="ndcg@10").to_dict()
    assert other_seed["bootstrap_ci"] != first["bootstrap_ci"]
    # 300 distinct values: costly own draws, so the resamples shared by every metric on
    # 300 queries are used, seeded without the metric's name
    other_metric = compare(c, t, seed=7, metric="mrr@10").to_dict()
    assert other_metric["bootstrap_ci"] == first["bootstrap_ci"]
    # hit-like 0/1 values: cheap draws of its own, seeded with the metric's name
    c, t = np.round(c), np.round(t)
    first = compare(c, t, seed=7, metric="hit@3").resampled_deltas
    other_metric = compare(c, t, seed=7, metric="hit@5").resampled_deltas
    assert not np.array_equal(first, other_metric)


def test_each_test_has_its_own_stream() -> None:
    rng = np.random.default_rng(11)
    c, t = rng.random(100), rng.random(100)
    alone = compare(c, t, tests=("permutation",), seed=3)
    together = compare(c, t, tests=("t", "permutation", "bootstrap", "wilcoxon"), seed=3)
    assert alone.p_values["permutation"] == together.p_values["permutation"]


def test_generator_does_not_depend_on_python_hash_seed() -> None:
    code = (
        "from abrank.stats import compare; import numpy as np; "
        "r = np.random.default_rng(0); c, t = r.random(50), r.random(50); "
        "x = compare(c, t, metric='mrr@10', treatment_name='b', segment='device=mobile'); "
        "print(repr(x.bootstrap_ci), repr(x.p_values['permutation']))"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_seed_none_draws_fresh_numbers() -> None:
    rng = np.random.default_rng(12)
    c, t = rng.random(100), rng.random(100)
    first = compare(c, t, seed=None, tests=("bootstrap",))
    second = compare(c, t, seed=None, tests=("bootstrap",))
    assert first.bootstrap_ci != second.bootstrap_ci


# --------------------------------------------------------------------------- output


def test_to_dict_is_json_safe_and_carries_the_stable_keys() -> None:
    rng = np.random.default_rng(13)
    result = compare(rng.random(30), rng.random(30), metric="ndcg@10", segment="device=mobile")
    data = result.to_dict()
    assert set(data) >= STABLE_KEYS
    assert "resampled_deltas" not in data
    assert isinstance(data["ci"], list) and isinstance(data["bootstrap_ci"], list)
    assert data["segment"] == "device=mobile"
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    assert result.resampled_deltas.shape == (10_000,)
    assert result.resampled_deltas.mean() == pytest.approx(result.delta, abs=0.01)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"design": "pared"},
         "design: expected one of 'paired', 'independent', got 'pared' (did you mean 'paired'?)"),
        ({"primary_test": "mannwhitney"},
         "primary_test: expected one of 't', 'permutation', 'bootstrap', 'wilcoxon', 'sequential', "
         "'signflip' for the paired design, got 'mannwhitney'"),
        ({"tests": ("t", "bootstrapp")},
         "tests: expected one of 't', 'permutation', 'bootstrap', 'wilcoxon', 'sequential', "
         "'signflip' for the paired design, got 'bootstrapp' (did you mean 'bootstrap'?)"),
        ({"design": "independent", "tests": ("wilcoxon",)},
         "tests: expected one of 't', 'permutation', 'bootstrap', 'mannwhitney', 'sequential' for the "
         "independent design, got 'wilcoxon'"),
        ({"alpha": 1.5}, "alpha: expected a number between 0 and 1, got 1.5"),
        ({"confidence_level": 95}, "confidence_level: expected a number between 0 and 1, got 95"),
        ({"n_resamples": 0}, "n_resamples: expected a positive integer, got 0"),
        ({"n_resamples": 100.0}, "n_resamples: expected a positive integer, got 100.0"),
        ({"missing": "skip"}, "missing: expected one of 'zero', 'drop', 'error', got 'skip'"),
        ({"seed": -1}, "seed: expected a non-negative integer or None, got -1"),
        ({"metric": None}, "metric: expected a string, got None"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        compare([0.1, 0.2], [0.3, 0.4], **kwargs)
    assert str(info.value) == message


def test_bad_values_are_named() -> None:
    with pytest.raises(ConfigError) as info:
        compare([0.1, 0.2, 0.3], [0.1, 0.2])
    assert str(info.value) == (
        "treatment: expected 3 values (as many as control, paired design), got 2"
    )
    with pytest.raises(ConfigError) as info:
        compare(["a", "b"], [0.1, 0.2])
    assert str(info.value) == "control: expected numbers, got values of type list"
    with pytest.raises(ConfigError) as info:
        compare(pd.Series(["x", "y"], index=["a", "b"]), pd.Series([0.1, 0.2], index=["a", "b"]))
    assert str(info.value) == "control: expected numbers, got values of type str"
    with pytest.raises(ConfigError) as info:
        compare([0.1, 0.2], [0.1, np.inf])
    assert str(info.value) == "treatment: position 1: expected a finite number, got inf"
    with pytest.raises(ConfigError) as info:
        compare(pd.Series([0.1, 0.2], index=["a", "a"]), pd.Series([0.1], index=["a"]))
    assert str(info.value) == "control: index: expected unique query ids, got duplicates 'a'"


# --------------------------------------------------------------------------- adjust


def _with_p(base: Comparison, p: float, delta: float) -> Comparison:
    return dataclasses.replace(base, p_value=p, p_adjusted=p, delta=delta)


@pytest.fixture
def family() -> list[Comparison]:
    base = compare([0.1, 0.4, 0.3], [0.2, 0.5, 0.9], tests=("t",))
    return [_with_p(base, 0.01, 0.1), _with_p(base, 0.04, -0.1), _with_p(base, 0.03, 0.2)]


def test_holm_worked_by_hand(family: list[Comparison]) -> None:
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, 1*0.04 -> running max 0.03, 0.06, 0.06
    adjusted = adjust(family)
    assert [c.p_adjusted for c in adjusted] == pytest.approx([0.03, 0.06, 0.06], abs=1e-15)
    assert [c.correction for c in adjusted] == ["holm"] * 3
    assert [c.verdict for c in adjusted] == ["win", "inconclusive", "inconclusive"]
    assert [c.p_value for c in adjusted] == [0.01, 0.04, 0.03]  # raw p kept
    assert [c.p_adjusted for c in family] == [0.01, 0.04, 0.03]  # input untouched


def test_benjamini_hochberg_worked_by_hand(family: list[Comparison]) -> None:
    # sorted 0.01, 0.03, 0.04 -> 0.03, 0.045, 0.04 -> running min from the top 0.03, 0.04, 0.04
    adjusted = adjust(family, method="bh")
    assert [c.p_adjusted for c in adjusted] == pytest.approx([0.03, 0.04, 0.04], abs=1e-15)
    assert [c.correction for c in adjusted] == ["fdr_bh"] * 3
    assert [c.verdict for c in adjusted] == ["win", "loss", "win"]


def test_adjust_edge_cases(family: list[Comparison]) -> None:
    assert adjust([]) == []
    unchanged = adjust(family, method="none")
    assert [c.p_adjusted for c in unchanged] == [0.01, 0.04, 0.03]
    assert [c.correction for c in unchanged] == [None] * 3
    with pytest.raises(ConfigError) as info:
        adjust(family, method="holms")
    assert str(info.value).startswith("method: expected one of ")
    assert str(info.value).endswith("got 'holms' (did you mean 'holm'?)")


@pytest.mark.parametrize("primary", ["t", "bootstrap"])
def test_adjusted_interval_agrees_with_the_adjusted_verdict(primary: str) -> None:
    """After Holm, the interval shown excludes 0 exactly when the verdict is a win or loss
    (an unadjusted 95% interval beside a Holm verdict disagreed on ~10% of lines)."""
    rng = np.random.default_rng(11)
    disagreements = checked = 0
    for family in range(15):
        items = []
        for k in range(6):
            c = rng.random(60)
            t = c + rng.normal(rng.choice([0.0, 0.03, 0.06]), 0.15, 60)
            items.append(
                compare(
                    c,
                    t,
                    primary_test=primary,
                    n_resamples=2000,
                    seed=family,
                    metric=f"m{k}",
                )
            )
        for item in adjust(items, "holm"):
            checked += 1
            excludes = item.ci[0] > 0 or item.ci[1] < 0
            disagreements += excludes != (item.verdict != "inconclusive")
            assert item.ci_agrees == (excludes == (item.verdict != "inconclusive"))
            if item.p_adjusted > item.p_value:  # the level was widened by the same factor
                share = item.p_value / item.p_adjusted
                assert item.ci_level == pytest.approx(1 - 0.05 * share, abs=1e-15)
                assert item.ci_unadjusted is not None
    assert checked == 90
    # the t-interval is the t-test inverted; the BCa interval and its p-value read the same
    # distribution, up to one draw of interpolation
    assert disagreements <= (0 if primary == "t" else 2)


def test_holm_interval_is_the_t_interval_at_the_widened_level() -> None:
    from scipy import stats as sps

    rng = np.random.default_rng(5)
    c = rng.random(80)
    treatments = [c + rng.normal(0.02 * k, 0.1, 80) for k in range(4)]
    items = [compare(c, t, metric=f"m{k}") for k, t in enumerate(treatments)]
    adjusted = adjust(items, "holm")
    # Holm by hand: sorted p times (m - rank), made monotone, capped at 1
    order = np.argsort([i.p_value for i in items])
    holm, running = {}, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, items[index].p_value * (4 - rank)))
        holm[index] = running
    for k, (t, item) in enumerate(zip(treatments, adjusted, strict=True)):
        assert item.p_adjusted == pytest.approx(holm[k], rel=1e-12)
        level = 1 - 0.05 * items[k].p_value / holm[k]
        expected = sps.ttest_1samp(t - c, 0.0).confidence_interval(level)
        assert item.ci == pytest.approx((expected.low, expected.high), rel=1e-10)
        assert item.ci_unadjusted == items[k].ci


def test_metrics_compared_together_get_exactly_their_numbers_alone() -> None:
    # NDCG-like values (all distinct: shared draws), MRR-like and hit-like (few values:
    # own draws), and a metric left undefined on some queries (another n)
    rng = np.random.default_rng(41)
    n = 600
    index = pd.Index([f"q{i}" for i in range(n)])
    ranks_c, ranks_t = rng.integers(1, 14, n), rng.integers(1, 12, n)
    controls = {
        "ndcg@10": pd.Series(rng.random(n), index=index),
        "mrr@10": pd.Series(np.where(ranks_c <= 10, 1 / ranks_c, 0.0), index=index),
        "hit@3": pd.Series((ranks_c <= 3) * 1.0, index=index),
        "recall@20": pd.Series(np.where(rng.random(n) < 0.1, np.nan, rng.random(n)), index=index),
    }
    treatments = {
        "ndcg@10": controls["ndcg@10"] + rng.normal(0.02, 0.1, n),
        "mrr@10": pd.Series(np.where(ranks_t <= 10, 1 / ranks_t, 0.0), index=index),
        "hit@3": pd.Series((ranks_t <= 3) * 1.0, index=index),
        "recall@20": controls["recall@20"] + rng.normal(0.0, 0.05, n),
    }
    options = dict(tests=("t", "permutation", "bootstrap"), n_resamples=3000, seed=3)
    together = compare_metrics(controls, treatments, treatment_name="B", segment="x=1", **options)
    assert [c.metric for c in together] == list(controls)
    for result in together:
        alone = compare(
            controls[result.metric],
            treatments[result.metric],
            metric=result.metric,
            treatment_name="B",
            segment="x=1",
            **options,
        )
        assert result.to_dict() == alone.to_dict(), result.metric
        np.testing.assert_array_equal(result.resampled_deltas, alone.resampled_deltas)
    assert together[3].n < n  # the undefined values were left out
    # the shared resamples are a bootstrap of the deltas: their spread is the standard error
    ndcg = together[0]
    d = (treatments["ndcg@10"] - controls["ndcg@10"]).to_numpy()
    assert ndcg.resampled_deltas.std() == pytest.approx(d.std() / math.sqrt(n), rel=0.06)
    assert ndcg.resampled_deltas.mean() == pytest.approx(
        d.mean(), abs=4 * d.std() / math.sqrt(n * 3000)
    )


def test_compare_metrics_names_mismatched_metrics() -> None:
    with pytest.raises(ConfigError, match="treatments: expected the metrics of controls"):
        compare_metrics({"mrr@10": [0.1, 0.2]}, {"ndcg@10": [0.1, 0.2]})
