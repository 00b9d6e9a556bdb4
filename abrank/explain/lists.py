"""Ranked lists as the metrics read them: one row per (query, document) with its 1-based
rank, in trec_eval's order (by rank or score; ties broken by document id, descending) and
cut at a depth, so that an explanation speaks of the very positions a metric scored."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.errors import DataError
from abrank.io.arrow import as_arrow, order_rows, positions, query_codes


def ranked_lists(rankings: pd.DataFrame, depth: int | None = None) -> pd.DataFrame:
    """``query_id``, ``doc_id``, ``rank`` (1-based) of every kept row, queries in id order
    and each query's documents in rank order. ``rankings`` holds ``query_id``, ``doc_id``
    and ``rank`` (only its order counts) or ``score`` (higher first)."""
    for column in ("query_id", "doc_id"):
        if column not in rankings.columns:
            raise DataError(f"rankings: columns: expected {column}, got {list(rankings.columns)}")
    if "rank" in rankings.columns:
        key = pd.to_numeric(rankings["rank"], errors="raise").to_numpy(dtype=np.float64)
    elif "score" in rankings.columns:
        key = -pd.to_numeric(rankings["score"], errors="raise").to_numpy(dtype=np.float64)
    else:
        raise DataError(
            f"rankings: columns: expected a rank or a score column, got {list(rankings.columns)}"
        )
    queries = as_arrow(rankings["query_id"], "rankings: query_id")
    docs = as_arrow(rankings["doc_id"], "rankings: doc_id")
    codes, ids = query_codes(queries)
    order, within_ties = order_rows(codes, key, docs)
    rows = np.arange(codes.size) if order is None else order
    ordered = codes if order is None or within_ties else codes[order]
    rank = positions(ordered).astype(np.int64) + 1
    keep = np.ones(rank.size, dtype=bool) if depth is None else rank <= depth
    taken = rows[keep]
    return pd.DataFrame(
        {
            "query_id": ids.take(pa.array(ordered[keep])).to_numpy(zero_copy_only=False),
            "doc_id": docs.take(pa.array(taken)).to_numpy(zero_copy_only=False),
            "rank": rank[keep],
        }
    )
