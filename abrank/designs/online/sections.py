"""The sections only an online readout (impressions of users randomized to arms) has.

Clicks by position and per user (:mod:`abrank.render.online_charts`), and the per-arm
diagnostics of a randomized test: units, impressions, the share of units against the
expected split, the sample-ratio check and the units seen in several arms.
"""

from __future__ import annotations

from collections.abc import Sequence

from abrank.readout.model import Summary
from abrank.render.blocks import Block, Cell, Column, Paragraph, Section, Table, own
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.text import fmt_count, fmt_share, fmt_value, metric_label, split_check_text


def clicks_section(charts: Sequence[Chart]) -> Section:
    """Clicks by Position and per User: the online charts."""
    shown = chart_refs(charts, "clicks")
    blocks: list[Block] = list(shown) or [Paragraph((own("No click data in this readout."),))]
    return Section("clicks", "Clicks by position and per user", tuple(blocks))


def units_section(charts: Sequence[Chart]) -> Section:
    """Per unit: the distribution of the primary metric per unit (a design over a log
    without clicks: :class:`abrank.designs.DesignBase`)."""
    shown = chart_refs(charts, "clicks")
    blocks: list[Block] = list(shown) or [Paragraph((own("No per-unit data in this readout."),))]
    return Section("units", "Per unit", tuple(blocks))


def online_table(summary: Summary) -> Table:
    """The per-arm diagnostics of an online readout: units, impressions, expected share."""
    diagnostics = summary.diagnostics
    srm = diagnostics.srm if diagnostics is not None else None
    unit = summary.unit or "unit"
    columns = [Column(h, "left", "text") for h in ("arm", "label", "role")]
    columns += [Column(f"units ({unit})"), Column("impressions"), Column("impressions per unit")]
    columns += [Column("share of units"), Column("expected share")]
    total = sum(arm.units or 0 for arm in summary.arms or ())
    rows = []
    for arm in summary.arms or ():
        units, impressions = arm.units, arm.impressions
        per_unit = impressions / units if units and impressions is not None else None
        expected = srm.expected.get(arm.name) if srm is not None else None
        rows.append(
            (
                Cell(str(arm.name), css="text"),
                Cell(str(arm.label or arm.name), css="text"),
                Cell(str(arm.role or ""), css="text"),
                Cell(fmt_count(units)),
                Cell(fmt_count(impressions)),
                Cell(fmt_value(per_unit)),
                Cell(fmt_share(units / total if units is not None and total else None)),
                Cell(fmt_share(expected)),
            )
        )
    return Table(tuple(columns), tuple(rows), "diagnostics")


def online_facts(summary: Summary) -> list[tuple[str, str]]:
    """The sample-ratio check and the units seen in several arms, as facts."""
    diagnostics = summary.diagnostics
    if diagnostics is None:
        return []
    facts = [("randomization unit", str(summary.unit))]
    srm = diagnostics.srm
    if srm is not None:
        facts.append((f"sample ratio check ({srm.test_name})", split_check_text(srm)))
    mixed = diagnostics.mixed_units
    if mixed is not None:
        done = "dropped" if mixed.policy == "drop" else "kept"
        facts.append((f"{mixed.column} values in more than one arm", f"{mixed.count:,} ({done})"))
    if summary.sat_dwell is not None:
        facts.append(("satisfied click", f"dwell of {summary.sat_dwell:g} s or more"))
    undefined = diagnostics.undefined
    counts = {k: v for k, v in ((undefined.metrics if undefined else None) or {}).items() if v}
    if counts:
        text = ", ".join(
            f"{metric_label(summary, name)} {fmt_count(count)}" for name, count in counts.items()
        )
        facts.append(("impressions without a judged value, per metric", text))
    return facts
