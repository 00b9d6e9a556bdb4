"""The trend of a dated readout: each comparison's delta over the history store's dates.

A scheduled readout (``abrank run CONFIG --date D``) carries its experiment's rows of the
history store up to and including D (:attr:`abrank.readout.Readout.history`). With two or
more dates, the reports gain a Trend section: one chart of the overall deltas with their
intervals against date (a panel per metric, a row of panels per treatment, markers in the
verdict colours of the other charts, the readout's own date highlighted), for online
experiments a chart of the units per arm per date, and a table of the last
:data:`TABLE_DATES` dates. Every number drawn is a number of the history rows; nothing is
computed here but their order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError, DataError
from abrank.metrics.names import parse_metric
from abrank.readout import Readout
from abrank.readout.model import Summary
from abrank.render.blocks import (
    Block,
    Cell,
    ChartRef,
    Column,
    Heading,
    Paragraph,
    Section,
    Table,
    own,
)
from abrank.render.charts import (
    BLACK,
    DPI,
    GREY,
    VERDICT_COLOURS,
    WIDTH,
    Chart,
    arm_colour,
    chart_title,
    figure_legend,
    mpl_classes,
    place_grid,
    value_labels,
)
from abrank.render.headline import unit_plural
from abrank.render.text import (
    arm_labels,
    control_name,
    fmt_count,
    fmt_interval,
    fmt_signed,
    plain,
    treatment_names,
)
from abrank.render.typed import readout_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How many of the latest dates the trend table lists.
TABLE_DATES = 14
#: The history columns the trend section reads.
TREND_COLUMNS = ("date", "metric", "treatment", "segment", "delta", "ci_low", "ci_high", "verdict")
#: The further columns the units-per-arm chart reads.
UNIT_COLUMNS = ("unit", "primary", "n_control", "n_treatment")
#: The background of the readout's own date in the trend charts (a pale yellow).
CURRENT_SHADE = "#fff1b8"
VERDICTS = ("win", "loss", "inconclusive")


@dataclass(frozen=True)
class TrendPanel:
    """One panel of the trend chart: a metric x treatment's overall rows, oldest first.

    ``dates`` are ``YYYY-MM-DD`` texts; ``delta``, ``ci_low`` and ``ci_high`` the history's
    numbers at those dates (NaN when missing); ``verdicts`` each date's verdict.
    """

    metric: str
    treatment: str
    title: str
    dates: tuple[str, ...]
    delta: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    verdicts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The panel's series as JSON-safe builtins (NaN as None)."""

        def floats(values: np.ndarray) -> list[float | None]:
            return [float(v) if math.isfinite(v) else None for v in values]

        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "title": self.title,
            "dates": list(self.dates),
            "delta": floats(self.delta),
            "ci_low": floats(self.ci_low),
            "ci_high": floats(self.ci_high),
            "verdicts": list(self.verdicts),
        }


# --------------------------------------------------------------------------- the rows


def check_history_columns(history: pd.DataFrame, needed: Sequence[str], where: str) -> None:
    """Raise DataError naming ``where`` and the missing columns unless ``history`` has all
    of ``needed``."""
    missing = [c for c in needed if c not in history.columns]
    if missing:
        raise DataError(
            f"{where}: expected the history store's columns {', '.join(needed)}, "
            f"got no column {', '.join(repr(c) for c in missing)}"
        )


def parse_dates(values: pd.Series, where: str) -> list[date]:
    """The history's ``date`` texts as dates; a DataError names the first one that is not
    a ``YYYY-MM-DD`` date."""
    parsed = pd.to_datetime(values.astype("string"), format="%Y-%m-%d", errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        value = values.to_numpy(dtype=object)[np.flatnonzero(bad)[0]]
        raise DataError(f"{where}: date: expected a date as YYYY-MM-DD, got {value!r}")
    return [d.date() for d in parsed]


def overall_rows(history: pd.DataFrame, experiment: str | None = None) -> pd.DataFrame:
    """The overall comparisons' rows (``segment`` null), oldest date first; only
    ``experiment``'s when the frame holds several experiments and that one among them."""
    check_history_columns(history, TREND_COLUMNS, "history")
    frame = history
    if experiment is not None and "experiment" in frame.columns:
        mine = frame["experiment"] == experiment
        if mine.any():
            frame = frame[mine]
    frame = frame[frame["segment"].isna()]
    parse_dates(frame["date"], "history")
    return frame.sort_values("date", kind="stable")


def readout_date(readout: Readout) -> str | None:
    """The date of a dated readout (summary.json's ``schedule.date``), else None."""
    schedule = readout.summary.get("schedule")
    day = schedule.get("date") if isinstance(schedule, dict) else None
    return str(day) if day is not None else None


def readout_rows(readout: Readout) -> pd.DataFrame | None:
    """The readout's overall history rows up to and including its date (when the summary
    names it), or None when they span fewer than two dates."""
    if readout.history is None:
        return None
    experiment = (readout.summary.get("experiment") or {}).get("name")
    rows = overall_rows(readout.history, experiment)
    day = readout_date(readout)
    if day is not None:  # YYYY-MM-DD texts sort as the dates do
        rows = rows[rows["date"].astype(str) <= day]
    return rows if rows["date"].nunique() >= 2 else None


def metric_display(summary: Summary | None, metric: str) -> str:
    """A metric's display label: the summary's, else the metric registry's, else its name."""
    labels = (summary.metric_labels or {}) if summary is not None else {}
    if metric in labels:
        return str(labels[metric])
    try:
        return parse_metric(metric).label
    except ConfigError:  # a name the registry does not know: shown as it is
        return str(metric)


def _ordered(found: Sequence[str], preferred: Sequence[str]) -> list[str]:
    known = [x for x in preferred if x in found]
    return known + [x for x in dict.fromkeys(found) if x not in known]


def trend_panels(readout: Readout) -> list[TrendPanel]:
    """The trend chart's panels, rows per treatment (the summary's order), a panel per
    metric (the summary's order) within; empty with fewer than two dates."""
    rows = readout_rows(readout)
    if rows is None:
        return []
    summary = readout_summary(readout)
    several = rows["treatment"].nunique() > 1
    labels = arm_labels(summary)
    panels = []
    treatments = _ordered(list(rows["treatment"]), treatment_names(summary))
    metrics = _ordered(list(rows["metric"]), list(summary.metrics or ()))
    for treatment in treatments:
        for metric in metrics:
            part = rows[(rows["treatment"] == treatment) & (rows["metric"] == metric)]
            if part.empty:
                continue
            title = metric_display(summary, metric)
            if several:
                title += f" · {labels.get(treatment, treatment)}"
            panels.append(
                TrendPanel(
                    metric,
                    treatment,
                    title,
                    tuple(str(d) for d in part["date"]),
                    part["delta"].to_numpy(dtype=np.float64, na_value=np.nan),
                    part["ci_low"].to_numpy(dtype=np.float64, na_value=np.nan),
                    part["ci_high"].to_numpy(dtype=np.float64, na_value=np.nan),
                    tuple(str(v) if v in VERDICTS else "inconclusive" for v in part["verdict"]),
                )
            )
    return panels


def units_per_arm(readout: Readout) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """Online readouts: units per arm per date, from the primary metric's overall rows
    (the control's count from its first treatment's rows); empty offline or with fewer
    than two dates. Arm name -> (dates oldest first, counts)."""
    rows = readout_rows(readout)
    if rows is None or "unit" not in rows.columns or rows["unit"].isna().all():
        return {}
    check_history_columns(rows, UNIT_COLUMNS, "history")
    summary = readout_summary(readout)
    primary = rows[rows["primary"].fillna(False).astype(bool)]
    if primary.empty:  # a history without the flag: the summary's primary metric
        primary = rows[rows["metric"] == (summary.primary_metric or rows["metric"].iloc[0])]
    treatments = _ordered(list(primary["treatment"]), treatment_names(summary))
    control = control_name(summary) or "control"
    if "control" in primary.columns and primary["control"].notna().any():
        control = str(primary["control"].dropna().iloc[0])
    first = primary[primary["treatment"] == treatments[0]]
    series = {
        control: (
            tuple(str(d) for d in first["date"]),
            first["n_control"].to_numpy(dtype=np.float64, na_value=np.nan),
        )
    }
    for treatment in treatments:
        part = primary[primary["treatment"] == treatment]
        series[treatment] = (
            tuple(str(d) for d in part["date"]),
            part["n_treatment"].to_numpy(dtype=np.float64, na_value=np.nan),
        )
    return series


# --------------------------------------------------------------------------- charts


def _days(dates: Sequence[str]) -> np.ndarray:
    """Dates as day numbers (proleptic ordinals): the x axis of the trend charts."""
    return np.array([date.fromisoformat(d).toordinal() for d in dates], dtype=np.float64)


def date_ticks(days: Sequence[float], most: int) -> list[float]:
    """At most ``most`` of the dates drawn, evenly spaced, always ending with the latest."""
    days = sorted(set(float(d) for d in days))
    step = max(1, math.ceil(len(days) / max(most, 1)))
    return days[::-1][::step][::-1]


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


def trend_chart(readout: Readout) -> Chart | None:
    """The overall deltas with their intervals against date: a panel per metric, a row of
    panels per treatment; None with fewer than two dates."""
    panels = trend_panels(readout)
    if not panels:
        return None
    metrics = list(dict.fromkeys(p.metric for p in panels))
    treatments = list(dict.fromkeys(p.treatment for p in panels))
    ncols = 2 if len(metrics) in (2, 4) else min(3, len(metrics))
    per_treatment = math.ceil(len(metrics) / ncols)
    nrows = len(treatments) * per_treatment
    current = max(d for p in panels for d in p.dates)
    n_dates = len({d for p in panels for d in p.dates})

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 2.7 * nrows + 1.0))
        panel_px = (WIDTH * DPI - 120 * ncols) / ncols
        now = float(date.fromisoformat(current).toordinal())
        seen: set[str] = set()
        for panel in panels:
            row = treatments.index(panel.treatment) * per_treatment
            index = metrics.index(panel.metric)
            row += index // ncols
            ax = fig.add_subplot(nrows, ncols, row * ncols + index % ncols + 1)
            days = _days(panel.dates)
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
            chart_title(ax, plain(panel.title), fontsize=10)
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
    series = units_per_arm(readout)
    if not series:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    rows = readout_rows(readout)
    assert rows is not None  # units_per_arm found rows
    column = str(rows["unit"].dropna().iloc[0])
    units = unit_plural(column)
    current = max(d for dates, _ in series.values() for d in dates)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.8))
        ax = fig.add_subplot()
        now = float(date.fromisoformat(current).toordinal())
        every = []
        for arm, (dates, counts) in series.items():
            days = _days(dates)
            every += list(days)
            (line,) = ax.plot(
                days,
                counts,
                marker="o" if days.size <= 30 else None,
                markersize=3.5,
                linewidth=1.6,
                color=arm_colour(summary, arm),
                label=plain(labels.get(arm, arm)),
                zorder=2,
            )
            line.set_gid(f"units-{arm}")
        top = max(float(np.nanmax(c, initial=0.0)) for _, c in series.values())
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


# --------------------------------------------------------------------------- section


def trend_table(readout: Readout, last: int = TABLE_DATES) -> Table | None:
    """The overall rows of the ``last`` latest dates, newest first: date, (treatment,)
    metric, Δ, CI, verdict; None with fewer than two dates."""
    rows = readout_rows(readout)
    if rows is None:
        return None
    summary = readout_summary(readout)
    several = rows["treatment"].nunique() > 1
    labels = arm_labels(summary)
    dates = sorted(pd.unique(rows["date"]), reverse=True)[:last]
    treatments = _ordered(list(rows["treatment"]), treatment_names(summary))
    metrics = _ordered(list(rows["metric"]), list(summary.metrics or ()))
    shown = rows[rows["date"].isin(dates)]
    order = np.lexsort(
        (
            shown["metric"].map({m: i for i, m in enumerate(metrics)}).to_numpy(),
            shown["treatment"].map({t: i for i, t in enumerate(treatments)}).to_numpy(),
            -_days([str(d) for d in shown["date"]]),
        )
    )
    shown = shown.iloc[order]
    columns = [Column("date", "left", "text")]
    if several:
        columns.append(Column("treatment", "left", "text"))
    columns += [
        Column("metric", "left", "text"),
        Column("Δ"),
        Column("CI"),
        Column("verdict", "left", "verdict"),
    ]
    deltas = _floats(shown["delta"])
    lows, highs = _floats(shown["ci_low"]), _floats(shown["ci_high"])
    out = []
    for i, (day, treatment, metric, verdict) in enumerate(
        zip(shown["date"], shown["treatment"], shown["metric"], shown["verdict"], strict=True)
    ):
        verdict = str(verdict) if verdict in VERDICTS else "inconclusive"
        bounds = [lows[i], highs[i]]
        cells = [Cell(str(day), "date", str(day), True, "text")]
        if several:
            label = labels.get(treatment, treatment)
            cells.append(Cell(label, "treatment", treatment, True, "text"))
        cells += [
            Cell(metric_display(summary, metric), "metric", metric, True, "text"),
            Cell(fmt_signed(deltas[i]), "delta", deltas[i], True, own=True),
            Cell(fmt_interval(bounds), "ci", bounds, True, "wrap", own=True),
            Cell(verdict, "verdict", verdict, True, f"verdict {verdict}", own=True),
        ]
        out.append(tuple(cells))
    return Table(tuple(columns), tuple(out), "trend")


def _floats(values: pd.Series) -> list[float | None]:
    """A column's numbers as floats, None where missing or not finite (a cell's value)."""
    array = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return [float(v) if math.isfinite(v) else None for v in array]


def trend_section(readout: Readout, charts: Sequence[Chart]) -> Section | None:
    """The Trend section: what the history spans, its charts, the table of the latest
    dates; None with fewer than two dates (an undated readout has no such section)."""
    table = trend_table(readout)
    if table is None:
        return None
    rows = readout_rows(readout)
    assert rows is not None
    dates = sorted(pd.unique(rows["date"]))
    shown = min(len(dates), TABLE_DATES)
    text = (
        f"The overall comparisons at each of the {len(dates)} dates of the experiment's "
        f"history, {dates[0]} to {dates[-1]} (this readout's); each date's interval and "
        "verdict are those of its own readout."
    )
    blocks: list[Block] = [Paragraph((own(text),), role="note")]
    blocks += [ChartRef(c.name, c.title, c.caption) for c in charts if c.section == "trend"]
    blocks += [Heading(f"The last {shown} dates", "newest first"), table]
    return Section("trend", "Trend", tuple(blocks))
