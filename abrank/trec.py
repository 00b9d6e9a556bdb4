"""TREC run and qrels files, trec_eval's ordering rule, and trec_eval-style output.

trec_eval ignores a run's rank column: within a query it orders documents by score,
descending, and breaks ties by docid *descending* in byte order (``strcmp``). Everything
here follows that rule so that a TREC run scores exactly as trec_eval scores it.

The readers parse whole files with pyarrow's multi-threaded CSV reader (single spaces, the
common case) and fall back to a whitespace-splitting path for tabs or repeated spaces; the
fallback also locates malformed lines for error messages. No Python code runs per line.

This module also holds the vectorized helpers the metrics engine shares with the readers:
dense query codes, 64-bit document keys computed straight from Arrow's string buffers, and
the sort-based matcher that finds equal (query, doc) pairs (duplicates, and the join of a
ranking with its judgments).
"""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from abrank._lazy import pandas as pd
from abrank.errors import ConfigError, DataError

if TYPE_CHECKING:
    from abrank.metrics import Metric, _Prepared
    from abrank.treceval import TrecMeasures

RUN_FIELDS = ("query_id", "iter", "doc_id", "rank", "score", "tag")
QRELS_FIELDS = ("query_id", "iter", "doc_id", "relevance")
_SNIFF_BYTES = 1 << 16
_SHOWN = 3  # how many offending items an error message names
_CSV_BLOCK = 16 << 20
_NUMERIC = ("score", "relevance")

__all__ = [
    "rank_by_score",
    "read_trec_qrels",
    "read_trec_run",
    "run_tag",
    "trec_eval_report",
    "trec_eval_text",
]


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
    """A numeric column as float64, or a DataError naming the first bad row."""
    try:
        return pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        bad = (pd.to_numeric(series, errors="coerce").isna() & series.notna()).to_numpy()
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"rankings: {name}: row {row}: expected a number, got {series.iloc[row]!r}"
        ) from None


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
    grouped = np.unique(np.append(heads, codes[0])).size == heads.size + 1
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


def _break_ties(order: np.ndarray, ties: np.ndarray, doc_ids: pa.ChunkedArray) -> None:
    """Reorder, in place, each block of tied rows of ``order`` by doc id descending.

    ``ties[i]`` says rows ``order[i]`` and ``order[i + 1]`` are tied.
    """
    pair = np.flatnonzero(ties)
    where = np.union1d(pair, pair + 1)
    # a tied row opens a new block unless it is tied with the row before it
    opens = np.ones(where.size, dtype=bool)
    inner = where > 0
    opens[inner] = ~ties[where[inner] - 1]
    block = np.cumsum(opens)
    rows = order[where]
    docs = take_rows(doc_ids, rows)
    table = pa.table({"block": block, "doc": docs})
    perm = pc.sort_indices(table, sort_keys=[("block", "ascending"), ("doc", "descending")])
    order[where] = rows[perm.to_numpy()]


def take_rows(values: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``values.take(rows)`` as one array, taken chunk by chunk.

    Arrow's take on a ChunkedArray first concatenates every chunk (a copy of the whole
    column, hundreds of MB for 10 million doc ids); this copies only the rows taken.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if values.num_chunks == 1:
        return values.chunk(0).take(pa.array(rows))
    bounds = np.cumsum([0, *(len(c) for c in values.chunks)])
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    cuts = np.searchsorted(ordered, bounds)
    pieces = [
        chunk.take(pa.array(ordered[cuts[i] : cuts[i + 1]] - bounds[i]))
        for i, chunk in enumerate(values.chunks)
        if cuts[i + 1] > cuts[i]
    ]
    if not pieces:
        return pa.array([], type=values.type)
    taken = pa.concat_arrays(pieces)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return taken.take(pa.array(inverse))


def positions(codes: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal consecutive codes (int32 when
    that fits, to save memory on large rankings)."""
    n = codes.size
    dtype = np.int32 if n < 2**31 else np.int64
    if n == 0:
        return np.zeros(0, dtype=dtype)
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.not_equal(codes[1:], codes[:-1], out=start[1:])
    first = np.flatnonzero(start)
    pos = np.ones(n, dtype=dtype)
    pos[first[1:]] = first[:-1] - first[1:] + 1
    pos[0] = 0
    np.cumsum(pos, out=pos)
    return pos


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


def query_codes(*columns: pa.ChunkedArray) -> tuple[list[np.ndarray], pa.Array]:
    """Dense int32 codes for query ids, shared by all columns, ordered by query id.

    Returns one code array per column and the sorted distinct ids (code i is ``ids[i]``);
    sorting is byte order, the order trec_eval prints queries in.
    """
    encoded = [_encode_grouped(column) for column in columns]
    # string or large_string columns alike: only the (small) dictionaries are cast
    dictionaries = [e.dictionary.cast(pa.large_string()) for e in encoded]
    union = pc.unique(pa.concat_arrays(dictionaries)) if len(dictionaries) > 1 else dictionaries[0]
    ids = union.take(pc.sort_indices(union))
    codes = []
    for e in encoded:
        remap = pc.index_in(e.dictionary, value_set=ids).to_numpy(zero_copy_only=False)
        remap = remap.astype(np.int32)
        if e.lengths is None:
            codes.append(remap[e.indices])
        else:  # one code per run of equal neighbours: one pass writes every row's code
            codes.append(np.repeat(remap[e.indices], e.lengths))
    return (codes if len(columns) > 1 else codes[0]), ids


class _Encoded:
    """Dictionary codes of a column: ``indices`` per row, or (when ``lengths`` is set) per
    run of equal neighbouring rows, each run ``lengths[i]`` rows long."""

    def __init__(self, dictionary: pa.Array, indices: np.ndarray, lengths: np.ndarray | None):
        self.dictionary = dictionary
        self.indices = indices
        self.lengths = lengths


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
            change = pc.not_equal(chunk[1:], chunk[:-1]).to_numpy(zero_copy_only=False)
            starts.append(np.flatnonzero(change) + (base + 1))
        previous = chunk[size - 1].as_py()
        base += size
    return np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)


def _encode_grouped(values: pa.ChunkedArray) -> _Encoded:
    """Dictionary-encode ids; fast when equal ids sit together (a ranking's queries do).

    Only the first id of each run of equal neighbours is hashed; if those heads are all
    distinct the ids are grouped and each row takes its run's code.
    """
    n = len(values)
    if n > 1:
        heads = _run_starts(values)
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
            return _Encoded(pa.array([], type=values.type), np.zeros(0, dtype=np.int32), None)
        indices = [c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks]
        return _Encoded(encoded.chunk(0).dictionary, np.concatenate(indices), None)
    return _Encoded(encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False), None)


# _LOW_BYTES[n] keeps the first n bytes of a little-endian 8-byte word
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


_BLOCK = 1 << 20  # rows per block for element-wise passes: small, reused temporaries


def _mix(x: np.ndarray, tmp: np.ndarray) -> None:
    """The splitmix64 finalizer, in place: a bijection on uint64 that spreads bits."""
    np.right_shift(x, np.uint64(30), out=tmp)
    x ^= tmp
    x *= _MIX1
    np.right_shift(x, np.uint64(27), out=tmp)
    x ^= tmp
    x *= _MIX2
    np.right_shift(x, np.uint64(31), out=tmp)
    x ^= tmp


@dataclass(frozen=True)
class DocKeys:
    """Keys of a column of strings, one row per string (see :func:`doc_keys`).

    ``words`` holds one or two unsigned integer arrays of equal length (the second one as
    narrow as the longest string allows); when ``exact`` is True they spell the strings
    exactly (equal keys, equal strings), else ``words[0]`` is a 64-bit hash and equal keys
    must be confirmed on the strings.
    """

    words: tuple[np.ndarray, ...]
    exact: bool

    def __len__(self) -> int:
        return int(self.words[0].size)

    def take(self, rows: np.ndarray) -> DocKeys:
        """The keys of some rows, in that order."""
        return DocKeys(tuple(w[rows] for w in self.words), self.exact)

    def reorder_head(self, size: int, rows: np.ndarray) -> DocKeys:
        """The first ``size`` keys replaced by ``keys[rows]`` (rows < size), the rest kept.

        Permutes in place when it can, so that no second copy of every key is needed.
        """
        kept = rows.size
        words = []
        for w in self.words:
            w[:kept] = w[:size][rows]
            words.append(np.delete(w, np.s_[kept:size]) if kept < size else w)
        return DocKeys(tuple(words), self.exact)

    def equal(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether the keys of rows ``a`` equal those of rows ``b``, element-wise."""
        same = self.words[0][a] == self.words[0][b]
        for w in self.words[1:]:
            same &= w[a] == w[b]
        return same

    def spread(self, lo: int, hi: int) -> np.ndarray:
        """A well-mixed 64-bit hash of rows lo..hi (its top bits go into a sort key).

        Exact keys are raw bytes, spread by multiplicative (Fibonacci) hashing; hashed
        keys are spread already.
        """
        if not self.exact:
            return self.words[0][lo:hi].copy()
        mixed = self.words[0][lo:hi] * _FIBONACCI
        if len(self.words) == 2:
            # multiplication carries every bit of a word into the top bits, which are
            # the ones used; the second word gets a different odd multiplier
            mixed ^= self.words[1][lo:hi] * _MIX1
        return mixed


def doc_keys(column: pa.ChunkedArray) -> DocKeys:
    """Keys for strings, read straight from Arrow's buffers (no per-row Python).

    When every string fits in one or two 8-byte words (up to 15 bytes, or 16 when no
    string holds a NUL byte) the key is the string itself: its bytes, zero-padded, with its
    length in the top byte when there is room for it, so equal keys mean equal strings
    (``exact``; 9-byte ids such as ``d12345678`` take two words). Longer strings get one
    word, a 64-bit hash of their length and 8-byte words, and equal keys must be confirmed
    on the strings.

    The encoding (how many words, exact or hashed) is chosen once for the whole column;
    within it, a key depends on its string alone, never on the chunk it sits in or the
    strings beside it, so equal strings always get equal keys (a ranking and its judgments
    are keyed as one column of several chunks).
    """
    chunks = [
        c if pa.types.is_string(c.type) or pa.types.is_large_string(c.type) else c.cast(pa.string())
        for c in column.chunks
        if len(c)
    ]
    total = sum(len(c) for c in chunks)
    if not chunks:
        return DocKeys((np.empty(0, dtype=np.uint64),), True)
    longest = max(int(pc.max(pc.binary_length(c)).as_py() or 0) for c in chunks)
    # `words` words hold up to 8 * words - 1 bytes and the length (equal keys, equal
    # strings); a string of exactly 8 * words bytes leaves no room for the length, which
    # is then told by the zero padding only when no string holds a NUL byte
    words = -(-max(longest, 1) // 8)
    with_length = longest < 8 * words
    if not with_length and any(pc.any(pc.match_substring(c, "\x00")).as_py() for c in chunks):
        words, with_length = words + 1, True
    exact = words <= 2
    # the last word holds what is left of the longest id (and its length) in as few
    # bytes as that needs: 9-byte ids take 8 + 2 bytes per key, not 16
    last, top = np.uint64, 56
    if exact and words == 2:
        need = longest - 8 + with_length
        last = np.uint16 if need <= 2 else np.uint32 if need <= 4 else np.uint64
        top = 8 * (np.dtype(last).itemsize - 1)
    kinds = [np.uint64] * (words - 1) + [last] if exact else [np.uint64]
    out = tuple(np.empty(total, dtype=kind) for kind in kinds)
    scratch = np.empty(min(_BLOCK, total), dtype=np.uint64)
    base = 0
    for chunk in chunks:
        n = len(chunk)
        _, offsets_buf, data_buf = chunk.buffers()
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(
            offsets_buf, dtype=width, count=n + 1, offset=chunk.offset * np.dtype(width).itemsize
        )
        size = data_buf.size if data_buf is not None else 0
        buffer = _Bytes(np.frombuffer(data_buf, dtype=np.uint8) if size else np.zeros(0, np.uint8))
        for lo in range(0, n, _BLOCK):
            hi = min(lo + _BLOCK, n)
            start = offsets[lo:hi]
            length = offsets[lo + 1 : hi + 1] - start
            # ids of one length (common: fixed-width ids) are read without an index array
            fixed = int(length[0]) if length.min() == length.max() else None
            if not exact:
                _hash_words(out[0][base + lo : base + hi], start, length, fixed, buffer)
                continue
            for w in range(words):
                target = out[w][base + lo : base + hi]
                word = target if target.dtype == np.uint64 else scratch[: hi - lo]
                if fixed is None:
                    buffer.gather(word, start + 8 * w)
                    word &= _LOW_BYTES[np.clip(length - 8 * w, 0, 8)]
                    if with_length and w == words - 1:
                        word |= length.astype(np.uint64) << np.uint64(top)
                else:
                    buffer.strided(word, int(start[0]) + 8 * w, fixed)
                    word &= _LOW_BYTES[min(max(fixed - 8 * w, 0), 8)]
                    if with_length and w == words - 1:
                        word |= np.uint64(fixed << top)
                if word is not target:
                    target[:] = word  # the bytes fit: the cast drops only zero bits
        base += n
    return DocKeys(out, exact)


class _Bytes:
    """8-byte little-endian words at any byte offset of one Arrow data buffer (no copy)."""

    def __init__(self, data: np.ndarray):
        self.data = data
        self.size = size = data.size
        # words[i] = the 8 bytes at offset i (an unaligned view); offsets closer than 8
        # bytes to the end read from a small zero-padded copy of the last bytes instead
        self.safe = max(size - 7, 0)
        self.words = np.ndarray(shape=(self.safe,), dtype="<u8", buffer=data, strides=(1,))
        tail = np.zeros(48, dtype=np.uint8)
        self.tail_from = max(size - 16, 0)
        tail[: size - self.tail_from] = data[self.tail_from : size]
        self.tail = np.ndarray(shape=(41,), dtype="<u8", buffer=tail, strides=(1,))

    def gather(self, out: np.ndarray, at: np.ndarray) -> None:
        """out[i] = the 8 bytes at offset at[i] (``at`` ascending)."""
        cut = int(np.searchsorted(at, self.safe))
        out[:cut] = self.words[at[:cut]]
        if cut < at.size:
            out[cut:] = self.tail[np.minimum(at[cut:] - self.tail_from, self.tail.size - 1)]

    def strided(self, out: np.ndarray, first: int, stride: int) -> None:
        """out[i] = the 8 bytes at offset first + i * stride: a strided copy."""
        m = out.size
        if first + 8 > self.size:
            inside = 0
        else:
            inside = m if stride == 0 else min(m, (self.size - 8 - first) // stride + 1)
        if inside:
            view = np.ndarray((inside,), "<u8", buffer=self.data, offset=first, strides=(stride,))
            out[:inside] = view
        if inside < m:
            self.gather(out[inside:], first + stride * np.arange(inside, m))


def _hash_words(
    key: np.ndarray, start: np.ndarray, length: np.ndarray, fixed: int | None, buffer: _Bytes
) -> None:
    """key[i] = a 64-bit hash of the string at ``start[i]`` of ``length[i]`` bytes (all of
    ``fixed`` bytes when that is given).

    Each string is mixed one 8-byte word at a time for as many rounds as its own length
    needs (at least one), so its key depends on its bytes alone: not on the other strings
    of the block or chunk, which the join's two sides (run and judgments) do not share.
    """
    np.multiply(length.astype(np.uint64), _FIBONACCI, out=key)
    tmp = np.empty_like(key)
    word = np.empty_like(key)
    longest = int(length.max()) if length.size else 0
    for j in range(0, max(longest, 1), 8):
        if fixed is not None:  # every string has bytes left from offset j
            buffer.strided(word, int(start[0]) + j, fixed)
            word &= _LOW_BYTES[min(fixed - j, 8)] if fixed > j else np.uint64(0)
            key ^= word
            _mix(key, tmp)
            continue
        if j == 0:
            buffer.gather(word, start)
            word &= _LOW_BYTES[np.minimum(length, 8)]
            key ^= word
            _mix(key, tmp)
            continue
        rows = np.flatnonzero(length > j)  # strings with bytes left from offset j
        part = key[rows]
        piece = np.empty_like(part)
        buffer.gather(piece, start[rows] + j)
        piece &= _LOW_BYTES[np.minimum(length[rows] - j, 8)]
        part ^= piece
        _mix(part, np.empty_like(part))
        key[rows] = part


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
    # is equal too (a group of three or more: rare, settled exactly below)
    alone = eq.copy()
    alone[1:] &= ~eq[:-1]
    alone[:-1] &= ~eq[1:]
    at = np.flatnonzero(alone)
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
    crowd = np.flatnonzero(eq & ~alone)
    members = np.unique(np.bitwise_and(packed[np.concatenate([crowd, crowd + 1])], low))
    del packed, eq, alone
    same = keys.equal(first, later)
    first, later = first[same], later[same]
    if not keys.exact and first.size:
        equal = pc.equal(_take(docs, first), _take(docs, later))
        keep = equal.to_numpy(zero_copy_only=False)
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


def _take(docs: pa.ChunkedArray | Callable[[np.ndarray], pa.Array], items: np.ndarray):
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


# --------------------------------------------------------------------------- readers


def read_trec_run(path: str | Path, *, duplicates: str = "error") -> pd.DataFrame:
    """Read a TREC run (``qid Q0 docid rank score tag``), optionally gzip-compressed.

    Returns the canonical rankings frame: ``query_id``, ``doc_id`` (str), ``score``
    (float64) and ``rank`` (int, 1 = top) computed by :func:`rank_by_score`: the file's
    own rank column is ignored, as trec_eval ignores it. Rows come grouped by query and
    sorted by rank. A (query, doc) pair that occurs twice is an error (trec_eval refuses
    such runs); ``duplicates="first"`` keeps the first occurrence instead.
    """
    if duplicates not in ("error", "first"):
        raise ConfigError(f"duplicates: expected 'error' or 'first', got {duplicates!r}")
    return _read_run(path, duplicates, check=True)


def _run_arrays(
    path: str | Path,
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray, _Lines]:
    """Query ids, doc ids and scores of a run file, in file order, scores checked."""
    table, lines = _read_fields(path, RUN_FIELDS, {"query_id": 0, "doc_id": 2, "score": 4})
    score, bad = _parse_floats(table["score"])
    if bad is not None or np.isnan(score).any():
        row = bad if bad is not None else int(np.flatnonzero(np.isnan(score))[0])
        raise DataError(
            f"{path}: line {lines[row]}: score: expected a number, "
            f"got {str(table['score'][row].as_py())!r}"
        )
    _refuse_infinite(score, table["score"], "score", path, lines)
    return table["query_id"], table["doc_id"], score, lines


def repeated_pairs(codes: np.ndarray, doc_ids: pa.ChunkedArray) -> np.ndarray:
    """Rows (sorted) whose (query code, doc id) pair already stands at an earlier row."""
    _, later = equal_pairs(codes, doc_keys(doc_ids), doc_ids)
    return np.sort(later)


def name_pairs(
    query_ids: pa.ChunkedArray,
    doc_ids: pa.ChunkedArray,
    rows: np.ndarray,
    line_of: Callable[[int], int],
) -> str:
    """The first few (query, doc) pairs at ``rows`` with their lines, for an error message."""
    shown = ", ".join(
        f"({query_ids[int(r)].as_py()!r}, {doc_ids[int(r)].as_py()!r}) at line {line_of(int(r))}"
        for r in rows[:_SHOWN]
    )
    return shown + (f" and {rows.size - _SHOWN} more" if rows.size > _SHOWN else "")


def _read_run(path: str | Path, duplicates: str, check: bool) -> pd.DataFrame:
    """read_trec_run; ``check=False`` skips the duplicate search."""
    qid, doc, score, lines = _run_arrays(path)
    codes, _ = query_codes(qid)
    later = repeated_pairs(codes, doc) if check else np.zeros(0, dtype=np.int64)
    if later.size:
        if duplicates == "error":
            raise DataError(
                f"{path}: line {lines[int(later[0])]}: expected each document once per "
                f"query, got {later.size} duplicate (query, doc) pair(s): "
                f"{name_pairs(qid, doc, later, lines.__getitem__)} "
                "(use duplicates: first to keep the first occurrence)"
            )
        keep = np.ones(codes.size, dtype=bool)
        keep[later] = False
        idx = pa.array(np.flatnonzero(keep))
        qid, doc, codes, score = qid.take(idx), doc.take(idx), codes[keep], score[keep]
    order, within_ties = order_rows(codes, -score, doc)
    if order is not None:
        idx = pa.array(order)
        doc = doc.take(idx)
        if not within_ties:  # inside tie blocks query and score are constant
            qid, codes, score = qid.take(idx), codes[order], score[order]
    return pd.DataFrame(
        {
            "query_id": _to_str_series(qid),
            "doc_id": _to_str_series(doc),
            "score": score,
            "rank": positions(codes).astype(np.int64) + 1,
        }
    )


def read_trec_qrels(path: str | Path) -> pd.DataFrame:
    """Read TREC qrels (``qid iter docid grade``), optionally gzip-compressed.

    Returns the canonical judgments frame ``query_id``, ``doc_id`` (str) and
    ``relevance`` (float64). A (query, doc) pair judged twice is an error, as in trec_eval.
    """
    qid, doc, grade = _qrels_arrays(path)
    return pd.DataFrame(
        {"query_id": _to_str_series(qid), "doc_id": _to_str_series(doc), "relevance": grade}
    )


def _qrels_arrays(
    path: str | Path, check: bool = True
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray]:
    """Query ids, doc ids and grades of a qrels file, checked (numbers; no repeated pair
    unless ``check`` is False)."""
    table, lines = _read_fields(path, QRELS_FIELDS, {"query_id": 0, "doc_id": 2, "relevance": 3})
    grade, bad = _parse_floats(table["relevance"])
    if bad is not None or np.isnan(grade).any():
        row = bad if bad is not None else int(np.flatnonzero(np.isnan(grade))[0])
        raise DataError(
            f"{path}: line {lines[row]}: relevance: expected a number, "
            f"got {str(table['relevance'][row].as_py())!r}"
        )
    _refuse_infinite(grade, table["relevance"], "relevance", path, lines)
    qid, doc = table["query_id"], table["doc_id"]
    if not check:
        return qid, doc, grade
    later = repeated_pairs(query_codes(qid)[0], doc)
    if later.size:
        raise DataError(
            f"{path}: line {lines[int(later[0])]}: expected one judgment per (query, doc) pair, "
            f"got {later.size} repeated: {name_pairs(qid, doc, later, lines.__getitem__)}"
        )
    return qid, doc, grade


def _refuse_infinite(
    values: np.ndarray, texts: pa.ChunkedArray, column: str, path: str | Path, lines: _Lines
) -> None:
    """An infinite score or grade is an error naming its line: ``inf`` sorts, so trec_eval
    would take it, but no retrieval score or grade is infinite; it is a broken export."""
    infinite = np.isinf(values)
    if infinite.any():
        row = int(np.flatnonzero(infinite)[0])
        raise DataError(
            f"{path}: line {lines[row]}: {column}: expected a finite number, "
            f"got {str(texts[row].as_py())!r}"
        )


def _to_str_series(column: pa.ChunkedArray) -> pd.Series:
    return column.to_pandas().astype("str")


def _parse_floats(column: pa.ChunkedArray) -> tuple[np.ndarray, int | None]:
    """Float64 values of a column read as text or numbers; index of the first bad one."""
    if pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
        return column.to_numpy().astype(np.float64, copy=False), None
    try:
        return pc.cast(column, pa.float64()).to_numpy(), None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = pd.to_numeric(pd.Series(column.to_pandas()), errors="coerce").to_numpy(np.float64)
        lowered = pc.utf8_lower(pc.utf8_trim_whitespace(column)).to_numpy(zero_copy_only=False)
        bad = np.isnan(values) & (lowered != "nan")
        return values, int(np.flatnonzero(bad)[0]) if bad.any() else None


class _Lines:
    """Maps row indices of a parsed table to 1-based line numbers of the file."""

    def __init__(self, numbers: np.ndarray | None):
        self.numbers = numbers

    def __getitem__(self, row: int) -> int:
        return int(self.numbers[row]) if self.numbers is not None else row + 1


def _open(path: str | Path):
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _sniff(path: str | Path) -> None:
    """Reject missing, empty and binary files before parsing them."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{path}: expected an existing file, got no such file")
    if p.is_dir():
        raise DataError(f"{path}: expected a file, got a folder")
    try:
        with _open(p) as handle:
            head = handle.read(_SNIFF_BYTES)
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: expected a readable (gzip) text file, got {exc}") from None
    if not head.strip():
        raise DataError(f"{path}: expected TREC lines, got an empty file")
    if b"\x00" in head:
        offset = head.index(b"\x00")
        raise DataError(
            f"{path}: expected a text file, got binary data (a NUL byte at offset {offset})"
        )


def _read_fields(
    path: str | Path, fields: Sequence[str], wanted: dict[str, int]
) -> tuple[pa.Table, _Lines]:
    """Parse a whitespace-separated TREC file into the wanted columns (all as text).

    Tries pyarrow's CSV reader with a single-space delimiter first; files with tabs,
    repeated spaces or malformed lines go through a splitting path that also reports the
    offending line number.
    """
    _sniff(path)
    names = list(fields)
    # an uncompressed file is read through a memory map: no copy of its text in memory
    compressed = Path(path).suffix.lower() in (".gz", ".bz2", ".lz4", ".zst")
    try:
        with contextlib.nullcontext(path) if compressed else pa.memory_map(str(path)) as source:
            table = pacsv.read_csv(
                source,
                read_options=pacsv.ReadOptions(column_names=names, block_size=_CSV_BLOCK),
                parse_options=pacsv.ParseOptions(
                    delimiter=" ", quote_char=False, double_quote=False
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={
                        name: pa.float64() if name in _NUMERIC else pa.string() for name in wanted
                    },
                    include_columns=list(wanted),
                    strings_can_be_null=False,
                    null_values=[],
                ),
            )
        return table, _Lines(None)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        pass
    return _read_fields_split(path, fields, wanted, extra_allowed=fields == RUN_FIELDS)


def _read_fields_split(
    path: str | Path, fields: Sequence[str], wanted: dict[str, int], extra_allowed: bool
) -> tuple[pa.Table, _Lines]:
    try:
        lines = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=["line"]),
            parse_options=pacsv.ParseOptions(
                delimiter="\x1f", quote_char=False, double_quote=False, ignore_empty_lines=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={"line": pa.binary()}, strings_can_be_null=False, null_values=[]
            ),
        )["line"]
    except pa.ArrowInvalid as exc:
        raise DataError(f"{path}: expected whitespace-separated text lines, got {exc}") from None
    try:
        text = pc.cast(lines, pa.large_string())
    except pa.ArrowInvalid:
        row = _first_non_utf8(lines)
        raise DataError(
            f"{path}: line {row + 1}: expected UTF-8 text, got bytes that are not UTF-8"
        ) from None
    trimmed = pc.utf8_trim_whitespace(text)
    blank = pc.equal(pc.binary_length(trimmed), 0).to_numpy(zero_copy_only=False)
    parts = pc.utf8_split_whitespace(trimmed)
    counts = pc.list_value_length(parts).to_numpy(zero_copy_only=False).copy()
    counts[blank] = 0
    numbers = np.flatnonzero(counts > 0) + 1
    if numbers.size == 0:
        raise DataError(f"{path}: expected TREC lines, got an empty file")
    width = len(fields)
    # trec_eval ignores anything after a run's sixth field; qrels need exactly four
    wrong = (counts < width) if extra_allowed else (counts != width)
    bad = np.flatnonzero(wrong & (counts > 0))
    if bad.size:
        row = int(bad[0])
        expected = " ".join(fields)
        least = "at least " if extra_allowed else ""
        raise DataError(
            f"{path}: line {row + 1}: expected {least}{width} whitespace-separated fields "
            f"({expected}), got {int(counts[row])}"
        )
    parts = parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
    starts = parts.offsets.to_numpy()[:-1][counts > 0]
    values = parts.values
    columns = {name: values.take(pa.array(starts + index)) for name, index in wanted.items()}
    return pa.table(columns), _Lines(numbers)


def _first_non_utf8(lines: pa.ChunkedArray) -> int:
    """Index of the first line whose bytes are not UTF-8 (one decode call per chunk)."""
    base = 0
    for chunk in lines.chunks:
        chunk = chunk.cast(pa.large_binary())
        _, offsets_buf, data_buf = chunk.buffers()
        offsets = np.frombuffer(
            offsets_buf, dtype=np.int64, count=len(chunk) + 1, offset=chunk.offset * 8
        )
        data = (
            bytes(np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]])
            if data_buf
            else b""
        )
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return base + int(np.searchsorted(offsets - offsets[0], exc.start, side="right")) - 1
        base += len(chunk)
    return 0


# --------------------------------------------------------------------------- output


def trec_eval_text(
    qrels_path: str | Path,
    run_path: str | Path,
    metrics: Sequence[str | Metric],
    *,
    per_query: bool = False,
    complete: bool = False,
    rel_level: float = 1,
    depth: int | None = 1000,
    digits: int | None = None,
) -> str:
    """What ``abrank metrics`` prints: trec_eval's ``-q`` layout with canonical metric names.

    Rows are ``measure<TAB>query<TAB>value``: one per query and metric when ``per_query``
    (queries in byte order, as trec_eval prints them), then one ``all`` row per metric with
    the mean. As in trec_eval, a judged query without any relevant document scores 0 (the
    metrics engine leaves such values undefined) and counts in the mean; queries in the run
    but not in the qrels are ignored; with ``complete`` (trec_eval ``-c``) judged queries
    missing from the run score 0 too. Values are printed at full double precision
    (``repr``) unless ``digits`` is given (``digits=4`` prints like trec_eval's ``%.4f``).
    ``depth`` is trec_eval's ``-M``; trec_eval 9 itself sets no limit by default, so for
    runs deeper than 1,000 documents per query pass ``depth=None`` to match it.
    """
    from abrank.metrics import _compute, _options, _scored, parse_metrics

    if digits is not None and (
        not isinstance(digits, int) or isinstance(digits, bool) or digits < 0
    ):
        raise ConfigError(f"digits: expected a whole number >= 0, got {digits!r}")
    parsed = parse_metrics(metrics)
    _options(rel_level, "linear", depth)
    prep = _prepare_files(qrels_path, run_path, depth)
    scored = _scored(prep, complete)
    if not scored.any():
        raise DataError(
            f"{run_path}: query ids: expected queries that are also in {qrels_path}, got none"
        )
    results = _compute(prep, parsed, float(rel_level), "linear")
    # trec_eval scores an undefined value (no relevant judgment) as 0
    columns = {m.name: np.nan_to_num(results[m.name][scored], nan=0.0) for m in parsed}
    qids = prep.ids.filter(pa.array(scored)).to_pylist()
    return format_trec_eval(qids, columns, per_query=per_query, digits=digits)


def _prepare_files(qrels_path: str | Path, run_path: str | Path, depth: int | None) -> _Prepared:
    """A TREC run joined to its qrels (the metrics engine's arrays), straight from the files."""
    from abrank.metrics import _prepare_arrays

    jq, jd, grade = _qrels_arrays(qrels_path, check=False)
    rq, rd, score, _ = _run_arrays(run_path)
    pa.default_memory_pool().release_unused()  # the CSV reader's buffers: lower peak memory
    # Like trec_eval, refuse a run with a document twice among a query's first `depth`
    # rows, and qrels that judge a pair twice. The join finds such pairs anyway; the
    # readers' own searches, which name the lines, run only when there is one to report.
    key = np.negative(score, out=score) if score.flags.writeable else -score  # best first
    try:
        return _prepare_arrays(rq, rd, key, None, jq, jd, grade, depth, None)
    except DataError as exc:
        if str(exc).startswith("rankings: (query_id, doc_id)"):
            read_trec_run(run_path)
        if str(exc).startswith("judgments: (query_id, doc_id)"):
            read_trec_qrels(qrels_path)
        raise


def trec_eval_report(
    qrels_path: str | Path,
    run_path: str | Path,
    measures: TrecMeasures,
    *,
    per_query: bool = False,
    complete: bool = False,
    rel_level: float = 1,
    depth: int | None = None,
    digits: int = 4,
) -> str:
    """What trec_eval 9 prints for these measures, options and files, byte for byte.

    ``measures`` come from :func:`abrank.treceval.parse_trec_measures`; the options are
    trec_eval's ``-q`` (``per_query``), ``-c`` (``complete``), ``-l`` and ``-M`` (whose
    default, as in trec_eval, is no limit). See :mod:`abrank.treceval` for the layout.
    """
    from abrank.metrics import _options
    from abrank.treceval import format_report

    _options(rel_level, "linear", depth)
    prep = _prepare_files(qrels_path, run_path, depth)
    if not (prep.in_run & prep.in_judgments).any():
        raise DataError(
            f"{run_path}: query ids: expected queries that are also in {qrels_path}, got none"
        )
    runid = run_tag(run_path) if "runid" in measures.cutoffs else None
    return format_report(
        prep,
        measures,
        rel_level=rel_level,
        complete=complete,
        per_query=per_query,
        runid=runid,
        digits=digits,
    )


def run_tag(path: str | Path) -> str:
    """The run's name as trec_eval prints it (``runid``): the tag, the sixth field, of the
    file's last non-blank line."""
    window = 1 << 16
    with _open(path) as handle:
        if Path(path).suffix == ".gz":  # no seeking back in a stream: keep its last bytes
            data = b""
            while chunk := handle.read(1 << 20):
                data = (data + chunk)[-(1 << 20) :]
            lines = data.splitlines()
        else:
            size = handle.seek(0, 2)
            while True:
                handle.seek(max(size - window, 0))
                lines = handle.read().splitlines()
                if window >= size or any(line.strip() for line in lines[1:]):
                    break
                window *= 4
    last = next((line for line in reversed(lines) if line.strip()), b"")
    fields = last.split()
    if len(fields) < len(RUN_FIELDS):
        raise DataError(
            f"{path}: last line: expected {len(RUN_FIELDS)} whitespace-separated fields "
            f"({' '.join(RUN_FIELDS)}), got {len(fields)}"
        )
    return fields[5].decode("utf-8", "replace")


def format_trec_eval(
    qids: Sequence[str],
    columns: dict[str, np.ndarray],
    *,
    per_query: bool = False,
    digits: int | None = None,
) -> str:
    """trec_eval's ``-q`` layout for per-query values (one array per metric, in ``qids`` order).

    Per-query rows group all measures of one query, then the next query; one ``all`` row
    per metric follows with the mean. Undefined values must already be scored (trec_eval
    prints 0 for them).
    """

    def text(value: float) -> str:
        return repr(value) if digits is None else f"{value:.{digits}f}"

    def texts(column: np.ndarray) -> list[str]:
        column = np.asarray(column, dtype=np.float64)
        distinct, index = np.unique(column, return_inverse=True)
        # (-0.0 equals 0.0 to np.unique but prints apart)
        if distinct.size * 2 > column.size or np.signbit(column).any():
            return list(map(text, column.tolist()))
        # few distinct values (mrr@k takes k + 1): each is formatted once
        shown = list(map(text, distinct.tolist()))
        return [shown[i] for i in index.tolist()]

    out: list[str] = []
    if per_query:
        blocks = [
            [f"{name}\t{q}\t{v}" for q, v in zip(qids, texts(column), strict=True)]
            for name, column in columns.items()
        ]
        out = [line for row in zip(*blocks, strict=True) for line in row]
    for name, column in columns.items():
        (mean,) = texts(np.array([np.mean(column)]))
        out.append(f"{name}\tall\t{mean}")
    return "\n".join(out) + "\n"
