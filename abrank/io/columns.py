"""Columns of user data: the spellings of the canonical columns, and the one numeric parser.

Every reader (tables, TREC files) and every frame given to the Python API goes through
these, so ``qid`` means ``query_id`` everywhere and a bad number is reported the same way
everywhere: ``<where>: expected a number, got 'x'``, where ``<where>`` names the file and
line (or the frame, column and row) and the count of further bad cells follows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.buffers import numbers_of

__all__ = [
    "ALIASES",
    "IMPRESSION_ALIASES",
    "LARGEST_WHOLE",
    "alias_renames",
    "check_scalar_ids",
    "describe_cell",
    "describe_missing_text",
    "describe_number",
    "parse_numbers",
]

#: The bound of a grade or a rank: 2^53, beyond which a float64 no longer holds every whole
#: number (a grade of 99999999999999999999 is read as 1e+20, and its gains and their squares
#: in the statistics soon overflow). Wider values are refused where they are read.
LARGEST_WHOLE = 2**53
#: How messages write the bound.
LARGEST_WHOLE_TEXT = "2^53"
#: Spellings of NaN in text files that readers take for a missing value (pyarrow's).
_NAN_TEXTS = frozenset({"nan", "1.#qnan", "1.#ind"})

#: Column names recognised without a mapping, for each canonical column.
ALIASES: dict[str, tuple[str, ...]] = {
    "query_id": ("query_id", "qid", "query", "queryid", "topic"),
    "doc_id": ("doc_id", "docid", "doc", "docno", "document", "item_id", "item"),
    "rank": ("rank", "position", "pos"),
    "score": ("score", "sim"),
    "relevance": ("relevance", "grade", "label", "rel", "judgment"),
}

#: Column names of an impression log (one row per shown result) recognised without a
#: mapping. Kept apart from :data:`ALIASES`: in a log, ``query`` is the query the
#: impression served (its text or id), not the impression's key.
IMPRESSION_ALIASES: dict[str, tuple[str, ...]] = {
    "impression_id": ("impression_id", "impression", "request_id", "search_id"),
    "user_id": ("user_id", "user", "uid", "visitor_id"),
    "rank": ("rank", "position", "pos"),
    "doc_id": ALIASES["doc_id"],
    "clicked": ("clicked", "click", "is_click"),
    "dwell": ("dwell", "dwell_time", "dwell_seconds"),
    "timestamp": ("timestamp", "time", "ts", "event_time"),
    "query": ("query", "query_text", "query_id", "qid"),
    "arm": ("arm", "variant", "bucket"),
    "team": ("team",),
}


def alias_renames(
    columns: Iterable[Any],
    renames: Mapping[Any, str] | None = None,
    *,
    aliases: Mapping[str, tuple[str, ...]] = ALIASES,
) -> dict:
    """Column -> canonical name for every canonical column that ``renames`` (an explicit
    mapping, already checked) leaves out and that one of its ``aliases`` (by default
    :data:`ALIASES`) names: the first alias present as written, else the first present in
    another case."""
    present = list(columns)
    out = dict(renames or {})
    for canon, names in aliases.items():
        if canon in out.values():
            continue
        match = next((name for name in names if name in present and name not in out), None)
        if match is None:
            lowered = {str(c).lower(): c for c in present}
            match = next(
                (lowered[n] for n in names if n in lowered and lowered[n] not in out), None
            )
        if match is not None:
            out[match] = canon
    return out


def describe_cell(value: Any, empty: str = "an empty value") -> str:
    """A cell as an error message shows it: its repr, a number as :func:`describe_number`
    writes it, or ``empty`` for a missing value."""
    if value is None or (
        pd.api.types.is_scalar(value) and not isinstance(value, str) and pd.isna(value)
    ):
        return empty
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float):
        return describe_number(value)
    return repr(value)


def describe_number(value: float) -> str:
    """A number as messages write it, whatever type a reader gave its column: a whole
    number as an integer (``-4``, not ``-4.0``: a CSV column read as floats because another
    cell holds ``40.5``), any other as Python writes it (``2.5``, ``inf``, ``1e+20``: whole
    numbers beyond 2^53 are no longer exact)."""
    if value.is_integer() and abs(value) < LARGEST_WHOLE:
        return str(int(value))
    return repr(value)


def describe_missing_text(text: Any) -> str:
    """A cell that a reader took for a missing value, as an error message shows it from
    what the file holds: ``an empty value`` (nothing, or null), ``NaN`` (a NaN number, or
    its text ``NaN``, ``nan``, ``-nan``, ...), else the text as written (``'NULL'``)."""
    if text is None:
        return "an empty value"
    if isinstance(text, float):
        return "NaN" if np.isnan(text) else repr(text)
    stripped = str(text).strip()
    if not stripped:
        return "an empty value"
    if stripped.lower().lstrip("+-") in _NAN_TEXTS:
        return "NaN"
    return repr(str(text))


def check_scalar_ids(values: pd.Series, where: Callable[[int], str]) -> None:
    """Refuse an id column holding JSON objects or lists (a JSON Lines reader gives them as
    dicts, lists or arrays): an id is one text or number, and the text of a nested value
    (``"{'a': 1}"``) would silently become an id. ``where(row)`` names the file, line and
    column of a 0-based row; a DataError for the first such row, with the count of the
    others. Only an ``object`` column can hold them: other columns are not looked at."""
    if not pd.api.types.is_object_dtype(values):
        return
    nested = values.map(lambda cell: isinstance(cell, (dict, list, tuple, np.ndarray)))
    bad = nested.to_numpy(dtype=bool)
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    cell = values.iloc[row]
    kind = "an object" if isinstance(cell, dict) else "a list"
    shown = json.dumps(cell.tolist() if isinstance(cell, np.ndarray) else cell, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(f"{where(row)}: expected an id (a text or a number), got {kind} {shown}{more}")


def parse_numbers(
    values: pd.Series | pa.Array | pa.ChunkedArray,
    where: Callable[[int], str],
    *,
    allow_missing: bool = False,
    finite: bool = True,
    booleans: bool = False,
    decimal: str | None = None,
    empty: str = "an empty value",
    missing: Callable[[int], str] | None = None,
    bounded: bool = False,
) -> np.ndarray:
    """A column of numbers (or of text holding numbers) as float64.

    A cell that is not a number is a DataError ``"{where(row)}: expected a number, got
    'x'"`` for the first such row (0-based position), with the count of the others; so is a
    missing cell unless ``allow_missing`` (it is then NaN), an infinite one when ``finite``
    (no score or grade is infinite: a broken export), one beyond ±2^53 when ``bounded``
    (:data:`LARGEST_WHOLE`: grades and ranks) and True/False unless ``booleans``.
    ``decimal=","`` reads ``0,5`` in a text column. ``empty`` is how a missing cell is named,
    or ``missing(row)`` when given (a reader that can look at the file tells a NaN from an
    empty cell: both are missing once parsed).
    """
    numbers: np.ndarray | None = None
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        numbers = _arrow_numbers(values)
        if numbers is None:  # text that pyarrow cannot cast: find the bad cell with pandas
            values = pd.Series(values.to_pandas(), copy=False)
    if numbers is None:  # not Arrow, or Arrow text now read through pandas
        if not isinstance(values, pd.Series):
            values = pd.Series(values)
        if pd.api.types.is_bool_dtype(values) and not booleans:
            _fail(where, values, np.ones(len(values), bool), "a number", empty)
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            text = values
            if decimal == "," and pd.api.types.is_string_dtype(values):
                text = values.astype("string").str.replace(",", ".", regex=False)
            numbers = pd.to_numeric(text, errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
            bad = np.isnan(numbers) & values.notna().to_numpy()
            if bad.any():
                _fail(where, values, bad, "a number", empty)
    if not allow_missing and finite and _plainly_valid(numbers, bounded):
        return numbers
    if not allow_missing:
        absent = np.isnan(numbers)
        if absent.any():
            _fail(where, values, absent, "a number", empty, missing)
    if finite:
        infinite = np.isinf(numbers)
        if infinite.any():
            _fail(where, values, infinite, "a finite number", empty)
    if bounded:
        with np.errstate(invalid="ignore"):
            wide = np.abs(numbers) > LARGEST_WHOLE
        if wide.any():
            largest = LARGEST_WHOLE_TEXT
            _fail(where, values, wide, f"a number between -{largest} and {largest}", empty)
    return numbers


def _plainly_valid(numbers: np.ndarray, bounded: bool) -> bool:
    """Every value is a finite number (within ±2^53 when ``bounded``): told from the
    smallest and the largest alone, which a NaN anywhere makes NaN: a valid column of
    millions of scores is read twice, and no mask as long as it is made (the checks
    that name a bad cell run only when this fails)."""
    if not numbers.size:
        return True
    low, high = numbers.min(), numbers.max()
    if bounded:
        return bool(low >= -LARGEST_WHOLE and high <= LARGEST_WHOLE)
    return bool(np.isfinite(low) and np.isfinite(high))


def _arrow_numbers(values: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """Float64 values of an Arrow column of numbers or text; None when a cell is no number."""
    if pa.types.is_floating(values.type) or pa.types.is_integer(values.type):
        numbers = numbers_of(values)
        if numbers is None:
            numbers = values.to_numpy()
        return numbers.astype(np.float64, copy=False)
    import pyarrow.compute as pc

    try:
        cast = pc.cast(values, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    numbers = numbers_of(cast)
    return cast.to_numpy() if numbers is None else numbers


def _fail(
    where: Callable[[int], str],
    values: pd.Series | pa.Array | pa.ChunkedArray,
    bad: np.ndarray,
    expected: str,
    empty: str,
    missing: Callable[[int], str] | None = None,
) -> None:
    row = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        # text files: the cell as written (a float column of a TREC file was parsed from text)
        cell = values[row].as_py()
        got = empty if cell is None else repr(str(cell))
    else:
        got = describe_cell(values.iloc[row], empty)
        if missing is not None and got == empty:
            got = missing(row)
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(f"{where(row)}: expected {expected}, got {got}{more}")
