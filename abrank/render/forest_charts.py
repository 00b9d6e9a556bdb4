"""The forest plots: each comparison's delta with its interval, coloured by verdict.

One chart of every overall comparison (metric x treatment), and one per metric over its
segment comparisons. The rows are :mod:`abrank.readout.charts.forests`' data; the axis
labels and captions name the intervals drawn, after any multiple-testing correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from abrank.readout.charts import Forest, overall_forest, segment_forests
from abrank.readout.model import ComparisonSummary, Summary
from abrank.readout.typed import (
    as_summary,
    control_name,
    overall_comparisons,
    segment_comparisons,
)
from abrank.render.chart_panels import chart_title, place_forest, style_x_grid
from abrank.render.chart_style import (
    BLACK,
    BLUE,
    GREY,
    VERDICT_COLOURS,
    WIDTH,
    Chart,
    mpl_classes,
)
from abrank.render.text import (
    arm_labels,
    correction_name,
    fmt_nominal_level,
    fmt_percent_level,
    is_number,
    metric_label,
    plain,
    slug,
    widened,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def interval_name(comps: Sequence[ComparisonSummary], noun: str = "CI") -> str:
    """What the intervals drawn for ``comps`` are: ``95% CI``, or once a multiple-testing
    correction widened them ``Holm-adjusted 95% CI (drawn at 98.8%–99.6%)``: the level the
    correction keeps for the family and the levels actually drawn, as the tables show them
    (``98.8% CI (Holm)``)."""
    nominal = fmt_nominal_level(comps[0]) if comps else "95%"
    wider = [c for c in comps if widened(c)]
    if not wider:
        return f"{nominal} {noun}"
    names = sorted({str(correction_name(c.correction)) for c in wider if c.correction})
    adjusted = f"{'/'.join(names)}-adjusted" if names else "multiplicity-adjusted"
    levels = sorted(
        {float(c.ci_level) for c in comps if c.ci_level is not None and is_number(c.ci_level)}
    )
    drawn = fmt_percent_level(levels[0])
    if len(levels) > 1:
        drawn += f"–{fmt_percent_level(levels[-1])}"
    return f"{adjusted} {nominal} {noun} (drawn at {drawn})"


def forest_axis_label(summary: Summary | dict[str, Any]) -> str:
    """The x axis label of the overall forest plot: what the value is (the mean per query,
    per impression clustered on the unit, or the interleaving preference) and, on a second
    line, which interval is drawn (:func:`interval_name`)."""
    summary = as_summary(summary)
    overall = overall_comparisons(summary)
    if summary.design == "interleaved":
        what = "Δ_AB, the treatment's preference"
    elif summary.unit is not None:
        diagnostics = summary.diagnostics
        rows = "impression" if diagnostics is not None and diagnostics.impressions else "query"
        what = f"delta, treatment − control (mean per {rows}, clustered on {summary.unit})"
    else:
        what = "delta, treatment − control (mean per query)"
    return plain(f"{what}\n{interval_name(overall)}")


def _row_height(n: int) -> float:
    return max(2.4, 0.42 * n + 1.3)


def _verdict_legend(ax: Any, verdicts: Sequence[str], extra: Sequence[Any] = ()) -> None:
    handles = [
        mpl_classes().Line2D([], [], marker="o", linewidth=2.2, color=VERDICT_COLOURS[v], label=v)
        for v in ("win", "loss", "inconclusive")
        if v in verdicts
    ]
    handles += list(extra)
    if handles:
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
        )


def _draw_forest(ax: Any, forest: Forest, labels: Sequence[str]) -> list[str]:
    """Draw one forest: a row per (label, row), the delta with its CI, zero line.

    Returns the verdicts drawn, for the legend.
    """
    positions = np.arange(len(forest.rows))[::-1]
    for y, row in zip(positions, forest.rows, strict=True):
        colour = VERDICT_COLOURS.get(row.verdict, GREY)
        if row.interval is not None:
            ax.hlines(y, row.interval[0], row.interval[1], color=colour, linewidth=2.2)
        if row.delta is not None:
            ax.plot([row.delta], [y], "o", color=colour, markersize=7, zorder=3)
    ax.axvline(0.0, color=BLACK, linewidth=0.8, linestyle="--")
    ax.set_yticks(positions, [plain(label) for label in labels], fontsize=9)
    ax.set_ylim(-0.7, len(forest.rows) - 0.3)
    style_x_grid(ax)
    return [row.verdict for row in forest.rows]


def forest_chart(summary: Summary | dict[str, Any]) -> Chart | None:
    """Forest plot of every metric x treatment: the delta and its CI, coloured by verdict."""
    summary = as_summary(summary)
    forest = overall_forest(summary)
    if forest is None:
        return None
    overall = overall_comparisons(summary)
    names = arm_labels(summary)
    several = forest.several_treatments
    labels = []
    for row in forest.rows:
        label = metric_label(summary, row.metric)
        if several:
            label += f" · {names.get(row.treatment, row.treatment)}"
        labels.append(label)
    corrected = any(widened(c) for c in overall)
    control = names.get(control_name(summary) or "", "control")
    interleaved = summary.design == "interleaved"
    subject = "preference (Δ_AB)" if interleaved else "metric's delta (treatment − control)"

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, _row_height(len(labels))))
        ax = fig.add_subplot()
        _verdict_legend(ax, _draw_forest(ax, forest, labels))
        ax.set_xlabel(forest_axis_label(summary))
        ax.set_ylabel("metric")
        chart_title(ax, plain(f"Deltas against {control}, with confidence intervals"))
        place_forest(fig, ax, labels)
        return fig

    return Chart(
        "forest.png",
        "Deltas with confidence intervals",
        f"Each {subject} with its {interval_name(overall, 'confidence interval')}, coloured by "
        "verdict; the dashed line marks no change."
        + (
            " The multiple-testing correction widens each interval by the same factor as its "
            "p-value, so an interval crosses the line exactly when the verdict is inconclusive."
            if corrected
            else ""
        ),
        draw,
    )


def segment_forest_charts(summary: Summary | dict[str, Any]) -> list[Chart]:
    """One forest plot per metric over the segment comparisons (segment x treatment)."""
    summary = as_summary(summary)
    forests = segment_forests(summary)
    segmented = segment_comparisons(summary)
    names = arm_labels(summary)
    several = len({row.treatment for forest in forests for row in forest.rows}) > 1
    charts = []
    files: set[str] = set()
    for forest in forests:
        metric = str(forest.metric)
        labels = []
        for row in forest.rows:
            label = str(row.segment)
            if several:
                label += f" · {names.get(row.treatment, row.treatment)}"
            labels.append(label)
        label = metric_label(summary, metric)
        compared = [c for c in segmented if c.metric == metric]
        name = f"segments-{slug(metric)}"
        while name in files:
            name += "-"
        files.add(name)
        draw = partial(_draw_segment_forest, forest, labels, label, interval_name(compared))
        charts.append(
            Chart(
                f"{name}.png",
                f"{label} by segment",
                f"{label}: the delta and its {interval_name(compared, 'confidence interval')} "
                "within each segment, coloured by verdict (after the segment family's "
                "correction).",
                draw,
                section="segments",
            )
        )
    return charts


def _draw_segment_forest(forest: Forest, labels: list[str], label: str, interval: str) -> Figure:
    fig = mpl_classes().Figure(figsize=(WIDTH, _row_height(len(labels))))
    ax = fig.add_subplot()
    verdicts = _draw_forest(ax, forest, labels)
    extra = []
    if forest.overall is not None:
        ax.axvline(forest.overall, color=BLUE, linewidth=0.9, linestyle=":")
        extra.append(
            mpl_classes().Line2D(
                [], [], color=BLUE, linewidth=0.9, linestyle=":", label="all queries"
            )
        )
    _verdict_legend(ax, verdicts, extra)
    ax.set_xlabel(f"delta of {plain(label)}, treatment − control\n{interval}")
    ax.set_ylabel("segment")
    chart_title(ax, plain(f"{label} by segment"))
    place_forest(fig, ax, labels)
    return fig
