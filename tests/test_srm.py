"""abrank.stats.sample_ratio_mismatch: Pearson's chi-square against scipy, and bad shares."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats as sps

from abrank.errors import ConfigError, DataError
from abrank.stats import SampleRatioCheck, sample_ratio_mismatch


def test_equal_split_matches_scipy_chisquare() -> None:
    check = sample_ratio_mismatch({"control": 20_000, "treatment": 19_400})
    reference = sps.chisquare([20_000, 19_400])
    assert check.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert check.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    # by hand: expected 19,700 each, chi2 = 2 * 300^2 / 19,700
    assert check.chi2 == pytest.approx(2 * 300**2 / 19_700, rel=1e-12)
    assert check.expected == {"control": 0.5, "treatment": 0.5}
    assert not check.alarm  # p = 0.0025 is not below 0.001
    assert sample_ratio_mismatch({"control": 20_000, "treatment": 19_400}, alpha=0.01).alarm


def test_unequal_shares_are_normalised_and_match_scipy() -> None:
    units = {"a": 5_100, "b": 2_400, "c": 2_600}
    check = sample_ratio_mismatch(units, {"a": 2, "b": 1, "c": 1})
    total = sum(units.values())
    reference = sps.chisquare([5_100, 2_400, 2_600], [total / 2, total / 4, total / 4])
    assert check.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert check.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert check.expected == {"a": 0.5, "b": 0.25, "c": 0.25}


def test_a_clear_mismatch_raises_the_alarm_and_serializes() -> None:
    check = sample_ratio_mismatch({"control": 50_000, "treatment": 48_500})
    assert check.alarm and check.p_value < 0.001
    assert isinstance(check, SampleRatioCheck)
    saved = check.to_dict()
    assert set(saved) == {"units", "expected", "chi2", "p_value", "alarm", "alpha", "test"}
    assert saved["test"] == "chi2"  # 48,500 expected per arm and more: the chi-square
    assert saved["units"] == {"control": 50_000, "treatment": 48_500}
    json.dumps(saved, allow_nan=False)


def test_perfect_split_has_p_one() -> None:
    check = sample_ratio_mismatch({"control": 100, "treatment": 100})
    assert check.chi2 == 0.0 and check.p_value == 1.0 and not check.alarm


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        (
            {"control": 0.5, "treatment": 0.0},
            "expected: arm 'treatment': expected a positive share, got 0.0",
        ),
        (
            {"control": 0.5, "treatment": -1},
            "expected: arm 'treatment': expected a positive share, got -1",
        ),
        (
            {"control": 0.5, "treatment": "half"},
            "expected: arm 'treatment': expected a positive share, got 'half'",
        ),
        (
            {"control": 1.0},
            "expected: expected a share for every arm (control, treatment), got none for treatment",
        ),
        (
            {"control": 1.0, "treatment": 1.0, "other": 1.0},
            "expected: expected shares of the arms control, treatment only, got an extra arm other",
        ),
    ],
)
def test_bad_shares_are_config_errors_naming_the_arm(expected: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sample_ratio_mismatch({"control": 10, "treatment": 12}, expected)
    assert str(caught.value) == message


def test_bad_counts_and_arguments() -> None:
    with pytest.raises(DataError, match="units: arm 'treatment': expected a non-negative integer"):
        sample_ratio_mismatch({"control": 10, "treatment": -1})
    with pytest.raises(DataError, match="units: arm 'control': expected a non-negative integer"):
        sample_ratio_mismatch({"control": 1.5, "treatment": 2})
    with pytest.raises(DataError, match="expected at least one unit in some arm"):
        sample_ratio_mismatch({"control": 0, "treatment": 0})
    with pytest.raises(ConfigError, match="units: expected the units of at least two arms"):
        sample_ratio_mismatch({"control": 10})
    with pytest.raises(ConfigError, match="expected: expected a mapping of arm -> share"):
        sample_ratio_mismatch({"control": 10, "treatment": 12}, [0.5, 0.5])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="alpha: expected a number between 0 and 1, got 2"):
        sample_ratio_mismatch({"control": 10, "treatment": 12}, alpha=2)


# ------------------------------------------------------------------ small counts: exact


@pytest.mark.parametrize(
    ("units", "share"), [((12, 28), 0.5), ((30, 10), 0.5), ((9, 31), 1 / 3), ((20, 20), 0.5)]
)
def test_small_counts_take_the_exact_binomial_test(units: tuple[int, int], share: float) -> None:
    check = sample_ratio_mismatch(
        {"control": units[0], "treatment": units[1]},
        {"control": share, "treatment": 1 - share},
    )
    reference = sps.binomtest(units[0], sum(units), share)
    assert check.test == "exact"
    assert check.p_value == pytest.approx(reference.pvalue, rel=1e-12)
    # the statistic is still Pearson's
    e = np.array([share, 1 - share]) * sum(units)
    assert check.chi2 == pytest.approx(float(((np.array(units) - e) ** 2 / e).sum()), rel=1e-12)


def test_three_arms_take_the_exact_multinomial_test() -> None:
    units, shares = (8, 19, 13), (0.25, 0.5, 0.25)
    n = sum(units)
    # slow reference: every split of 40 units, the ones no more likely than the observed
    observed = sps.multinomial.pmf(units, n, shares)
    total = 0.0
    for a, b in itertools.product(range(n + 1), repeat=2):
        if a + b <= n:
            p = sps.multinomial.pmf((a, b, n - a - b), n, shares)
            total += p if p <= observed * (1 + 1e-7) else 0.0
    check = sample_ratio_mismatch(dict(zip("abc", units)), dict(zip("abc", shares)))
    assert check.test == "exact"
    assert check.p_value == pytest.approx(total, rel=1e-9)


def false_alarm_rate(total: int, alpha: float, exact: bool) -> float:
    """The exact chance of an alarm on an equal split of ``total`` units: the binomial
    probability of every count whose p-value (chi-square or exact) is below alpha."""
    k = np.arange(total + 1)
    pmf = sps.binom.pmf(k, total, 0.5)
    if exact:
        p = np.array([sps.binomtest(int(x), total, 0.5).pvalue for x in k])
    else:
        p = sps.chi2.sf((k - total / 2) ** 2 / (total / 2) * 2, 1)
    return float(pmf[p < alpha].sum())


def test_about_twenty_per_arm_the_alarm_rate_stays_below_alpha() -> None:
    # 22 expected per arm: the chi-square alarms with probability 1.26 alpha, the exact
    # test (what the check uses) below alpha
    assert false_alarm_rate(44, 0.001, exact=False) > 0.00125
    rates = []
    for total in range(30, 51):
        alarms = [
            sample_ratio_mismatch({"control": int(x), "treatment": total - int(x)}).alarm
            for x in range(total + 1)
        ]
        pmf = sps.binom.pmf(np.arange(total + 1), total, 0.5)
        rates.append(float(pmf[np.array(alarms)].sum()))
        assert rates[-1] == pytest.approx(false_alarm_rate(total, 0.001, exact=True), abs=1e-15)
    assert max(rates) <= 0.001
