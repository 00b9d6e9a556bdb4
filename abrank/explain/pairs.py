"""Joins on (query, document) pairs over integer keys, for the explanation tables.

Every side of a join is one column of query codes (a space shared by all sides:
:func:`abrank.io.arrow.query_codes`) and its documents' keys (:func:`abrank.io.arrow.doc_keys`,
computed once over every side's doc ids as one column, so that equal ids get equal keys:
the string's own bytes when ids fit in 16 bytes, else a 64-bit hash). A pair's 64-bit key
mixes its query code and document key; the right side's keys go into a hash index
(``pd.Index.get_indexer``) that the left side looks up, and every match is confirmed on the
query code and the full document key (and on the id strings where the keys are hashes), so
a collision of the mixed keys never joins two different pairs. Where the right side's
mixed keys are not distinct (a collision, or a pair given twice) the join falls back on a
sort of the exact keys. No Python code runs per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.io.arrow import DocKeys, _mix, doc_keys, take_rows

_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)
_ODD = np.uint64(0xBF58476D1CE4E5B9)


@dataclass(frozen=True)
class Side:
    """One side of a join: per row, its query code and document key, and where its doc id
    lies (``docs`` at ``rows``)."""

    codes: np.ndarray
    keys: DocKeys
    docs: pa.ChunkedArray
    rows: np.ndarray

    def __len__(self) -> int:
        return int(self.codes.size)

    def ids(self, items: np.ndarray) -> pa.Array:
        """The doc ids of some rows of this side."""
        return take_rows(self.docs, self.rows[items])

    def take(self, items: np.ndarray) -> Side:
        """Some rows of this side, in that order."""
        return Side(self.codes[items], self.keys.take(items), self.docs, self.rows[items])


def sides(
    parts: Sequence[tuple[np.ndarray, pa.ChunkedArray, np.ndarray]],
) -> list[Side]:
    """One :class:`Side` per ``(codes, docs, rows)``: ``codes`` per row, the doc ids of a
    whole column ``docs`` and the row of it each row reads. The document keys of every side
    share one encoding (they are computed over the columns as one)."""
    columns = [docs.cast(pa.large_string()) for _, docs, _ in parts]
    keys = doc_keys(pa.chunked_array([c for column in columns for c in column.chunks]))
    out = []
    base = 0
    for (codes, _, rows), column in zip(parts, columns, strict=True):
        size = len(column)
        mine = keys.take(np.asarray(rows, dtype=np.int64) + base)
        out.append(Side(np.asarray(codes), mine, column, np.asarray(rows, dtype=np.int64)))
        base += size
    return out


def lookup(left: Side, right: Side) -> np.ndarray:
    """For each row of ``left``, the row of ``right`` with the same query and document
    (-1: none). ``right`` holds each pair at most once (where it holds one twice, the
    first)."""
    if len(right) == 0 or len(left) == 0:
        return np.full(len(left), -1, dtype=np.int64)
    index = pd.Index(_mixed(right))
    if not index.is_unique:
        return _lookup_sorted(left, right)
    at = index.get_indexer(_mixed(left)).astype(np.int64)
    found = np.flatnonzero(at >= 0)
    if found.size:
        theirs = at[found]
        same = left.codes[found] == right.codes[theirs]
        for mine, other in zip(left.keys.words, right.keys.words, strict=True):
            same &= mine[found] == other[theirs]
        if not left.keys.exact:
            check = np.flatnonzero(same)
            equal = pc.equal(left.ids(found[check]), right.ids(theirs[check]))
            same[check] = equal.to_numpy(zero_copy_only=False)
        at[found[~same]] = -1
    return at


def _mixed(side: Side) -> np.ndarray:
    """A well-mixed 64-bit key of each row's (query code, document key)."""
    key = side.codes.astype(np.uint64) * _FIBONACCI
    tmp = np.empty_like(key)
    for i, word in enumerate(side.keys.words):
        key ^= word.astype(np.uint64) * (_ODD if i else np.uint64(1))
        _mix(key, tmp)
    return key


def _lookup_sorted(left: Side, right: Side) -> np.ndarray:
    """:func:`lookup` by one sort of both sides' exact keys (the strings where the keys
    are hashes): the path for a right side whose mixed keys repeat."""
    n, m = len(left), len(right)
    codes = np.concatenate([left.codes, right.codes]).astype(np.int64)
    if left.keys.exact:
        words = [
            np.concatenate([a, b]) for a, b in zip(left.keys.words, right.keys.words, strict=True)
        ]
        columns: list[np.ndarray] = [*reversed(words)]
    else:
        ids = pa.chunked_array([left.ids(np.arange(n)), right.ids(np.arange(m))])
        doc, _ = pd.factorize(pd.Series(ids.to_numpy(zero_copy_only=False)))
        columns = [doc]
    side = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(m, dtype=np.int8)])
    item = np.concatenate([np.arange(n), np.arange(m)])
    # right rows first within a pair (side 0), the first of repeated right rows first
    order = np.lexsort((item, side, *columns, codes))
    same = codes[order][1:] == codes[order][:-1]
    for column in columns:
        same &= column[order][1:] == column[order][:-1]
    opens = np.concatenate(([True], ~same))
    head = np.maximum.accumulate(np.where(opens, np.arange(order.size), 0))
    first = order[head]  # the group's first item: a right row, when it has one
    at = np.full(n, -1, dtype=np.int64)
    mine = order < n
    matched = mine & (first >= n)
    at[order[matched]] = item[first[matched]]
    return at
