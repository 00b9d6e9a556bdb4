"""The data of the position charts of an offline readout: where each arm's first relevant
document lands, and each arm's mean metric@k against k."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.readout.charts.common import ArmValues, floats, json_floats, ordered_arms
from abrank.readout.core import Readout
from abrank.readout.typed import arm_names, readout_summary

#: Buckets of the first relevant document's rank: 1..10 one by one, then coarser
#: (name, lowest rank, highest rank).
RANK_BUCKETS: tuple[tuple[str, float, float], ...] = (
    *((str(r), r, r) for r in range(1, 11)),
    ("11–20", 11, 20),
    ("21–100", 21, 100),
    (">100", 101, math.inf),
)
#: The bucket of the queries without a relevant document retrieved.
NONE_BUCKET = "none"


def first_relevant_rank_shares(first_relevant: pd.DataFrame, arm: str) -> np.ndarray:
    """Share of an arm's queries whose first relevant document lands in each rank bucket.

    The buckets are :data:`RANK_BUCKETS` followed by "none retrieved" (NaN rank).
    """
    ranks = first_relevant.loc[first_relevant["arm"] == arm, "rank"].to_numpy(float)
    if ranks.size == 0:
        return np.zeros(len(RANK_BUCKETS) + 1)
    uppers = np.array([high for _, _, high in RANK_BUCKETS])
    found = ranks[np.isfinite(ranks)]
    index = np.searchsorted(uppers, found, side="left")
    counts = np.bincount(index, minlength=len(RANK_BUCKETS) + 1).astype(float)
    counts[len(RANK_BUCKETS)] = ranks.size - found.size
    return counts / ranks.size


@dataclass(frozen=True)
class RankShares:
    """Per arm, the share of its queries whose first relevant document lands in each
    bucket (``buckets``: their names, ``none`` last)."""

    buckets: tuple[str, ...]
    arms: tuple[ArmValues, ...]

    def to_dict(self) -> dict[str, Any]:
        """The buckets and every arm's shares, as JSON-safe builtins."""
        return {"buckets": list(self.buckets), "arms": [a.to_dict() for a in self.arms]}


def first_relevant_shares(readout: Readout) -> RankShares | None:
    """The shares of every arm of ``readout.first_relevant`` (the summary's arms first);
    None without that table."""
    frame = readout.first_relevant
    if frame is None or frame.empty:
        return None
    arms = ordered_arms(frame["arm"], arm_names(readout_summary(readout)))
    return RankShares(
        (*(name for name, _, _ in RANK_BUCKETS), NONE_BUCKET),
        tuple(ArmValues(arm, floats(first_relevant_rank_shares(frame, arm))) for arm in arms),
    )


@dataclass(frozen=True)
class CurveLine:
    """One arm's mean metric at each cutoff ``k`` (ascending)."""

    arm: str
    k: tuple[float, ...]
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The line as JSON-safe builtins."""
        return {"arm": self.arm, "k": json_floats(self.k), "values": json_floats(self.values)}


@dataclass(frozen=True)
class CurvePanel:
    """One metric family's lines (``metric``: the family, e.g. ``ndcg``), in the arm order
    of :class:`Curves`; ``deepest`` is the largest cutoff of the family."""

    metric: str
    deepest: float
    lines: tuple[CurveLine, ...]

    def to_dict(self) -> dict[str, Any]:
        """The panel as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "deepest": self.deepest,
            "lines": [line.to_dict() for line in self.lines],
        }


@dataclass(frozen=True)
class Curves:
    """The metric@k curves: a panel per metric family (the order met), ``arms`` the arms
    of every panel (the summary's arms first)."""

    arms: tuple[str, ...]
    panels: tuple[CurvePanel, ...]

    def to_dict(self) -> dict[str, Any]:
        """The curves as JSON-safe builtins."""
        return {"arms": list(self.arms), "panels": [p.to_dict() for p in self.panels]}


def curve_depths(readout: Readout) -> dict[str, float]:
    """Each metric family of ``readout.curves`` (the order met) -> its deepest cutoff k;
    empty without that table."""
    curves = readout.curves
    if curves is None or curves.empty:
        return {}
    return {
        f: float(curves.loc[curves["metric"] == f, "k"].max()) for f in pd.unique(curves["metric"])
    }


def metric_curves(readout: Readout) -> Curves | None:
    """The curves of ``readout.curves``; None without that table."""
    depths = curve_depths(readout)
    if not depths:
        return None
    curves = readout.curves
    arms = ordered_arms(curves["arm"], arm_names(readout_summary(readout)))
    panels = []
    for family, deepest in depths.items():
        part = curves[curves["metric"] == family]
        lines = []
        for arm in arms:
            line = part[part["arm"] == arm].sort_values("k")
            if not line.empty:
                k, values = line["k"].to_numpy(float), line["value"].to_numpy(float)
                lines.append(CurveLine(arm, floats(k), floats(values)))
        panels.append(CurvePanel(family, deepest, tuple(lines)))
    return Curves(arms, tuple(panels))
