"""The readout's section on unjudged documents: each verdict as judged and on judged
documents only, side by side, and in words which verdicts depend on unjudged documents;
and for rbp, the range its residual leaves open in each arm.

It is drawn from ``diagnostics.unjudged`` (:class:`~abrank.readout.model.UnjudgedCheck`),
when the check ran (judged@k differs between arms by 2 points or more, or is below 0.9 in
an arm), and from ``diagnostics.rbp_residual``, whenever an rbp metric was asked for; it
computes nothing.
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
    fmt_count,
    fmt_interval,
    fmt_p,
    fmt_signed,
    fmt_value,
    metric_label,
    several_treatments,
)

__all__ = ["rbp_range_table", "unjudged_section", "unjudged_table"]


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


def rbp_range_table(summary: Summary, ranges: dict[str, dict[str, dict]]) -> Table:
    """Per rbp metric and arm: rbp on the judged documents, its residual, and the range
    [rbp, rbp + residual] the unjudged documents leave open."""
    columns = (
        Column("metric", "left", "text"),
        Column("arm", "left", "text"),
        Column("RBP"),
        Column("residual"),
        Column("range"),
        Column("queries"),
    )
    rows = []
    for metric, arms in ranges.items():
        label = metric_label(summary, metric)
        for arm, figures in arms.items():
            low, upper = figures.get("rbp"), figures.get("upper")
            shown = fmt_interval((low, upper), fmt_value)
            rows.append(
                (
                    Cell(label, "metric", metric, True, "text"),
                    Cell(arm_label(summary, arm), "arm", arm, True, "text"),
                    Cell(fmt_value(low), "rbp", low, True),
                    Cell(
                        fmt_value(figures.get("residual")),
                        "residual",
                        figures.get("residual"),
                        True,
                    ),
                    Cell(shown, "range", [low, upper], True),
                    Cell(
                        fmt_count(figures.get("queries")), "queries", figures.get("queries"), True
                    ),
                )
            )
    return Table(columns, tuple(rows), "rbp-residual")


def _rbp_blocks(summary: Summary, ranges: dict[str, dict[str, dict]]) -> list[Block]:
    """The rbp range table with a sentence on how to read it, and whether the ranges of
    control and treatment overlap (then judging more could reverse the order)."""
    text = (
        "RBP counts unjudged documents as not relevant; its residual is the most they, and "
        "the places past the end of each ranking, could add. Each arm's RBP lies in the range "
        "below whatever the unjudged documents turn out to be (means over the queries on "
        "which RBP is defined)."
    )
    control = next((arm.name for arm in summary.arms if arm.role == "control"), None)
    open_order = []
    for metric, arms in ranges.items():
        base = arms.get(control or "")
        for arm, figures in arms.items():
            if arm == control or base is None or None in (figures.get("rbp"), base.get("rbp")):
                continue
            low, high = sorted((figures, base), key=lambda f: f["rbp"])
            if high["rbp"] < low["upper"]:
                open_order.append(f"{metric_label(summary, metric)} ({arm_label(summary, arm)})")
    if open_order:
        text += (
            f" The ranges overlap for {join_names(open_order)}: judging the unjudged documents "
            "could change which arm is ahead."
        )
    return [
        rbp_range_table(summary, ranges),
        Paragraph((own(text),), role="note"),
    ]


def unjudged_section(summary: Summary) -> Section | None:
    """The section, or None when the check did not run and no rbp metric was asked for
    (or the summary has neither)."""
    diagnostics = summary.diagnostics
    check = diagnostics.unjudged if diagnostics is not None else None
    ranges = diagnostics.rbp_residual if diagnostics is not None else None
    rbp_blocks = _rbp_blocks(summary, ranges) if ranges else []
    if check is None or not check.triggered:
        if not rbp_blocks:
            return None
        return Section("unjudged", "Unjudged documents", tuple(rbp_blocks))
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
    return Section("unjudged", "Unjudged documents", tuple(blocks + rbp_blocks))


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
