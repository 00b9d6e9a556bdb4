"""The sections only an offline readout (queries replayed through each arm) has.

Where the first relevant documents land (:mod:`abrank.render.position_charts`), the
queries that moved most (:mod:`abrank.render.moves`), and the per-arm diagnostics of a
replay: queries, queries missing from a log, queries without judgments, judged@k.
"""

from __future__ import annotations

from collections.abc import Sequence

from abrank.readout.core import Readout
from abrank.readout.model import Summary
from abrank.readout.typed import readout_summary
from abrank.render.blocks import (
    Block,
    Cell,
    Column,
    Columns,
    Heading,
    Paragraph,
    Section,
    Table,
    own,
    spans,
)
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.moves import largest_moves
from abrank.render.text import arm_label, fmt_count, fmt_signed, fmt_value, metric_label


def positions_section(charts: Sequence[Chart]) -> Section:
    """Where Relevant Documents Land: the position charts."""
    shown = chart_refs(charts, "positions")
    blocks: list[Block] = list(shown) or [Paragraph((own("No rank data in this readout."),))]
    return Section("positions", "Where relevant documents land", tuple(blocks))


def moves_section(readout: Readout) -> Section | None:
    """Queries That Moved Most: per treatment, its largest losses and wins."""
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
        parts: list[tuple[Block, ...]] = []
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


def offline_table(summary: Summary) -> Table:
    """The per-arm diagnostics: queries, missing, without judgments, judged@k."""
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
    if judged is not None and judged_arms:
        columns.append(Column(f"judged@{judged.k}"))
    rows = []
    for arm in summary.arms or ():
        name = arm.name
        queries = queries_of.get(name, arm.queries)
        row = [
            Cell(str(name), css="text"),
            Cell(str(arm.label or name), css="text"),
            Cell(str(arm.role or ""), css="text"),
            Cell(fmt_count(queries)),
            Cell(fmt_count(missing_of.get(name))),
        ]
        if isinstance(unjudged, dict):
            row.append(Cell(fmt_count(unjudged.get(name))))
        if judged_arms:
            row.append(Cell(fmt_value(judged_arms.get(name))))
        rows.append(tuple(row))
    return Table(tuple(columns), tuple(rows), "diagnostics")


def offline_facts(summary: Summary) -> list[tuple[str, str]]:
    """The queries analysed, judged, matched and without a relevant judgment; the
    undefined values per metric and the missing-query policy."""
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
    if counts and undefined is not None:
        effect = "scored 0" if undefined.policy == "zero" else "left out"
        text = ", ".join(
            f"{metric_label(summary, name)} {fmt_count(count)}" for name, count in counts.items()
        )
        shown.append((f"undefined values per metric ({effect})", text))
    if diagnostics.missing_policy:
        shown.append(("missing-query policy", str(diagnostics.missing_policy)))
    return shown
