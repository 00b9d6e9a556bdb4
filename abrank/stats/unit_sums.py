"""Per-unit sums of a metric (:class:`UnitSums`), their checks, and the delta-method
linearization that every clustered statistic is built on.

An arm's value is sum_u M_u / sum_u D_u over its units (users); :func:`linearized` gives
the ratio and each unit's deviation L_u = (M_u - R D_u) / mean(D), whose mean is 0 and
whose sample variance over n gives Var(R) (Deng, Knoblich & Lu, KDD 2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.errors import ConfigError, DataError
from abrank.stats.results import json_safe
from abrank.stats.unit_t import one_row, variance_rows


@dataclass(frozen=True)
class UnitSums:
    """One arm's per-unit sums for one metric.

    ``numerator``: M_u, the unit's sum of the metric over its impressions (float64, one
    per unit); ``denominator``: D_u, its number of impressions (or queries) with a value
    (> 0 for an arm; a pre-period covariate may have 0 where a unit has no pre-period
    data, with numerator 0 there). The arm's value is sum(M) / sum(D).
    """

    numerator: np.ndarray
    denominator: np.ndarray

    def __post_init__(self) -> None:
        for name in ("numerator", "denominator"):
            value = getattr(self, name)
            try:
                array = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(
                    f"UnitSums.{name}: expected numbers, got values of type {type(value).__name__}"
                ) from None
            object.__setattr__(self, name, array)

    @property
    def n_units(self) -> int:
        """Number of units."""
        return int(self.numerator.shape[0]) if self.numerator.ndim == 1 else 0

    @property
    def ratio(self) -> float:
        """sum(M) / sum(D): the arm's mean over impressions (NaN with no impression)."""
        total = float(self.denominator.sum())
        return float(self.numerator.sum()) / total if total > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """{"n_units": n, "sums": {"numerator": sum(M), "denominator": sum(D)}}."""
        return {
            "n_units": self.n_units,
            "sums": {
                "numerator": json_safe(float(self.numerator.sum())),
                "denominator": json_safe(float(self.denominator.sum())),
            },
        }


def checked_sums(argument: str, sums: Any, *, covariate: bool = False) -> UnitSums:
    """``sums`` when it is a valid :class:`UnitSums`, else DataError / ConfigError naming
    ``argument``, the first bad unit, what was expected and what was found."""
    if not isinstance(sums, UnitSums):
        raise ConfigError(f"{argument}: expected UnitSums, got {type(sums).__name__}")
    m, d = sums.numerator, sums.denominator
    if m.ndim != 1 or d.ndim != 1 or m.shape != d.shape:
        raise DataError(
            f"{argument}: expected numerator and denominator of one value per unit, "
            f"got shapes {m.shape} and {d.shape}"
        )
    for name, values in (("numerator", m), ("denominator", d)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise DataError(
                f"{argument}: {name}[{bad[0]}]: expected a finite number, got {values[bad[0]]}"
            )
    if covariate:
        bad = np.flatnonzero(d < 0)
        if bad.size:
            raise DataError(
                f"{argument}: denominator[{bad[0]}]: expected a number >= 0 (0 for a unit "
                f"without pre-period data), got {d[bad[0]]:g}"
            )
        bad = np.flatnonzero((d == 0) & (m != 0))
        if bad.size:
            raise DataError(
                f"{argument}: numerator[{bad[0]}]: expected 0 where the denominator is 0 "
                f"(a unit without pre-period data), got {m[bad[0]]:g}"
            )
    else:
        bad = np.flatnonzero(d <= 0)
        if bad.size:
            raise DataError(
                f"{argument}: denominator[{bad[0]}]: expected a positive number of "
                f"impressions per unit, got {d[bad[0]]:g}"
            )
    return sums


@dataclass(frozen=True)
class ArmEstimate:
    """One arm's estimate and its per-unit linearized deviations (mean 0).

    ``estimate`` is the ratio sum(M) / sum(D) (or its CUPED adjustment); ``deviations``
    L_u, so that estimate - truth ~ mean(L) and Var(estimate) ~ var(L) / n.
    """

    estimate: float
    deviations: np.ndarray

    @property
    def n(self) -> int:
        return int(self.deviations.size)

    @property
    def variance(self) -> float:
        """The delta-method variance of the estimate, var(L, ddof=1) / n (NaN below 2):
        :func:`abrank.stats.unit_t.variance_rows` of this one arm."""
        if self.n < 2:
            return math.nan
        every = np.ones((1, self.n), dtype=bool)
        return float(variance_rows(one_row(self.deviations), every)[0])


def linearized(sums: UnitSums) -> ArmEstimate:
    """The ratio of ``sums`` and its delta-method deviations (M_u - R D_u) / mean(D).

    Units with D_u = 0 (no data: a covariate's units without a pre-period) have M_u = 0
    and so a deviation of exactly 0. With no data at all the ratio is NaN and every
    deviation 0.
    """
    m, d = sums.numerator, sums.denominator
    n = m.size
    total_d = float(d.sum())
    if n == 0 or total_d <= 0:
        return ArmEstimate(math.nan, np.zeros(n))
    ratio = float(m.sum()) / total_d
    return ArmEstimate(ratio, (m - ratio * d) / (total_d / n))


def rows_of(sums: UnitSums) -> np.ndarray:
    """The (n, 2) rows (M_u, D_u) that resampling draws units from."""
    return np.column_stack([sums.numerator, sums.denominator])
