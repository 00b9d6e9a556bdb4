"""The charts of an interleaving readout: the share of impressions each comparison's
treatment won, tied and lost, and how the preference is spread over the units that the
statistics treat as independent. The shares and counts are
:mod:`abrank.readout.charts.interleaved`' data."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.readout.charts import outcomes, preference_distribution
from abrank.readout.core import Readout
from abrank.readout.typed import overall_comparisons, primary_metric, readout_summary
from abrank.render.chart_panels import (
    chart_title,
    figure_legend,
    finish_one_panel,
    place_grid,
    share_steps,
)
from abrank.render.chart_style import (
    LOSS,
    TIE,
    TIE_EDGE,
    WIDTH,
    WIN,
    Chart,
    arm_colour,
    mpl_classes,
)
from abrank.render.headline import unit_plural
from abrank.render.text import (
    arm_label,
    arm_labels,
    comparison_subject,
    metric_label,
    plain,
    several_treatments,
    unit_name,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the report section of the interleaving charts
SECTION = "preference"


def outcome_chart(readout: Readout) -> Chart | None:
    """Wins, ties and losses of every overall comparison, as shares of its impressions."""
    summary = readout_summary(readout)
    data = outcomes(summary)
    if data is None:
        return None
    comps = [c for c in overall_comparisons(summary) if c.design == "interleaved"]
    several = several_treatments(comps)
    subjects = [plain(comparison_subject(summary, c, several)) for c in comps]

    def draw() -> Figure:
        height = 1.7 + 0.5 * len(data.rows)
        fig = mpl_classes().Figure(figsize=(WIDTH, height))
        ax = fig.add_subplot()
        rows = np.arange(len(data.rows))[::-1]
        left = np.zeros(len(data.rows))
        parts = (("wins", WIN, "treatment won"), ("ties", TIE, "tie"), ("losses", LOSS, "lost"))
        for key, colour, label in parts:
            shares = np.array([getattr(row, key) for row in data.rows], dtype=float) * 100
            edge = TIE_EDGE if key == "ties" else colour
            ax.barh(
                rows, shares, left=left, color=colour, edgecolor=edge, linewidth=0.6, label=label
            )
            for row, start, share in zip(rows, left, shares, strict=True):
                if share >= 6:
                    ax.text(
                        start + share / 2, row, f"{share:.0f}%", ha="center", va="center",
                        fontsize=8, color="white" if key != "ties" else "black",
                    )  # fmt: skip
            left = left + shares
        ax.set_yticks(rows, subjects, fontsize=9)
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of impressions (%)")
        chart_title(ax, "Impressions the treatment won, tied and lost")
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
        figure_legend(fig, ax.get_legend_handles_labels()[0], suptitle=False)
        place_grid(fig, 1, 1, subjects, suptitle=False, legend_row=True)
        return fig

    return Chart(
        "outcomes.png",
        "Wins, ties and losses per impression",
        "Per impression, the treatment wins when its results got more of the credited clicks, "
        "loses when fewer and ties otherwise (most ties are impressions without a click); "
        "delta = (wins + ties / 2) / impressions − 1/2.",
        draw,
        section=SECTION,
    )


def preference_chart(readout: Readout) -> Chart | None:
    """Histogram of each unit's preference for the treatment (primary credit), per pair."""
    summary = readout_summary(readout)
    frame = readout.unit_values
    if summary.design != "interleaved" or frame is None or frame.empty:
        return None
    column = summary.unit or "unit"
    unit, units = unit_name(column), unit_plural(column)
    arms = arm_labels(summary)
    credit = plain(metric_label(summary, primary_metric(summary)))

    def draw() -> Figure:
        data = preference_distribution(readout)
        assert data is not None  # an interleaving readout with values per unit
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        top = 0.0
        for group in data.groups:
            colour = arm_colour(summary, group.arm) if group.arm in arms else WIN
            label = (
                f"{plain(arm_label(summary, group.arm))} "
                f"({group.units:,} {units}, mean {group.mean:+.3f})"
            )
            top = max(top, share_steps(ax, group.shares, data.edges, colour, label))
        ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_xlabel(f"preference for the treatment per {unit} (−0.5 = always lost, +0.5 = won)")
        ax.set_ylabel(f"share of {units} (%)")
        chart_title(ax, f"{credit} per {unit}")
        finish_one_panel(fig, ax, top)
        return fig

    return Chart(
        "preference_per_unit.png",
        f"Distribution of the preference per {unit}",
        f"Each {unit}'s mean over its impressions of 1 (won), 1/2 (tie) or 0 (lost), minus 1/2; "
        f"the statistics treat {units}, not impressions, as independent; a {unit} "
        "without a click, or whose clicks split evenly, sits at 0.",
        draw,
        section=SECTION,
    )
