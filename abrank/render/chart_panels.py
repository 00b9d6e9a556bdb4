"""How the charts' panels are laid out and furnished: margins, legends, titles, grids, bars.

Figures are laid out by hand, in pixels, from the sizes of what surrounds each axes: tick
labels (10 pt), tick marks and pads, axis labels, titles and a rim of 8 px, measured in the
default font. matplotlib's constrained and tight layouts would measure the same things by
drawing the figure once more. The shared furniture (one legend above every panel, the
title at the axes' top, the light grid, grouped bars and step lines of shares) keeps every
chart of a report alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abrank.readout.model import Summary
from abrank.render.chart_style import DPI, arm_colour, text_width
from abrank.render.text import is_number, plain

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    widest = max((text_width(label, size) for label in tick_labels), default=0.0)
    return widest + _points(3.5 + 3.5) + _AXIS_LABEL


def _legend_width(labels: Sequence[str], size: float = 8) -> float:
    """Pixels taken by a frameless legend of these labels (with handles and pads)."""
    em = _points(size)
    widest = max((text_width(label, size) for label in labels), default=0.0)
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


def count_labels(top: float) -> list[str]:
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


def style_x_grid(ax: Any) -> None:
    """No top and right spines; a light vertical grid behind the data."""
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def place_forest(fig: Figure, ax: Any, row_labels: Sequence[str]) -> None:
    """Margins of a forest plot: its row labels on the left, the legend on the right, and
    room on the right for a title wider than the axes (it is centred over them)."""
    width = fig.get_figwidth() * DPI
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()] if legend is not None else []
    left = _y_furniture([plain(label) for label in row_labels], size=9)
    right = _legend_width(labels) + 0.01 * width if labels else _points(10)
    title = text_width(ax.get_title(), 12)
    overhang = title - (width - left - 2 * _RIM)  # the right margin that centres it fully
    right = max(right, min(overhang, 0.3 * width))
    more_lines = ax.get_xlabel().count("\n")  # a second line names the interval drawn
    bottom = _XAXIS + _AXIS_LABEL + more_lines * _points(10) * 1.2
    _place(fig, left=left, right=right, top=_TITLE[12], bottom=bottom)


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
    widest = max((text_width(t, 10) for t in titles), default=0.0)
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


def share_steps(
    ax: Any, shares: Sequence[float], edges: Sequence[float], colour: str, label: str
) -> float:
    """One group's histogram over ``edges`` as a step line of its shares (fractions, drawn
    in percent); returns the highest percent, for the axis."""
    percent = np.asarray(shares, dtype=np.float64) * 100
    ax.stairs(
        percent, np.asarray(edges, dtype=np.float64), color=colour, linewidth=1.6, label=label
    )
    return float(percent.max(initial=0))
    return float(shares.max(initial=0))
