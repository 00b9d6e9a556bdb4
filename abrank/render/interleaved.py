"""The parts of a readout that only an interleaving experiment has.

Two charts (the share of impressions each comparison's treatment won, tied and lost, and
how the preference is spread over the units that the statistics treat as independent),
the section that holds them, and the diagnostics of the interleaving itself: which arm
contributed each impression's first result (half the time each when the coin flips are
fair), the impressions with a click, and those whose list both source rankings share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from abrank.readout import Readout
from abrank.readout.model import Summary
from abrank.render.blocks import Block, Cell, ChartRef, Column, Paragraph, Section, Table, own
from abrank.render.charts import (
    LOSS,
    TIE,
    TIE_EDGE,
    WIDTH,
    WIN,
    Chart,
    arm_colour,
    arms_of,
    chart_title,
    figure_legend,
    finish_one_panel,
    mpl_classes,
    place_grid,
)
from abrank.render.headline import unit_plural
from abrank.render.online_charts import share_steps
from abrank.render.text import (
    arm_label,
    arm_labels,
    comparison_subject,
    fmt_count,
    fmt_share,
    metric_label,
    overall_comparisons,
    plain,
    several_treatments,
    split_check_text,
)
from abrank.render.typed import as_summary, readout_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the report section of the interleaving charts
SECTION = "preference"

#: Bins of the per-unit preference chart (the preference runs from -1/2 to +1/2).
PREFERENCE_BINS = 40


def is_interleaved(summary: Summary) -> bool:
    """The readout of an interleaving experiment."""
    return summary.design == "interleaved"


def outcome_chart(readout: Readout) -> Chart | None:
    """Wins, ties and losses of every overall comparison, as shares of its impressions."""
    summary = readout_summary(readout)
    comps = [c for c in overall_comparisons(summary) if c.design == "interleaved"]
    if not comps:
        return None
    several = several_treatments(comps)
    subjects = [plain(comparison_subject(summary, c, several)) for c in comps]

    def draw() -> Figure:
        height = 1.7 + 0.5 * len(comps)
        fig = mpl_classes().Figure(figsize=(WIDTH, height))
        ax = fig.add_subplot()
        rows = np.arange(len(comps))[::-1]
        left = np.zeros(len(comps))
        parts = (("wins", WIN, "treatment won"), ("ties", TIE, "tie"), ("losses", LOSS, "lost"))
        for key, colour, label in parts:
            counts = np.array([getattr(c, key) or 0 for c in comps], dtype=float)
            total = np.array([max(c.n or 0, 1) for c in comps], dtype=float)
            shares = counts / total * 100
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
    if not is_interleaved(summary) or frame is None or frame.empty:
        return None
    labels = {name: plain(arm_label(summary, name)) for name in frame["arm"].unique()}
    pairs = arms_of(frame, labels)
    credit = summary.primary_metric or (summary.metrics[0] if summary.metrics else "")
    column = summary.unit or "unit"
    unit = column[:-3] if column.endswith("_id") else column
    units = unit_plural(column)
    edges = np.linspace(-0.5, 0.5, PREFERENCE_BINS + 1)

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.0))
        ax = fig.add_subplot()
        top = 0.0
        for pair in pairs:
            values = frame.loc[frame["arm"] == pair, "value"].to_numpy(dtype=np.float64)
            colour = arm_colour(summary, pair) if pair in arm_labels(summary) else WIN
            label = f"{labels[pair]} ({values.size:,} {units}, mean {values.mean():+.3f})"
            clipped = np.clip(values, -0.5, 0.5)
            top = max(top, share_steps(ax, clipped, edges, colour, label))
        ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_xlabel(f"preference for the treatment per {unit} (−0.5 = always lost, +0.5 = won)")
        ax.set_ylabel(f"share of {units} (%)")
        chart_title(ax, f"{plain(metric_label(summary, credit))} per {unit}")
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


def preference_section(charts: Sequence[Chart]) -> Section:
    """The interleaving charts: outcomes per impression, and the preference per unit."""
    shown: list[Block] = [
        ChartRef(c.name, c.title, c.caption) for c in charts if c.section == SECTION
    ]
    blocks = shown or [Paragraph((own("No preference data in this readout."),))]
    return Section(SECTION, "Preference per impression and per user", tuple(blocks))


def interleaving_table(summary: Summary) -> Table:
    """Per arm: the impressions and units it contributed results to, and how often it
    contributed the first result (against the expected equal share)."""
    summary = as_summary(summary)
    checks = summary.diagnostics.interleaving if summary.diagnostics is not None else None
    first = checks.first_team if checks is not None else None
    unit = summary.unit or "unit"
    columns = [Column(h, "left", "text") for h in ("arm", "label", "role")]
    columns += [Column("impressions with its results"), Column(f"units ({unit})")]
    columns += [Column("first result"), Column("share first"), Column("expected share")]
    total = sum(first.units.values()) if first is not None else 0
    rows = []
    for arm in summary.arms or ():
        count = first.units.get(arm.name) if first is not None else None
        expected = first.expected.get(arm.name) if first is not None else None
        rows.append(
            (
                Cell(str(arm.name), css="text"),
                Cell(str(arm.label or arm.name), css="text"),
                Cell(str(arm.role or ""), css="text"),
                Cell(fmt_count(arm.impressions)),
                Cell(fmt_count(arm.units)),
                Cell(fmt_count(count)),
                Cell(fmt_share(count / total if count is not None and total else None)),
                Cell(fmt_share(expected)),
            )
        )
    return Table(tuple(columns), tuple(rows), "diagnostics")


def interleaving_facts(summary: Summary) -> list[tuple[str, str]]:
    """The first-team check, the impressions with a click and the same-list count."""
    summary = as_summary(summary)
    checks = summary.diagnostics.interleaving if summary.diagnostics is not None else None
    if checks is None:
        return []
    first = checks.first_team
    facts = [
        ("clustered by", str(summary.unit)),
        ("impressions", f"{fmt_count(checks.impressions)} from {fmt_count(checks.units)} units"),
        (f"first-team check ({first.test_name})", split_check_text(first)),
        (
            "impressions with a click",
            f"{fmt_count(checks.clicked)} ({fmt_share(checks.clicked_share)})",
        ),
    ]
    same = checks.same_lists
    if same is not None:
        unmatched = same.get("unmatched") or 0
        tail = f"; {fmt_count(unmatched)} not compared (query not in both rankings)"
        facts.append(
            (
                "impressions both rankings would have shown alike",
                f"{fmt_count(same.get('same'))} of {fmt_count(same.get('compared'))} "
                f"({fmt_share(same.get('share'))}){tail if unmatched else ''}",
            )
        )
    if summary.sat_dwell is not None:
        facts.append(("satisfied click", f"dwell of {summary.sat_dwell:g} s or more"))
    return facts
