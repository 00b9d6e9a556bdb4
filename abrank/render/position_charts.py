"""The position charts of an offline readout: where each arm's first relevant document
lands, and each arm's mean metric@k against k. The shares and curves are
:mod:`abrank.readout.charts.positions`' data."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from abrank.readout.charts import curve_depths, first_relevant_shares, metric_curves
from abrank.readout.core import Readout
from abrank.readout.typed import readout_summary
from abrank.render.chart_panels import (
    chart_title,
    figure_legend,
    finish_one_panel,
    grouped_bars,
    place_grid,
    value_labels,
)
from abrank.render.chart_style import WIDTH, Chart, arm_colour, mpl_classes
from abrank.render.text import arm_labels, plain

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: metric@k curves deeper than this get a log x axis
LOG_K = 100


def first_relevant_chart(readout: Readout) -> Chart | None:
    """Where each arm's first relevant document lands: grouped bars of query shares."""
    if readout.first_relevant is None or readout.first_relevant.empty:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)

    def draw() -> Figure:
        data = first_relevant_shares(readout)
        assert data is not None  # it has the table
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        shares = {a.arm: np.asarray(a.values) * 100 for a in data.arms}
        top = grouped_bars(ax, summary, labels, shares)
        ax.set_xticks(np.arange(len(data.buckets)), list(data.buckets))
        ax.set_xlabel("rank of the first relevant document")
        ax.set_ylabel("share of queries (%)")
        chart_title(ax, "Where the first relevant document lands, per arm")
        finish_one_panel(fig, ax, top)
        return fig

    return Chart(
        "first_relevant.png",
        "Where the first relevant document lands",
        'Share of queries whose first relevant document sits at each rank ("none": '
        "no relevant document retrieved); reciprocal rank rewards the left bars.",
        draw,
        section="positions",
    )


def curves_chart(readout: Readout) -> Chart | None:
    """Mean metric@k against k per arm, one panel per metric family."""
    depths = curve_depths(readout)
    if not depths:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    ncols = min(3, len(depths))
    nrows = math.ceil(len(depths) / ncols)
    log_x = any(deepest > LOG_K for deepest in depths.values())

    def draw() -> Figure:
        data = metric_curves(readout)
        assert data is not None  # it has curves
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.2 * nrows + 0.8))
        drawn: dict[str, Any] = {}
        for i, panel in enumerate(data.panels):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            for line in panel.lines:
                (drawn[line.arm],) = ax.plot(
                    np.asarray(line.k),
                    np.asarray(line.values),
                    marker="o" if len(line.k) <= 25 else None,
                    markersize=3,
                    linewidth=1.6,
                    color=arm_colour(summary, line.arm),
                    label=plain(labels.get(line.arm, line.arm)),
                )
            deepest = panel.deepest
            if deepest > LOG_K:  # k = 1..10 would otherwise be squeezed together
                ax.set_xscale("log")
                ax.set_xlim(1, deepest)
                ticks = [10**e for e in range(int(math.log10(deepest)) + 1)]
                ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
                ax.minorticks_off()
            else:
                ax.xaxis.set_major_locator(mpl_classes().MaxNLocator(nbins=6, integer=True))
                ax.set_xlim(0, deepest)
            values = [v for line in panel.lines for v in line.values]
            high = float(np.nanmax(np.asarray(values, dtype=float), initial=0.0))
            ax.set_ylim(0, max(high * 1.05, 1e-9) if high > 0 else 1.0)  # from 0: no zoomed gaps
            ax.set_xlabel("cutoff k" + (" (log scale)" if deepest > LOG_K else ""))
            ax.set_ylabel(f"mean {plain(panel.metric)}@k")
            chart_title(ax, plain(f"{panel.metric}@k"), fontsize=10)
            ax.grid(color="#dddddd", linewidth=0.6)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
        fig.suptitle("Metric@k curves per arm", fontsize=12)
        figure_legend(fig, [drawn[a] for a in data.arms if a in drawn], suptitle=True)
        values = [0.0, *(v for p in data.panels for line in p.lines for v in line.values)]
        place_grid(fig, nrows, ncols, value_labels(values), suptitle=True, legend_row=True)
        return fig

    return Chart(
        "curves.png",
        "Metric@k curves",
        "Mean metric at every cutoff k, per arm; the value axes start at 0"
        + (f", and k is on a log scale (cutoffs past {LOG_K})." if log_x else "."),
        draw,
        weight=0.75 * len(depths),
        section="positions",
    )
