"""Quantile metrics from an engine's sketch: the point, its clustered interval and the
difference of two arms, when the impression values never leave the engine.

With ``approximate: true`` an SQL engine computes the q-th quantile with its own sketch
(Spark's ``percentile_approx``, DuckDB's ``approx_quantile``), then, against that point
Q_hat, each unit's S_u (impressions at or below Q_hat) and N_u (impressions with a value),
and the sketch's quantiles on a grid of probabilities around q
(:mod:`abrank.engines.column_sketch`). What comes back is a :class:`SketchArm`; the rest
is :mod:`abrank.stats.quantile`'s construction (Deng, Knoblich & Lu 2018) unchanged:
sigma_I from the per-unit sums by the clustered delta method
(:func:`abrank.stats.quantile.indicator_variance`), the interval [Q(q - z sigma_I),
Q(q + z sigma_I)] read from the sketch's quantile function, se = its width / 2 z, and the
difference, lift and p-value of :func:`abrank.stats.quantile.quantile_difference`.

The sketch's quantile function is known on the grid only: at a probability between two
grid points (an interval redrawn at another level, after a multiple-testing correction) it
is interpolated linearly between them. The grid holds the endpoints at the configured level
exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.stats.quantile import (
    QuantileEstimate,
    checked_level,
    checked_q,
    estimate_through,
    indicator_variance,
    z_score,
)

__all__ = ["GRID_SPAN", "GRID_STEPS", "SketchArm", "estimate_from_sketch", "sketch_grid"]

GRID_STEPS = 120
"""Grid points on each side of q at which the engine reads its sketch's quantiles."""

GRID_SPAN = 6.0
"""The grid spans q -+ GRID_SPAN sigma_I (a 99.9999998% interval's ranks)."""


@dataclass(frozen=True)
class SketchArm:
    """One arm's quantile as an engine's sketch gave it: ``point`` (the sketch's q-th
    quantile), per unit ``below`` (S_u: impressions at or below the point) and ``counts``
    (N_u: impressions with a value), and the sketch's quantiles ``grid_values`` at the
    probabilities ``grid`` (increasing; empty when the engine was not asked). ``sketch``
    names the function and ``bound`` states its error, for the notes."""

    q: float
    point: float
    below: np.ndarray
    counts: np.ndarray
    grid: np.ndarray
    grid_values: np.ndarray
    sketch: str
    bound: str

    @property
    def n_impressions(self) -> int:
        return int(self.counts.sum())

    @property
    def n_units(self) -> int:
        return int(self.counts.size)

    @property
    def indicator_se(self) -> float:
        """sigma_I of the share at or below the point, by the clustered delta method."""
        variance = indicator_variance(self.below, self.counts)
        return math.sqrt(variance) if math.isfinite(variance) else math.nan

    def at(self, p: float) -> float:
        """The sketch's quantile at probability ``p`` (clipped to the grid; linear between
        two grid points)."""
        if self.grid.size == 0:
            return math.nan
        return float(np.interp(p, self.grid, self.grid_values))

    def to_dict(self) -> dict[str, Any]:
        """Sizes and the sketch, JSON-safe."""
        return {
            "point": self.point,
            "impressions": self.n_impressions,
            "units": self.n_units,
            "sketch": self.sketch,
        }


def sketch_grid(q: float, sigma: float, confidence_level: float) -> list[float]:
    """The probabilities at which to read an arm's sketch: q -+ z sigma at
    ``confidence_level`` exactly, and GRID_STEPS points on each side of q up to
    q -+ GRID_SPAN sigma, clipped to [0, 1] (q alone when sigma is not finite)."""
    if not math.isfinite(sigma):
        return [q]
    z = z_score(checked_level(confidence_level))
    points = {q, max(0.0, q - z * sigma), min(1.0, q + z * sigma)}
    for step in range(1, GRID_STEPS + 1):
        offset = GRID_SPAN * sigma * step / GRID_STEPS
        points.add(max(0.0, q - offset))
        points.add(min(1.0, q + offset))
    return sorted(points)


def estimate_from_sketch(
    arm: SketchArm, q: float, confidence_level: float = 0.95
) -> QuantileEstimate:
    """The :class:`~abrank.stats.quantile.QuantileEstimate` of a sketched arm: sigma_I from
    its per-unit sums, the interval from its sketch's quantile function; the
    per-impression ("naive") interval the same with sigma_I^2 = I (1 - I) / (N - 1)."""
    q, level = checked_q(q), checked_level(confidence_level)
    n = arm.n_impressions
    return estimate_through(
        arm.at,
        q,
        level,
        point=arm.point,
        n_impressions=n,
        n_units=arm.n_units,
        share=float(arm.below.sum()) / n if n else math.nan,
        indicator_se=arm.indicator_se,
    )
