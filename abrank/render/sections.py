"""One model of a readout's sections, built once from the summary, drawn by every format.

:func:`build_document` turns a :class:`~abrank.readout.Readout` (and the charts planned
for it) into a :class:`~abrank.render.blocks.Document`: the title block (opening
sentences, big numbers, stamp), then the sections Headline, Results (with the legend),
Trend (dated readouts with two dates of history or more), Unjudged documents (when the
sensitivity check ran), the charts of the kind of readout (where relevant documents land,
clicks by position, or the preference per impression), Segments, Queries that moved most,
Diagnostics and Reproducibility. Each section is plain data (headings, paragraphs, tables
with columns and cells, chart references); :mod:`abrank.render.markdown` and
:mod:`abrank.render.html` only draw it. Every number is a number of the summary formatted
by :mod:`.text`.

This module holds the sections every readout has; what each design adds
(:class:`KindSections`) its folder defines (:meth:`abrank.designs.Design.report`, e.g.
:mod:`abrank.designs.offline.sections`); the Results and Segments
sections are in :mod:`.results_section`, the Trend section in :mod:`.trend_section`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from abrank.readout.core import Readout
from abrank.readout.model import Correction, Summary
from abrank.readout.typed import control_name, overall_comparisons, readout_summary
from abrank.render.blocks import (
    Alert,
    Block,
    Cell,
    Code,
    Column,
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
from abrank.render.chart_style import Chart
from abrank.render.decision_section import decision_opening, decision_section
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
)
from abrank.render.machine_labels import machine_labels_section
from abrank.render.results_section import results_section, segments_section
from abrank.render.text import arm_label, experiment_title, fmt_count, fmt_p_is
from abrank.render.trend_section import trend_section
from abrank.render.unjudged import unjudged_section


@dataclass(frozen=True)
class KindSections:
    """What a design adds to the sections every readout has: the section of its own
    charts, its per-arm diagnostics table and facts, and whether it compares queries (then
    it also has the Unjudged documents section, and ``moves``: the Queries that moved
    most), and ``moved``: the What moved section."""

    charts_section: Callable[[Sequence[Chart]], Section]
    diagnostics_table: Callable[[Summary], Table]
    diagnostic_facts: Callable[[Summary], list[tuple[str, str]]]
    per_query: bool = False
    moves: Callable[[Readout], Section | None] | None = None
    moved: Callable[[Readout, Sequence[Chart]], Section | None] | None = None


def kind_sections(summary: Summary) -> KindSections:
    """The sections that the summary's design adds (:meth:`abrank.designs.Design.report`)."""
    from abrank.design_registry import DESIGNS

    sections: KindSections = DESIGNS.of_summary(summary).report()
    return sections


def build_document(readout: Readout, charts: Sequence[Chart]) -> Document:
    """The readout as a :class:`Document`; ``charts`` are placed in their sections."""
    summary = readout_summary(readout)
    kind = kind_sections(summary)
    sections = [
        decision_section(summary),
        _headline_section(summary),
        results_section(summary, charts),
        trend_section(readout, charts),
        unjudged_section(summary) if kind.per_query else None,
        machine_labels_section(summary),
        kind.charts_section(charts),
        segments_section(summary, charts),
        kind.moved(readout, charts) if kind.moved is not None else None,
        kind.moves(readout) if kind.moves is not None else None,
        _diagnostics_section(summary, kind),
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
    decision = decision_opening(summary)
    opening: list[Block] = [decision] if decision is not None else []
    opening += [Alert(text, alarm=True) for text in alarms(summary)]
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


# --------------------------------------------------------------------------- diagnostics


def _diagnostics_section(summary: Summary, kind: KindSections) -> Section:
    blocks: list[Block] = [
        kind.diagnostics_table(summary),
        Facts(tuple(kind.diagnostic_facts(summary))),
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
