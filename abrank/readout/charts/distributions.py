"""The data of the distribution charts: per-query deltas (or values) and bootstrap draws.

Paired readouts split each comparison's per-query deltas into losses, ties and wins over
one set of bins, with a bin of its own around 0 for the ties; independent readouts count
each arm's per-query values instead. The bootstrap panels count the resampled mean deltas
of the primary metric behind each treatment's bootstrap interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.readout.charts.common import Histogram, finite, finite_pair, floats, json_float
from abrank.readout.core import Readout
from abrank.readout.model import ComparisonSummary
from abrank.readout.typed import (
    control_name,
    overall_comparisons,
    primary_metric,
    readout_summary,
    treatment_names,
)

#: Bins of the per-query delta histogram before the tie bin is cut out of the middle one.
DELTA_BINS = 41
#: Bins of an arm's per-query values (independent design).
VALUE_BINS = 30
#: Bins of the bootstrap distribution.
BOOTSTRAP_BINS = 60


def paired_deltas(per_query: pd.DataFrame, metric: str, control: str, treatment: str) -> np.ndarray:
    """Per-query deltas (treatment − control) over the queries both arms hold a value for."""
    arms = per_query["arm"]
    frame = per_query.loc[arms == control, ["query_id", metric]]
    other = per_query.loc[arms == treatment, ["query_id", metric]]
    ids = pd.Index(other["query_id"])
    if not ids.is_unique:  # not a per-query table: pair every match, as a merge does
        joined = frame.merge(other, on="query_id", suffixes=("_c", "_t"))
        deltas = joined[f"{metric}_t"].to_numpy(float) - joined[f"{metric}_c"].to_numpy(float)
        return deltas[np.isfinite(deltas)]
    at = ids.get_indexer(frame["query_id"])  # in the control's order, as the merge was
    paired = at >= 0
    deltas = other[metric].to_numpy(float)[at[paired]] - frame[metric].to_numpy(float)[paired]
    return deltas[np.isfinite(deltas)]


@dataclass(frozen=True)
class SplitHistogram:
    """Per-query deltas over shared bins, counted apart as losses (< 0), ties (= 0) and
    wins (> 0). The bins are 41 equal ones over [-m, m] (m: the largest |delta|, 1 when
    every delta is 0) with the middle one replaced by a tie bin [-t, t]: t = m / 82, or
    m / 10 when no query moved (so that a panel of ties only shows a visible bar)."""

    edges: tuple[float, ...]
    losses: tuple[int, ...]
    ties: tuple[int, ...]
    wins: tuple[int, ...]

    @classmethod
    def of(cls, deltas: np.ndarray) -> SplitHistogram:
        """The split histogram of ``deltas`` (finite, at least one)."""
        span = float(np.max(np.abs(deltas))) or 1.0
        edges = np.linspace(-span, span, DELTA_BINS + 1)
        tie = span / 82 if (deltas != 0).any() else span / 10
        edges = np.union1d(edges[np.abs(edges) >= tie], [-tie, tie])

        def count(part: np.ndarray) -> tuple[int, ...]:
            return tuple(int(c) for c in np.histogram(part, bins=edges)[0])

        return cls(
            floats(edges), count(deltas[deltas < 0]), count(deltas[deltas == 0]),
            count(deltas[deltas > 0]),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Edges and the three counts per bin, as JSON-safe builtins."""
        return {
            "edges": list(self.edges),
            "losses": list(self.losses),
            "ties": list(self.ties),
            "wins": list(self.wins),
        }


@dataclass(frozen=True)
class DeltaPanel:
    """One comparison's panel: its per-query deltas (paired: ``deltas``, None when no query
    is in both arms) or each arm's per-query values (independent: ``arms``, the control
    first), and the comparison's own win/tie/loss counts (the results table's)."""

    metric: str
    treatment: str
    deltas: SplitHistogram | None
    arms: tuple[tuple[str, Histogram], ...]
    wins: float | None
    ties: float | None
    losses: float | None

    def to_dict(self) -> dict[str, Any]:
        """The panel as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "deltas": self.deltas.to_dict() if self.deltas is not None else None,
            "arms": [{"arm": arm, **hist.to_dict()} for arm, hist in self.arms],
            "wins": json_float(self.wins),
            "ties": json_float(self.ties),
            "losses": json_float(self.losses),
        }


@dataclass(frozen=True)
class DeltaDistributions:
    """The per-query distribution chart's panels, one per overall comparison whose metric
    the per-query table has; ``paired`` tells deltas from per-arm values."""

    paired: bool
    control: str
    panels: tuple[DeltaPanel, ...]

    def to_dict(self) -> dict[str, Any]:
        """The panels as JSON-safe builtins."""
        return {
            "paired": self.paired,
            "control": self.control,
            "panels": [p.to_dict() for p in self.panels],
        }


def distribution_comparisons(readout: Readout) -> list[ComparisonSummary]:
    """The overall comparisons that get a per-query panel: those of an offline readout
    whose metric the per-query table has; none online (the per-unit chart shows the spread
    there), or without per-query values or a control."""
    summary = readout_summary(readout)
    per_query = readout.per_query
    if summary.unit is not None or control_name(summary) is None:
        return []
    if per_query is None or per_query.empty:
        return []
    return [c for c in overall_comparisons(summary) if c.metric in per_query.columns]


def delta_distributions(readout: Readout) -> DeltaDistributions | None:
    """The per-query distributions of the :func:`distribution_comparisons`; None without
    any."""
    comps = distribution_comparisons(readout)
    if not comps:
        return None
    summary = readout_summary(readout)
    per_query = readout.per_query
    control = str(control_name(summary))
    paired = summary.design == "paired"
    panels = []
    for comp in comps:
        split: SplitHistogram | None = None
        arms: tuple[tuple[str, Histogram], ...] = ()
        if paired:
            deltas = paired_deltas(per_query, comp.metric, control, comp.treatment)
            split = SplitHistogram.of(deltas) if deltas.size else None
        else:
            arms = tuple(
                (arm, Histogram.of(_finite_values(per_query, arm, comp.metric), VALUE_BINS))
                for arm in (control, comp.treatment)
            )
        counts = (finite(comp.wins), finite(comp.ties), finite(comp.losses))
        panels.append(DeltaPanel(comp.metric, comp.treatment, split, arms, *counts))
    return DeltaDistributions(paired, control, tuple(panels))


def _finite_values(per_query: pd.DataFrame, arm: str, metric: str) -> np.ndarray:
    values = per_query.loc[per_query["arm"] == arm, metric].to_numpy(float)
    return values[np.isfinite(values)]


@dataclass(frozen=True)
class BootstrapPanel:
    """One treatment's resampled mean deltas of the primary metric (``resamples``: the
    finite draws counted), its bootstrap interval and observed delta (None when the summary
    has none)."""

    metric: str
    treatment: str
    histogram: Histogram
    resamples: int
    interval: tuple[float, float] | None
    delta: float | None

    def to_dict(self) -> dict[str, Any]:
        """The panel as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            **self.histogram.to_dict(),
            "resamples": self.resamples,
            "bootstrap_ci": list(self.interval) if self.interval is not None else None,
            "delta": json_float(self.delta),
        }


def _primary_draws(readout: Readout) -> dict[str, np.ndarray]:
    """Treatment -> the bootstrap draws of the primary metric's overall delta."""
    primary = primary_metric(readout_summary(readout))
    return {
        t: np.asarray(d, float)
        for (m, t), d in readout.resampled_deltas.items()
        if m == primary and d is not None and np.size(d)
    }


def bootstrap_treatments(readout: Readout) -> list[str]:
    """The treatments with bootstrap draws of the primary metric, the summary's first."""
    draws = _primary_draws(readout)
    order = [t for t in treatment_names(readout_summary(readout)) if t in draws]
    return order + [t for t in draws if t not in order]


def bootstrap_panels(readout: Readout) -> tuple[BootstrapPanel, ...]:
    """A panel per :func:`bootstrap_treatments`; empty without draws."""
    summary = readout_summary(readout)
    primary = primary_metric(summary)
    draws = _primary_draws(readout)
    comps = {
        c.treatment: c for c in summary.comparisons if c.segment is None and c.metric == primary
    }
    panels = []
    for treatment in bootstrap_treatments(readout):
        values = draws[treatment]
        values = values[np.isfinite(values)]
        histogram = Histogram.of(values, BOOTSTRAP_BINS) if values.size else Histogram((), ())
        comp = comps.get(treatment)
        interval = finite_pair(comp.bootstrap_ci) if comp is not None else None
        delta = finite(comp.delta) if comp is not None else None
        panels.append(BootstrapPanel(primary, treatment, histogram, values.size, interval, delta))
    return tuple(panels)
