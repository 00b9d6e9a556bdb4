"""64-bit document keys computed straight from Arrow's string buffers.

A document id is compared, hashed and grouped as one 64-bit word instead of a Python string:
ids of up to 8 bytes are their bytes, longer ones a hash of all their bytes (with the
bytes kept to tell rare collisions apart). :func:`doc_keys` makes the keys of a column;
:func:`abrank.io.arrow.equal_pairs` matches (query, doc) pairs on them. No Python code
runs per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["BLOCK", "DocKeys", "doc_keys", "mix_bits"]


# _LOW_BYTES[n] keeps the first n bytes of a little-endian 8-byte word
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


#: Rows per block for element-wise passes: small temporaries, reused.
BLOCK = 1 << 20


def mix_bits(x: np.ndarray, tmp: np.ndarray) -> None:
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
    if not with_length and any(_holds_nul(c) for c in chunks):
        words, with_length = words + 1, True
    exact = words <= 2
    # the last word holds what is left of the longest id (and its length) in as few
    # bytes as that needs: 9-byte ids take 8 + 2 bytes per key, not 16
    last: type[np.unsignedinteger] = np.uint64
    top = 56
    if exact and words == 2:
        need = longest - 8 + with_length
        last = np.uint16 if need <= 2 else np.uint32 if need <= 4 else np.uint64
        top = 8 * (np.dtype(last).itemsize - 1)
    kinds = [np.uint64] * (words - 1) + [last] if exact else [np.uint64]
    out = tuple(np.empty(total, dtype=kind) for kind in kinds)
    scratch = np.empty(min(BLOCK, total), dtype=np.uint64)
    base = 0
    for chunk in chunks:
        n = len(chunk)
        _, offsets_buf, data_buf = chunk.buffers()
        width: type[np.signedinteger] = (
            np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        )
        offsets = np.frombuffer(
            offsets_buf, dtype=width, count=n + 1, offset=chunk.offset * np.dtype(width).itemsize
        )
        size = data_buf.size if data_buf is not None else 0
        buffer = _Bytes(np.frombuffer(data_buf, dtype=np.uint8) if size else np.zeros(0, np.uint8))
        for lo in range(0, n, BLOCK):
            hi = min(lo + BLOCK, n)
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


def _holds_nul(chunk: pa.Array) -> bool:
    """Whether any string of ``chunk`` holds a NUL byte: a scan of the bytes its strings
    span in the data buffer (several times faster than a substring search)."""
    n = len(chunk)
    _, offsets_buf, data_buf = chunk.buffers()
    if n == 0 or data_buf is None:
        return False
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(
        offsets_buf, dtype=width, count=n + 1, offset=chunk.offset * np.dtype(width).itemsize
    )
    data = np.frombuffer(data_buf, dtype=np.uint8)[int(offsets[0]) : int(offsets[n])]
    if not data.size:
        return False
    return bool(data.min() == 0)


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
            mix_bits(key, tmp)
            continue
        if j == 0:
            buffer.gather(word, start)
            word &= _LOW_BYTES[np.minimum(length, 8)]
            key ^= word
            mix_bits(key, tmp)
            continue
        rows = np.flatnonzero(length > j)  # strings with bytes left from offset j
        part = key[rows]
        piece = np.empty_like(part)
        buffer.gather(piece, start[rows] + j)
        piece &= _LOW_BYTES[np.minimum(length[rows] - j, 8)]
        part ^= piece
        mix_bits(part, np.empty_like(part))
        key[rows] = part
