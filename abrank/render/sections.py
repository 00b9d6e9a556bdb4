"""One model of a readout's sections, built once from the summary, drawn by every format.

:func:`build_document` turns a :class:`~abrank.readout.Readout` (and the charts planned
for it) into a :class:`~abrank.render.blocks.Document`: the title block (opening
sentences, big numbers, stamp), then the sections Headline, Results (with the legend),
Trend (dated readouts with two dates of history or more), Unjudged documents (when the sensitivity check ran), Where relevant documents land, Segments, Queries that moved most, Diagnostics and
Reproducibility. Each section is plain data (headings, paragraphs, tables with columns
and cells, chart references); :mod:`abrank.render.markdown` and :mod:`abrank.render.html`
only draw it. Every number is a number of the summary formatted by :mod:`.text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from abrank.readout import Readout
from abrank.readout.model import ComparisonSummary, Correction, SegmentsSummary, Summary
from abrank.render.blocks import (
    Alert,
    Block,
    Cell,
    ChartRef,
    Code,
    Column,
    Columns,
    Document,
    Facts,
    Figure,
    Heading,
    Headline,
    HeadlineLine,
    KeyFigures,
    Paragraph,
    Section,
    Table,
    TitleBlock,
    own,
    spans,
)
from abrank.render.charts import Chart
from abrank.render.glossary import legend_entries
from abrank.render.headline import (
    alarms,
    caveats,
    gloss,
    headline_lines,
    key_figures,
    notices,
    opening_parts,
    primary_comparisons,
    stamp,
    unit_plural,
)
from abrank.render.interleaved import (
    interleaving_facts,
    interleaving_table,
    is_interleaved,
    preference_section,
)
from abrank.render.moves import largest_moves
from abrank.render.text import (
    SHORT_TEST_NAMES,
    arm_label,
    control_name,
    correction_name,
    experiment_title,
    fmt_count,
    fmt_effect,
    fmt_interval,
    fmt_level,
    fmt_p,
    fmt_p_is,
    fmt_percent,
    fmt_relative_interval,
    fmt_share,
    fmt_signed,
    fmt_value,
    is_number,
    metric_label,
    overall_comparisons,
    segment_comparisons,
    several_treatments,
    split_check_text,
    test_name,
    widened,
)
from abrank.render.trends import trend_section
from abrank.render.typed import as_summary, readout_summary
from abrank.render.unjudged import unjudged_section


def build_document(readout: Readout, charts: Sequence[Chart]) -> Document:
    """The readout as a :class:`Document`; ``charts`` are placed in their sections."""
    summary = readout_summary(readout)
    online = summary.unit is not None
    if is_interleaved(summary):
        charts_section = preference_section(charts)
    else:
        charts_section = _clicks_section(charts) if online else _positions_section(charts)
    sections = [
        _headline_section(summary),
        _results_section(summary, charts),
        trend_section(readout, charts),
        None if online else unjudged_section(summary),
        charts_section,
        _segments_section(summary, charts),
        None if online else _moves_section(readout),
        _diagnostics_section(summary),
        _reproducibility_section(readout),
    ]
    experiment = summary.experiment
    footer = (
        f"abrank {_or_blank(summary.abrank_version)}",
        f"seed {_or_blank(summary.seed)}",
        str(_or_blank(experiment.name if experiment is not None else None)),
    )
    return Document(_title_block(summary), tuple(s for s in sections if s is not None), footer)


def _or_blank(value: Any) -> Any:
    """``value``, or an empty text when the summary does not have it."""
    return "" if value is None else value


# --------------------------------------------------------------------------- title


def _title_block(summary: Summary) -> TitleBlock:
    comps = primary_comparisons(summary)
    opening: list[Block] = [Alert(text, alarm=True) for text in alarms(summary)]
    opening += [Alert(text) for text in notices(summary)]
    for comp in comps:
        parts = [
            own(text) if not user else spans(text)[0] for text, user in opening_parts(summary, comp)
        ]
        opening.append(Paragraph(tuple(parts), role="opening"))
    figures = key_figures(summary)
    if figures:
        opening.append(KeyFigures(tuple(Figure(**f) for f in figures)))
    reading = gloss(summary, comps)
    if reading:
        opening.append(Paragraph(spans(reading), role="gloss"))
    when = stamp(summary)
    if when:
        opening.append(Paragraph(spans(" · ".join(when)), role="stamp"))
    experiment = summary.experiment
    name = experiment.name if experiment is not None else None
    meta = [f"experiment {_or_blank(name)}"]
    if experiment is not None and experiment.owner:
        meta.append(f"owner {experiment.owner}")
    meta.append(f"{summary.design} design")
    if summary.unit is not None:
        meta.append(f"clustered by {summary.unit}")
        diagnostics = summary.diagnostics
        srm = diagnostics.srm if diagnostics is not None else None
        checks = diagnostics.interleaving if diagnostics is not None else None
        split = srm or (checks.first_team if checks is not None else None)
        if split is not None:
            state = "ALARM" if split.alarm else "ok"
            what = "sample ratio" if srm is not None else "first team"
            meta.append(f"{what} {state} ({fmt_p_is(split.p_value)})")
    control = control_name(summary)
    if control:
        meta.append(f"control {arm_label(summary, control)}")
    return TitleBlock(
        experiment_title(summary),
        tuple(opening),
        str((experiment.description if experiment is not None else None) or ""),
        tuple(meta),
    )


# --------------------------------------------------------------------------- headline


def _warnings(summary: Summary) -> list[Alert]:
    diagnostics = summary.diagnostics
    shown, above = alarms(summary), notices(summary)
    return [
        Alert(str(w), alarm=str(w) in shown)
        for w in (diagnostics.warnings if diagnostics is not None else ())
        if str(w) not in above
    ]


def _headline_section(summary: Summary) -> Section:
    comps = overall_comparisons(summary)
    lines = headline_lines(summary)
    blocks: list[Block] = []
    if lines:
        blocks.append(
            Headline(
                tuple(
                    HeadlineLine(
                        line,
                        str(c.verdict or "inconclusive"),
                        "; ".join(caveat.short for caveat in caveats(summary, c)),
                    )
                    for c, line in zip(comps, lines, strict=True)
                )
            )
        )
    else:
        blocks.append(Paragraph((own("No comparisons."),)))
    sequential = sequential_sentence(summary)
    if sequential is not None:
        blocks.append(Paragraph((own(sequential),), role="note"))
    blocks += _warnings(summary)
    return Section("headline", "Headline", tuple(blocks))


def sequential_sentence(summary: Summary) -> str | None:
    """What sequential inference means and costs, for a readout with ``sequential`` set:
    the intervals and p-values stay valid however often a cumulative readout is looked at,
    and are this many times as wide as fixed-horizon ones."""
    sequential = summary.sequential
    if sequential is None:
        return None
    cost = (
        f": intervals {sequential.width_ratio:.1f}x as wide as fixed-horizon ones at this "
        "sample size"
        if sequential.width_ratio is not None
        else ""
    )
    if sequential.tuning_source == "sample_size":
        tuned = "tightest at each comparison's own sample size"
        if sequential.tuning is not None:
            tuned += f", N* = {fmt_count(sequential.tuning)} for the primary metric"
    else:
        tuned = f"tightest at N* = {fmt_count(sequential.tuning)}"
        if sequential.tuning_source:
            tuned += f" ({sequential.tuning_source})"
    return (
        "The intervals and p-values are sequential (always valid under daily looks: an "
        f"asymptotic confidence sequence, Waudby-Smith et al., {tuned}){cost}."
    )


# --------------------------------------------------------------------------- results


def _p_columns(comps: Sequence[ComparisonSummary]) -> list[str]:
    return list(dict.fromkeys(k for c in comps for k in (c.p_values or {})))


def _number_columns(comps: Sequence[ComparisonSummary]) -> list[tuple[str, str]]:
    """The results table's number columns: (key of the data cell, header)."""
    levels = {fmt_level(c) for c in comps}
    level = levels.pop() if len(levels) == 1 else None
    corrections = {correction_name(c.correction) for c in comps} - {None}
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


def _charts_of(charts: Sequence[Chart], section: str) -> list[ChartRef]:
    return [ChartRef(c.name, c.title, c.caption) for c in charts if c.section == section]


def _results_section(summary: Summary, charts: Sequence[Chart]) -> Section:
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
        if is_interleaved(summary):
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
                        f"{'' if is_interleaved(summary) else 'Δ is treatment − control; '}"
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
    blocks += _charts_of(charts, "results")
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


def _clicks_section(charts: Sequence[Chart]) -> Section:
    shown = _charts_of(charts, "clicks")
    blocks: list[Block] = list(shown) or [Paragraph((own("No click data in this readout."),))]
    return Section("clicks", "Clicks by position and per user", tuple(blocks))


def _positions_section(charts: Sequence[Chart]) -> Section:
    shown = _charts_of(charts, "positions")
    blocks: list[Block] = list(shown) or [Paragraph((own("No rank data in this readout."),))]
    return Section("positions", "Where relevant documents land", tuple(blocks))


# --------------------------------------------------------------------------- segments


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


def _segments_section(summary: Summary, charts: Sequence[Chart]) -> Section | None:
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
    blocks += _charts_of(charts, "segments")
    return Section("segments", "Segments", tuple(blocks))


# --------------------------------------------------------------------------- moves


def _moves_section(readout: Readout) -> Section | None:
    moves = largest_moves(readout)
    if not moves:
        return None
    summary = readout_summary(readout)
    diagnostics = summary.diagnostics
    policy = diagnostics.missing_policy if diagnostics is not None else None
    scored = "left out of the comparison" if policy == "drop" else "scored 0"
    blocks: list[Block] = []
    for move in moves:
        name = arm_label(summary, move.treatment)
        label = metric_label(summary, move.metric)
        parts = []
        for title, frame in (
            (f"Largest losses of {name}", move.losses),
            (f"Largest wins of {name}", move.wins),
        ):
            heading = Heading(title, note=label)
            if frame.empty:
                parts.append((heading, Paragraph((own("None."),))))
                continue
            marked = bool(frame["missing_in"].astype(bool).any())
            columns = (
                Column("query", "left", "text"),
                Column("control"),
                Column("treatment"),
                Column("Δ"),
                *((Column("log", "left", "text"),) if marked else ()),
            )
            rows = tuple(
                (
                    Cell(str(q), css="text"),
                    Cell(fmt_value(c), own=True),
                    Cell(fmt_value(t), own=True),
                    Cell(fmt_signed(d), own=True),
                    *((_missing_cell(summary, m, scored),) if marked else ()),
                )
                for q, c, t, d, m in frame[
                    ["query_id", "control", "treatment", "delta", "missing_in"]
                ].itertuples(index=False)
            )
            parts.append((heading, Table(columns, rows, "moves")))
        blocks.append(Columns(tuple(parts)))
        absent = int(
            move.losses["missing_in"]
            .str.split(";")
            .map(lambda arms, t=move.treatment: t in arms)
            .sum()
        )
        if absent:
            blocks.append(
                Paragraph(
                    (
                        own(f"{absent} of the {len(move.losses)} largest losses of "),
                        *spans(name),
                        own(
                            f" are queries missing from its log ({scored}, under "
                            f"missing_queries: {policy}), not worse rankings; "
                            "per_query.csv marks them in its missing_in column and "
                            "summary.json lists them in diagnostics.missing_queries."
                        ),
                    ),
                    role="note",
                )
            )
    return Section("queries", "Queries that moved most", tuple(blocks))


def _missing_cell(summary: Summary, missing_in: str, scored: str) -> Cell:
    """The log column of a moved query: which arms' logs lacked it (empty when none)."""
    if not missing_in:
        return Cell("", css="text")
    arms = ", ".join(arm_label(summary, arm) for arm in missing_in.split(";"))
    return Cell(f"missing from {arms} ({scored})", css="text missing")


# --------------------------------------------------------------------------- diagnostics


def _online_table(summary: Summary) -> Table:
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
                Cell(str(_or_blank(arm.role)), css="text"),
                Cell(fmt_count(units)),
                Cell(fmt_count(impressions)),
                Cell(fmt_value(per_unit)),
                Cell(fmt_share(units / total if units is not None and total else None)),
                Cell(fmt_share(expected)),
            )
        )
    return Table(tuple(columns), tuple(rows), "diagnostics")


def _online_facts(summary: Summary) -> list[tuple[str, str]]:
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


def _diagnostics_table(summary: Summary) -> Table:
    """The per-arm diagnostics: queries, missing, without judgments, judged@k."""
    if is_interleaved(summary):
        return interleaving_table(summary)
    if summary.unit is not None:
        return _online_table(summary)
    diagnostics = summary.diagnostics
    judged = diagnostics.judged_at_k if diagnostics is not None else None
    judged_arms = judged.arms if judged is not None else None
    unjudged = diagnostics.unjudged_queries if diagnostics is not None else None
    queries_of = (diagnostics.queries if diagnostics is not None else None) or {}
    missing_of = (diagnostics.missing if diagnostics is not None else None) or {}
    columns = [Column(h, "left", "text") for h in ("arm", "label", "role")]
    columns += [Column("queries"), Column("missing")]
    if isinstance(unjudged, dict):
        columns.append(Column("without judgments"))
    if judged_arms:
        columns.append(Column(f"judged@{judged.k}"))
    rows = []
    for arm in summary.arms or ():
        name = arm.name
        queries = queries_of.get(name, arm.queries)
        row = [
            Cell(str(name), css="text"),
            Cell(str(arm.label or name), css="text"),
            Cell(str(_or_blank(arm.role)), css="text"),
            Cell(fmt_count(queries)),
            Cell(fmt_count(missing_of.get(name))),
        ]
        if isinstance(unjudged, dict):
            row.append(Cell(fmt_count(unjudged.get(name))))
        if judged_arms:
            row.append(Cell(fmt_value(judged_arms.get(name))))
        rows.append(tuple(row))
    return Table(tuple(columns), tuple(rows), "diagnostics")


def _diagnostic_facts(summary: Summary) -> list[tuple[str, str]]:
    if is_interleaved(summary):
        return interleaving_facts(summary)
    if summary.unit is not None:
        return _online_facts(summary)
    diagnostics = summary.diagnostics
    if diagnostics is None:
        return []
    facts = [
        ("queries analysed", diagnostics.analysed_queries),
        ("judged queries", diagnostics.judged_queries),
        ("queries in both arms (matched)", diagnostics.matched),
        ("queries without a relevant judgment", diagnostics.without_relevant),
    ]
    shown = [(name, fmt_count(value)) for name, value in facts if value is not None]
    undefined = diagnostics.undefined
    counts = (undefined.metrics if undefined is not None else None) or {}
    if counts:
        effect = "scored 0" if undefined.policy == "zero" else "left out"
        text = ", ".join(
            f"{metric_label(summary, name)} {fmt_count(count)}" for name, count in counts.items()
        )
        shown.append((f"undefined values per metric ({effect})", text))
    if diagnostics.missing_policy:
        shown.append(("missing-query policy", str(diagnostics.missing_policy)))
    return shown


def _diagnostics_section(summary: Summary) -> Section:
    blocks: list[Block] = [
        _diagnostics_table(summary),
        Facts(tuple(_diagnostic_facts(summary))),
        *_warnings(summary),
    ]
    return Section("diagnostics", "Diagnostics", tuple(blocks))


# --------------------------------------------------------------------------- reproducibility


def _settings(summary: Summary) -> list[tuple[str, str]]:
    """The analysis settings shown for reproducibility, as (name, text) pairs."""
    correction: Any = summary.correction
    if isinstance(correction, Correction):
        correction = correction.to_dict()
    if isinstance(correction, dict):
        correction = ", ".join(f"{k}: {v}" for k, v in correction.items())
    diagnostics = summary.diagnostics
    pairs = [
        ("abrank version", summary.abrank_version),
        ("seed", summary.seed),
        ("config", summary.config_path),
        ("design", summary.design),
        ("primary metric", summary.primary_metric),
        ("metrics", ", ".join(map(str, summary.metrics or ())) or None),
        ("primary test", summary.primary_test),
        ("tests", ", ".join(map(str, summary.tests)) if summary.tests else None),
        ("alpha", summary.alpha),
        ("confidence level", summary.confidence_level),
        ("resamples", fmt_count(summary.n_resamples) if summary.n_resamples is not None else None),
        ("multiple-testing correction", correction),
        ("relevance threshold", summary.relevance_threshold),
        ("gain", summary.gain),
        ("depth", summary.depth),
        ("missing queries", diagnostics.missing_policy if diagnostics is not None else None),
    ]
    return [(name, str(value)) for name, value in pairs if value is not None]


def _reproducibility_section(readout: Readout) -> Section:
    summary = readout_summary(readout)
    blocks: list[Block] = [Facts(tuple(_settings(summary)))]
    inputs = summary.inputs or ()
    if inputs:
        columns = (
            Column("role", "left", "text"),
            Column("arm", "left", "text"),
            Column("path", "left", "text"),
            Column("rows"),
            Column("sha256", "left", "text"),
        )
        rows = tuple(
            (
                Cell(str(_or_blank(i.role)), css="text"),
                Cell(str(i.arm or ""), css="text"),
                Cell(str(_or_blank(i.path)), css="text code"),
                Cell(fmt_count(i.rows)),
                Cell(str(_or_blank(i.sha256)), css="hash", code=True),
            )
            for i in inputs
        )
        blocks += [Heading("Data files"), Table(columns, rows, "inputs")]
    if readout.config_text:
        blocks += [Heading("Config"), Code(readout.config_text, "yaml")]
    return Section("reproducibility", "Reproducibility", tuple(blocks))
