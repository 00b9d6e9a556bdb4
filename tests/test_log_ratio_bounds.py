"""Relative-lift intervals drawn on the log ratio stay honest when a bound is beyond what
exp() can hold: the means near 0 against their noise give an interval unbounded above, not
an OverflowError."""

from __future__ import annotations

import math

import numpy as np
import pytest

import abrank
from abrank.stats import UnitSums, compare_clustered
from abrank.stats.sequential import lift_of_log

# means of 0.006 and 0.005 with values of +-10: the log ratio's standard error is about 1,000
CONTROL = np.array([10.0, -9.99, 10, -10, 0.05, 0, 0, 0, 0, 0])
TREATMENT = np.array([-10.0, 10.02, 10, -10, 0.02, 0, 0, 0, 0.01, 0])


def test_lift_of_log_is_expm1_and_infinite_past_its_range() -> None:
    assert lift_of_log(math.log(1.25)) == pytest.approx(0.25, rel=1e-15)
    assert lift_of_log(709.0) == math.expm1(709.0)
    assert lift_of_log(710.0) == math.inf
    assert lift_of_log(-1e6) == -1.0


def test_paired_sequential_lift_interval_is_unbounded_above() -> None:
    got = abrank.compare(CONTROL, TREATMENT, design="paired", primary_test="sequential", seed=1)
    assert got.relative_lift == pytest.approx(0.005 / 0.006 - 1, rel=1e-9)
    assert got.relative_ci == (-1.0, math.inf)
    assert got.to_dict()["relative_ci"] == [-1.0, None]


@pytest.mark.parametrize("test", ["t", "sequential"])
def test_clustered_lift_interval_is_unbounded_above(test: str) -> None:
    ones = np.ones(CONTROL.size)
    got = compare_clustered(
        UnitSums(CONTROL, ones), UnitSums(TREATMENT, ones), primary_test=test, tests=(test,)
    )
    assert got.relative_ci == (-1.0, math.inf)
