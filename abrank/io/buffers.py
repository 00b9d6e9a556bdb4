"""NumPy arrays of Arrow columns and Arrow arrays of NumPy ones, made from their buffers.

pyarrow's own conversions (``to_numpy``, ``pa.array``, ``pa.scalar``) consult its pandas
shim, which imports pandas on first use: a fifth of a second of CPU that ``abrank
metrics`` on a large TREC run would spend, or wait for, beside its parse. Every
conversion of that command's path goes through here, so that it loads no pandas at all
(:mod:`abrank.cli.metrics` starts pandas in the background only where a measure needs it).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["arrow_of", "bools_of", "numbers_of", "numpy_of", "text_scalar", "texts_of"]

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


_ARROW_TYPES = {np.dtype(dtype): arrow for arrow, dtype in _DTYPES.items()}


def bools_of(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean column without nulls as a NumPy bool array (its bits unpacked)."""
    chunks = mask.chunks if isinstance(mask, pa.ChunkedArray) else [mask]
    arrays = []
    for chunk in chunks:
        if chunk.null_count:
            raise ValueError("bools_of: expected a boolean column without nulls")
        if not len(chunk):
            continue
        bits = np.frombuffer(chunk.buffers()[1], dtype=np.uint8)
        unpacked = np.unpackbits(bits, count=chunk.offset + len(chunk), bitorder="little")
        arrays.append(unpacked[chunk.offset :].view(bool))
    if not arrays:
        return np.zeros(0, dtype=bool)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def arrow_of(values: np.ndarray) -> pa.Array:
    """A one-dimensional NumPy array of fixed-width numbers or booleans as an Arrow array
    without nulls (numbers share the array's memory when it is contiguous)."""
    values = np.asarray(values)
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), values.size, [None, pa.py_buffer(bits)])
    arrow = _ARROW_TYPES.get(values.dtype)
    if arrow is None:
        raise TypeError(f"arrow_of: expected fixed-width numbers or booleans, got {values.dtype}")
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(arrow, values.size, [None, pa.py_buffer(values)])


def numpy_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column without nulls as a NumPy array: numbers and booleans from their buffers
    (:func:`numbers_of`, :func:`bools_of`), anything else by pyarrow's ``to_numpy``."""
    if values.type == pa.bool_() and not values.null_count:
        return bools_of(values)
    numbers = numbers_of(values)
    if numbers is not None:
        return numbers
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.to_numpy(zero_copy_only=False)


def texts_of(texts: list[str]) -> pa.Array:
    """Python strings as an Arrow string array, built from their UTF-8 bytes."""
    encoded = [text.encode("utf-8") for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(item) for item in encoded], out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), data])


def text_scalar(text: str, *, large: bool = False) -> pa.Scalar:
    """One string as an Arrow scalar (``large_string`` when ``large``), for the string
    kernels' separators: ``pa.scalar`` would go through pyarrow's pandas shim."""
    array = texts_of([text])
    return (array.cast(pa.large_string()) if large else array)[0]
