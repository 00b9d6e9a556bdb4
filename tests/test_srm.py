"""abrank.stats.sample_ratio_mismatch: Pearson's chi-square against scipy, and bad shares."""

from __future__ import annotations

import json

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
    assert set(saved) == {"units", "expected", "chi2", "p_value", "alarm", "alpha"}
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
