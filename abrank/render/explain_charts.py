"""The charts of the "What moved" section: the waterfall of each explained metric's change
by what the documents did, and the distribution of RBO between the arms' lists. The numbers
are :func:`abrank.explain.what_moved.readout_what_moved`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.explain.what_moved import MetricSplit, readout_what_moved
from abrank.readout.core import Readout
from abrank.readout.typed import readout_summary
from abrank.render.chart_panels import chart_title, finish_one_panel, place_grid, value_labels
from abrank.render.chart_style import (
    BLUE,
    GREY,
    LOSS,
    WIDTH,
    WIN,
    Chart,
    arm_colour,
    mpl_classes,
)
from abrank.render.text import arm_label, metric_label, plain

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the most waterfall panels one chart holds
MAX_PANELS = 6

#: the moves a waterfall shows, and their short names under the bars
STEPS = {
    "relevant_promoted": "promoted",
    "relevant_demoted": "demoted",
    "relevant_entered": "entered",
    "relevant_dropped": "left",
    "unjudged_entered": "unjudged\nentered",
    "unchanged": "kept\nrank",
    "other": "not\nrelevant",
}

#: RBO histogram bins
RBO_EDGES = np.linspace(0.0, 1.0, 21)


def waterfall_chart(readout: Readout) -> Chart | None:
    """Each explained metric's mean change as steps, one per move, ending at the change."""
    if not readout_what_moved(readout):  # no explanation tables, or nothing to split
        return None
    summary = readout_summary(readout)
    splits: list[MetricSplit] = [
        split for moved in readout_what_moved(readout) for split in (moved.primary, *moved.losses)
    ][:MAX_PANELS]
    several = len({split.treatment for split in splits}) > 1
    ncols = min(2, len(splits))
    nrows = -(-len(splits) // ncols)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.9 * nrows + 0.4))
        values: list[float] = [0.0]
        for i, split in enumerate(splits):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            shown = [
                move
                for move in STEPS
                if split.parts.at[move, "change"] != 0
                or move.startswith("relevant")
                or move == "unjudged_entered"
            ]
            steps = split.parts.loc[shown, "change"].to_numpy(dtype=np.float64)
            ends = np.cumsum(steps)
            starts = ends - steps
            colours = [WIN if s > 0 else LOSS if s < 0 else GREY for s in steps]
            x = np.arange(len(shown) + 1)
            ax.bar(x[:-1], steps, bottom=starts, color=colours, width=0.7)
            ax.bar(x[-1], split.change, color=BLUE, width=0.7)
            for j in range(len(shown)):  # the connectors between steps
                ax.plot([j + 0.35, j + 0.65], [ends[j], ends[j]], color="#777777", linewidth=0.8)
            ax.axhline(0, color="#333333", linewidth=0.8)
            ax.set_xticks(x, [STEPS[m] for m in shown] + ["change"], fontsize=8)
            ax.tick_params(axis="x", labelrotation=35)
            for label in ax.get_xticklabels():
                label.set_horizontalalignment("right")
                label.set_rotation_mode("anchor")
            low = min(0.0, float(np.min(starts, initial=0)), float(np.min(ends, initial=0)))
            high = max(0.0, float(np.max(starts, initial=0)), float(np.max(ends, initial=0)))
            pad = 0.12 * ((high - low) or 1.0)
            ax.set_ylim(low - (pad if low < 0 else 0), high + (pad if high > 0 else 0))
            for j, step in enumerate([*steps, split.change]):
                if step == 0:
                    continue
                top = max(starts[j], ends[j]) if j < len(steps) else max(step, 0.0)
                bottom = min(starts[j], ends[j]) if j < len(steps) else min(step, 0.0)
                ax.annotate(
                    f"{step:+.3f}",
                    (j, top if step > 0 else bottom),
                    xytext=(0, 2 if step > 0 else -2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom" if step > 0 else "top",
                    fontsize=7,
                )
            title = metric_label(summary, split.metric)
            if several:
                title += f" · {arm_label(summary, split.treatment)}"
            chart_title(ax, plain(title), fontsize=10)
            ax.set_ylabel("part of the mean change")
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
            ax.grid(axis="y", color="#dddddd", linewidth=0.6)
            ax.set_axisbelow(True)
            values += [*starts, *ends, split.change]
        place_grid(fig, nrows, ncols, value_labels(values), suptitle=False)
        # room under each row for the slanted step names
        height = fig.get_figheight() * 100
        extra = 34 / height
        params = fig.subplotpars
        fig.subplots_adjust(
            bottom=params.bottom + extra, hspace=params.hspace + extra * nrows * 1.5
        )
        return fig

    return Chart(
        "what_moved.png",
        "What moved each metric",
        "The mean change per query split by what the documents did in the metric's top k: "
        "relevant documents promoted, demoted, entering and leaving, unjudged documents "
        "entering (0: they count as not relevant); the steps add up to the blue bar.",
        draw,
        weight=0.6 * len(splits),
        section="moved",
    )


def rbo_chart(readout: Readout) -> Chart | None:
    """The share of queries per RBO bin between each treatment's lists and the control's."""
    if not readout_what_moved(readout):  # no explanation tables, or nothing to split
        return None
    summary = readout_summary(readout)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.4))
        ax = fig.add_subplot()
        top = 0.0
        for moved in readout_what_moved(readout):
            values = moved.similarity.rbo[~np.isnan(moved.similarity.rbo)]
            counts, _ = np.histogram(values, bins=RBO_EDGES)
            shares = 100 * counts / max(len(values), 1)
            top = max(top, float(shares.max(initial=0)))
            ax.stairs(
                shares,
                RBO_EDGES,
                color=arm_colour(summary, moved.treatment),
                linewidth=1.6,
                label=plain(arm_label(summary, moved.treatment)),
            )
        ax.set_xlim(0, 1)
        ax.set_xlabel("RBO (p = 0.9) with the control's list: 0 nothing shared, 1 the same list")
        ax.set_ylabel("share of queries (%)")
        chart_title(ax, "How alike the arms' lists are, per query")
        finish_one_panel(fig, ax, top)
        return fig

    return Chart(
        "rbo.png",
        "How alike the arms' lists are",
        "Share of queries per rank-biased overlap (p = 0.9) between the treatment's list and "
        "the control's, over the explanation's depth.",
        draw,
        section="moved",
    )
