"""The charts of an online readout: click-through rate by position, and each unit's value.

An online A/B test moves clicks between positions (a better ranker pulls them to the top)
and is decided over units, not impressions: the first chart shows where each arm's clicks
land, the second how the primary metric is spread over the units that the statistics
treat as independent (a few heavy users can dominate an impression-weighted mean).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.readout import Readout
from abrank.render.charts import (
    WIDTH,
    Chart,
    arm_colour,
    arms_of,
    chart_title,
    finish_one_panel,
    grouped_bars,
    mpl_classes,
)
from abrank.render.headline import unit_plural
from abrank.render.text import arm_labels, metric_label, plain
from abrank.render.typed import readout_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Bins of the per-unit distribution chart.
UNIT_BINS = 40


def ctr_by_rank_chart(readout: Readout) -> Chart | None:
    """Click-through rate at each position, grouped bars per arm."""
    frame = readout.ctr_by_rank
    if frame is None or frame.empty:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    arms = arms_of(frame, labels)
    ranks = np.sort(pd.unique(frame["rank"].astype(np.int64)))

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        shares = {}
        for arm in arms:
            part = frame[frame["arm"] == arm].set_index("rank")["ctr"]
            shares[arm] = part.reindex(ranks).fillna(0.0).to_numpy(dtype=np.float64) * 100
        top = grouped_bars(ax, summary, labels, shares)
        ax.set_xticks(np.arange(ranks.size), [str(r) for r in ranks])
        ax.set_xlabel("position (rank) of the result shown")
        ax.set_ylabel("click-through rate (%)")
        chart_title(ax, "Click-through rate by position, per arm")
        finish_one_panel(fig, ax, top)
        return fig

    return Chart(
        "ctr_by_rank.png",
        "Click-through rate by position",
        "Share of impressions whose result at each position was clicked; a better ranker "
        "moves clicks to the left.",
        draw,
        section="clicks",
    )


def share_steps(ax: Any, values: np.ndarray, edges: np.ndarray, colour: str, label: str) -> float:
    """One group's histogram over ``edges`` as a step line of shares (% of its values);
    returns the highest share, for the axis."""
    counts, _ = np.histogram(values, bins=edges)
    shares = counts / max(values.size, 1) * 100
    ax.stairs(shares, edges, color=colour, linewidth=1.6, label=label)
    return float(shares.max(initial=0))


def unit_distribution_chart(readout: Readout) -> Chart | None:
    """Histogram of each unit's mean of the primary metric, per arm (shares of units)."""
    frame = readout.unit_values
    if frame is None or frame.empty:
        return None
    summary = readout_summary(readout)
    if summary.design == "interleaved":  # a preference per unit: its own chart
        return None
    labels = arm_labels(summary)
    arms = arms_of(frame, labels)
    metric = summary.primary_metric or (summary.metrics[0] if summary.metrics else "")
    column = summary.unit or "unit"
    unit = column[:-3] if column.endswith("_id") else column  # user_id -> user
    units = unit_plural(column)
    values = frame["value"].to_numpy(dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    low, high = float(finite.min()), float(finite.max())
    edges = np.linspace(low, high if high > low else low + 1.0, UNIT_BINS + 1)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        top = 0.0
        for arm in arms:
            part = frame.loc[frame["arm"] == arm, "value"].to_numpy(dtype=np.float64)
            part = part[np.isfinite(part)]
            label = f"{plain(labels.get(arm, arm))} ({part.size:,} {units})"
            top = max(top, share_steps(ax, part, edges, arm_colour(summary, arm), label))
        ax.set_xlabel(f"{plain(metric_label(summary, metric))}: mean per {unit}")
        ax.set_ylabel(f"share of {units} (%)")
        chart_title(ax, f"{plain(metric_label(summary, metric))} per {unit}, per arm")
        finish_one_panel(fig, ax, top)
        return fig

    return Chart(
        "unit_distribution.png",
        f"Distribution of the primary metric per {unit}",
        f"Each {unit}'s mean of the primary metric over its impressions; the statistics "
        f"treat {units}, not impressions, as independent.",
        draw,
        section="clicks",
    )
