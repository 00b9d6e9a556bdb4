"""The charts of an online readout: click-through rate by position, and each unit's value.

An online A/B test moves clicks between positions (a better ranker pulls them to the top)
and is decided over units, not impressions: the first chart shows where each arm's clicks
land, the second how the primary metric is spread over the units that the statistics
treat as independent (a few heavy users can dominate an impression-weighted mean). The
rates and counts are :mod:`abrank.readout.charts.online`' data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.readout.charts import ctr_by_rank, unit_distribution, unit_value_range
from abrank.readout.core import Readout
from abrank.readout.typed import primary_metric, readout_summary
from abrank.render.chart_panels import chart_title, finish_one_panel, grouped_bars, share_steps
from abrank.render.chart_style import WIDTH, Chart, arm_colour, mpl_classes
from abrank.render.headline import unit_plural
from abrank.render.text import arm_labels, metric_label, plain, unit_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def ctr_by_rank_chart(readout: Readout) -> Chart | None:
    """Click-through rate at each position, grouped bars per arm."""
    if readout.ctr_by_rank is None or readout.ctr_by_rank.empty:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)

    def draw() -> Figure:
        data = ctr_by_rank(readout)
        assert data is not None  # it has the table
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        shares = {a.arm: np.asarray(a.values, dtype=np.float64) * 100 for a in data.arms}
        top = grouped_bars(ax, summary, labels, shares)
        ax.set_xticks(np.arange(len(data.ranks)), [str(r) for r in data.ranks])
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


def unit_distribution_chart(readout: Readout) -> Chart | None:
    """Histogram of each unit's mean of the primary metric, per arm (shares of units)."""
    if unit_value_range(readout) is None:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    column = summary.unit or "unit"
    unit, units = unit_name(column), unit_plural(column)
    metric = plain(metric_label(summary, primary_metric(summary)))

    def draw() -> Figure:
        data = unit_distribution(readout)
        assert data is not None  # it has a range of values
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        top = 0.0
        for group in data.groups:
            label = f"{plain(labels.get(group.arm, group.arm))} ({group.units:,} {units})"
            colour = arm_colour(summary, group.arm)
            top = max(top, share_steps(ax, group.shares, data.edges, colour, label))
        ax.set_xlabel(f"{metric}: mean per {unit}")
        ax.set_ylabel(f"share of {units} (%)")
        chart_title(ax, f"{metric} per {unit}, per arm")
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
