"""The data of the online charts: the click-through rate at each rank per arm, and how the
primary metric is spread over the units the statistics treat as independent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.readout.charts.common import ArmValues, floats, json_float, json_floats, ordered_arms
from abrank.readout.core import Readout
from abrank.readout.typed import arm_names, primary_metric, readout_summary

#: Bins of the per-unit distribution chart.
UNIT_BINS = 40


@dataclass(frozen=True)
class RankRates:
    """Per arm, the click-through rate at each rank of ``ranks`` (0 where the arm has no
    row for that rank)."""

    ranks: tuple[int, ...]
    arms: tuple[ArmValues, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ranks and every arm's rates, as JSON-safe builtins."""
        return {"ranks": list(self.ranks), "arms": [a.to_dict() for a in self.arms]}


def ctr_by_rank(readout: Readout) -> RankRates | None:
    """The rates of ``readout.ctr_by_rank`` at every rank any arm has (ascending), the
    summary's arms first; None offline."""
    frame = readout.ctr_by_rank
    if frame is None or frame.empty:
        return None
    arms = ordered_arms(frame["arm"], arm_names(readout_summary(readout)))
    ranks = np.unique(frame["rank"].to_numpy(np.int64))  # sorted
    rates = []
    for arm in arms:
        part = frame[frame["arm"] == arm].set_index("rank")["ctr"]
        rates.append(ArmValues(arm, floats(part.reindex(ranks).fillna(0.0).to_numpy(np.float64))))
    return RankRates(tuple(int(r) for r in ranks), tuple(rates))


@dataclass(frozen=True)
class UnitCounts:
    """One group's units counted over the bins of a :class:`UnitHistogram`: ``units`` the
    values counted (with those outside every bin), ``mean`` their mean."""

    arm: str
    units: int
    counts: tuple[int, ...]
    mean: float

    @property
    def shares(self) -> tuple[float, ...]:
        """Each bin's share of the group's units."""
        return tuple(c / max(self.units, 1) for c in self.counts)

    def to_dict(self) -> dict[str, Any]:
        """The group's counts and shares, as JSON-safe builtins."""
        return {
            "arm": self.arm,
            "units": self.units,
            "counts": list(self.counts),
            "shares": json_floats(self.shares),
            "mean": json_float(self.mean),
        }


@dataclass(frozen=True)
class UnitHistogram:
    """A value per unit (the mean of ``metric`` over its impressions, or its preference),
    counted over shared bins, a group per arm (or pair of arms)."""

    metric: str
    unit: str
    edges: tuple[float, ...]
    groups: tuple[UnitCounts, ...]

    def to_dict(self) -> dict[str, Any]:
        """The histogram as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "unit": self.unit,
            "edges": json_floats(self.edges),
            "groups": [g.to_dict() for g in self.groups],
        }


def unit_counts(
    arm: str, values: np.ndarray, edges: np.ndarray, mean: float | None = None
) -> UnitCounts:
    """``values`` counted over ``edges`` (numpy.histogram's bins); ``mean`` is theirs unless
    given (the mean of the values before they were clipped to the bins)."""
    counts, _ = np.histogram(values, bins=edges)
    mean = unit_mean(values) if mean is None else mean
    return UnitCounts(arm, int(values.size), tuple(int(c) for c in counts), mean)


def unit_mean(values: np.ndarray) -> float:
    """The mean of the values (NaN when there are none)."""
    return float(values.mean()) if values.size else float("nan")


def unit_value_range(readout: Readout) -> tuple[float, float] | None:
    """The lowest and highest finite value per unit of an online readout; None offline,
    for interleaving (whose preference per unit has its own chart) and without a finite
    value."""
    frame = readout.unit_values
    if frame is None or frame.empty or readout_summary(readout).design == "interleaved":
        return None
    values = frame["value"].to_numpy(dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    return float(finite.min()), float(finite.max())


def unit_distribution(readout: Readout) -> UnitHistogram | None:
    """Each arm's units over 40 equal bins spanning :func:`unit_value_range` (a bin of
    width 1 from the value when all are equal); None without that range."""
    span = unit_value_range(readout)
    if span is None:
        return None
    summary = readout_summary(readout)
    frame = readout.unit_values
    assert frame is not None  # it has a range
    low, high = span
    edges = np.linspace(low, high if high > low else low + 1.0, UNIT_BINS + 1)
    groups = []
    for arm in ordered_arms(frame["arm"], arm_names(summary)):
        part = frame.loc[frame["arm"] == arm, "value"].to_numpy(dtype=np.float64)
        groups.append(unit_counts(arm, part[np.isfinite(part)], edges))
    unit = summary.unit or "unit"
    return UnitHistogram(primary_metric(summary), unit, floats(edges), tuple(groups))
