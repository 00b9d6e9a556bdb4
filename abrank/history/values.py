"""Arrow arrays and scalars made from their buffers, without pandas.

pyarrow converts a Python value (``pa.array``, ``pa.scalar``, a str or a float passed to a
kernel) by first asking whether it is a pandas object, which imports pandas: half a second
of ``abrank history``'s one-second budget. Values made from buffers skip that question.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array of ``values`` (None missing)."""
    data = [b"" if value is None else value.encode("utf-8") for value in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(item) for item in data], out=offsets[1:])
    valid = np.array([value is not None for value in values], dtype=bool)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), len(data), buffers)


def int32s(values: np.ndarray) -> pa.Array:
    """An int32 array of NumPy integers (sharing their memory when they are int32)."""
    values = np.ascontiguousarray(values, dtype=np.int32)
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


def text_value(value: str) -> pa.Scalar:
    """A string scalar."""
    return strings([value])[0]


def float_value(value: float) -> pa.Scalar:
    """A float64 scalar."""
    data = np.array([value], dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), 1, [None, pa.py_buffer(data)])[0]


def int_value(value: int) -> pa.Scalar:
    """An int64 scalar."""
    data = np.array([value], dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(data)])[0]


def null_value(kind: pa.DataType) -> pa.Scalar:
    """A missing value of type ``kind``."""
    return pa.nulls(1, kind)[0]


def index_codes(indices: pa.Array) -> np.ndarray:
    """A dictionary's int32 indices (none missing) as a NumPy view of their buffer
    (``to_numpy`` would load pandas)."""
    if indices.type != pa.int32():
        indices = indices.cast(pa.int32())
    data = np.frombuffer(indices.buffers()[1], dtype=np.int32, count=len(indices) + indices.offset)
    return data[indices.offset :]
