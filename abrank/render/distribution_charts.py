"""The distribution charts: per-query deltas split into wins, ties and losses (per-arm
values for the independent design), and the bootstrap draws behind the primary metric's
bootstrap interval. The counts are :mod:`abrank.readout.charts.distributions`' data."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from abrank.readout.charts import (
    BootstrapPanel,
    SplitHistogram,
    bootstrap_panels,
    bootstrap_treatments,
    delta_distributions,
    distribution_comparisons,
)
from abrank.readout.charts.common import Histogram
from abrank.readout.core import Readout
from abrank.readout.model import ComparisonSummary
from abrank.readout.typed import primary_metric, readout_summary
from abrank.render.chart_panels import (
    chart_title,
    count_labels,
    figure_legend,
    place_grid,
    style_x_grid,
)
from abrank.render.chart_style import (
    BLACK,
    BLUE,
    LOSS,
    SKY,
    TIE,
    TIE_EDGE,
    VERMILLION,
    WIDTH,
    WIN,
    Chart,
    arm_colour,
    mpl_classes,
)
from abrank.render.text import arm_labels, fmt_nominal_level, metric_label, plain

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def delta_distribution_chart(readout: Readout) -> Chart | None:
    """Per-query delta histograms, one panel per metric x treatment, split win/tie/loss.

    For the independent design there are no per-query deltas; the panels then show each
    arm's per-query values instead.
    """
    comps = distribution_comparisons(readout)
    if not comps:
        return None
    summary = readout_summary(readout)
    paired = summary.design == "paired"
    labels = arm_labels(summary)
    metrics = list(dict.fromkeys(c.metric for c in comps))
    treatments = list(dict.fromkeys(c.treatment for c in comps))
    ncols = min(3, len(metrics))
    nrows = len(treatments) * math.ceil(len(metrics) / ncols)
    title = "Per-query deltas: wins, ties and losses" if paired else "Per-query values per arm"
    caption = (
        "How the per-query deltas spread: queries the treatment won (green), tied "
        "(grey) and lost (vermillion); the counts are the results table's."
        if paired
        else "The spread of per-query values in each arm."
    )

    def draw() -> Figure:
        data = delta_distributions(readout)
        assert data is not None  # it has comparisons
        fig = mpl_classes().Figure(figsize=(WIDTH, 2.9 * nrows + 0.6))
        tops = [0.0]
        for panel in data.panels:
            t_index = treatments.index(panel.treatment)
            m_index = metrics.index(panel.metric)
            row = t_index * math.ceil(len(metrics) / ncols) + m_index // ncols
            ax = fig.add_subplot(nrows, ncols, row * ncols + m_index % ncols + 1)
            name = metric_label(summary, panel.metric)
            treatment_label = labels.get(panel.treatment, panel.treatment)
            if paired:
                counts = {"losses": panel.losses, "ties": panel.ties, "wins": panel.wins}
                tops.append(_delta_histogram(ax, panel.deltas, counts))
                ax.set_xlabel(f"per-query delta of {plain(name)}")
                ax.set_ylabel("queries")
                chart_title(ax, plain(f"{name}: {treatment_label}"), fontsize=10)
            else:
                for arm, histogram in panel.arms:
                    # the counted bins as a step outline: each bin's left edge weighs its count
                    edges = np.asarray(histogram.edges)
                    heights = ax.hist(
                        edges[:-1],
                        bins=edges,
                        weights=np.asarray(histogram.counts, dtype=np.float64),
                        histtype="step",
                        linewidth=1.6,
                        color=arm_colour(summary, arm),
                        label=plain(labels.get(arm, arm)),
                    )[0]
                    tops.append(float(np.max(heights, initial=0)))
                ax.set_xlabel(f"per-query {plain(name)}")
                ax.set_ylabel("queries")
                versus = labels.get(data.control, data.control)
                chart_title(ax, plain(f"{name}: {treatment_label} vs {versus}"), fontsize=10)
                ax.legend(fontsize=7, frameon=False)
            style_x_grid(ax)
        fig.suptitle(title, fontsize=12)
        place_grid(fig, nrows, ncols, count_labels(max(tops)), suptitle=True)
        return fig

    return Chart("deltas.png", title, caption, draw, weight=float(len(comps)))


def _delta_histogram(
    ax: Any, split: SplitHistogram | None, counts: dict[str, float | None]
) -> float:
    """Stacked histogram of losses, ties and wins; a tie bar that would dwarf the rest is
    cut at the axis top and labelled with its count, so the wins and losses stay legible.

    Drawn as bars from the bins' counts, one bar per non-empty bin and part (what
    ``hist(stacked=True)`` shows, without its empty bars); ``counts`` are the comparison's
    own, for the legend. Returns the tallest bar shown.
    """
    if split is None:
        ax.text(0.5, 0.5, "no paired queries", ha="center", va="center", transform=ax.transAxes)
        return 0.0
    edges = np.asarray(split.edges)
    span = float(edges[-1])
    parts = ((split.losses, LOSS, "losses"), (split.ties, TIE, "ties"), (split.wins, WIN, "wins"))
    lefts, widths = edges[:-1], np.diff(edges)
    bottom = np.zeros(lefts.size)
    handles = []
    for part, colour, key in parts:
        heights = np.asarray(part, dtype=float)
        shown = heights > 0
        ax.bar(
            lefts[shown],
            heights[shown],
            width=widths[shown],
            bottom=bottom[shown],
            align="edge",
            color=colour,
            edgecolor=TIE_EDGE if key == "ties" else colour,
            linewidth=0.8 if key == "ties" else 0.0,
            zorder=2.5,  # above the zero line, so a narrow tie bar stays visible
        )
        bottom += heights
        count = counts[key]
        label = f"{key} ({int(count):,})" if count is not None and count.is_integer() else key
        handles.append(mpl_classes().Patch(color=colour, label=label))
    ax.update_datalim([(-span, 0.0), (span, 0.0)])  # the full range of the bins, as hist's
    ax.autoscale_view()
    ax.axvline(0.0, color=BLACK, linewidth=0.7, linestyle="--")
    moved = int((np.asarray(split.losses) + np.asarray(split.wins)).max(initial=0))
    ties = sum(split.ties)
    top = float(bottom.max(initial=0))
    if moved and ties > 1.5 * moved:
        top = moved * 1.35
        ax.set_ylim(0, top)
        ax.text(
            0.0, top * 0.97, " ties ↑ (bar cut)", ha="left", va="top", fontsize=7, color="#555555"
        )
    ax.legend(handles=handles, fontsize=7, frameon=False)
    return top


def _bar_histogram(ax: Any, histogram: Histogram, label: str) -> float:
    """The histogram in sky blue with thin white edges, drawn as bars from the bin counts
    (the empty bins are left out), as ``ax.hist`` would draw it. Returns the tallest bar."""
    if not histogram.counts:
        ax.bar([], [], color=SKY, label=label)
        return 0.0
    heights, edges = np.asarray(histogram.counts), np.asarray(histogram.edges)
    shown = heights > 0
    bars = ax.bar(
        edges[:-1][shown],
        heights[shown],
        width=np.diff(edges)[shown],
        align="edge",
        color=SKY,
        edgecolor="white",
        linewidth=0.3,
    )
    bars.patches[0].set_label(label)  # as hist labels its first bar: first in the legend
    ax.update_datalim([(edges[0], 0.0), (edges[-1], 0.0)])
    ax.autoscale_view()
    return float(heights.max())


def bootstrap_chart(readout: Readout) -> Chart | None:
    """The bootstrap distribution of the primary metric's mean delta, per treatment."""
    treatments = bootstrap_treatments(readout)
    if not treatments:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    primary = primary_metric(summary)
    comps = {
        c.treatment: c for c in summary.comparisons if c.segment is None and c.metric == primary
    }
    label = metric_label(summary, primary)

    def draw() -> Figure:
        panels = bootstrap_panels(readout)
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.3 * len(panels) + 0.6))
        axes = fig.subplots(len(panels), 1, squeeze=False)
        tops = [0.0]
        legend: dict[str, Any] = {}  # label -> handle, for one legend above the panels
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            tops.append(_bar_histogram(ax, panel.histogram, "resampled mean deltas"))
            _bootstrap_lines(ax, panel, comps.get(panel.treatment))
            ax.set_xlabel(f"mean delta of {plain(label)} (treatment − control)")
            ax.set_ylabel("resamples")
            ax.yaxis.set_major_locator(mpl_classes().MaxNLocator(integer=True))
            chart_title(
                ax,
                plain(
                    f"Bootstrap distribution of the {label} delta: "
                    f"{labels.get(panel.treatment, panel.treatment)} "
                    f"({panel.resamples:,} resamples)"
                ),
                fontsize=10,
            )
            for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
                legend.setdefault(text, handle)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
        figure_legend(fig, list(legend.values()), suptitle=False)
        place_grid(fig, len(panels), 1, count_labels(max(tops)), suptitle=False, legend_row=True)
        return fig

    return Chart(
        "bootstrap.png",
        f"Bootstrap distribution of the {label} delta",
        f"The resampled mean deltas of the primary metric ({label}) behind its bootstrap interval.",
        draw,
        weight=1.5 * len(treatments),
    )


def _bootstrap_lines(ax: Any, panel: BootstrapPanel, comp: ComparisonSummary | None) -> None:
    """The bootstrap interval's bounds, the observed delta and the line of no change."""
    if panel.interval is not None and comp is not None:
        for bound in panel.interval:
            ax.axvline(bound, color=BLUE, linestyle="--", linewidth=1.0)
        ax.plot([], [], color=BLUE, linestyle="--", label=f"BCa {fmt_nominal_level(comp)} CI")
    if panel.delta is not None:
        ax.axvline(panel.delta, color=BLACK, linewidth=1.2, label="observed delta")
    ax.axvline(0.0, color=VERMILLION, linewidth=1.0, linestyle=":", label="no change")
