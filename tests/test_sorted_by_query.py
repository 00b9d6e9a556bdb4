"""Rows sent back by an engine, put in query order: the same rows as a sort of every row.

:func:`abrank.io.arrow.sorted_by_query` orders whole queries when each query's rows come
together in rank order, and sorts every row otherwise; either way the result must be the
rows ordered by query id (UTF-8 byte order) and then rank, checked here against Python's
own sort of the rows, over any chunking of the columns.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from abrank.io.arrow import sorted_by_query

IDS = st.sampled_from(["q1", "q10", "q2", "Q", "é", "e", "q", "ab", "a"])


@st.composite
def fetched(draw):
    """Rows of some queries (each rank 1..k), queries in any order; sometimes a query's
    rows split in two runs, or two of its rows swapped; columns cut into chunks."""
    queries = draw(st.lists(IDS, min_size=1, max_size=6, unique=True))
    rows = []
    for query in queries:
        depth = draw(st.integers(1, 5))
        rows += [(query, rank, f"{query}-d{rank}") for rank in range(1, depth + 1)]
    mess = draw(st.sampled_from(["none", "split", "swap"]))
    if mess == "split" and len(rows) > 2:
        at = draw(st.integers(1, len(rows) - 1))
        rows = rows[at:] + rows[:at]
    if mess == "swap" and len(rows) > 1:
        at = draw(st.integers(0, len(rows) - 2))
        rows[at], rows[at + 1] = rows[at + 1], rows[at]
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]

    def column(values: list, kind: pa.DataType) -> pa.ChunkedArray:
        return pa.chunked_array(
            [pa.array(values[a:b], kind) for a, b in zip(bounds, bounds[1:], strict=False)],
            type=kind,
        )

    table = pa.table(
        {
            "query_id": column([r[0] for r in rows], pa.string()),
            "doc_id": column([r[2] for r in rows], pa.string()),
            "rank": column([r[1] for r in rows], pa.int64()),
        }
    )
    return rows, table


@settings(max_examples=300, deadline=None)
@given(fetched())
def test_rows_come_by_query_id_in_byte_order_then_rank(case):
    rows, table = case
    got = sorted_by_query(table)
    expected = sorted(rows, key=lambda r: (r[0].encode(), r[1]))
    assert list(
        zip(*(got[c].to_pylist() for c in ("query_id", "rank", "doc_id")), strict=True)
    ) == [(q, r, d) for q, r, d in expected]
