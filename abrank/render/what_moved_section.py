"""The "What moved" section of an offline readout: why the primary metric moved.

Per treatment: the primary metric's change split by what the documents did in its top k
(a table, and the waterfall chart of :mod:`.explain_charts`), the same for every metric
that lost with the relevant documents that left its top k, the split per segment, the query
that lost most and the one that won most with their two lists side by side, and how alike
the arms' lists are (RBO, and the queries whose top k did not change). The numbers are
:func:`abrank.explain.what_moved.what_moved`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from abrank.explain.what_moved import (
    DroppedDocuments,
    MetricSplit,
    QuerySides,
    SegmentSplit,
    WhatMoved,
    readout_what_moved,
)
from abrank.metrics import parse_metric
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
    Span,
    Table,
    own,
)
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.text import arm_label, fmt_count, fmt_share, fmt_signed, fmt_value, metric_label

MOVE_NAMES = {
    "relevant_promoted": "promoted",
    "relevant_demoted": "demoted",
    "relevant_entered": "entering",
    "relevant_dropped": "leaving",
    "unjudged_entered": "unjudged entering",
    "unchanged": "kept their rank",
    "other": "not relevant (any move)",
}
"""How the report names each move of :mod:`abrank.explain.moves`."""


def what_moved_section(readout: Readout, charts: Sequence[Chart]) -> Section | None:
    """What Moved: the section of the module text, or None without explanation tables."""
    explained = readout_what_moved(readout)
    if not explained:
        return None
    summary = readout_summary(readout)
    blocks: list[Block] = []
    several = len(explained) > 1
    for moved in explained:
        if several:
            blocks.append(Heading(f"{arm_label(summary, moved.treatment)} against the control"))
        blocks += _split_blocks(summary, moved.primary)
        if moved is explained[0]:
            blocks += chart_refs(charts, "moved")[:1]
        for split, dropped in zip(moved.losses, moved.dropped, strict=True):
            blocks += _loss_blocks(summary, split, dropped)
        for segment in moved.segments:
            blocks += _segment_blocks(summary, moved.primary, segment)
        blocks += _extreme_blocks(summary, moved)
        blocks += _similarity_blocks(summary, moved)
    blocks += chart_refs(charts, "moved")[1:]
    return Section("moved", "What moved", tuple(blocks))


def _k(metric: str) -> str:
    k = parse_metric(metric).k
    return f"top {k}" if k is not None else "lists"


def _split_blocks(summary: Summary, split: MetricSplit) -> list[Block]:
    parts = split.parts
    label = metric_label(summary, split.metric)
    moving = [move for move in parts.index if parts.at[move, "change"] != 0]
    named = [f"{MOVE_NAMES[move]} {fmt_signed(parts.at[move, 'change'])}" for move in moving]
    unjudged = parts.loc["unjudged_entered"]
    text = (
        f"{label} changed by {fmt_signed(split.change)} on average over "
        f"{fmt_count(split.queries)} queries. By what the documents did in the "
        f"{_k(split.metric)}, relevant documents: {', '.join(named) or 'none moved'}."
    )
    if unjudged["documents"] > 0:
        text += (
            f" Unjudged documents entering count for nothing (a document without a judgment "
            f"is taken as not relevant): {fmt_count(unjudged['documents'])} entered the "
            f"{_k(split.metric)} in {fmt_count(unjudged['queries'])} queries; the Unjudged "
            "documents section says how far that holds."
        )
    blocks: list[Block] = [Paragraph((own(text),))]
    columns = (
        Column("relevant documents", "left", "text"),
        Column("part of the change"),
        Column("documents"),
        Column("queries"),
    )
    rows = [
        (
            Cell(MOVE_NAMES[str(move)], css="text"),
            Cell(fmt_signed(row["change"]), own=True),
            Cell(fmt_count(row["documents"])),
            Cell(fmt_count(row["queries"])),
        )
        for move, row in parts.iterrows()
        if move in moving or (move == "unjudged_entered" and row["documents"] > 0)
    ]
    rows.append(
        (
            Cell("change", css="text"),
            Cell(fmt_signed(split.change), own=True),
            Cell(""),
            Cell(fmt_count(split.queries)),
        )
    )
    blocks.append(Table(columns, tuple(rows), "moved"))
    return blocks


def _loss_blocks(summary: Summary, split: MetricSplit, dropped: DroppedDocuments) -> list[Block]:
    label = metric_label(summary, split.metric)
    blocks: list[Block] = [Heading(f"Why {label} lost")]
    blocks += _split_blocks(summary, split)
    if not dropped.count:
        return blocks
    text = (
        f"{fmt_count(dropped.count)} relevant documents left the {_k(split.metric)} in "
        f"{fmt_count(dropped.queries)} queries"
    )
    if dropped.in_missing_log:
        text += (
            f"; {fmt_count(dropped.in_missing_log)} of them in queries an arm's log lacked "
            "(its list is empty there: a logging gap, not a worse ranking)"
        )
    shown = dropped.documents
    if shown.empty:
        blocks.append(Paragraph((own(text + "."),)))
        return blocks
    text += f". The {shown['query_id'].nunique()} queries both logs hold that lost most by them:"
    blocks.append(Paragraph((own(text),)))
    columns = (
        Column("query", "left", "text"),
        Column("document", "left", "text"),
        Column("grade"),
        Column("control rank"),
        Column("part"),
    )
    rows = tuple(
        (
            Cell(str(row.query_id), css="text"),
            Cell(str(row.doc_id), css="text"),
            Cell(_grade(row.grade), own=True),
            Cell(_rank(row.rank_control), own=True),
            Cell(fmt_signed(row.contribution), own=True),
        )
        for row in shown.itertuples(index=False)
    )
    blocks.append(Table(columns, rows, "moved"))
    return blocks


def _segment_blocks(summary: Summary, split: MetricSplit, segment: SegmentSplit) -> list[Block]:
    parts = segment.parts
    moves = [m for m in split.parts.index if split.parts.at[m, "change"] != 0]
    columns = (
        Column(segment.column, "left", "text"),
        Column("queries"),
        *(Column(MOVE_NAMES[m]) for m in moves),
        Column("change"),
    )
    rows = tuple(
        (
            Cell(str(value), css="text"),
            Cell(fmt_count(row["queries"])),
            *(Cell(fmt_signed(row[m]), own=True) for m in moves),
            Cell(fmt_signed(row["change"]), own=True),
        )
        for value, row in parts.iterrows()
    )
    note = f"{metric_label(summary, split.metric)}, mean per query of the segment"
    return [Heading(f"Per {segment.column}", note=note), Table(columns, rows, "moved")]


def _extreme_blocks(summary: Summary, moved: WhatMoved) -> list[Block]:
    blocks: list[Block] = []
    for title, sides in (
        ("The query that lost most", moved.worst),
        ("The query that won most", moved.best),
    ):
        if sides is None:
            continue
        label = metric_label(summary, sides.metric)
        blocks.append(
            Heading(
                title,
                note=(
                    f"{label} {fmt_value(sides.control_value)} → "
                    f"{fmt_value(sides.treatment_value)} ({fmt_signed(sides.delta)})"
                ),
            )
        )
        blocks.append(Paragraph((own("query "), Span(sides.query_id, "code"))))
        blocks.append(_side_by_side(summary, sides, moved.treatment))
    return blocks


def _side_by_side(summary: Summary, sides: QuerySides, treatment: str) -> Columns:
    """Each arm's list cut at the metric's k: rank, document, grade, where it went."""
    control = summary.control or ""
    k = parse_metric(sides.metric).k or len(sides.lists)
    parts = []
    in_treatment = sides.lists[f"rank_{treatment}"] <= k
    for arm, other, where in ((control, treatment, "now"), (treatment, control, "was")):
        shown = sides.lists[f"rank_{arm}"] <= k
        # each document's part once: in the treatment's list, else in the control's
        owns = in_treatment if arm == treatment else ~in_treatment
        rows = sides.lists.assign(_own=owns)[shown].sort_values(f"rank_{arm}")
        columns = (
            Column("rank"),
            Column("document", "left", "text"),
            Column("grade"),
            Column(where),
            Column("part"),
        )
        cells = tuple(
            (
                Cell(_rank(row[f"rank_{arm}"]), own=True),
                Cell(str(row["doc_id"]), css="text"),
                Cell(_grade(row["grade"]), own=True, css=_grade_css(row["grade"])),
                Cell(_rank(row[f"rank_{other}"], missing="—"), own=True),
                Cell(_part(row["contribution"]) if row["_own"] else "", own=True),
            )
            for _, row in rows.iterrows()
        )
        heading = Heading(arm_label(summary, arm), note=f"top {k}")
        parts.append((heading, Table(columns, cells, "lists")))
    return Columns(tuple(parts))


def _similarity_blocks(summary: Summary, moved: WhatMoved) -> list[Block]:
    similarity = moved.similarity
    values = similarity.rbo[~np.isnan(similarity.rbo)]
    if not len(values):
        return []
    low, middle, high = np.quantile(values, [0.25, 0.5, 0.75])
    text = (
        f"How alike the lists are: rank-biased overlap (RBO, p = 0.9) between the arms' "
        f"lists per query, median {fmt_value(middle)} (quartiles {fmt_value(low)} to "
        f"{fmt_value(high)}; 1 is the same list, 0 lists without a document in common). "
        f"{fmt_count(similarity.identical)} of {fmt_count(similarity.queries)} queries "
        f"({fmt_share(similarity.share_identical)}) have the same top {similarity.k} in both "
        "arms."
    )
    return [Paragraph((own(text),))]


def _rank(value: Any, missing: str = "") -> str:
    return missing if pd.isna(value) else str(int(value))


def _grade(value: Any) -> str:
    if pd.isna(value):
        return "unjudged"
    return f"{value:g}"


def _grade_css(value: Any) -> str:
    if pd.isna(value):
        return "unjudged"
    return "relevant" if value > 0 else ""


def _part(value: Any) -> str:
    return "" if pd.isna(value) or value == 0 else fmt_signed(value)
