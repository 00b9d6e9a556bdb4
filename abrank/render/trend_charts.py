"""The trend charts of a dated readout: each comparison's delta over the history's dates.

With two or more dates in its history (:mod:`abrank.readout.charts.trends`), a dated
readout gains a chart of the overall deltas with their intervals against date (a panel per
metric, a row of panels per treatment, markers in the verdict colours of the other charts,
the readout's own date highlighted) and, for online experiments, a chart of the units per
arm per date. Every number drawn is a number of the history rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from abrank.readout.charts import TrendPanel, trend_panels, units_per_arm
from abrank.readout.charts.trends import VERDICTS, day_numbers
from abrank.readout.core import Readout
from abrank.readout.model import Summary
from abrank.readout.typed import readout_summary
from abrank.render.chart_panels import chart_title, figure_legend, place_grid, value_labels
from abrank.render.chart_style import (
    BLACK,
    DPI,
    GREY,
    VERDICT_COLOURS,
    WIDTH,
    Chart,
    arm_colour,
    mpl_classes,
)
from abrank.render.headline import unit_plural
from abrank.render.text import arm_labels, fmt_count, metric_display, plain

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The background of the readout's own date in the trend charts (a pale yellow).
CURRENT_SHADE = "#fff1b8"


def date_ticks(days: Iterable[float], most: int) -> list[float]:
    """At most ``most`` of the dates drawn, evenly spaced, always ending with the latest."""
    distinct = sorted(set(float(d) for d in days))
    step = max(1, math.ceil(len(distinct) / max(most, 1)))
    return distinct[::-1][::step][::-1]


def _date_label(day: float) -> str:
    shown = date.fromordinal(int(day))
    return f"{shown:%b} {shown.day}"


def _date_axis(ax: Any, days: np.ndarray, panel_px: float) -> None:
    """Ticks on some of the dates ("Nov 3"), as many as fit the panel's width; the year(s)
    in the axis label; half a day (or 3% of the span) of room at both ends."""
    ticks = date_ticks(days, max(2, int(panel_px // 70)))
    ax.set_xticks(ticks, [_date_label(t) for t in ticks])
    ax.minorticks_off()
    low, high = float(days.min()), float(days.max())
    pad = max(0.5, 0.03 * (high - low))
    ax.set_xlim(low - pad, high + pad)
    years = sorted({date.fromordinal(int(d)).year for d in days})
    ax.set_xlabel(f"date ({years[0]}" + (f"–{years[-1]})" if len(years) > 1 else ")"))


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _shade_current(ax: Any, now: float, days: np.ndarray) -> None:
    """A pale band behind this readout's date, narrow beside two dates, visible among 90."""
    half = max(0.2, 0.006 * float(days.max() - days.min()))
    ax.axvspan(now - half, now + half, color=CURRENT_SHADE, zorder=0, gid="current")


def _current_handle() -> Any:
    return mpl_classes().Patch(color=CURRENT_SHADE, label="this readout's date")


def panel_title(summary: Summary, panel: TrendPanel, several: bool) -> str:
    """A trend panel's title: the metric's label, and the treatment's when there are
    several treatments."""
    title = metric_display(summary, panel.metric)
    if several:
        title += f" · {arm_labels(summary).get(panel.treatment, panel.treatment)}"
    return title


def trend_chart(readout: Readout) -> Chart | None:
    """The overall deltas with their intervals against date: a panel per metric, a row of
    panels per treatment; None with fewer than two dates."""
    panels = trend_panels(readout)
    if not panels:
        return None
    summary = readout_summary(readout)
    metrics = list(dict.fromkeys(p.metric for p in panels))
    treatments = list(dict.fromkeys(p.treatment for p in panels))
    ncols = 2 if len(metrics) in (2, 4) else min(3, len(metrics))
    per_treatment = math.ceil(len(metrics) / ncols)
    nrows = len(treatments) * per_treatment
    titles = [panel_title(summary, p, len(treatments) > 1) for p in panels]
    current = max(d for p in panels for d in p.dates)
    n_dates = len({d for p in panels for d in p.dates})

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 2.7 * nrows + 1.0))
        panel_px = (WIDTH * DPI - 120 * ncols) / ncols
        now = float(date.fromisoformat(current).toordinal())
        seen: set[str] = set()
        for panel, title in zip(panels, titles, strict=True):
            row = treatments.index(panel.treatment) * per_treatment
            index = metrics.index(panel.metric)
            row += index // ncols
            ax = fig.add_subplot(nrows, ncols, row * ncols + index % ncols + 1)
            days = day_numbers(panel.dates)
            colours = [VERDICT_COLOURS.get(v, GREY) for v in panel.verdicts]
            seen.update(panel.verdicts)
            _shade_current(ax, now, days)
            ax.axhline(0.0, color=BLACK, linewidth=0.8, linestyle="--", zorder=1)
            ax.plot(days, panel.delta, color="#bbbbbb", linewidth=0.9, zorder=1.5)
            ax.vlines(
                days, panel.ci_low, panel.ci_high, colors=colours, linewidth=1.8, gid="ci", zorder=2
            )
            size = 28 if days.size <= 30 else 14
            edges = [
                BLACK if d == current else c for d, c in zip(panel.dates, colours, strict=True)
            ]
            ax.scatter(
                days,
                panel.delta,
                s=[size * 2.2 if d == current else size for d in panel.dates],
                c=colours,
                edgecolors=edges,
                linewidths=1.0,
                zorder=3,
                gid="delta",
            )
            values = np.concatenate([panel.ci_low, panel.ci_high, panel.delta, [0.0]])
            finite = values[np.isfinite(values)]
            low, high = float(finite.min()), float(finite.max())
            pad = 0.08 * (high - low or abs(high) or 1.0)
            ax.set_ylim(low - pad, high + pad)
            _date_axis(ax, days, panel_px)
            ax.set_ylabel("Δ, treatment − control")
            chart_title(ax, plain(title), fontsize=10)
            _style(ax)
        handles = [
            mpl_classes().Line2D(
                [], [], marker="o", linewidth=1.8, color=VERDICT_COLOURS[v], label=v
            )
            for v in VERDICTS
            if v in seen
        ]
        handles.append(_current_handle())
        fig.suptitle("Deltas over time, with confidence intervals", fontsize=12)
        figure_legend(fig, handles, suptitle=True)
        everything = [v for p in panels for v in (*p.ci_low, *p.ci_high, 0.0)]
        place_grid(fig, nrows, ncols, value_labels(everything), suptitle=True, legend_row=True)
        return fig

    return Chart(
        "trend.png",
        "Deltas over time",
        f"Each overall delta (treatment − control) with its confidence interval at each of "
        f"the history's {n_dates} dates, coloured by that date's verdict; the dashed line "
        f"marks no change and the shaded date ({current}) is this readout's.",
        draw,
        weight=0.6 * len(panels),
        section="trend",
    )


def units_chart(readout: Readout) -> Chart | None:
    """Online readouts: the units in each arm at each date, one line per arm; None offline
    or with fewer than two dates."""
    data = units_per_arm(readout)
    if data is None:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    units = unit_plural(data.unit)
    current = max(d for series in data.arms for d in series.dates)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.8))
        ax = fig.add_subplot()
        now = float(date.fromisoformat(current).toordinal())
        every: list[float] = []
        for series in data.arms:
            arm = series.arm
            days = day_numbers(series.dates)
            every += list(days)
            (line,) = ax.plot(
                days,
                np.asarray(series.counts),
                marker="o" if days.size <= 30 else None,
                markersize=3.5,
                linewidth=1.6,
                color=arm_colour(summary, arm),
                label=plain(labels.get(arm, arm)),
                zorder=2,
            )
            line.set_gid(f"units-{arm}")
        top = max(float(np.nanmax(np.asarray(s.counts), initial=0.0)) for s in data.arms)
        ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)
        ax.yaxis.set_major_locator(mpl_classes().MaxNLocator(nbins=5, integer=True))
        _shade_current(ax, now, np.array(every))
        _date_axis(ax, np.array(every), WIDTH * DPI - 120)
        ax.set_ylabel(f"{units} per arm")
        chart_title(ax, f"{units.capitalize()} per arm per date")
        handles, names = ax.get_legend_handles_labels()
        ax.legend(
            [*handles, _current_handle()],
            [*names, "this readout's date"],
            fontsize=8,
            frameon=False,
        )
        _style(ax)
        place_grid(fig, 1, 1, [fmt_count(top * 1.08)], suptitle=False)
        return fig

    return Chart(
        "trend_units.png",
        f"{units.capitalize()} per arm over time",
        f"How many {units} each arm counted at each date (those of the primary metric's "
        "comparison); the arms should grow in step with the planned split.",
        draw,
        section="trend",
    )
