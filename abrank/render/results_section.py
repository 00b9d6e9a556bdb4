"""The Results and Segments sections: the results tables and what explains them.

The Results section holds the table of the overall comparisons (every number of the summary
behind its cell), the note on how the p-values and intervals were made, the CUPED
adjustment, the family of compared pairs, the legend and the methods note, then the charts
of the results (:mod:`abrank.render.forest_charts`, :mod:`abrank.render.distribution_charts`).
The Segments section holds the same table per segment, the segments too small to compare
and the segment forest plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from abrank.readout.model import ComparisonSummary, SegmentsSummary, Summary
from abrank.readout.typed import as_summary, overall_comparisons, segment_comparisons
from abrank.render.blocks import (
    Block,
    Cell,
    Column,
    Facts,
    Heading,
    Paragraph,
    Section,
    Table,
    own,
    spans,
)
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.glossary import legend_entries
from abrank.render.headline import caveats, unit_plural
from abrank.render.text import (
    SHORT_TEST_NAMES,
    arm_label,
    correction_name,
    fmt_count,
    fmt_effect,
    fmt_interval,
    fmt_level,
    fmt_p,
    fmt_percent,
    fmt_relative_interval,
    fmt_signed,
    fmt_value,
    is_number,
    metric_label,
    several_treatments,
    test_name,
    widened,
)


def _p_columns(comps: Sequence[ComparisonSummary]) -> list[str]:
    return list(dict.fromkeys(k for c in comps for k in (c.p_values or {})))


def _number_columns(comps: Sequence[ComparisonSummary]) -> list[tuple[str, str]]:
    """The results table's number columns: (key of the data cell, header)."""
    levels = {fmt_level(c) for c in comps}
    level = levels.pop() if len(levels) == 1 else None
    corrections = {n for n in (correction_name(c.correction) for c in comps) if n is not None}
    adjusted = f"p adj. ({', '.join(sorted(corrections))})" if corrections else "p adj."
    interleaved = bool(comps) and all(c.design == "interleaved" for c in comps)
    means = ("share", "Δ_AB") if interleaved else ("mean", "Δ")
    columns = [
        ("control_mean", f"control {means[0]}"),
        ("treatment_mean", f"treatment {means[0]}"),
        ("delta", means[1]),
        ("ci", f"{level} CI" if level else "CI (level)"),
        *(() if interleaved else (("relative_lift", "relative"), ("relative_ci", "relative CI"))),
        *(
            (f"p_values.{k}", f"p ({SHORT_TEST_NAMES.get(k, test_name(k))})")
            for k in _p_columns(comps)
        ),
        ("p_adjusted", adjusted),
        ("effect_size", "effect size"),
        ("mde", "MDE"),
        ("n", "n"),
    ]
    if interleaved or any(c.design == "paired" for c in comps):
        columns.append(("wtl", "W / T / L"))
    return columns


_FORMATTERS = {
    "control_mean": fmt_value,
    "treatment_mean": fmt_value,
    "delta": fmt_signed,
    "relative_lift": fmt_percent,
    "p_adjusted": fmt_p,
    "effect_size": fmt_effect,
    "mde": fmt_value,
    "n": fmt_count,
}


def _value_cell(comp: ComparisonSummary, key: str, css: str = "") -> Cell:
    """One number cell of the results table: the text shown and the JSON value behind it."""
    value: Any
    if key.startswith("p_values."):
        value = (comp.p_values or {}).get(key.split(".", 1)[1])
        text = fmt_p(value)
    elif key == "relative_ci":
        value, text = comp.relative_ci, fmt_relative_interval(comp)
    elif key == "wtl":
        value = [comp.wins, comp.ties, comp.losses]
        known = all(is_number(v) for v in value)
        text = " / ".join(fmt_count(v) for v in value) if known else "n/a"
    elif key == "ci":
        value, text = comp.ci, fmt_interval(comp.ci)
        if widened(comp):
            text += f" ({fmt_level(comp)})"
    elif key == "n" and comp.design == "interleaved":
        units = comp.n_units.get("all") if isinstance(comp.n_units, dict) else None
        value = [comp.n, units]
        text = f"{fmt_count(comp.n)} / {fmt_count(units)} {unit_plural(comp.unit or 'unit')}"
    elif key == "n" and comp.unit and isinstance(comp.n_units, dict):
        value = [comp.n_units.get("control"), comp.n_units.get("treatment")]
        text = " / ".join(fmt_count(v) for v in value) + f" {unit_plural(comp.unit)}"
    elif key == "n" and comp.design == "independent":
        value = [comp.n_control, comp.n_treatment]
        text = " / ".join(fmt_count(v) for v in value)
    else:
        value = getattr(comp, key)
        text = _FORMATTERS[key](value)
    return Cell(text, key=key, value=value, has_value=True, css=css, own=True)


def results_table(
    summary: Summary | dict[str, Any], comps: Sequence[ComparisonSummary], *, segments: bool
) -> Table:
    """The results table of these comparisons: one row each, every number of the summary
    behind its cell. Several treatments add a treatment column; the verdict comes last."""
    summary = as_summary(summary)
    several = several_treatments(summary.comparisons)
    numbers = _number_columns(comps)
    primary = f"p_values.{comps[0].primary_test}" if comps else ""
    secondary = {key for key, _ in numbers if key.startswith("p_values.") and key != primary}
    columns = [Column("segment", "left", "text")] if segments else []
    columns.append(Column("metric", "left", "text"))
    if several:
        columns.append(Column("treatment", "left", "text"))
    columns += [Column(h, "right", "secondary" if k in secondary else "") for k, h in numbers]
    columns.append(Column("verdict", "left", "verdict"))
    rows = []
    for comp in comps:
        row = []
        if segments:
            row.append(Cell(str(comp.segment), "segment", comp.segment, True, "text"))
        row.append(Cell(metric_label(summary, comp.metric), "metric", comp.metric, True, "text"))
        if several:
            label = arm_label(summary, comp.treatment)
            row.append(Cell(label, "treatment", comp.treatment, True, "text"))
        for key, _ in numbers:
            css = (
                "wrap"
                if key in ("ci", "relative_ci", "wtl")
                else "secondary"
                if key in secondary
                else ""
            )
            row.append(_value_cell(comp, key, css))
        verdict = comp.verdict
        css = f"verdict {verdict}" + (" flagged" if caveats(summary, comp) else "")
        row.append(Cell(str(verdict or "inconclusive"), "verdict", verdict, True, css, True))
        rows.append(tuple(row))
    return Table(tuple(columns), tuple(rows), "results segments" if segments else "results")


def results_section(summary: Summary, charts: Sequence[Chart]) -> Section:
    comps = overall_comparisons(summary)
    blocks: list[Block] = []
    if comps:
        paired = any(c.design == "paired" for c in comps)
        ratio = (
            f"the intervals come from the delta method over {unit_plural(summary.unit)}, and "
            "the permutation and bootstrap tests relabel and resample them"
            if summary.unit is not None
            else "the relative CI is a bootstrap interval of the ratio"
        )
        if summary.design == "interleaved":
            ratio = (
                "Δ_AB is the share of impressions the treatment won, ties counted half, minus "
                "1/2 (n: impressions / units); the intervals come from the delta method over "
                f"{unit_plural(summary.unit or 'unit')}, and the bootstrap resamples them"
            )
        if summary.sequential is not None:
            ratio = (
                "the CI and the relative CI are confidence sequences (the relative one on the "
                "log ratio), the other p-values fixed-horizon second opinions"
            )
        blocks += [
            results_table(summary, comps, segments=False),
            Paragraph(
                (
                    own(
                        "p-values are two-sided; the adjusted p-value decides the verdict "
                        f"(alpha = {0.05 if summary.alpha is None else summary.alpha}). "
                        f"{'' if summary.design == 'interleaved' else 'Δ is treatment − control; '}"
                        f"{ratio}."
                    ),
                ),
                role="note",
            ),
            *_cuped_blocks(summary, comps),
            *_family_note(summary),
            Paragraph(
                (
                    own(
                        "Printed tables leave out the secondary tests' p-values; "
                        "summary.json and the on-screen page have them."
                    ),
                ),
                role="print-only",
            ),
            Heading("How to read this readout"),
            Facts(tuple(legend_entries(summary, paired=paired)), css="legend"),
            *_method_blocks(summary),
        ]
    blocks += chart_refs(charts, "results")
    return Section("results", "Results", tuple(blocks))


def _method_blocks(summary: Summary) -> list[Block]:
    """The methods note: how numbers were made where that deserves a word but is no warning
    (``diagnostics.method_notes``: resampling approximations and their bounds)."""
    diagnostics = summary.diagnostics
    notes = (diagnostics.method_notes if diagnostics is not None else None) or ()
    if not notes:
        return []
    return [Heading("Methods note"), *(Paragraph(spans(str(note)), role="note") for note in notes)]


def _cuped_blocks(summary: Summary, comps: Sequence[ComparisonSummary]) -> list[Block]:
    """The CUPED adjustment of each comparison that has one: the adjusted and the
    unadjusted delta side by side, and the variance reduction the pre-period data bought."""
    adjusted = [c for c in comps if isinstance(c.cuped, dict)]
    if not adjusted:
        return []
    several = several_treatments(comps)
    columns = [Column("metric", "left", "text")]
    if several:
        columns.append(Column("treatment", "left", "text"))
    columns += [
        Column("Δ adjusted"),
        Column("CI adjusted"),
        Column("Δ unadjusted"),
        Column("CI unadjusted"),
        Column("p unadjusted"),
        Column("variance reduction"),
        Column("units with pre-period data"),
    ]
    rows = []
    for comp in adjusted:
        cuped = comp.cuped or {}
        plain = cuped.get("unadjusted") or {}
        covered = cuped.get("units_with_covariate") or {}
        row = [Cell(metric_label(summary, comp.metric), css="text")]
        if several:
            row.append(Cell(arm_label(summary, comp.treatment), css="text"))
        reduction = cuped.get("variance_reduction")
        row += [
            Cell(fmt_signed(comp.delta)),
            Cell(fmt_interval(comp.ci)),
            Cell(fmt_signed(plain.get("delta"))),
            Cell(fmt_interval(plain.get("ci"))),
            Cell(fmt_p(plain.get("p_value"))),
            Cell(f"{reduction:.0%}" if is_number(reduction) else "n/a"),
            Cell(" / ".join(fmt_count(covered.get(k)) for k in ("control", "treatment"))),
        ]
        rows.append(tuple(row))
    note = (
        "CUPED (Deng et al. 2013) removes the part of each metric that the users' pre-period "
        "values predict: the delta, interval and p-value above are the adjusted ones, the "
        "means the raw ones; the unadjusted comparison and its permutation and bootstrap "
        "tests are kept here and in summary.json (cuped.unadjusted)."
    )
    return [
        Heading("CUPED adjustment"),
        Table(tuple(columns), tuple(rows), "cuped"),
        Paragraph((own(note),), role="note"),
    ]


def _family_note(summary: Summary) -> list[Block]:
    """Which pairs of arms were compared and what the correction spans (``all-pairs`` only)."""
    family = summary.family
    if family is None or family.comparisons == "control":
        return []
    pairs = ", ".join(
        f"{arm_label(summary, pair.treatment)} vs {arm_label(summary, pair.control)}"
        for pair in family.pairs
    )
    method = correction_name(summary.correction.primary) if summary.correction else None
    spans = f"{method} adjusts" if method else "The verdicts count"
    text = (
        f"Every pair of arms is compared ({pairs}); {spans} these "
        f"{fmt_count(family.size)} comparisons as one family."
    )
    return [Paragraph((own(text),), role="note")]


def _too_small(segments: SegmentsSummary) -> list[tuple[str, str]]:
    """The segments skipped for size, each once, as (segment, n text): the pipeline lists
    one per treatment and metric, since a metric's undefined values can make one metric's
    segment smaller."""
    sizes: dict[str, list[int]] = {}
    for entry in segments.too_small or ():
        if is_number(entry.n):
            sizes.setdefault(str(entry.segment), []).append(int(entry.n))
    out = []
    for segment, ns in sizes.items():
        low, high = min(ns), max(ns)
        text = fmt_count(low) if low == high else f"{fmt_count(low)}-{fmt_count(high)} by metric"
        out.append((segment, text))
    return out


def segments_section(summary: Summary, charts: Sequence[Chart]) -> Section | None:
    segments = summary.segments if summary.segments is not None else SegmentsSummary()
    segmented = segment_comparisons(summary)
    if not segmented and not segments.too_small:
        return None
    blocks: list[Block] = []
    if segments.columns:
        blocks.append(
            Paragraph(
                (
                    own("Segment columns: "),
                    *spans(", ".join(map(str, segments.columns))),
                    own(
                        f"; segments with fewer than {fmt_count(segments.min_queries)} "
                        f"{unit_plural(summary.unit) if summary.unit else 'queries'} are not "
                        "compared."
                    ),
                )
            )
        )
    if segmented:
        blocks.append(results_table(summary, segmented, segments=True))
    small = _too_small(segments)
    if small:
        content = [own("Too small to compare: ")]
        for i, (segment, n_text) in enumerate(small):
            content += [own(", ")] if i else []
            content += [*spans(segment), own(f" (n = {n_text})")]
        content.append(own("."))
        blocks.append(Paragraph(tuple(content), role="note"))
    blocks += chart_refs(charts, "segments")
    return Section("segments", "Segments", tuple(blocks))
