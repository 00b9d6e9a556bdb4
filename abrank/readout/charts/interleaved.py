"""The data of the interleaving charts: the share of impressions each comparison's treatment
won, tied and lost, and how the preference is spread over the units."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.readout.charts.common import floats
from abrank.readout.charts.online import UnitHistogram, unit_counts, unit_mean
from abrank.readout.core import Readout
from abrank.readout.model import Summary
from abrank.readout.typed import as_summary, overall_comparisons, primary_metric, readout_summary

#: Bins of the per-unit preference chart (the preference runs from -1/2 to +1/2).
PREFERENCE_BINS = 40
_OUTCOMES = ("wins", "ties", "losses")


@dataclass(frozen=True)
class Outcome:
    """One comparison's wins, ties and losses as shares of its impressions (``n``; a
    missing count counts 0, and no impression divides by 1)."""

    metric: str
    treatment: str
    wins: float
    ties: float
    losses: float
    impressions: int

    def to_dict(self) -> dict[str, Any]:
        """The shares as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "impressions": self.impressions,
        }


@dataclass(frozen=True)
class Outcomes:
    """The outcome shares of every overall interleaving comparison, in the summary's order."""

    rows: tuple[Outcome, ...]

    def to_dict(self) -> dict[str, Any]:
        """The rows as JSON-safe builtins."""
        return {"rows": [row.to_dict() for row in self.rows]}


def outcomes(summary: Summary | dict[str, Any]) -> Outcomes | None:
    """The outcome shares of the overall interleaving comparisons; None without any."""
    comps = [c for c in overall_comparisons(as_summary(summary)) if c.design == "interleaved"]
    if not comps:
        return None
    rows = []
    for comp in comps:
        total = max(comp.n or 0, 1)
        wins, ties, losses = (float(getattr(comp, k) or 0) / total for k in _OUTCOMES)
        rows.append(Outcome(comp.metric, comp.treatment, wins, ties, losses, int(comp.n or 0)))
    return Outcomes(tuple(rows))


def preference_distribution(readout: Readout) -> UnitHistogram | None:
    """Each unit's preference for the treatment (primary credit) over 40 equal bins from
    -1/2 to +1/2 (values outside clipped to the ends), a group per pair of arms in the
    order met; None but for an interleaving readout with per-unit values."""
    summary = readout_summary(readout)
    frame = readout.unit_values
    if summary.design != "interleaved" or frame is None or frame.empty:
        return None
    edges = np.linspace(-0.5, 0.5, PREFERENCE_BINS + 1)
    groups = []
    for pair in pd.unique(frame["arm"]):
        values = frame.loc[frame["arm"] == pair, "value"].to_numpy(dtype=np.float64)
        groups.append(unit_counts(pair, np.clip(values, -0.5, 0.5), edges, unit_mean(values)))
    return UnitHistogram(
        primary_metric(summary), summary.unit or "unit", floats(edges), tuple(groups)
    )
