"""Charts of a readout, drawn with matplotlib's object API on the Agg canvas.

Every chart only draws numbers the readout already holds: deltas and intervals from
the summary's ``comparisons``, per-query values from ``per_query``, positions of the first
relevant document from ``first_relevant``, metric@k means from ``curves`` and bootstrap
draws from ``resampled_deltas``. Figures are built with :class:`matplotlib.figure.Figure`
(no pyplot, so no global figure registry to leak into and nothing to close) and saved as
PNG without a timestamp, so the same readout gives the same bytes.

Colours come from the Okabe-Ito palette, which stays distinguishable under the common
forms of colour blindness; wins, ties and losses keep one colour each across charts.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, partial
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.readout import Readout
from abrank.readout.model import ComparisonSummary, Summary
from abrank.render.text import (
    arm_labels,
    control_name,
    correction_name,
    finite_interval,
    fmt_nominal_level,
    fmt_percent_level,
    is_number,
    metric_label,
    overall_comparisons,
    plain,
    segment_comparisons,
    several_treatments,
    slug,
    treatment_names,
    widened,
)
from abrank.render.typed import as_summary, readout_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito colours.
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
PURPLE = "#CC79A7"
SKY = "#56B4E9"
VERMILLION = "#D55E00"
YELLOW = "#F0E442"
GREY = "#999999"
BLACK = "#000000"

ARM_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, YELLOW)
VERDICT_COLOURS = {"win": GREEN, "loss": VERMILLION, "inconclusive": GREY}
WIN, TIE, LOSS = GREEN, GREY, VERMILLION
TIE_EDGE = "#555555"  # outline of the tie bar

# Buckets of the first relevant document's rank: 1..10 one by one, then coarser.
RANK_BUCKETS: tuple[tuple[str, float, float], ...] = (
    *((str(r), r, r) for r in range(1, 11)),
    ("11–20", 11, 20),
    ("21–100", 21, 100),
    (">100", 101, math.inf),
)

# The report sections that show charts: the overall results, where relevant documents
# land (offline) or where clicks land and how units spread (online), the preference per
# impression and per unit (interleaving), the segment breakdowns.
# Dated readouts add the trend over the history's dates.
SECTIONS = ("results", "trend", "positions", "clicks", "preference", "segments")

DPI = 100
LOG_K = 100  # metric@k curves deeper than this get a log x axis
WIDTH = 9.0  # inches: 900 px, which fits a laptop screen and a printed page


@dataclass(frozen=True)
class Chart:
    """One chart of a readout: file name under ``charts/``, title (alt text), caption.

    The figure is drawn only when :attr:`png` is first read, so the Markdown report can
    link charts without paying for drawing them; the bytes are then kept.
    ``weight`` is the chart's drawing cost relative to a one-panel chart, for sharing
    charts among worker processes (:func:`abrank.workers.render_charts`). ``section``
    names the report section that shows it (one of :data:`SECTIONS`), so the reports place
    charts without knowing their file names.
    """

    name: str
    title: str
    caption: str
    draw: Callable[[], Figure] = field(repr=False, compare=False)
    weight: float = field(default=1.0, compare=False)
    section: str = "results"

    @cached_property
    def png(self) -> bytes:
        """The chart as PNG bytes (drawn on first use)."""
        return _png(self.draw())

    def to_dict(self) -> dict[str, Any]:
        """The chart's description (without the image), as JSON-safe builtins."""
        return {"name": self.name, "title": self.title, "caption": self.caption}


def plan_charts(readout: Readout) -> list[Chart]:
    """Every chart the readout has data for, in the order the reports show them.

    Charts whose data is absent (no segments, no curves, no bootstrap draws, ...) are
    left out rather than drawn empty. Nothing is drawn until a chart's ``png`` is read.
    """
    from abrank.render.interleaved import outcome_chart, preference_chart
    from abrank.render.online_charts import ctr_by_rank_chart, unit_distribution_chart
    from abrank.render.trends import trend_chart, units_chart

    summary = readout_summary(readout)
    charts: list[Chart | None] = [
        forest_chart(summary),
        delta_distribution_chart(readout),
        first_relevant_chart(readout),
        curves_chart(readout),
        ctr_by_rank_chart(readout),
        unit_distribution_chart(readout),
        outcome_chart(readout),
        preference_chart(readout),
        *segment_forest_charts(summary),
        bootstrap_chart(readout),
        trend_chart(readout),
        units_chart(readout),
    ]
    return [chart for chart in charts if chart is not None]


# --------------------------------------------------------------------------- helpers


@cache
def mpl_classes() -> SimpleNamespace:
    """matplotlib's classes, imported on the first drawing (0.3 s or more), so that
    planning charts and importing this module or :mod:`abrank.render` cost nothing."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator
    from PIL import Image

    return SimpleNamespace(
        FigureCanvasAgg=FigureCanvasAgg,
        RendererAgg=RendererAgg,
        Figure=Figure,
        FontProperties=FontProperties,
        Line2D=Line2D,
        Patch=Patch,
        MaxNLocator=MaxNLocator,
        Image=Image,
    )


def arm_colour(summary: Summary | dict[str, Any], arm: str) -> str:
    """A stable colour per arm: the control first, then the treatments in order."""
    order = list(arm_labels(summary))
    index = order.index(arm) if arm in order else len(order)
    return ARM_COLOURS[index % len(ARM_COLOURS)]


def _interval(comp: ComparisonSummary) -> tuple[float, float] | None:
    return finite_interval(comp.ci)


def _png(fig: Figure) -> bytes:
    """The figure drawn once on the Agg canvas, as an RGB PNG without metadata.

    Figures are laid out by :func:`_place` beforehand, so there is no layout engine to
    run (matplotlib's constrained and tight layouts each cost a whole extra draw), and
    the opaque white canvas loses nothing without its alpha channel.
    """
    canvas = mpl_classes().FigureCanvasAgg(fig)
    canvas.draw()
    size = canvas.get_width_height()
    image = mpl_classes().Image.frombuffer("RGBA", size, canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="png", compress_level=1)  # 2x faster, ~5% larger
    return buffer.getvalue()


def warm_up() -> None:
    """Import matplotlib and load its fonts now, so that the first chart is not slower."""
    _text_width("0", 10)


@cache
def _renderer() -> Any:
    return mpl_classes().RendererAgg(1, 1, DPI)


def _text_width(text: str, size: float) -> float:
    """Width in pixels of one line of text in the default font at ``size`` points."""
    if not text:
        return 0.0
    width, _, _ = _renderer().get_text_width_height_descent(
        text, mpl_classes().FontProperties(size=size), ismath=False
    )
    return float(width)


def _points(value: float) -> float:
    return value * DPI / 72.0


# Pixels around an axes for the furniture matplotlib's layouts would measure: tick
# labels (10 pt), tick marks and pads, axis labels, titles, and a rim of 8 px.
_RIM = 8.0
_XAXIS = _points(10) * 1.4 + _points(3.5 + 3.5)  # tick label line, tick mark and pad
_AXIS_LABEL = _points(10) * 1.4 + _points(4)  # axis label line and its pad
_TITLE = {size: _points(size) * 1.4 + _points(6) for size in (10, 12)}  # line and pad


def _y_furniture(tick_labels: Sequence[str], size: float = 10) -> float:
    """Pixels left of an axes: the widest y tick label, tick and pad, the y label."""
    widest = max((_text_width(label, size) for label in tick_labels), default=0.0)
    return widest + _points(3.5 + 3.5) + _AXIS_LABEL


def _legend_width(labels: Sequence[str], size: float = 8) -> float:
    """Pixels taken by a frameless legend of these labels (with handles and pads)."""
    em = _points(size)
    widest = max((_text_width(label, size) for label in labels), default=0.0)
    return widest + em * (2 * 0.4 + 2.0 + 0.8 + 0.5)


def _place(
    fig: Figure,
    *,
    left: float,
    right: float,
    top: float,
    bottom: float,
    wspace: float = 0.0,
    hspace: float = 0.0,
    nrows: int = 1,
    ncols: int = 1,
) -> None:
    """Set the subplot grid's margins and gaps, given in pixels."""
    width, height = fig.get_size_inches() * DPI
    left, right = left + _RIM, right + _RIM
    top, bottom = top + _RIM, bottom + _RIM
    axes_width = (width - left - right - (ncols - 1) * wspace) / ncols
    axes_height = (height - top - bottom - (nrows - 1) * hspace) / nrows
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        wspace=wspace / max(axes_width, 1.0),
        hspace=hspace / max(axes_height, 1.0),
    )


_LEGEND_ROW = _points(8) * 1.6 + _points(4)  # one row of 8 pt legend entries and a pad


def figure_legend(fig: Figure, handles: Sequence[Any], suptitle: bool) -> None:
    """One legend for every panel, in a row of its own under the figure's title: outside
    the axes, so it never hides a curve or a bar."""
    height = fig.get_figheight() * DPI
    below = _RIM + (0.02 * height + _TITLE[12] if suptitle else 0.0)
    fig.legend(
        handles=list(handles),
        loc="upper center",
        bbox_to_anchor=(0.5, 1 - below / height),
        ncol=max(1, len(handles)),
        fontsize=8,
        frameon=False,
        borderaxespad=0.0,
    )


def _count_labels(top: float) -> list[str]:
    """The y tick labels a count axis up to ``top`` may get (for its width)."""
    return [f"{int(top):d}", f"{int(top * 1.35):d}"]


def value_labels(values: Sequence[float]) -> list[str]:
    """The y tick labels an axis over these values may get (for its width)."""
    finite = [float(v) for v in values if is_number(v)]
    if not finite:
        return ["0.0"]
    low, high = min(finite), max(finite)
    span = high - low or abs(high) or 1.0
    digits = max(0, 2 - math.floor(math.log10(span)))
    return [f"{v:.{digits}f}" for v in (low, high)]


def chart_title(ax: Any, text: str, **options: Any) -> None:
    """``ax.set_title`` at the axes' top: where matplotlib puts a title when no tick labels
    are above the axes, without its search for them on every draw (~20 ms per axes)."""
    ax.set_title(text, y=1.0, **options)


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


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


def _forest(ax: Any, rows: list[tuple[str, ComparisonSummary]]) -> list[str]:
    """Draw one forest: a row per (label, comparison), the delta with its CI, zero line.

    Returns the verdicts drawn, for the legend.
    """
    positions = np.arange(len(rows))[::-1]
    verdicts = []
    for y, (_, comp) in zip(positions, rows, strict=True):
        verdict = str(comp.verdict if comp.verdict is not None else "inconclusive")
        verdicts.append(verdict)
        colour = VERDICT_COLOURS.get(verdict, GREY)
        interval = _interval(comp)
        if interval is not None:
            ax.hlines(y, interval[0], interval[1], color=colour, linewidth=2.2)
        if is_number(comp.delta):
            ax.plot([comp.delta], [y], "o", color=colour, markersize=7, zorder=3)
    ax.axvline(0.0, color=BLACK, linewidth=0.8, linestyle="--")
    ax.set_yticks(positions, [plain(label) for label, _ in rows], fontsize=9)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    _style(ax)
    return verdicts


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
    levels = sorted({float(c.ci_level) for c in comps if is_number(c.ci_level)})
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


def _place_forest(fig: Figure, ax: Any, rows: list[tuple[str, ComparisonSummary]]) -> None:
    """Margins of a forest plot: its row labels on the left, the legend on the right, and
    room on the right for a title wider than the axes (it is centred over them)."""
    width = fig.get_figwidth() * DPI
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()] if legend is not None else []
    left = _y_furniture([plain(label) for label, _ in rows], size=9)
    right = _legend_width(labels) + 0.01 * width if labels else _points(10)
    title = _text_width(ax.get_title(), 12)
    overhang = title - (width - left - 2 * _RIM)  # the right margin that centres it fully
    right = max(right, min(overhang, 0.3 * width))
    more_lines = ax.get_xlabel().count("\n")  # a second line names the interval drawn
    bottom = _XAXIS + _AXIS_LABEL + more_lines * _points(10) * 1.2
    _place(fig, left=left, right=right, top=_TITLE[12], bottom=bottom)


# --------------------------------------------------------------------------- charts


def forest_chart(summary: Summary | dict[str, Any]) -> Chart | None:
    """Forest plot of every metric x treatment: the delta and its CI, coloured by verdict."""
    summary = as_summary(summary)
    overall = overall_comparisons(summary)
    if not overall:
        return None
    labels = arm_labels(summary)
    several = several_treatments(overall)
    rows = []
    for comp in overall:
        label = metric_label(summary, comp.metric)
        if several:
            label += f" · {labels.get(comp.treatment, comp.treatment)}"
        rows.append((label, comp))
    corrected = any(widened(c) for c in overall)
    control = labels.get(control_name(summary) or "", "control")
    interleaved = summary.design == "interleaved"
    subject = "preference (Δ_AB)" if interleaved else "metric's delta (treatment − control)"

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, _row_height(len(rows))))
        ax = fig.add_subplot()
        _verdict_legend(ax, _forest(ax, rows))
        ax.set_xlabel(forest_axis_label(summary))
        ax.set_ylabel("metric")
        chart_title(ax, plain(f"Deltas against {control}, with confidence intervals"))
        _place_forest(fig, ax, rows)
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


def delta_distribution_chart(readout: Readout) -> Chart | None:
    """Per-query delta histograms, one panel per metric x treatment, split win/tie/loss.

    For the independent design there are no per-query deltas; the panels then show each
    arm's per-query values instead.
    """
    summary = readout_summary(readout)
    per_query = readout.per_query
    overall = overall_comparisons(summary)
    control = control_name(summary)
    if not overall or control is None or per_query is None or per_query.empty:
        return None
    if summary.unit is not None:  # online: the per-unit distribution chart shows the spread
        return None
    overall = [c for c in overall if c.metric in per_query.columns]
    if not overall:
        return None
    paired = summary.design == "paired"
    labels = arm_labels(summary)
    metrics = list(dict.fromkeys(c.metric for c in overall))
    treatments = list(dict.fromkeys(c.treatment for c in overall))
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
        fig = mpl_classes().Figure(figsize=(WIDTH, 2.9 * nrows + 0.6))
        tops = [0.0]
        for comp in overall:
            t_index = treatments.index(comp.treatment)
            m_index = metrics.index(comp.metric)
            row = t_index * math.ceil(len(metrics) / ncols) + m_index // ncols
            ax = fig.add_subplot(nrows, ncols, row * ncols + m_index % ncols + 1)
            name = metric_label(summary, comp.metric)
            treatment_label = labels.get(comp.treatment, comp.treatment)
            if paired:
                deltas = paired_deltas(per_query, comp.metric, control, comp.treatment)
                tops.append(_delta_histogram(ax, deltas, comp))
                ax.set_xlabel(f"per-query delta of {plain(name)}")
                ax.set_ylabel("queries")
                chart_title(ax, plain(f"{name}: {treatment_label}"), fontsize=10)
            else:
                for arm in (control, comp.treatment):
                    values = per_query.loc[per_query["arm"] == arm, comp.metric]
                    values = values.to_numpy(float)
                    values = values[np.isfinite(values)]
                    heights = ax.hist(
                        values,
                        bins=30,
                        histtype="step",
                        linewidth=1.6,
                        color=arm_colour(summary, arm),
                        label=plain(labels.get(arm, arm)),
                    )[0]
                    tops.append(float(np.max(heights, initial=0)))
                ax.set_xlabel(f"per-query {plain(name)}")
                ax.set_ylabel("queries")
                versus = labels.get(control, control)
                chart_title(ax, plain(f"{name}: {treatment_label} vs {versus}"), fontsize=10)
                ax.legend(fontsize=7, frameon=False)
            _style(ax)
        fig.suptitle(title, fontsize=12)
        place_grid(fig, nrows, ncols, _count_labels(max(tops)), suptitle=True)
        return fig

    return Chart("deltas.png", title, caption, draw, weight=float(len(overall)))


def place_grid(
    fig: Figure,
    nrows: int,
    ncols: int,
    y_labels: Sequence[str],
    *,
    suptitle: bool,
    legend_row: bool = False,
) -> None:
    """Margins and gaps of a grid of panels with 10 pt titles, axis labels and ticks.

    A panel title wider than its panel overhangs it evenly on both sides; the margins
    and the gaps between columns widen to keep every title whole and apart, as long as
    the panels keep 60% of their width (a longer title then overlaps, as it would in
    matplotlib's tight layout). ``legend_row`` keeps a row under the figure's title for a
    legend shared by the panels (:func:`figure_legend`).
    """
    y_side = _y_furniture(y_labels)
    x_side = _XAXIS + _AXIS_LABEL
    top = _TITLE[10] + (0.02 * fig.get_figheight() * DPI + _TITLE[12] if suptitle else 0.0)
    top += _LEGEND_ROW if legend_row else 0.0
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    widest = max((_text_width(t, 10) for t in titles), default=0.0)
    tick = _points(10)  # the last x tick label overhangs the axes by half its width
    width = fig.get_figwidth() * DPI

    def layout(overhang: float) -> tuple[float, float, float, float]:
        left, right = max(y_side, overhang), max(tick, overhang)
        gap = max(y_side, 2 * overhang) + 2 * _RIM
        panel = (width - left - right - 2 * _RIM - (ncols - 1) * gap) / ncols
        return left, right, gap, panel

    def smallest(ok: Callable[[float], bool]) -> float:
        """The smallest overhang in [0, widest / 2] passing a monotone test (bisection)."""
        low, high = 0.0, widest / 2
        if ok(low) or not ok(high):
            return low if ok(low) else high
        for _ in range(40):
            middle = (low + high) / 2
            low, high = (low, middle) if ok(middle) else (middle, high)
        return high

    natural = layout(0.0)[3]
    fits = smallest(lambda o: 2 * o + layout(o)[3] >= widest)  # the title covered
    floor = smallest(lambda o: layout(o)[3] < 0.6 * natural)  # panels at 60%
    left, right, gap, _ = layout(min(fits, floor))
    _place(
        fig,
        left=left,
        right=right,
        top=top,
        bottom=x_side,
        wspace=gap,
        hspace=x_side + _TITLE[10] + 2 * _RIM,
        nrows=nrows,
        ncols=ncols,
    )


def _delta_histogram(ax: Any, deltas: np.ndarray, comp: ComparisonSummary) -> float:
    """Stacked histogram of losses, ties and wins; a tie bar that would dwarf the rest is
    cut at the axis top and labelled with its count, so the wins and losses stay legible.

    Drawn as bars from the bins' counts, one bar per non-empty bin and part (what
    ``hist(stacked=True)`` shows, without its empty bars). Returns the tallest bar shown.
    """
    if deltas.size == 0:
        ax.text(0.5, 0.5, "no paired queries", ha="center", va="center", transform=ax.transAxes)
        return 0.0
    span = float(np.max(np.abs(deltas))) or 1.0
    edges = np.linspace(-span, span, 42)  # 41 bins: 0 sits in the middle one ...
    # ... cut down to a bin for ties; when no query moved, the tie bar alone fills a fifth
    # of the axis, so that a panel of ties only does not look empty
    tie = span / 82 if (deltas != 0).any() else span / 10
    edges = np.union1d(edges[np.abs(edges) >= tie], [-tie, tie])
    parts = ((deltas < 0, LOSS, "losses"), (deltas == 0, TIE, "ties"), (deltas > 0, WIN, "wins"))
    counts = {"losses": comp.losses, "ties": comp.ties, "wins": comp.wins}
    lefts, widths = edges[:-1], np.diff(edges)
    bottom = np.zeros(lefts.size)
    handles = []
    for mask, colour, key in parts:
        heights = np.histogram(deltas[mask], bins=edges)[0].astype(float)
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
        known = is_number(count) and float(count).is_integer()
        handles.append(
            mpl_classes().Patch(color=colour, label=f"{key} ({int(count):,})" if known else key)
        )
    ax.update_datalim([(-span, 0.0), (span, 0.0)])  # the full range of the bins, as hist's
    ax.autoscale_view()
    ax.axvline(0.0, color=BLACK, linewidth=0.7, linestyle="--")
    moved = np.histogram(deltas[deltas != 0], bins=edges)[0].max(initial=0)
    ties = int((deltas == 0).sum())
    top = float(bottom.max(initial=0))
    if moved and ties > 1.5 * moved:
        top = moved * 1.35
        ax.set_ylim(0, top)
        ax.text(
            0.0, top * 0.97, " ties ↑ (bar cut)", ha="left", va="top", fontsize=7, color="#555555"
        )
    ax.legend(handles=handles, fontsize=7, frameon=False)
    return top


def arms_of(frame: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """The arms of a chart's ``arm`` column: those of the summary first, in its order,
    then any other."""
    arms = [a for a in labels if (frame["arm"] == a).any()]
    return arms + [a for a in pd.unique(frame["arm"]) if a not in arms]


def grouped_bars(
    ax: Any, summary: Summary, labels: dict[str, str], shares: dict[str, np.ndarray]
) -> float:
    """Each arm's values (percent) as bars side by side at every x position 0, 1, ...,
    coloured and labelled by arm; returns the tallest bar."""
    width = 0.8 / max(len(shares), 1)
    top = 0.0
    for i, (arm, values) in enumerate(shares.items()):
        top = max(top, float(values.max(initial=0)))
        ax.bar(
            np.arange(values.size) - 0.4 + width * (i + 0.5),
            values,
            width=width,
            color=arm_colour(summary, arm),
            label=plain(labels.get(arm, arm)),
        )
    return top


def finish_one_panel(fig: Figure, ax: Any, top: float) -> None:
    """The furniture of a one-panel bar or line chart of shares: legend, no top and right
    spines, a light horizontal grid behind the data, and margins for ticks up to ``top``."""
    ax.legend(fontsize=8, frameon=False)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    place_grid(fig, 1, 1, [f"{top:.0f}"], suptitle=False)


def first_relevant_rank_shares(first_relevant: pd.DataFrame, arm: str) -> np.ndarray:
    """Share of an arm's queries whose first relevant document lands in each rank bucket.

    The buckets are :data:`RANK_BUCKETS` followed by "none retrieved" (NaN rank).
    """
    ranks = first_relevant.loc[first_relevant["arm"] == arm, "rank"].to_numpy(float)
    if ranks.size == 0:
        return np.zeros(len(RANK_BUCKETS) + 1)
    uppers = np.array([high for _, _, high in RANK_BUCKETS])
    found = ranks[np.isfinite(ranks)]
    index = np.searchsorted(uppers, found, side="left")
    counts = np.bincount(index, minlength=len(RANK_BUCKETS) + 1).astype(float)
    counts[len(RANK_BUCKETS)] = ranks.size - found.size
    return counts / ranks.size


def first_relevant_chart(readout: Readout) -> Chart | None:
    """Where each arm's first relevant document lands: grouped bars of query shares."""
    frame = readout.first_relevant
    if frame is None or frame.empty:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    arms = arms_of(frame, labels)
    names = [label for label, _, _ in RANK_BUCKETS] + ["none"]

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        shares = {arm: first_relevant_rank_shares(frame, arm) * 100 for arm in arms}
        top = grouped_bars(ax, summary, labels, shares)
        ax.set_xticks(np.arange(len(names)), names)
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
    curves = readout.curves
    if curves is None or curves.empty:
        return None
    summary = readout_summary(readout)
    labels = arm_labels(summary)
    families = list(pd.unique(curves["metric"]))
    ncols = min(3, len(families))
    nrows = math.ceil(len(families) / ncols)

    deepest = {f: float(curves.loc[curves["metric"] == f, "k"].max()) for f in families}
    log_x = any(k > LOG_K for k in deepest.values())

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.2 * nrows + 0.8))
        arms = arms_of(curves, labels)
        drawn: dict[str, Any] = {}
        for i, family in enumerate(families):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            part = curves[curves["metric"] == family]
            for arm in arms:
                line = part[part["arm"] == arm].sort_values("k")
                if line.empty:
                    continue
                (drawn[arm],) = ax.plot(
                    line["k"].to_numpy(float),
                    line["value"].to_numpy(float),
                    marker="o" if len(line) <= 25 else None,
                    markersize=3,
                    linewidth=1.6,
                    color=arm_colour(summary, arm),
                    label=plain(labels.get(arm, arm)),
                )
            if deepest[family] > LOG_K:  # k = 1..10 would otherwise be squeezed together
                ax.set_xscale("log")
                ax.set_xlim(1, deepest[family])
                ticks = [10**e for e in range(int(math.log10(deepest[family])) + 1)]
                ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
                ax.minorticks_off()
            else:
                ax.xaxis.set_major_locator(mpl_classes().MaxNLocator(nbins=6, integer=True))
                ax.set_xlim(0, deepest[family])
            high = float(np.nanmax(part["value"].to_numpy(float), initial=0.0))
            ax.set_ylim(0, max(high * 1.05, 1e-9) if high > 0 else 1.0)  # from 0: no zoomed gaps
            log = deepest[family] > LOG_K
            ax.set_xlabel("cutoff k" + (" (log scale)" if log else ""))
            ax.set_ylabel(f"mean {plain(family)}@k")
            chart_title(ax, plain(f"{family}@k"), fontsize=10)
            ax.grid(color="#dddddd", linewidth=0.6)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
        fig.suptitle("Metric@k curves per arm", fontsize=12)
        figure_legend(fig, [drawn[a] for a in arms if a in drawn], suptitle=True)
        values = [0.0, *curves["value"].to_numpy(float)]
        place_grid(fig, nrows, ncols, value_labels(values), suptitle=True, legend_row=True)
        return fig

    return Chart(
        "curves.png",
        "Metric@k curves",
        "Mean metric at every cutoff k, per arm; the value axes start at 0"
        + (f", and k is on a log scale (cutoffs past {LOG_K})." if log_x else "."),
        draw,
        weight=0.75 * len(families),
        section="positions",
    )


def _bar_histogram(ax: Any, values: np.ndarray, label: str, bins: int = 60) -> float:
    """``ax.hist(values, bins)`` in sky blue with thin white edges, drawn as bars from the
    bin counts (the empty bins are left out). Returns the tallest bar."""
    if values.size == 0:
        ax.bar([], [], color=SKY, label=label)
        return 0.0
    heights, edges = np.histogram(values, bins=bins)
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


def segment_forest_charts(summary: Summary | dict[str, Any]) -> list[Chart]:
    """One forest plot per metric over the segment comparisons (segment x treatment)."""
    summary = as_summary(summary)
    segmented = segment_comparisons(summary)
    if not segmented:
        return []
    labels = arm_labels(summary)
    several = several_treatments(segmented)
    charts = []
    names: set[str] = set()
    for metric in dict.fromkeys(c.metric for c in segmented):
        rows = []
        for comp in (c for c in segmented if c.metric == metric):
            label = str(comp.segment)
            if several:
                label += f" · {labels.get(comp.treatment, comp.treatment)}"
            rows.append((label, comp))
        overall = None
        if not several:
            for comp in summary.comparisons:
                if comp.segment is None and comp.metric == metric:
                    overall = comp.delta if is_number(comp.delta) else None
        label = metric_label(summary, metric)
        compared = [comp for _, comp in rows]
        name = f"segments-{slug(metric)}"
        while name in names:
            name += "-"
        names.add(name)
        draw = partial(_draw_segment_forest, rows, overall, label, interval_name(compared))
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


def _draw_segment_forest(
    rows: list[tuple[str, ComparisonSummary]], overall: float | None, label: str, interval: str
) -> Figure:
    fig = mpl_classes().Figure(figsize=(WIDTH, _row_height(len(rows))))
    ax = fig.add_subplot()
    verdicts = _forest(ax, rows)
    extra = []
    if overall is not None:
        ax.axvline(overall, color=BLUE, linewidth=0.9, linestyle=":")
        extra.append(
            mpl_classes().Line2D(
                [], [], color=BLUE, linewidth=0.9, linestyle=":", label="all queries"
            )
        )
    _verdict_legend(ax, verdicts, extra)
    ax.set_xlabel(f"delta of {plain(label)}, treatment − control\n{interval}")
    ax.set_ylabel("segment")
    chart_title(ax, plain(f"{label} by segment"))
    _place_forest(fig, ax, rows)
    return fig


def bootstrap_chart(readout: Readout) -> Chart | None:
    """The bootstrap distribution of the primary metric's mean delta, per treatment."""
    summary = readout_summary(readout)
    primary = summary.primary_metric or (summary.metrics or [None])[0]
    draws = {
        t: np.asarray(d, float)
        for (m, t), d in readout.resampled_deltas.items()
        if m == primary and d is not None and np.size(d)
    }
    if not draws:
        return None
    labels = arm_labels(summary)
    order = [t for t in treatment_names(summary) if t in draws]
    order += [t for t in draws if t not in order]
    comps = {
        c.treatment: c for c in summary.comparisons if c.segment is None and c.metric == primary
    }
    label = metric_label(summary, primary)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.3 * len(order) + 0.6))
        axes = fig.subplots(len(order), 1, squeeze=False)
        tops = [0.0]
        legend: dict[str, Any] = {}  # label -> handle, for one legend above the panels
        for ax, treatment in zip(axes[:, 0], order, strict=True):
            values = draws[treatment]
            values = values[np.isfinite(values)]
            tops.append(_bar_histogram(ax, values, "resampled mean deltas"))
            comp = comps.get(treatment)
            interval = comp.bootstrap_ci if comp is not None else None
            if interval and all(is_number(v) for v in interval):
                for bound in interval:
                    ax.axvline(bound, color=BLUE, linestyle="--", linewidth=1.0)
                ax.plot(
                    [], [], color=BLUE, linestyle="--", label=f"BCa {fmt_nominal_level(comp)} CI"
                )
            if comp is not None and is_number(comp.delta):
                ax.axvline(comp.delta, color=BLACK, linewidth=1.2, label="observed delta")
            ax.axvline(0.0, color=VERMILLION, linewidth=1.0, linestyle=":", label="no change")
            ax.set_xlabel(f"mean delta of {plain(label)} (treatment − control)")
            ax.set_ylabel("resamples")
            ax.yaxis.set_major_locator(mpl_classes().MaxNLocator(integer=True))
            chart_title(
                ax,
                plain(
                    f"Bootstrap distribution of the {label} delta: "
                    f"{labels.get(treatment, treatment)} ({values.size:,} resamples)"
                ),
                fontsize=10,
            )
            for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
                legend.setdefault(text, handle)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
        figure_legend(fig, list(legend.values()), suptitle=False)
        place_grid(fig, len(order), 1, _count_labels(max(tops)), suptitle=False, legend_row=True)
        return fig

    return Chart(
        "bootstrap.png",
        f"Bootstrap distribution of the {label} delta",
        f"The resampled mean deltas of the primary metric ({label}) behind its bootstrap interval.",
        draw,
        weight=1.5 * len(order),
    )
