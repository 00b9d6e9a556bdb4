"""NumPy arrays of Arrow columns read straight from their buffers.

pyarrow's own conversions (``to_numpy``, ``pa.array``) consult its pandas shim, which
imports pandas on first use: a third of a second that ``abrank metrics`` on TREC files
would otherwise wait for before parsing its first file. The readers' hot conversions go
through here instead, and pandas loads on another core meanwhile (:mod:`abrank._lazy`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["numbers_of"]

_DTYPES = {
    pa.float64(): np.float64,
    pa.float32(): np.float32,
    pa.int64(): np.int64,
    pa.int32(): np.int32,
    pa.int16(): np.int16,
    pa.int8(): np.int8,
    pa.uint64(): np.uint64,
    pa.uint32(): np.uint32,
    pa.uint16(): np.uint16,
    pa.uint8(): np.uint8,
}


def numbers_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """A column of fixed-width numbers without nulls as a NumPy array (a read-only view
    of a single chunk's buffer, else one copy); None for any other column (text, nulls,
    half floats), which the caller converts as before."""
    dtype = _DTYPES.get(values.type)
    if dtype is None:
        return None
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if any(chunk.null_count for chunk in chunks):
        return None
    width = np.dtype(dtype).itemsize
    arrays = [
        np.frombuffer(
            chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * width
        )
        if len(chunk)
        else np.zeros(0, dtype=dtype)
        for chunk in chunks
    ]
    if not arrays:
        return np.zeros(0, dtype=dtype)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
