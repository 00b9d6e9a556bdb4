"""The sections only an interleaving readout has.

The preference per impression and per unit (:mod:`abrank.render.interleaved_charts`), and
the diagnostics of the interleaving itself: which arm contributed each impression's first
result (half the time each when the coin flips are fair), the impressions with a click,
and those whose list both source rankings share.
"""

from __future__ import annotations

from collections.abc import Sequence

from abrank.readout.model import Summary
from abrank.readout.typed import as_summary
from abrank.render.blocks import Block, Cell, Column, Paragraph, Section, Table, own
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.text import fmt_count, fmt_share, split_check_text

#: the report section of the interleaving charts
SECTION = "preference"


def preference_section(charts: Sequence[Chart]) -> Section:
    """The interleaving charts: outcomes per impression, and the preference per unit."""
    shown: list[Block] = list(chart_refs(charts, SECTION))
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
