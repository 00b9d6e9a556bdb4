"""Vectorized kernels over Arrow and NumPy columns, shared by the engine and the readers.

trec_eval ignores a run's rank column: within a query it orders documents by score,
descending, and breaks ties by docid *descending* in byte order (``strcmp``); the ordering
here follows that rule so that a TREC run scores exactly as trec_eval scores it. Beside
it: dense query codes, 64-bit document keys computed straight from Arrow's string
buffers, and the sort-based matcher that finds equal (query, doc) pairs (duplicates, and
the join of a ranking with its judgments). No Python code runs per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.buffers import arrow_of, numpy_of
from abrank.io.columns import parse_numbers
from abrank.io.doc_keys import BLOCK as _BLOCK
from abrank.io.doc_keys import DocKeys

# --------------------------------------------------------------------------- ordering


def rank_by_score(frame: pd.DataFrame) -> pd.DataFrame:
    """Rank each query's documents by score, exactly as trec_eval does.

    Within a query, documents are ordered by ``score`` descending, ties broken by
    ``doc_id`` descending in byte order (trec_eval's ``comp_sim_docno``); ``rank`` is
    1..n in that order and replaces any existing ``rank`` column. The result is a new
    frame whose rows are grouped by query and sorted by rank (queries keep their order
    when they were already grouped, else come in query-id order), which is also the order
    :func:`abrank.metrics.evaluate` reads fastest.
    """
    missing = [c for c in ("query_id", "doc_id", "score") if c not in frame.columns]
    if missing:
        raise DataError(
            f"rankings: columns: expected query_id, doc_id and score, "
            f"got {', '.join(map(str, frame.columns)) or 'no columns'}"
        )
    score = _float_column(frame["score"], "score")
    nan = np.isnan(score)
    if nan.any():
        row = int(np.flatnonzero(nan)[0])
        raise DataError(
            f"rankings: score: expected a number for every row, got NaN "
            f"(query {frame['query_id'].iloc[row]!r}, doc {frame['doc_id'].iloc[row]!r})"
        )
    codes, _ = query_codes(as_arrow(frame["query_id"], "rankings: query_id"))
    order, _ = order_rows(codes, -score, as_arrow(frame["doc_id"], "rankings: doc_id"))
    out = frame if order is None else frame.take(order)
    out = out.reset_index(drop=True) if order is not None else out.copy()
    ordered_codes = codes if order is None else codes[order]
    out["rank"] = positions(ordered_codes).astype(np.int64) + 1
    return out


def _float_column(series: pd.Series, name: str) -> np.ndarray:
    """A numeric column as float64 (NaN kept), or a DataError naming the first bad row."""
    return parse_numbers(
        series,
        lambda row: f"rankings: {name}: row {row}",
        allow_missing=True,
        finite=False,
        booleans=True,
        empty="a missing value",
    )


def order_rows(
    codes: np.ndarray, key: np.ndarray, doc_ids: pa.ChunkedArray
) -> tuple[np.ndarray | None, bool]:
    """Permutation that groups rows by query and sorts each query by ``key`` ascending.

    Ties in ``key`` within a query are broken by doc id descending (byte order), the
    trec_eval rule. Returns ``(order, within_ties)``: ``order`` is None when the rows are
    already in that order (the common case for runs written by retrieval systems), and
    ``within_ties`` is True when rows only move inside blocks of equal (query, key), so
    that callers need to permute nothing but the doc ids.
    """
    n = codes.size
    if n == 0:
        return None, True
    same = codes[1:] == codes[:-1]
    # grouped: the first row of each run of equal codes holds a code no other run holds
    heads = codes[np.flatnonzero(np.concatenate(([False], ~same)))]
    grouped = _distinct(np.append(heads, codes[0])).size == heads.size + 1
    if grouped:
        step = key[1:] >= key[:-1]
        step |= ~same
        if bool(step.all()):
            ties = key[1:] == key[:-1]
            ties &= same
            if not ties.any():
                return None, True
            order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
            _break_ties(order, ties, doc_ids)
            return order, True
    order = np.lexsort((key, codes))
    sc = codes[order]
    sk = key[order]
    ties = (sc[1:] == sc[:-1]) & (sk[1:] == sk[:-1])
    if ties.any():
        _break_ties(order, ties, doc_ids)
    return order, False


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: ``np.unique(values)`` by one sort. (NumPy 2's
    ``np.unique`` hashes, 40 times slower on 50,000 query codes, and its first call imports
    ``numpy.ma``, which stalled every piece of a large run for 8 ms.)"""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _break_ties(order: np.ndarray, ties: np.ndarray, doc_ids: pa.ChunkedArray) -> None:
    """Reorder, in place, each block of tied rows of ``order`` by doc id descending.

    ``ties[i]`` says rows ``order[i]`` and ``order[i + 1]`` are tied.
    """
    pair = np.flatnonzero(ties)
    where = _distinct(np.concatenate((pair, pair + 1)))
    # a tied row opens a new block unless it is tied with the row before it
    opens = np.ones(where.size, dtype=bool)
    inner = where > 0
    opens[inner] = ~ties[where[inner] - 1]
    block = np.cumsum(opens)
    rows = order[where]
    docs = take_rows(doc_ids, rows)
    table = pa.table({"block": arrow_of(block), "doc": docs})
    perm = pc.sort_indices(table, sort_keys=[("block", "ascending"), ("doc", "descending")])
    order[where] = rows[numpy_of(perm)]


def take_rows(values: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``values.take(rows)`` as one array, taken chunk by chunk.

    Arrow's take on a ChunkedArray first concatenates every chunk (a copy of the whole
    column, hundreds of MB for 10 million doc ids); this copies only the rows taken.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if values.num_chunks == 1:
        return values.chunk(0).take(arrow_of(rows))
    bounds = np.cumsum([0, *(len(c) for c in values.chunks)])
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    cuts = np.searchsorted(ordered, bounds)
    pieces = [
        chunk.take(arrow_of(ordered[cuts[i] : cuts[i + 1]] - bounds[i]))
        for i, chunk in enumerate(values.chunks)
        if cuts[i + 1] > cuts[i]
    ]
    if not pieces:
        return pa.nulls(0, values.type)
    taken = pa.concat_arrays(pieces)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return taken.take(arrow_of(inverse))


def sorted_by_query(table: pa.Table, rank: str = "rank") -> pa.Table:
    """``table`` sorted by ``query_id`` (byte order), then by ``rank``.

    Where each query's rows already come together in rank order (an engine that sends
    back its rows partition by partition, each in the order of its window over the
    query), only the queries are put in order, and the rows follow in one take: a sort of
    the queries rather than of every row (a tenth of the rows per query to compare, no
    string comparison within a query). Else every row is sorted.
    """
    n = table.num_rows
    if n < 2:
        return table
    ids = table["query_id"]
    heads = _run_starts(ids)
    head_ids = take_rows(ids, heads)
    steps = np.diff(numpy_of(table[rank]))
    steps[heads[1:] - 1] = 1  # from one query's last row to the next query's first
    if pc.count_distinct(head_ids).as_py() != heads.size or not bool(np.all(steps > 0)):
        return table.sort_by([("query_id", "ascending"), (rank, "ascending")])
    order = numpy_of(pc.sort_indices(head_ids))
    lengths = np.diff(np.append(heads, n))[order]
    # row p of the query that comes j-th stands at heads[order[j]] + (p - its new start)
    shift = heads[order] - (np.cumsum(lengths) - lengths)
    return table.take(arrow_of(np.repeat(shift, lengths) + np.arange(n)))


def positions(codes: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal consecutive codes (int32 when
    that fits, to save memory on large rankings)."""
    n = codes.size
    dtype = np.int32 if n < 2**31 else np.int64
    if n == 0:
        return np.zeros(0, dtype=dtype)
    first, _ = _code_runs(codes)
    pos = np.ones(n, dtype=dtype)
    pos[first[1:]] = first[:-1] - first[1:] + 1
    pos[0] = 0
    np.cumsum(pos, out=pos)
    return pos


def sum_above(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, the sum of ``values`` over the rows above it within its run of equal
    consecutive codes (0 on a run's first row), in ``values``' dtype: counts of flagged
    rows above (bpref, infAP), a log-probability of reaching a row (ERR).

    Each run's float sums are its own, added up from its first row (:func:`_float_sums_above`):
    a running sum over the whole column less its value at the run's start would carry the
    rounding of every row before the run, so that a query's values would depend on the
    queries before it (and lose digits as that sum grows)."""
    if codes.size == 0:
        return np.zeros(0, dtype=values.dtype)
    first, lengths = _code_runs(codes)
    if values.dtype.kind == "f":
        return _float_sums_above(values, first, lengths)
    total = np.cumsum(values) - values  # whole numbers: exact
    return total - np.repeat(total[first], lengths)


def max_at_or_below(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, the largest of ``values`` at that row and the rows after it within its run
    of equal consecutive codes: a suffix maximum per query (iprec_at_recall's best
    precision at or below a rank). Each run's maximum is its own, in rows of a padded
    matrix as :func:`_float_sums_above` makes them, read from the run's last row back."""
    out = np.empty_like(values)
    if codes.size == 0:
        return out
    first, lengths = _code_runs(codes)
    for runs, columns, inside in _length_classes(lengths):
        last = first[runs] + lengths[runs] - 1
        rows = (last[:, None] - columns[None, :])[inside]  # each run from its last row back
        padded = np.full((runs.size, columns.size), -np.inf, dtype=values.dtype)
        padded[inside] = values[rows]
        np.maximum.accumulate(padded, axis=1, out=padded)
        out[rows] = padded[inside]
    return out


def _code_runs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each run of equal consecutive ``codes`` (at least one row) and
    the run's length."""
    start = np.empty(codes.size, dtype=bool)
    start[0] = True
    np.not_equal(codes[1:], codes[:-1], out=start[1:])
    first = np.flatnonzero(start)
    return first, np.diff(np.append(first, codes.size))


def _length_classes(lengths: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The runs of each power-of-two class of length (their indices), the class's columns
    0..width-1, and which places of each run's row of that width it fills."""
    width_class = np.zeros(lengths.size, dtype=np.int64)
    long = lengths > 1
    width_class[long] = np.ceil(np.log2(lengths[long])).astype(np.int64)
    for power in np.flatnonzero(np.bincount(width_class)):
        runs = np.flatnonzero(width_class == power)
        columns = np.arange(1 << int(power))
        yield runs, columns, columns[None, :] < lengths[runs, None]


def _float_sums_above(values: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`sum_above` of float ``values`` whose runs start at the rows ``first``: the
    runs of each power-of-two class of length as the rows of a zero-padded matrix, each
    summed along its row from the first value on."""
    out = np.empty_like(values)
    for runs, columns, inside in _length_classes(lengths):
        rows = (first[runs, None] + columns[None, :])[inside]
        shifted = np.zeros((runs.size, columns.size + 1), dtype=values.dtype)
        shifted[:, 1:][inside] = values[rows]  # a run's values, one place to the right
        np.cumsum(shifted, axis=1, out=shifted)
        out[rows] = shifted[:, :-1][inside]
    return out


# --------------------------------------------------------------------------- arrow helpers


def as_arrow(values: pd.Series | pa.Array | pa.ChunkedArray, what: str = "ids") -> pa.ChunkedArray:
    """A column as an Arrow string ChunkedArray, without copying when it already is one."""
    if isinstance(values, pa.ChunkedArray):
        arr = values
    elif isinstance(values, pa.Array):
        arr = pa.chunked_array([values])
    else:
        try:
            arr = pa.array(values.array if hasattr(values, "array") else values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            arr = pa.array(pd.Series(values).astype(str).array)
        if isinstance(arr, pa.Array):
            arr = pa.chunked_array([arr])
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.large_string())
    if arr.null_count:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise DataError(f"{what}: row {row}: expected an id, got a missing value")
    return arr


@overload
def query_codes(
    column: pa.ChunkedArray, /, *, starts: Sequence[np.ndarray | None] | None = None
) -> tuple[np.ndarray, pa.Array]: ...
@overload
def query_codes(
    first: pa.ChunkedArray,
    second: pa.ChunkedArray,
    /,
    *more: pa.ChunkedArray,
    starts: Sequence[np.ndarray | None] | None = None,
) -> tuple[list[np.ndarray], pa.Array]: ...
def query_codes(
    *columns: pa.ChunkedArray, starts: Sequence[np.ndarray | None] | None = None
) -> tuple[list[np.ndarray] | np.ndarray, pa.Array]:
    """Dense int32 codes for query ids, shared by all columns, ordered by query id.

    Returns the sorted distinct ids (code i is ``ids[i]``; sorting is byte order, the
    order trec_eval prints queries in) beside the codes: one array for one column, a list
    of one array per column for several. ``starts[k]``, when given, are the rows where a
    run of equal ids starts in column k (:func:`run_heads`' first array), found already.
    """
    known = list(starts) if starts is not None else [None] * len(columns)
    encoded = [_encode_grouped(column, at) for column, at in zip(columns, known, strict=True)]
    # string or large_string columns alike: only the (small) dictionaries are cast
    dictionaries = [e.dictionary.cast(pa.large_string()) for e in encoded]
    union = pc.unique(pa.concat_arrays(dictionaries)) if len(dictionaries) > 1 else dictionaries[0]
    ids = union.take(pc.sort_indices(union))
    # the columns' codes one after another in one array (each column's a view of it), so
    # that a caller that needs them all together (the join) has them without a copy
    sizes = [len(column) for column in columns]
    joint = np.empty(sum(sizes), dtype=np.int32)
    codes = []
    start = 0
    for e, size in zip(encoded, sizes, strict=True):
        remap = numpy_of(pc.index_in(e.dictionary, value_set=ids))
        remap = remap.astype(np.int32)
        out = joint[start : start + size]
        start += size
        if e.lengths is None:
            np.take(remap, e.indices, out=out, mode="clip")
        else:  # one code per run of equal neighbours
            _fill_runs(out, remap[e.indices], e.lengths)
        codes.append(out)
    return (codes if len(columns) > 1 else codes[0]), ids


def _fill_runs(out: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> None:
    """``out[:] = np.repeat(values, lengths)`` (lengths >= 1) without a temporary: each
    run's first row gets the step from the run before, and a running sum spreads it."""
    if not out.size:
        return
    out.fill(0)
    steps = np.diff(values.astype(np.int64), prepend=0)
    out[np.cumsum(lengths) - lengths] = steps
    np.cumsum(out, out=out)


def joined_codes(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``np.concatenate([first, second])``: without a copy when ``second`` follows ``first``
    in one array, as :func:`query_codes` writes the codes of several columns."""
    base = first.base
    if (
        isinstance(base, np.ndarray)
        and second.base is base
        and base.ndim == 1
        and base.dtype == first.dtype == second.dtype
        and base.size == first.size + second.size
        and first.ctypes.data == base.ctypes.data
        and second.ctypes.data == first.ctypes.data + first.nbytes
    ):
        return base
    return np.concatenate([first, second])


class _Encoded:
    """Dictionary codes of a column: ``indices`` per row, or (when ``lengths`` is set) per
    run of equal neighbouring rows, each run ``lengths[i]`` rows long."""

    def __init__(self, dictionary: pa.Array, indices: np.ndarray, lengths: np.ndarray | None):
        self.dictionary = dictionary
        self.indices = indices
        self.lengths = lengths


def run_heads(values: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """The rows where a run of equal neighbouring ids starts, and their ids. Every
    distinct id of the column is among them (repeated when its rows are not together):
    found with one comparison of neighbours rather than a hash of every row."""
    starts = _run_starts(values)
    return starts, take_rows(values, starts)


def _run_starts(values: pa.ChunkedArray) -> np.ndarray:
    """Row indices where a new run of equal neighbouring ids starts (row 0 included).

    Compares within each chunk (slicing a chunked array across chunk boundaries would
    make Arrow copy it) and then across the boundaries.
    """
    starts = []
    base = 0
    previous = None
    for chunk in values.chunks:
        size = len(chunk)
        if size == 0:
            continue
        first = chunk[0].as_py()
        if previous is None or first != previous:
            starts.append(np.array([base]))
        if size > 1:
            change = numpy_of(pc.not_equal(chunk[1:], chunk[:-1]))
            starts.append(np.flatnonzero(change) + (base + 1))
        previous = chunk[size - 1].as_py()
        base += size
    return np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)


def _encode_grouped(values: pa.ChunkedArray, starts: np.ndarray | None = None) -> _Encoded:
    """Dictionary-encode ids; fast when equal ids sit together (a ranking's queries do).

    Only the first id of each run of equal neighbours is hashed; if those heads are all
    distinct the ids are grouped and each row takes its run's code. ``starts``: the rows
    where those runs start, when a caller found them already.
    """
    n = len(values)
    if n > 1:
        heads = _run_starts(values) if starts is None else starts
        if heads.size < n // 4:
            head_ids = take_rows(values, heads)  # one id per query: small
            encoded = pc.dictionary_encode(head_ids)
            if len(encoded.dictionary) == heads.size:
                lengths = np.diff(np.append(heads, n))
                return _Encoded(encoded.dictionary, np.arange(heads.size), lengths)
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.unify_dictionaries()
        if encoded.num_chunks == 0:
            return _Encoded(pa.nulls(0, values.type), np.zeros(0, dtype=np.int32), None)
        indices = [numpy_of(c.indices) for c in encoded.chunks]
        return _Encoded(encoded.chunk(0).dictionary, np.concatenate(indices), None)
    return _Encoded(encoded.dictionary, numpy_of(encoded.indices), None)


def equal_pairs(
    codes: np.ndarray,
    keys: DocKeys,
    docs: pa.ChunkedArray | Callable[[np.ndarray], pa.Array],
) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of items with the same query code and the same doc id.

    ``keys`` come from :func:`doc_keys`. Returns ``(first, later)`` item indices (int32
    when they fit), ``first < later``, where ``first`` is the earliest item of its
    (query, doc) group. One sort of packed 64-bit keys (query code | hash bits | item index) brings
    equal pairs together; candidates are confirmed on the full keys (exact keys: nothing
    more to check), hashed keys on the strings, and groups of three or more exactly on the
    strings.
    """
    n = codes.size
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    qbits = max(1, int(codes.max()).bit_length())
    ibits = max(1, int(n - 1).bit_length())
    hbits = 64 - qbits - ibits
    if hbits < 8:
        if keys.exact:
            return _equal_pairs_by_keys(codes, np.arange(n), keys)
        return _equal_pairs_exact(codes, np.arange(n), docs)
    packed = np.empty(n, dtype=np.uint64)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        block = packed[lo:hi]
        mixed = keys.spread(lo, hi)
        mixed >>= np.uint64(64 - hbits)
        mixed <<= np.uint64(ibits)
        block[:] = codes[lo:hi]
        block <<= np.uint64(64 - qbits)
        block |= mixed
        block |= np.arange(lo, hi, dtype=np.uint64)
    packed.sort()
    # neighbours equal in everything but the item bits, found block by block so that no
    # second array as large as `packed` is needed
    eq = np.empty(n - 1, dtype=bool)
    scratch = np.empty(min(_BLOCK, n - 1), dtype=np.uint64)
    below = np.uint64(1 << ibits)
    for lo in range(0, n - 1, _BLOCK):
        hi = min(lo + _BLOCK, n - 1)
        diff = np.bitwise_xor(packed[lo + 1 : hi + 1], packed[lo:hi], out=scratch[: hi - lo])
        np.less(diff, below, out=eq[lo:hi])
    del scratch
    # a pair of equal neighbours is alone in its group unless the pair before or after it
    # is equal too (a group of three or more: rare, settled exactly below); told apart on
    # the equal pairs' positions, far fewer than the rows
    at = np.flatnonzero(eq)
    del eq
    chained = at[1:] == at[:-1] + 1  # pair j and pair j + 1 share a row
    crowded = np.zeros(at.size, dtype=bool)
    crowded[1:] = chained
    crowded[:-1] |= chained
    del chained
    crowd = at[crowded]
    at = at[~crowded]
    index = np.int32 if n < 2**31 else np.int64
    low = np.uint64((1 << ibits) - 1)
    item = packed[at]
    item &= low
    first = item.astype(index)
    at += 1
    np.take(packed, at, out=item)
    item &= low
    later = item.astype(index)
    del item
    del at
    members = _distinct(np.bitwise_and(packed[np.concatenate([crowd, crowd + 1])], low))
    del packed
    same = keys.equal(first, later)
    first, later = first[same], later[same]
    if not keys.exact and first.size:
        equal = pc.equal(_take(docs, first), _take(docs, later))
        keep = numpy_of(equal)
        first, later = first[keep], later[keep]
    if members.size:
        members = members.astype(index)
        if keys.exact:
            f2, l2 = _equal_pairs_by_keys(codes[members], members, keys.take(members))
        else:
            f2, l2 = _equal_pairs_exact(codes[members], members, docs)
        first = np.concatenate([first, f2.astype(index)])
        later = np.concatenate([later, l2.astype(index)])
    return first, later


def _take(docs: pa.ChunkedArray | Callable[[np.ndarray], pa.Array], items: np.ndarray) -> pa.Array:
    """The doc ids of some items: ``docs`` is the ids in item order, or a function."""
    return docs(items) if callable(docs) else take_rows(docs, items)


def _equal_pairs_by_keys(
    codes: np.ndarray, items: np.ndarray, keys: DocKeys
) -> tuple[np.ndarray, np.ndarray]:
    """(first, later) pairs among ``items`` with equal codes and equal exact keys."""
    if items.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    perm = np.lexsort((items, *reversed(keys.words), codes))
    q = codes[perm]
    i = items[perm]
    same = q[1:] == q[:-1]
    for w in keys.words:
        sw = w[perm]
        same &= sw[1:] == sw[:-1]
    return _group_pairs(same, i)


def _group_pairs(same: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, later) of sorted ``items`` where ``same[j]`` ties items j and j + 1."""
    group_start = np.concatenate(([True], ~same))
    head = np.maximum.accumulate(np.where(group_start, np.arange(items.size), 0))
    later_pos = np.flatnonzero(~group_start)
    return items[head[later_pos]].astype(np.int64), items[later_pos].astype(np.int64)


def _equal_pairs_exact(
    codes: np.ndarray, items: np.ndarray, docs: pa.ChunkedArray | Callable[[np.ndarray], pa.Array]
) -> tuple[np.ndarray, np.ndarray]:
    """Slow exact path of :func:`equal_pairs` for a (small) subset of items."""
    table = pa.table({"q": codes, "d": _take(docs, items), "i": items})
    perm = pc.sort_indices(
        table, sort_keys=[("q", "ascending"), ("d", "ascending"), ("i", "ascending")]
    )
    table = table.take(perm)
    q = table["q"].to_numpy()
    d = table["d"]
    i = table["i"].to_numpy()
    if q.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    same = (q[1:] == q[:-1]) & pc.equal(d[1:], d[:-1]).to_numpy(zero_copy_only=False)
    return _group_pairs(same, i)
