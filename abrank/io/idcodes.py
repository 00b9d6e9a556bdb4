"""Id columns as codes over their distinct values as text, the way large logs stay cheap.

A log of 20 million shown results holds a few million distinct impression, user and
document ids. Casting every row's int64 id to text, hashing every row's string or sorting
rows by strings costs seconds and gigabytes; the same work on the distinct values costs a
tenth of it. :func:`text_categorical` turns a column (Arrow, any id type) into a pandas
Categorical whose categories are the distinct values *as text* in byte order: equal ids are
equal whatever their type was (the int64 ``12`` of a Parquet log and the ``"12"`` of a CSV
log are one id), and the codes order rows as the ids' text sorts. :func:`text_codes` gives
dense codes and the distinct ids of any id column of a frame, using a categorical's codes
as they are when its categories are already text in byte order.

Only the distinct values are cast and sorted; rows are touched by NumPy gathers alone.
When equal ids sit together (an impression's rows, a user's impressions), only the first
row of each run of equal neighbours is hashed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.arrow import as_arrow, query_codes

__all__ = ["category_text", "is_id_type", "text_categorical", "text_codes", "text_of"]


def is_id_type(kind: pa.DataType) -> bool:
    """Whether a column of this Arrow type can be coded by :func:`text_categorical`:
    integers, floats, booleans and text, or a dictionary of them."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
    )


def text_of(values: pa.Array) -> pa.Array:
    """Values as text (large_string): numbers written as Arrow writes them (``12``,
    ``1.5``), whole floats as the integers they hold (an int id that a reader widened to
    float: ``12.0`` is the id ``12``); missing values stay missing."""
    if pa.types.is_large_string(values.type):
        return values
    if pa.types.is_floating(values.type):
        numbers = values.to_numpy(zero_copy_only=False)
        present = numbers[~np.isnan(numbers)]
        if present.size and bool(
            (np.abs(present) < 2.0**63).all() and (present == np.round(present)).all()
        ):
            values = pc.cast(values, pa.int64())
    return pc.cast(values, pa.large_string())


def text_categorical(values: pa.Array | pa.ChunkedArray) -> pd.Categorical:
    """A column of ids as a pandas Categorical of text.

    Categories: the distinct values as text (:func:`text_of`), in byte order, each used by
    some row; codes: each row's category, -1 (NaN) for a missing value. ``values`` has a
    type that :func:`is_id_type` accepts.
    """
    indices, lengths, dictionary, compact = _dictionary_codes(values)
    codes, categories = _sorted_text(indices, dictionary, compact=compact)
    if lengths is not None:  # codes of runs of equal rows: each row takes its run's
        codes = np.repeat(codes, lengths)
    return pd.Categorical.from_codes(codes, dtype=_dtype(categories), validate=False)


def text_codes(values: pd.Series, what: str) -> tuple[np.ndarray, pa.Array]:
    """Dense int32 codes of an id column and its distinct ids as text in byte order (code i
    is ``ids[i]``; every id is some row's), as :func:`abrank.io.arrow.query_codes` gives
    them. A categorical column is coded from its codes and categories alone (no row is
    hashed); a missing id is a DataError ``"{what}: row R: expected an id, got a missing
    value"``."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        indices = np.asarray(values.cat.codes.to_numpy())
        if indices.size and int(indices.min()) < 0:
            row = int(np.flatnonzero(indices < 0)[0])
            raise DataError(f"{what}: row {row}: expected an id, got a missing value")
        codes, ids = _sorted_text(indices, _category_values(values.cat.categories), compact=True)
        return codes.astype(np.int32, copy=False), ids
    return query_codes(as_arrow(values, what))


def category_text(categories: pd.Index) -> pa.Array:
    """A categorical's categories as text (:func:`text_of`), in their order: Arrow's text
    for numbers, pandas' ``str`` for objects of mixed types."""
    return text_of(_category_values(categories))


def _category_values(categories: pd.Index) -> pa.Array:
    """A categorical's categories as one Arrow array (objects of mixed types as text)."""
    try:
        values = pa.array(categories.array)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        values = pa.array(categories.astype(str).to_numpy(), type=pa.large_string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values


# --------------------------------------------------------------------------- helpers


def _dictionary_codes(
    values: pa.Array | pa.ChunkedArray,
) -> tuple[np.ndarray, np.ndarray | None, pa.Array, bool]:
    """(index into ``dictionary`` per row, -1 for missing, or per run of equal rows; the
    runs' lengths, None when the indices are per row; the dictionary; whether some of its
    entries may be unused)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(array.type):
        return _indices(array.indices), None, array.dictionary, True
    n = len(array)
    if n > 1 and array.null_count == 0:
        starts = _run_starts(array)
        if starts.size <= n // 4:  # equal ids in runs: code one id per run
            indices, dictionary = _encode(array.take(pa.array(starts)))
            return indices, np.diff(np.append(starts, n)), dictionary, False
    indices, dictionary = _encode(array)
    return indices, None, dictionary, False


def _encode(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes of a column: (index per row, the distinct values). Integers that
    ascend (ids numbered as they were served) are their own dictionary; anything else is
    hashed."""
    if pa.types.is_integer(array.type) and array.null_count == 0 and len(array) > 1:
        numbers = array.to_numpy()
        if bool((numbers[1:] > numbers[:-1]).all()):
            return np.arange(len(array), dtype=_code_type(len(array))), array
    encoded = pc.dictionary_encode(array)
    return _indices(encoded.indices), encoded.dictionary


def _run_starts(array: pa.Array) -> np.ndarray:
    """Rows where a run of equal neighbours starts (row 0 included)."""
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        numbers = array.to_numpy(zero_copy_only=False)
        change = numbers[1:] != numbers[:-1]
    else:
        change = pc.not_equal(array[1:], array[:-1]).to_numpy(zero_copy_only=False)
    return np.concatenate([[0], np.flatnonzero(change) + 1])


def _indices(indices: pa.Array) -> np.ndarray:
    """Dictionary indices as a NumPy int array, -1 where missing."""
    if indices.null_count:
        indices = pc.fill_null(indices, -1)
    return indices.to_numpy(zero_copy_only=False)


def _sorted_text(
    indices: np.ndarray, dictionary: pa.Array, *, compact: bool
) -> tuple[np.ndarray, pa.Array]:
    """Codes into the distinct texts of ``dictionary`` in byte order, and those texts.

    ``indices`` index ``dictionary`` (-1: missing, kept). With ``compact``, entries that no
    row uses are left out. Entries whose texts are equal (``12`` and ``12.0``) share a code.
    Costs O(len(dictionary) log) string work and one gather over the rows; an already
    sorted, used and distinct text dictionary costs one comparison of neighbours.
    """
    size = len(dictionary)
    used = None
    if compact and indices.size:
        present = indices[indices >= 0] if (indices < 0).any() else indices
        counts = np.bincount(present, minlength=size)
        used = counts > 0
        if used.all():
            used = None
    raw = dictionary if used is None else dictionary.filter(pa.array(used))
    text = text_of(raw)
    m = len(text)
    # strictly ascending neighbours: already distinct and in byte order
    if m < 2 or pc.all(pc.greater(text[1:], text[:-1])).as_py():
        remap = None
        categories = text
    else:
        order = _byte_order(raw, text)
        ordered = text.take(pa.array(order))
        repeat = np.zeros(m, dtype=bool)
        repeat[1:] = pc.equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
        slot = np.cumsum(~repeat) - 1
        remap = np.empty(m, dtype=np.int64)
        remap[order] = slot
        categories = ordered.filter(pa.array(~repeat))
    if used is not None:
        within = np.cumsum(used) - 1  # old dictionary entry -> its place among the used
        remap = within if remap is None else remap[within]
        remap[~used] = -1
    if remap is None:
        return indices, categories
    table = np.append(remap, -1).astype(_code_type(len(categories)))  # index -1 -> -1
    return table[indices], categories


#: 10**0 .. 10**18: the number of these <= v is the number of decimal digits of v >= 1
_POWERS = np.array([10**p for p in range(19)], dtype=np.uint64)


def _byte_order(values: pa.Array, text: pa.Array) -> np.ndarray:
    """The permutation that sorts ``text`` (``values`` as text) in byte order.

    Integers are sorted as numbers with the key that orders their decimal text: ``-``
    before digits; then the digits padded on the right to 19 places (a prefix pads to the
    smaller number) and, on a tie, the shorter text first ("12" < "120" < "13"). Other
    values sort their text.
    """
    kind = values.type
    if not pa.types.is_integer(kind) or values.null_count:
        return pc.sort_indices(text).to_numpy()
    numbers = values.to_numpy()
    if pa.types.is_unsigned_integer(kind):
        if numbers.size and int(numbers.max()) >= 10**19:
            return pc.sort_indices(text).to_numpy()
        magnitude = numbers.astype(np.uint64)
        negative = np.zeros(numbers.size, dtype=bool)
    else:
        numbers = numbers.astype(np.int64)
        negative = numbers < 0
        # |v| without overflow at the most negative int64
        magnitude = np.where(
            negative, (-(numbers + 1)).astype(np.uint64) + np.uint64(1), numbers.astype(np.uint64)
        )
    digits = np.maximum(np.searchsorted(_POWERS, magnitude, side="right"), 1)
    padded = magnitude * _POWERS[19 - digits]  # < 10**19: fits in 64 bits
    return np.lexsort((digits, padded, ~negative))


def _code_type(size: int) -> type[np.signedinteger]:
    return np.int32 if size < 2**31 else np.int64


def _dtype(categories: pa.Array) -> pd.CategoricalDtype:
    """The categorical dtype of text categories (pandas strings, distinct, in byte order).

    pandas checks that categories are distinct; asked first whether they ascend, it learns
    that from the same pass (strictly ascending values are distinct) instead of hashing
    them all.
    """
    index = pd.Index(categories.to_pandas(), dtype="str")
    index.is_monotonic_increasing  # noqa: B018 - caches is_unique for the check below
    return pd.CategoricalDtype(index, ordered=False)
