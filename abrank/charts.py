"""Charts of a readout, drawn with matplotlib's object API on the Agg canvas.

Every chart only draws numbers the readout already holds: deltas and intervals from
``summary["comparisons"]``, per-query values from ``per_query``, positions of the first
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
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from abrank.readout import Readout

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

# Buckets of the first relevant document's rank: 1..10 one by one, then coarser.
RANK_BUCKETS: tuple[tuple[str, float, float], ...] = (
    *((str(r), r, r) for r in range(1, 11)),
    ("11–20", 11, 20),
    ("21–100", 21, 100),
    (">100", 101, math.inf),
)

DPI = 100
WIDTH = 9.0  # inches: 900 px, which fits a laptop screen and a printed page
_PNG_METADATA = {"Software": None}


@dataclass(frozen=True)
class Chart:
    """One chart of a readout: file name under ``charts/``, title (alt text), caption.

    The figure is drawn only when :attr:`png` is first read, so the Markdown report can
    link charts without paying for drawing them; the bytes are then kept.
    """

    name: str
    title: str
    caption: str
    draw: Callable[[], Figure] = field(repr=False, compare=False)

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
    summary = readout.summary
    charts: list[Chart | None] = [
        forest_chart(summary),
        delta_distribution_chart(readout),
        first_relevant_chart(readout),
        curves_chart(readout),
        *segment_forest_charts(summary),
        bootstrap_chart(readout),
    ]
    return [chart for chart in charts if chart is not None]


# --------------------------------------------------------------------------- helpers


def plain(text: Any) -> str:
    """A user text made safe for matplotlib: ``$`` would otherwise switch on mathtext."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def slug(text: str) -> str:
    """A file-name-safe form of a metric or column name (``ndcg@10`` -> ``ndcg-10``)."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def metric_label(summary: dict[str, Any], metric: str) -> str:
    """The display label of a metric (``mrr@10`` -> ``MRR@10``), else its name."""
    return str((summary.get("metric_labels") or {}).get(metric, metric))


def arm_labels(summary: dict[str, Any]) -> dict[str, str]:
    """Arm name -> display label, in the summary's arm order."""
    return {str(a["name"]): str(a.get("label") or a["name"]) for a in summary.get("arms", [])}


def control_name(summary: dict[str, Any]) -> str | None:
    """The name of the control arm, or None when the summary has none."""
    for arm in summary.get("arms", []):
        if arm.get("role") == "control":
            return str(arm["name"])
    return None


def treatment_names(summary: dict[str, Any]) -> list[str]:
    """Treatment arm names in the summary's order."""
    names = [str(a["name"]) for a in summary.get("arms", []) if a.get("role") == "treatment"]
    if not names:  # fall back on the comparisons' order
        for comp in summary.get("comparisons", []):
            if comp["treatment"] not in names:
                names.append(comp["treatment"])
    return names


def arm_colour(summary: dict[str, Any], arm: str) -> str:
    """A stable colour per arm: the control first, then the treatments in order."""
    order = list(arm_labels(summary))
    index = order.index(arm) if arm in order else len(order)
    return ARM_COLOURS[index % len(ARM_COLOURS)]


def _finite(value: Any) -> bool:
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def _interval(comp: dict[str, Any]) -> tuple[float, float] | None:
    ci = comp.get("ci")
    if ci is None or len(ci) != 2 or not all(_finite(v) for v in ci):
        return None
    return float(ci[0]), float(ci[1])


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata=_PNG_METADATA)
    return buffer.getvalue()


def _style(ax: Any) -> None:
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _verdict_legend(ax: Any, verdicts: Sequence[str], extra: Sequence[Line2D] = ()) -> None:
    handles = [
        Line2D([], [], marker="o", linewidth=2.2, color=VERDICT_COLOURS[v], label=v)
        for v in ("win", "loss", "inconclusive")
        if v in verdicts
    ]
    handles += list(extra)
    if handles:
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
        )


def _forest(ax: Any, rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Draw one forest: a row per (label, comparison), the delta with its CI, zero line.

    Returns the verdicts drawn, for the legend.
    """
    positions = np.arange(len(rows))[::-1]
    verdicts = []
    for y, (_, comp) in zip(positions, rows, strict=True):
        verdict = str(comp.get("verdict", "inconclusive"))
        verdicts.append(verdict)
        colour = VERDICT_COLOURS.get(verdict, GREY)
        interval = _interval(comp)
        if interval is not None:
            ax.hlines(y, interval[0], interval[1], color=colour, linewidth=2.2)
        if _finite(comp.get("delta")):
            ax.plot([comp["delta"]], [y], "o", color=colour, markersize=7, zorder=3)
    ax.axvline(0.0, color=BLACK, linewidth=0.8, linestyle="--")
    ax.set_yticks(positions, [plain(label) for label, _ in rows], fontsize=9)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    _style(ax)
    return verdicts


def _row_height(n: int) -> float:
    return max(2.4, 0.42 * n + 1.3)


# --------------------------------------------------------------------------- charts


def forest_chart(summary: dict[str, Any]) -> Chart | None:
    """Forest plot of every metric x treatment: the delta and its CI, coloured by verdict."""
    overall = [c for c in summary.get("comparisons", []) if c.get("segment") is None]
    if not overall:
        return None
    labels = arm_labels(summary)
    several = len({c["treatment"] for c in overall}) > 1
    rows = []
    for comp in overall:
        label = metric_label(summary, comp["metric"])
        if several:
            label += f" · {labels.get(comp['treatment'], comp['treatment'])}"
        rows.append((label, comp))
    level = _level(overall[0])
    corrected = any(
        c.get("ci_level", c.get("confidence_level")) != c.get("confidence_level") for c in overall
    )
    widened = " (widened by the correction)" if corrected else ""
    control = labels.get(control_name(summary) or "", "control")

    def draw() -> Figure:
        fig = Figure(figsize=(WIDTH, _row_height(len(rows))), layout="constrained")
        ax = fig.add_subplot()
        _verdict_legend(ax, _forest(ax, rows))
        ax.set_xlabel(f"delta, treatment − control (mean per query), {level} CI{widened}")
        ax.set_ylabel("metric")
        ax.set_title(plain(f"Deltas against {control}, with confidence intervals"))
        return fig

    return Chart(
        "forest.png",
        "Deltas with confidence intervals",
        f"Each metric's delta (treatment − control) with its {level} confidence "
        "interval, coloured by verdict; the dashed line marks no change."
        + (
            " The multiple-testing correction widens each interval by the same factor as its "
            "p-value, so an interval crosses the line exactly when the verdict is inconclusive."
            if corrected
            else ""
        ),
        draw,
    )


def _level(comp: dict[str, Any]) -> str:
    level = comp.get("confidence_level")
    return f"{level * 100:g}%" if _finite(level) else "95%"


def paired_deltas(per_query: pd.DataFrame, metric: str, control: str, treatment: str) -> np.ndarray:
    """Per-query deltas (treatment − control) over the queries both arms hold a value for."""
    frame = per_query[per_query["arm"] == control][["query_id", metric]]
    other = per_query[per_query["arm"] == treatment][["query_id", metric]]
    joined = frame.merge(other, on="query_id", suffixes=("_c", "_t"))
    deltas = joined[f"{metric}_t"].to_numpy(float) - joined[f"{metric}_c"].to_numpy(float)
    return deltas[np.isfinite(deltas)]


def delta_distribution_chart(readout: Readout) -> Chart | None:
    """Per-query delta histograms, one panel per metric x treatment, split win/tie/loss.

    For the independent design there are no per-query deltas; the panels then show each
    arm's per-query values instead.
    """
    summary = readout.summary
    per_query = readout.per_query
    overall = [c for c in summary.get("comparisons", []) if c.get("segment") is None]
    control = control_name(summary)
    if not overall or control is None or per_query is None or per_query.empty:
        return None
    overall = [c for c in overall if c["metric"] in per_query.columns]
    if not overall:
        return None
    paired = summary.get("design", "paired") == "paired"
    labels = arm_labels(summary)
    metrics = list(dict.fromkeys(c["metric"] for c in overall))
    treatments = list(dict.fromkeys(c["treatment"] for c in overall))
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
        fig = Figure(figsize=(WIDTH, 2.9 * nrows + 0.6))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        used = set()
        for comp in overall:
            t_index = treatments.index(comp["treatment"])
            m_index = metrics.index(comp["metric"])
            row = t_index * math.ceil(len(metrics) / ncols) + m_index // ncols
            ax = axes[row][m_index % ncols]
            used.add((row, m_index % ncols))
            name = metric_label(summary, comp["metric"])
            treatment_label = labels.get(comp["treatment"], comp["treatment"])
            if paired:
                _delta_histogram(
                    ax, paired_deltas(per_query, comp["metric"], control, comp["treatment"]), comp
                )
                ax.set_xlabel(f"per-query delta of {plain(name)}")
                ax.set_ylabel("queries")
                ax.set_title(plain(f"{name}: {treatment_label}"), fontsize=10)
            else:
                for arm in (control, comp["treatment"]):
                    values = per_query.loc[per_query["arm"] == arm, comp["metric"]]
                    values = values.to_numpy(float)
                    values = values[np.isfinite(values)]
                    ax.hist(
                        values,
                        bins=30,
                        histtype="step",
                        linewidth=1.6,
                        color=arm_colour(summary, arm),
                        label=plain(labels.get(arm, arm)),
                    )
                ax.set_xlabel(f"per-query {plain(name)}")
                ax.set_ylabel("queries")
                versus = labels.get(control, control)
                ax.set_title(plain(f"{name}: {treatment_label} vs {versus}"), fontsize=10)
                ax.legend(fontsize=7, frameon=False)
            _style(ax)
        for r in range(nrows):
            for c in range(ncols):
                if (r, c) not in used:
                    axes[r][c].set_visible(False)
        fig.suptitle(title, fontsize=12)
        fig.tight_layout()
        return fig

    return Chart("deltas.png", title, caption, draw)


def _delta_histogram(ax: Any, deltas: np.ndarray, comp: dict[str, Any]) -> None:
    """Stacked histogram of losses, ties and wins; a tie bar that would dwarf the rest is
    cut at the axis top and labelled with its count, so the wins and losses stay legible."""
    if deltas.size == 0:
        ax.text(0.5, 0.5, "no paired queries", ha="center", va="center", transform=ax.transAxes)
        return
    span = float(np.max(np.abs(deltas))) or 1.0
    edges = np.linspace(-span, span, 42)  # 41 bins: 0 sits in the middle one ...
    edges = np.union1d(edges, [-span / 82, span / 82])  # ... cut down to a bin for ties
    parts = ((deltas < 0, LOSS, "losses"), (deltas == 0, TIE, "ties"), (deltas > 0, WIN, "wins"))
    counts = {"losses": comp.get("losses"), "ties": comp.get("ties"), "wins": comp.get("wins")}
    data, colours, names = [], [], []
    for mask, colour, key in parts:
        data.append(deltas[mask])
        colours.append(colour)
        count = counts[key]
        shown = _finite(count) and float(count).is_integer()
        names.append(f"{key} ({int(count):,})" if shown else key)
    ax.hist(data, bins=edges, stacked=True, color=colours, label=names)
    ax.axvline(0.0, color=BLACK, linewidth=0.7, linestyle="--")
    moved = np.histogram(deltas[deltas != 0], bins=edges)[0].max(initial=0)
    ties = int((deltas == 0).sum())
    if moved and ties > 1.5 * moved:
        top = moved * 1.35
        ax.set_ylim(0, top)
        ax.text(
            0.0, top * 0.97, " ties ↑ (bar cut)", ha="left", va="top", fontsize=7, color="#555555"
        )
    ax.legend(fontsize=7, frameon=False)


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
    summary = readout.summary
    labels = arm_labels(summary)
    arms = [a for a in labels if (frame["arm"] == a).any()]
    arms += [a for a in pd.unique(frame["arm"]) if a not in arms]
    names = [label for label, _, _ in RANK_BUCKETS] + ["none"]
    x = np.arange(len(names))
    width = 0.8 / max(len(arms), 1)

    def draw() -> Figure:
        fig = Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        for i, arm in enumerate(arms):
            shares = first_relevant_rank_shares(frame, arm)
            ax.bar(
                x - 0.4 + width * (i + 0.5),
                shares * 100,
                width=width,
                color=arm_colour(summary, arm),
                label=plain(labels.get(arm, arm)),
            )
        ax.set_xticks(x, names)
        ax.set_xlabel("rank of the first relevant document")
        ax.set_ylabel("share of queries (%)")
        ax.set_title("Where the first relevant document lands, per arm")
        ax.legend(fontsize=8, frameon=False)
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        fig.tight_layout()
        return fig

    return Chart(
        "first_relevant.png",
        "Where the first relevant document lands",
        'Share of queries whose first relevant document sits at each rank ("none": '
        "no relevant document retrieved); reciprocal rank rewards the left bars.",
        draw,
    )


def curves_chart(readout: Readout) -> Chart | None:
    """Mean metric@k against k per arm, one panel per metric family."""
    curves = readout.curves
    if curves is None or curves.empty:
        return None
    summary = readout.summary
    labels = arm_labels(summary)
    families = list(pd.unique(curves["metric"]))
    ncols = min(3, len(families))
    nrows = math.ceil(len(families) / ncols)

    def draw() -> Figure:
        fig = Figure(figsize=(WIDTH, 3.2 * nrows + 0.5))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        arms = [a for a in labels if (curves["arm"] == a).any()]
        arms += [a for a in pd.unique(curves["arm"]) if a not in arms]
        for i, family in enumerate(families):
            ax = axes[i // ncols][i % ncols]
            part = curves[curves["metric"] == family]
            for arm in arms:
                line = part[part["arm"] == arm].sort_values("k")
                if line.empty:
                    continue
                ax.plot(
                    line["k"].to_numpy(float),
                    line["value"].to_numpy(float),
                    marker="o" if len(line) <= 25 else None,
                    markersize=3,
                    linewidth=1.6,
                    color=arm_colour(summary, arm),
                    label=plain(labels.get(arm, arm)),
                )
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("cutoff k")
            ax.set_ylabel(f"mean {plain(family)}@k")
            ax.set_title(plain(f"{family}@k"), fontsize=10)
            ax.grid(color="#dddddd", linewidth=0.6)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
            ax.legend(fontsize=7, frameon=False)
        for j in range(len(families), nrows * ncols):
            axes[j // ncols][j % ncols].set_visible(False)
        fig.suptitle("Metric@k curves per arm", fontsize=12)
        fig.tight_layout()
        return fig

    return Chart("curves.png", "Metric@k curves", "Mean metric at every cutoff k, per arm.", draw)


def segment_forest_charts(summary: dict[str, Any]) -> list[Chart]:
    """One forest plot per metric over the segment comparisons (segment x treatment)."""
    segmented = [c for c in summary.get("comparisons", []) if c.get("segment") is not None]
    if not segmented:
        return []
    labels = arm_labels(summary)
    several = len({c["treatment"] for c in segmented}) > 1
    charts = []
    names: set[str] = set()
    for metric in dict.fromkeys(c["metric"] for c in segmented):
        rows = []
        for comp in (c for c in segmented if c["metric"] == metric):
            label = str(comp["segment"])
            if several:
                label += f" · {labels.get(comp['treatment'], comp['treatment'])}"
            rows.append((label, comp))
        overall = None
        if not several:
            for comp in summary.get("comparisons", []):
                if comp.get("segment") is None and comp["metric"] == metric:
                    overall = comp.get("delta") if _finite(comp.get("delta")) else None
        label = metric_label(summary, metric)
        level = _level(rows[0][1])
        name = f"segments-{slug(metric)}"
        while name in names:
            name += "-"
        names.add(name)
        draw = partial(_draw_segment_forest, rows, overall, label, level)
        charts.append(
            Chart(
                f"{name}.png",
                f"{label} by segment",
                f"{label}: the delta and its {level} confidence interval within "
                "each segment, coloured by verdict (after the segment family's "
                "correction).",
                draw,
            )
        )
    return charts


def _draw_segment_forest(
    rows: list[tuple[str, dict[str, Any]]], overall: float | None, label: str, level: str
) -> Figure:
    fig = Figure(figsize=(WIDTH, _row_height(len(rows))), layout="constrained")
    ax = fig.add_subplot()
    verdicts = _forest(ax, rows)
    extra = []
    if overall is not None:
        ax.axvline(overall, color=BLUE, linewidth=0.9, linestyle=":")
        extra.append(Line2D([], [], color=BLUE, linewidth=0.9, linestyle=":", label="all queries"))
    _verdict_legend(ax, verdicts, extra)
    ax.set_xlabel(f"delta of {plain(label)}, treatment − control, {level} CI")
    ax.set_ylabel("segment")
    ax.set_title(plain(f"{label} by segment"))
    return fig


def bootstrap_chart(readout: Readout) -> Chart | None:
    """The bootstrap distribution of the primary metric's mean delta, per treatment."""
    summary = readout.summary
    primary = summary.get("primary_metric") or (summary.get("metrics") or [None])[0]
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
        c["treatment"]: c
        for c in summary.get("comparisons", [])
        if c.get("segment") is None and c["metric"] == primary
    }
    label = metric_label(summary, primary)

    def draw() -> Figure:
        fig = Figure(figsize=(WIDTH, 3.3 * len(order) + 0.3))
        axes = fig.subplots(len(order), 1, squeeze=False)
        for ax, treatment in zip(axes[:, 0], order, strict=True):
            values = draws[treatment]
            values = values[np.isfinite(values)]
            ax.hist(
                values,
                bins=60,
                color=SKY,
                edgecolor="white",
                linewidth=0.3,
                label=f"{values.size:,} resampled mean deltas",
            )
            comp = comps.get(treatment, {})
            interval = comp.get("bootstrap_ci")
            if interval and all(_finite(v) for v in interval):
                for bound in interval:
                    ax.axvline(bound, color=BLUE, linestyle="--", linewidth=1.0)
                ax.plot([], [], color=BLUE, linestyle="--", label=f"BCa {_level(comp)} CI")
            if _finite(comp.get("delta")):
                ax.axvline(comp["delta"], color=BLACK, linewidth=1.2, label="observed delta")
            ax.axvline(0.0, color=VERMILLION, linewidth=1.0, linestyle=":", label="no change")
            ax.set_xlabel(f"mean delta of {plain(label)} (treatment − control)")
            ax.set_ylabel("resamples")
            ax.set_title(
                plain(
                    f"Bootstrap distribution of the {label} delta: "
                    f"{labels.get(treatment, treatment)}"
                ),
                fontsize=10,
            )
            ax.legend(fontsize=7, frameon=False)
            ax.spines["top"].set_visible(False)
            ax.spines["right"].set_visible(False)
        fig.tight_layout()
        return fig

    return Chart(
        "bootstrap.png",
        f"Bootstrap distribution of the {label} delta",
        f"The resampled mean deltas of the primary metric ({label}) behind its bootstrap interval.",
        draw,
    )
