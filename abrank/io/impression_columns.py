"""The columns of an impression log, read and turned into the canonical types.

:func:`parquet_columns` reads a Parquet log with pyarrow, only the columns wanted, text
columns as dictionaries (one copy of each distinct string); the other formats come through
:func:`abrank.io.tables.read_table`. Each ``*_column`` function then converts one column,
given as an Arrow ChunkedArray or a pandas Series: a fast path checks the whole column with
Arrow and NumPy and converts it (ids through :func:`abrank.io.idcodes.text_categorical`);
a column that the fast path does not accept (a missing value, a number written as text, a
mixed JSON column, a bad cell) goes through the pandas checks instead, which name the first
bad cell and count the others, so every message is the same whichever path ran.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import ConfigError, DataError
from abrank.io.columns import (
    IMPRESSION_ALIASES,
    LARGEST_WHOLE,
    LARGEST_WHOLE_TEXT,
    alias_renames,
    check_scalar_ids,
    describe_cell,
    parse_numbers,
)
from abrank.io.files import check_file
from abrank.io.idcodes import is_id_type, text_categorical
from abrank.io.tables import unreadable_parquet

__all__ = [
    "ALWAYS_LOADED",
    "IMPRESSION_COLUMNS",
    "canonical_names",
    "clicked_column",
    "clicked_flags",
    "dwell_column",
    "id_column",
    "is_kept",
    "other_column",
    "parquet_columns",
    "segment_values_present",
    "rank_column",
    "text_column",
]

#: The columns every impression log has (under these names or a spelling of
#: :data:`abrank.io.columns.IMPRESSION_ALIASES`, or mapped by ``columns``).
IMPRESSION_COLUMNS = ("impression_id", "user_id", "rank", "doc_id", "clicked")
#: The columns loaded whatever ``keep`` says: every click metric reads them.
ALWAYS_LOADED = ("impression_id", "rank", "clicked")

_CLICK_TEXT = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}

Column = Any  # a pa.ChunkedArray or a pd.Series, in the log's row order


# --------------------------------------------------------------------------- names


def canonical_names(
    names: list[Any], path: str | Path, columns: Mapping[str, str] | None
) -> dict[Any, str]:
    """The log's column -> its canonical name (other columns keep theirs), in the log's
    order: the explicit mapping first, then the aliases; a column named canonically that
    another column is mapped onto is left out. A mapping naming no canonical column is a
    ConfigError, one naming a column that is not there or a required column that is
    missing a DataError listing the columns found."""
    listing = ", ".join(str(c) for c in names)
    renames: dict[Any, str] = {}
    for canon, user in dict(columns or {}).items():
        if canon not in IMPRESSION_ALIASES:
            raise ConfigError(
                f"{path}: columns.{canon}: expected one of {', '.join(IMPRESSION_ALIASES)}, "
                f"got {canon!r}"
            )
        if user not in names:
            raise DataError(
                f"{path}: columns.{canon}: expected a column named {user!r}, found columns: "
                f"{listing}"
            )
        renames[user] = canon
    renames = alias_renames(names, renames, aliases=IMPRESSION_ALIASES)
    for canon in IMPRESSION_COLUMNS:
        if canon not in renames.values():
            raise DataError(
                f"{path}: expected a {canon} column (one of "
                f"{', '.join(IMPRESSION_ALIASES[canon])}, or set columns.{canon}), found "
                f"columns: {listing}"
            )
    clashes = {c for c in names if c in renames.values() and c not in renames}
    return {name: renames.get(name, name) for name in names if name not in clashes}


def is_kept(column: str, keep: Collection[str] | None) -> bool:
    """Whether a canonical column is loaded under ``keep`` (None: every column)."""
    return keep is None or column in ALWAYS_LOADED or column in keep


def parquet_columns(
    path: Path, columns: Mapping[str, str] | None, keep: Collection[str] | None
) -> tuple[dict[str, pa.ChunkedArray], dict[Any, str]]:
    """The wanted columns of a Parquet log by canonical name, in the file's order (a
    pandas index stored in the file is no column), and every column's canonical name
    (:func:`canonical_names`). Text columns come as dictionaries. An unreadable file or
    one without rows is a DataError naming it."""
    import pyarrow.parquet as pq

    check_file(path)
    try:
        file = pq.ParquetFile(path)
        schema = file.schema_arrow
        rows = file.metadata.num_rows
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise _unreadable(path, exc) from None
    index = {
        c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)
    }
    names = [name for name in schema.names if name not in index]
    if rows == 0:
        raise DataError(
            f"{path}: expected at least one row, got none (columns: {', '.join(names) or 'none'})"
        )
    renamed = canonical_names(names, path, columns)
    chosen = [name for name, canon in renamed.items() if is_kept(canon, keep)]
    text = [
        name
        for name in chosen
        if pa.types.is_string(schema.field(name).type)
        or pa.types.is_large_string(schema.field(name).type)
    ]
    try:
        table = pq.read_table(path, columns=chosen, read_dictionary=text, use_pandas_metadata=False)
    except Exception:  # noqa: BLE001 - retried plainly; a second failure is reported
        # text stored with an encoding that pyarrow cannot decode into dictionaries (e.g.
        # DELTA_BYTE_ARRAY raises "not yet implemented"): read as plain text, which the id
        # columns accept too
        try:
            table = pq.read_table(path, columns=chosen, use_pandas_metadata=False)
        except Exception as exc:
            raise _unreadable(path, exc) from None
    return {renamed[name]: table.column(name) for name in chosen}, renamed


def _unreadable(path: Path, exc: Exception) -> DataError:
    return unreadable_parquet(path, exc)


# --------------------------------------------------------------------------- conversions


def id_column(values: Column, where: Callable[[int], str]) -> pd.Categorical:
    """An id column as a categorical of text; a missing id is a DataError
    ``"{where(row)}: expected a non-empty id, got an empty value"``. Whole floats are the
    integers they hold (int ids that a reader widened to float: 12.0 is the id 12)."""
    arrow = _arrow(values)
    if arrow is None or arrow.null_count or not is_id_type(arrow.type):
        arrow = _arrow(_ids(_series(values), where))
    return text_categorical(arrow)


def text_column(values: Column) -> pd.Categorical:
    """A text column (the query) as a categorical of text, missing values kept (NaN)."""
    arrow = _arrow(values)
    if arrow is None or not is_id_type(arrow.type):
        arrow = _arrow(_text(_series(values)))
    return text_categorical(arrow)


def clicked_column(values: Column, where: Callable[[int], str]) -> np.ndarray:
    """``clicked`` as int8 0/1 (see :func:`clicked_flags`)."""
    arrow = _arrow(values)
    if arrow is not None and arrow.null_count == 0:
        if pa.types.is_boolean(arrow.type):
            return arrow.to_numpy().astype(np.int8)
        if pa.types.is_integer(arrow.type):
            bounds = pc.min_max(arrow).as_py()
            if bounds["min"] is not None and bounds["min"] >= 0 and bounds["max"] <= 1:
                return pc.cast(arrow, pa.int8()).to_numpy()  # 0/1: a byte each
    return clicked_flags(_series(values), where)


def rank_column(
    values: Column,
    where: Callable[[int], str],
    decimal: str | None,
    missing: Callable[[int], str] | None = None,
) -> np.ndarray:
    """``rank`` as int64, every rank a whole number from 1 to 2^53 (``missing`` describes
    a missing cell, as for :func:`abrank.io.columns.parse_numbers`)."""
    arrow = _arrow(values)
    if arrow is not None and arrow.null_count == 0 and pa.types.is_integer(arrow.type):
        rank = arrow.to_numpy().astype(np.int64, copy=False)
        if rank.size == 0 or (int(rank.min()) >= 1 and int(rank.max()) <= LARGEST_WHOLE):
            return rank
    return _ranks(_series(values), where, decimal, missing)


def dwell_column(values: Column, where: Callable[[int], str], decimal: str | None) -> np.ndarray:
    """``dwell`` as float64 seconds >= 0, NaN where missing."""
    arrow = _arrow(values)
    if arrow is not None and (pa.types.is_floating(arrow.type) or pa.types.is_integer(arrow.type)):
        seconds = pc.fill_null(pc.cast(arrow, pa.float64()), np.nan).to_numpy()
        if not bool(((seconds < 0) | np.isinf(seconds)).any()):
            return seconds
    return _dwell(_series(values), where, decimal)


def segment_values_present(values: Column, where: Callable[[int], str]) -> None:
    """A segment column holds a value in every row: a missing cell is a DataError
    ``"{where(row)}: expected a segment value, got an empty value"`` for the first one,
    with the count of the others (a row without a segment value belongs to no segment)."""
    arrow = _arrow(values)
    if arrow is not None and not arrow.null_count:
        return
    series = _series(values)
    missing = series.isna().to_numpy()
    if missing.any():
        _fail(where, series, missing, "a segment value")


def other_column(values: Column) -> Any:
    """Any other column as it is (a pandas array), text as a categorical of its values."""
    arrow = _arrow(values)
    if arrow is not None:
        kind = arrow.type.value_type if pa.types.is_dictionary(arrow.type) else arrow.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return text_categorical(arrow)
    return _series(values).array


def clicked_flags(values: pd.Series, where: Callable[[int], str]) -> np.ndarray:
    """A ``clicked`` column as int8 0/1: booleans, the numbers 0 and 1, or the words 0, 1,
    true and false in any case. Anything else (2, "yes", an empty cell) is a DataError
    ``"{where(row)}: expected 0, 1, true or false, got ..."`` for the first such row."""
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "iu":
        numbers = values.to_numpy()
        if bool(((numbers == 0) | (numbers == 1)).all()):  # the common case: one pass
            return numbers.astype(np.int8, copy=False)
    if pd.api.types.is_bool_dtype(values) and not values.isna().any():
        return values.to_numpy(dtype=np.int8)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        good = (numbers == 0) | (numbers == 1)
        flags = numbers
    else:
        words = values.astype("str").str.strip().str.lower()
        flags = words.map(_CLICK_TEXT).to_numpy(dtype=np.float64, na_value=np.nan)
        good = ~np.isnan(flags) & values.notna().to_numpy()
    if not good.all():
        _fail(where, values, ~good, "0, 1, true or false")
    return flags.astype(np.int8)


# --------------------------------------------------------------------------- helpers


def _arrow(values: Column) -> pa.ChunkedArray | None:
    """The column as Arrow, without copying where it can (None: pandas objects of mixed
    types, which only the pandas checks can read)."""
    if isinstance(values, pa.ChunkedArray):
        return values
    try:
        if isinstance(values.dtype, np.dtype):
            array = pa.array(values.to_numpy(), from_pandas=True)  # NaN -> missing
        else:
            array = pa.array(values.array)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return None
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])


def _series(values: Column) -> pd.Series:
    """The column as a pandas Series on a 0..n-1 index."""
    if isinstance(values, pd.Series):
        return values.reset_index(drop=True)
    return pd.Series(values.to_pandas(), copy=False).reset_index(drop=True)


def _ids(values: pd.Series, where: Callable[[int], str]) -> pd.Series:
    missing = values.isna().to_numpy()
    if missing.any():
        _fail(where, values, missing, "a non-empty id")
    check_scalar_ids(values, where)
    if pd.api.types.is_float_dtype(values):
        whole = values.to_numpy() == np.round(values.to_numpy())
        if whole.all():  # int ids that a reader widened to float: 12.0 is the id 12
            values = values.astype(np.int64)
    return _text(values)


def _text(values: pd.Series) -> pd.Series:
    """The column as pandas strings (numbers written as text: 12 -> "12"); missing kept."""
    if isinstance(values.dtype, pd.StringDtype):
        return values
    try:
        arrow = pc.cast(pa.array(values.array), pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        return values.astype("str").where(values.notna())
    return pd.Series(arrow.to_pandas(), index=values.index, name=values.name)


def _ranks(
    values: pd.Series,
    where: Callable[[int], str],
    decimal: str | None,
    missing: Callable[[int], str] | None = None,
) -> np.ndarray:
    if pd.api.types.is_integer_dtype(values) and not values.isna().any():
        rank = values.to_numpy(dtype=np.int64)
        big = rank > LARGEST_WHOLE
        if big.any():
            text = LARGEST_WHOLE_TEXT
            _fail(where, values, big, f"a number between -{text} and {text}")
    else:
        numbers = parse_numbers(values, where, decimal=decimal, missing=missing, bounded=True)
        whole = numbers == np.round(numbers)
        if not whole.all():
            _fail(where, values, ~whole, "a whole number >= 1")
        rank = numbers.astype(np.int64)
    small = rank < 1
    if small.any():
        _fail(where, values, small, "a whole number >= 1")
    return rank


def _dwell(values: pd.Series, where: Callable[[int], str], decimal: str | None) -> np.ndarray:
    seconds = parse_numbers(values, where, allow_missing=True, decimal=decimal)
    negative = seconds < 0
    if negative.any():
        _fail(where, values, negative, "a number of seconds >= 0")
    return seconds


def _fail(where: Callable[[int], str], values: pd.Series, bad: np.ndarray, expected: str) -> None:
    row = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(
        f"{where(row)}: expected {expected}, got {describe_cell(values.iloc[row])}{more}"
    )
