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

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.io.arrow import take_rows
from abrank.io.doc_keys import DocKeys, doc_keys, mix_bits

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
    whole: bool = False  # the rows are every row of ``docs``, in order

    @functools.cached_property
    def mixed(self) -> np.ndarray:
        """A well-mixed 64-bit key of each row's (query code, document key)."""
        return _mixed(self.codes, self.keys)

    def __len__(self) -> int:
        return int(self.codes.size)

    def ids(self, items: np.ndarray) -> pa.Array:
        """The doc ids of some rows of this side."""
        return take_rows(self.docs, self.rows[items])

    def take(self, items: np.ndarray) -> Side:
        """Some rows of this side, in that order."""
        return Side(self.codes[items], self.keys.take(items), self.docs, self.rows[items])


def sides(
    parts: Sequence[tuple[np.ndarray, pa.ChunkedArray, np.ndarray | None]],
) -> list[Side]:
    """One :class:`Side` per ``(codes, docs, rows)``: ``codes`` per row, the doc ids of a
    whole column ``docs`` and the row of it each row reads (None: every row, in order).
    The document keys of every side share one encoding (they are computed over the
    columns as one)."""
    columns = [
        docs if pa.types.is_large_string(docs.type) else docs.cast(pa.large_string())
        for _, docs, _ in parts
    ]
    keys = doc_keys(pa.chunked_array([c for column in columns for c in column.chunks]))
    out = []
    base = 0
    for (codes, _, rows), column in zip(parts, columns, strict=True):
        size = len(column)
        if rows is None:  # every row of the column, in order: the keys as they are
            mine = DocKeys(tuple(w[base : base + size] for w in keys.words), keys.exact)
            out.append(Side(np.asarray(codes), mine, column, np.arange(size), whole=True))
        else:
            rows = np.asarray(rows, dtype=np.int64)
            out.append(Side(np.asarray(codes), keys.take(rows + base), column, rows))
        base += size
    return out


def lookup(left: Side, right: Side | PairIndex) -> np.ndarray:
    """For each row of ``left``, the row of ``right`` with the same query and document
    (-1: none). ``right`` holds each pair at most once (where it holds one twice, the
    first); a :class:`PairIndex` of it serves several lookups."""
    index = right if isinstance(right, PairIndex) else PairIndex(right)
    return index.find(left)


class PairIndex:
    """One side's pairs indexed for :func:`lookup`: its rows sorted by query code and cut
    into blocks of about :data:`BLOCK` rows, each block a hash index of the mixed keys
    (small enough to stay in the processor's cache, which a single index of tens of
    millions of keys does not)."""

    def __init__(self, side: Side):
        self.side = side
        codes = side.codes
        grouped = codes.size < 2 or bool(np.all(codes[1:] >= codes[:-1]))
        self.order = None if grouped else np.argsort(codes, kind="stable")
        self.codes = codes if self.order is None else codes[self.order]
        self.mixed = side.mixed if self.order is None else side.mixed[self.order]

    def find(self, left: Side) -> np.ndarray:
        """:func:`lookup` of ``left`` in the indexed side."""
        right = self.side
        n = len(left)
        if len(right) == 0 or n == 0:
            return np.full(n, -1, dtype=np.int64)
        codes = left.codes
        grouped = n < 2 or bool(np.all(codes[1:] >= codes[:-1]))
        order = None if grouped else np.argsort(codes, kind="stable")
        mixed = left.mixed
        if order is not None:
            codes, mixed = codes[order], mixed[order]
        # blocks of whole queries, each holding about BLOCK rows of either side at most
        top = int(max(codes[-1], self.codes[-1])) + 1
        cuts = np.unique(np.concatenate([[0, top], codes[::BLOCK], self.codes[::BLOCK]]))
        mine = np.searchsorted(codes, cuts)
        theirs = np.searchsorted(self.codes, cuts)
        at = np.full(n, -1, dtype=np.int64)
        for lo, hi, start, stop in zip(mine[:-1], mine[1:], theirs[:-1], theirs[1:], strict=True):
            if lo == hi or start == stop:
                continue
            index = pd.Index(self.mixed[start:stop])
            if not index.is_unique:  # a collision, or a pair given twice
                return _lookup_sorted(left, right)
            found = index.get_indexer(mixed[lo:hi])
            hit = np.flatnonzero(found >= 0)
            items = hit + lo if order is None else order[hit + lo]
            other = found[hit] + start
            if self.order is not None:
                other = self.order[other]
            # confirmed on the query codes and the exact keys (the strings, where the keys
            # are hashes) a block at a time: a collision of mixed keys joins nothing
            same = left.codes[items] == right.codes[other]
            for mine_words, their_words in zip(left.keys.words, right.keys.words, strict=True):
                same &= mine_words[items] == their_words[other]
            if not left.keys.exact and same.any():
                check = np.flatnonzero(same)
                equal = pc.equal(left.ids(items[check]), right.ids(other[check]))
                same[check] = equal.to_numpy(zero_copy_only=False)
            at[items[same]] = other[same]
        return at


BLOCK = 1 << 18
"""About how many rows of a side one block of a :class:`PairIndex` holds."""


def _mixed(codes: np.ndarray, keys: DocKeys) -> np.ndarray:
    """A well-mixed 64-bit key of each row's (query code, document key), computed a block
    of rows at a time (small temporaries, reused)."""
    n = codes.size
    out = np.empty(n, dtype=np.uint64)
    step = min(n, 1 << 20)
    tmp = np.empty(step, dtype=np.uint64)
    word = np.empty(step, dtype=np.uint64)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        key = out[lo:hi]
        key[:] = codes[lo:hi]
        key *= _FIBONACCI
        for i, words in enumerate(keys.words):
            part = word[: hi - lo]
            part[:] = words[lo:hi]
            if i:
                part *= _ODD
            key ^= part
            mix_bits(key, tmp[: hi - lo])
    return out


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
