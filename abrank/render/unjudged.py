"""The readout's section on unjudged documents: each verdict as judged and on judged
documents only, side by side, and in words which verdicts depend on unjudged documents.

It is drawn from ``diagnostics.unjudged`` (:class:`~abrank.readout.model.UnjudgedCheck`)
only, and only when the check ran (judged@k differs between arms by 2 points or more, or is
below 0.9 in an arm); it computes nothing.
"""

from __future__ import annotations

import dataclasses

from abrank.metrics import parse_metric
from abrank.metrics.registry import join_names
from abrank.readout.model import ComparisonSummary, Summary, UnjudgedCheck
from abrank.readout.typed import overall_comparisons
from abrank.render.blocks import Block, Cell, Column, Paragraph, Section, Table, own
from abrank.render.text import (
    arm_label,
    fmt_interval,
    fmt_p,
    fmt_signed,
    metric_label,
    several_treatments,
)

__all__ = ["unjudged_section", "unjudged_table"]


def _twins(check: UnjudgedCheck, plain: list[ComparisonSummary]) -> list[tuple]:
    """(comparison as judged, its judged-only repetition) for every repeated comparison."""
    condensed = {(_plain_name(c.metric), c.treatment): c for c in check.condensed}
    return [
        (comp, condensed[(comp.metric, comp.treatment)])
        for comp in plain
        if (comp.metric, comp.treatment) in condensed
    ]


def _plain_name(name: str) -> str:
    """``ndcg@10(judged)`` -> ``ndcg@10``."""
    return dataclasses.replace(parse_metric(name), judged_only=False).name


def _side(comp: ComparisonSummary, view: str) -> list[Cell]:
    verdict = str(comp.verdict or "inconclusive")
    return [
        Cell(fmt_signed(comp.delta), f"{view}.delta", comp.delta, True, "", True),
        Cell(fmt_interval(comp.ci), f"{view}.ci", comp.ci, True, "wrap", True),
        Cell(fmt_p(comp.p_adjusted), f"{view}.p_adjusted", comp.p_adjusted, True, "", True),
        Cell(verdict, f"{view}.verdict", comp.verdict, True, f"verdict {verdict}", True),
    ]


def unjudged_table(summary: Summary, pairs: list[tuple]) -> Table:
    """Metric (and treatment), then Δ, CI, adjusted p and verdict as judged, then the same
    on judged documents only."""
    several = several_treatments([comp for comp, _ in pairs])
    columns = [Column("metric", "left", "text")]
    if several:
        columns.append(Column("treatment", "left", "text"))
    for view in ("as judged", "judged only"):
        columns += [
            Column(f"Δ ({view})"),
            Column(f"CI ({view})"),
            Column(f"p adj. ({view})"),
            Column(f"verdict ({view})", "left", "verdict"),
        ]
    rows = []
    for comp, other in pairs:
        row = [Cell(metric_label(summary, comp.metric), "metric", comp.metric, True, "text")]
        if several:
            label = arm_label(summary, comp.treatment)
            row.append(Cell(label, "treatment", comp.treatment, True, "text"))
        rows.append(tuple(row + _side(comp, "judged") + _side(other, "judged_only")))
    return Table(tuple(columns), tuple(rows), "results unjudged")


def unjudged_section(summary: Summary) -> Section | None:
    """The section, or None when the check did not run (or the summary has none)."""
    diagnostics = summary.diagnostics
    check = diagnostics.unjudged if diagnostics is not None else None
    if check is None or not check.triggered:
        return None
    pairs = _twins(check, overall_comparisons(summary))
    blocks: list[Block] = [
        Paragraph(
            (
                own(
                    f"{_capital(check.reason or '')}. Unjudged documents count as not "
                    "relevant, so every comparison of a metric that reads grades is repeated "
                    "on judged documents only: each ranking loses its unjudged documents "
                    "before it is scored (trec_eval -J), with the same tests and seed, "
                    "adjusted as a family of its own."
                ),
            )
        )
    ]
    if pairs:
        blocks.append(unjudged_table(summary, pairs))
    blocks.append(Paragraph((own(_in_words(summary, pairs)),), role="note"))
    return Section("unjudged", "Unjudged documents", tuple(blocks))


def _in_words(summary: Summary, pairs: list[tuple]) -> str:
    """Which verdicts depend on unjudged documents, in one or two sentences."""
    if not pairs:
        return "No comparison reads grades, so none was repeated."
    several = several_treatments([comp for comp, _ in pairs])

    def subject(comp: ComparisonSummary) -> str:
        label = metric_label(summary, comp.metric)
        return f"{label} ({arm_label(summary, comp.treatment)})" if several else label

    changed = [(c, o) for c, o in pairs if c.verdict != o.verdict]
    held = [c for c, o in pairs if c.verdict == o.verdict]
    if not changed:
        return (
            f"Every verdict holds on judged documents only ({join_names([subject(c) for c in held])}): "
            "none of them comes from unjudged documents counted as not relevant (whether "
            "those documents are relevant, only judging them can tell)."
        )
    parts = [
        f"{subject(c)}: {c.verdict or 'inconclusive'} as judged, "
        f"{o.verdict or 'inconclusive'} on judged documents only"
        for c, o in changed
    ]
    text = (
        f"{'This verdict depends' if len(changed) == 1 else 'These verdicts depend'} on "
        f"unjudged documents: {'; '.join(parts)}."
    )
    if held:
        text += (
            f" {'This one holds' if len(held) == 1 else 'These hold'} on judged documents "
            f"only: {join_names([subject(c) for c in held])}."
        )
    return text


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
