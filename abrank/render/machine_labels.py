"""The readout's section on machine-labelled judgments: how far the machine labels agree
with the human ones, the three estimates of every comparison side by side (human labels
only, machine-filled, prediction-powered) and, in words, the verdicts that change.

It is drawn from ``diagnostics.machine_labels`` (:class:`~abrank.readout.model.MachineLabels`)
and the comparisons' ``estimates``, when the readout has them; it computes nothing.
"""

from __future__ import annotations

from typing import Any

from abrank.readout.model import MachineLabels, Summary
from abrank.readout.typed import overall_comparisons
from abrank.render.blocks import Block, Cell, Column, Paragraph, Section, Span, Table, own
from abrank.render.text import (
    arm_label,
    fmt_count,
    fmt_interval,
    fmt_signed,
    fmt_value,
    metric_label,
    several_treatments,
)

__all__ = ["machine_labels_section"]

#: The estimates as the section names them.
ESTIMATE_NAMES = {
    "human": "human labels only",
    "filled": "machine-filled",
    "ppi": "prediction-powered",
}


def _number(value: Any, key: str) -> Cell:
    return Cell(fmt_value(value), key, value, True)


def agreement_table(summary: Summary, labels: MachineLabels) -> Table:
    """Overlap, kappa (linear, quadratic) and mean difference, overall and per arm."""
    columns = (
        Column("documents", "left", "text"),
        Column("judged by both"),
        Column("κ linear"),
        Column("κ quadratic"),
        Column("machine − human"),
    )
    overall = {
        "overlap": labels.overlap,
        "kappa_linear": labels.kappa_linear,
        "kappa_quadratic": labels.kappa_quadratic,
        "mean_difference": labels.mean_difference,
    }
    rows = [("all", "all", overall)] + [
        (f"{arm_label(summary, arm)} top {labels.k}", arm, figures)
        for arm, figures in labels.per_arm.items()
    ]
    return Table(
        columns,
        tuple(
            (
                Cell(label, "documents", key, True, "text"),
                Cell(fmt_count(f.get("overlap")), "overlap", f.get("overlap"), True),
                _number(f.get("kappa_linear"), "kappa_linear"),
                _number(f.get("kappa_quadratic"), "kappa_quadratic"),
                Cell(
                    fmt_signed(f.get("mean_difference")),
                    "mean_difference",
                    f.get("mean_difference"),
                    True,
                ),
            )
            for label, key, f in rows
        ),
        "machine-agreement",
    )


def confusion_table(labels: MachineLabels) -> Table:
    """The confusion matrix: a row per human grade, a column per machine grade."""
    grades = list(labels.confusion.get("grades", []))
    counts = list(labels.confusion.get("counts", []))
    columns = (Column("human grade / machine grade", "left", "text"),) + tuple(
        Column(str(g)) for g in grades
    )
    rows = tuple(
        (Cell(str(g), "human", g, True, "text"),)
        + tuple(
            Cell(fmt_count(n), f"machine {m}", n, True) for m, n in zip(grades, row, strict=False)
        )
        for g, row in zip(grades, counts, strict=False)
    )
    return Table(columns, rows, "machine-confusion")


def estimates_table(summary: Summary) -> Table | None:
    """Per overall comparison: Δ, CI and verdict under each of the three estimates."""
    comps = [c for c in overall_comparisons(summary) if c.estimates]
    if not comps:
        return None
    several = several_treatments(comps)
    columns = [Column("metric", "left", "text")]
    if several:
        columns.append(Column("treatment", "left", "text"))
    for name in ESTIMATE_NAMES.values():
        columns += [Column(f"Δ ({name})"), Column(f"CI ({name})", "right", "wrap")]
        columns.append(Column(f"verdict ({name})", "left", "verdict"))
    rows = []
    for comp in comps:
        row = [Cell(metric_label(summary, comp.metric), "metric", comp.metric, True, "text")]
        if several:
            row.append(
                Cell(arm_label(summary, comp.treatment), "treatment", comp.treatment, True, "text")
            )
        for key in ESTIMATE_NAMES:
            est = (comp.estimates or {}).get(key) or {}
            verdict = str(est.get("verdict") or "not tested")
            row += [
                Cell(fmt_signed(est.get("delta")), f"{key}.delta", est.get("delta"), True),
                Cell(fmt_interval(est.get("ci")), f"{key}.ci", est.get("ci"), True, "wrap"),
                Cell(verdict, f"{key}.verdict", est.get("verdict"), True, f"verdict {verdict}"),
            ]
        rows.append(tuple(row))
    return Table(tuple(columns), tuple(rows), "results machine-estimates")


def _opening(summary: Summary, labels: MachineLabels) -> tuple[Span, ...]:
    """What the two kinds of label cover and how far they agree; the model's name (the
    config's text) is user text."""
    chosen = ESTIMATE_NAMES.get(labels.estimate, labels.estimate)
    tau = "n/a" if labels.tau is None else f"{labels.tau:.2f}"
    model = (own(" by "), Span(labels.model)) if labels.model else ()
    return (
        own(f"Humans judged {fmt_count(labels.human_queries)} queries; machine labels"),
        *model,
        own(
            f" cover {fmt_count(labels.machine_queries)}. On the {fmt_count(labels.overlap)} "
            f"documents both judged, weighted Cohen's κ is {fmt_value(labels.kappa_linear)} "
            f"(linear) and {fmt_value(labels.kappa_quadratic)} (quadratic), and the machine "
            f"grades {fmt_signed(labels.mean_difference)} above the human ones on average; "
            f"Kendall's τ between the arms' metric means under the two kinds of label is "
            f"{tau}. Every comparison is made three ways: on the human labels only, on "
            "machine-filled labels (the machine's grade where no human judged), and by "
            "prediction-powered inference (PPI++: the machine-label delta, corrected by the "
            "human-minus-machine delta on the human-judged queries, valid when those are a "
            f"uniform random sample of the queries). The comparisons above are the {chosen} "
            "ones (analysis.judgments_estimate)."
        ),
    )


def _in_words(summary: Summary, labels: MachineLabels) -> str:
    changed = labels.verdicts_changed
    if not changed:
        return "Every verdict is the same under the three estimates."
    several = len({entry.get("treatment") for entry in changed}) > 1
    parts = []
    for entry in changed:
        subject = metric_label(summary, str(entry.get("metric")))
        if several:
            subject += f" ({arm_label(summary, str(entry.get('treatment')))})"
        views = ", ".join(
            f"{entry.get(key) or 'not tested'} {name}" for key, name in ESTIMATE_NAMES.items()
        )
        parts.append(f"{subject}: {views}")
    return (
        f"{'This verdict depends' if len(parts) == 1 else 'These verdicts depend'} on the "
        f"labels: {'; '.join(parts)}. A machine-filled verdict that the prediction-powered "
        "one does not share comes from the machine labels' disagreement with the humans."
    )


def machine_labels_section(summary: Summary) -> Section | None:
    """The section, or None when the readout has no machine labels."""
    diagnostics = summary.diagnostics
    labels = diagnostics.machine_labels if diagnostics is not None else None
    if labels is None:
        return None
    blocks: list[Block] = [
        Paragraph(_opening(summary, labels)),
        agreement_table(summary, labels),
        confusion_table(labels),
    ]
    table = estimates_table(summary)
    if table is not None:
        blocks.append(table)
    blocks.append(Paragraph((own(_in_words(summary, labels)),), role="note"))
    return Section("machine-labels", "Machine-labelled judgments", tuple(blocks))
