"""Ranked lists as the metrics read them: one row per (query, document) with its 1-based
rank, in trec_eval's order (by rank or score; ties broken by document id, descending) and
cut at a depth, so that an explanation speaks of the very positions a metric scored.

:func:`ranked_rows` gives a list as integer arrays (query codes, the rows of the frame it
keeps, ranks) for the explanation tables to join on; :func:`ranked_lists` spells it out
with the ids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.errors import DataError
from abrank.io.arrow import as_arrow, order_rows, positions, query_codes, take_rows


@dataclass(frozen=True)
class RankedRows:
    """A frame's ranked list as arrays over its kept rows (queries in code order, each
    query's documents in rank order)."""

    codes: np.ndarray  # query code of each kept row
    rows: np.ndarray  # the frame's row of each kept row
    rank: np.ndarray  # 1-based rank (int32 when it fits)
    docs: pa.ChunkedArray  # the frame's doc ids, every row (large_string)
    whole: bool = False  # every row of the frame is kept, in the frame's order


def order_key(rankings: pd.DataFrame) -> np.ndarray:
    """What orders a query's rows, ascending: ``rank``, else minus ``score``."""
    for column in ("query_id", "doc_id"):
        if column not in rankings.columns:
            raise DataError(f"rankings: columns: expected {column}, got {list(rankings.columns)}")
    if "rank" in rankings.columns:
        rank = rankings["rank"]
        if _plain_number(rank, "i"):
            return rank.to_numpy(dtype=np.int64)  # as it is: the same order, no copy
        return pd.to_numeric(rank, errors="raise").to_numpy(dtype=np.float64)
    if "score" in rankings.columns:
        score = rankings["score"]
        if _plain_number(score, "f"):
            return np.negative(score.to_numpy(dtype=np.float64))
        return -pd.to_numeric(score, errors="raise").to_numpy(dtype=np.float64)
    raise DataError(
        f"rankings: columns: expected a rank or a score column, got {list(rankings.columns)}"
    )


def _plain_number(column: pd.Series, kind: str) -> bool:
    """Whether a column is a NumPy integer (``kind`` "i") or float ("f") column, which
    needs no parsing."""
    return isinstance(column.dtype, np.dtype) and column.dtype.kind == kind


def ranked_rows(
    rankings: pd.DataFrame, depth: int | None = None, codes: np.ndarray | None = None
) -> RankedRows:
    """The kept rows of ``rankings`` (``query_id``, ``doc_id`` and ``rank`` or ``score``),
    ordered and cut as :func:`ranked_lists` says. ``codes``: the query code of every row,
    in a space ordered as the ids are (:func:`abrank.io.arrow.query_codes`, which is used
    when they are not given)."""
    key = order_key(rankings)
    docs = as_arrow(rankings["doc_id"], "rankings: doc_id")
    if codes is None:
        codes, _ = query_codes(as_arrow(rankings["query_id"], "rankings: query_id"))
    order, within_ties = order_rows(codes, key, docs)
    whole = order is None
    rows = np.arange(codes.size) if order is None else order
    ordered = codes if order is None or within_ties else codes[order]
    if ordered.size > 1 and not bool(np.all(ordered[1:] >= ordered[:-1])):
        # grouped by query but not in id order (a run file in its topics' order): the
        # queries in id order, each keeping its rows' order
        by_id = np.argsort(ordered, kind="stable")
        rows, ordered, whole = rows[by_id], ordered[by_id], False
    rank = positions(ordered)
    rank += 1
    if depth is not None and rank.size and int(rank.max()) > depth:
        keep = rank <= depth
        rows, ordered, rank, whole = rows[keep], ordered[keep], rank[keep], False
    return RankedRows(ordered, rows, rank, docs, whole)


def ranked_lists(rankings: pd.DataFrame, depth: int | None = None) -> pd.DataFrame:
    """``query_id``, ``doc_id``, ``rank`` (1-based) of every kept row, queries in id order
    and each query's documents in rank order. ``rankings`` holds ``query_id``, ``doc_id``
    and ``rank`` (only its order counts) or ``score`` (higher first)."""
    order_key(rankings)  # the columns' errors first
    queries = as_arrow(rankings["query_id"], "rankings: query_id")
    codes, ids = query_codes(queries)
    ranked = ranked_rows(rankings, depth, codes)
    return pd.DataFrame(
        {
            "query_id": ids.take(pa.array(ranked.codes)).to_numpy(zero_copy_only=False),
            "doc_id": take_rows(ranked.docs, ranked.rows).to_numpy(zero_copy_only=False),
            "rank": ranked.rank.astype(np.int64),
        }
    )
