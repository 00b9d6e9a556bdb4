"""What ``abrank history`` prints: an aligned text table, JSON or CSV of history rows.

Each format is made from the Arrow table by column-wide kernels (pyarrow.compute and
NumPy), never row by row and without pandas, so that printing 100,000 rows takes a
fraction of a second including the interpreter's start-up. Text columns (names, dates,
fingerprints) are formatted once per distinct value and then gathered; one gather
(:func:`_interleave`) lays every row's cells out in order.

JSON: a list of row objects with every column, one object per line (``ci`` as
``[low, high]``, ``run_time`` in ISO 8601, NaN as null); floats are written with the
fewest digits that read back as the same number. CSV: a header and every column, quoted
where needed (``ci`` as ``[low, high]``, missing values empty).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank.history.values import (
    float_value,
    index_codes,
    int32s,
    int_value,
    null_value,
    strings,
    text_value,
)

# the text table's columns, and the ones aligned to the left (the others are numbers)
TEXT_COLUMNS = (
    "date",
    "treatment",
    "metric",
    "segment",
    "control_mean",
    "treatment_mean",
    "delta",
    "ci",
    "p_adjusted",
    "verdict",
    "n",
)
#: the text table's column of the readout's decision, after ``date``: shown when a row has one
DECISION = "decision"
_LEFT = frozenset({"date", DECISION, "treatment", "metric", "segment", "verdict"})
OVERALL = "overall"  # the text table's segment of an overall comparison
MISSING = "-"  # the text table's missing value
DIGITS = 4  # decimals of the text table's numbers
BATCH = 16_384  # rows formatted at once
FORMAT_THREADS = 2  # batches formatted at once
REPEATED = 4  # a float column is formatted by distinct value when it has 4 rows a value


@dataclasses.dataclass(frozen=True)
class _Cells:
    """One column's cells as text: ``texts[codes[i]]`` is row i's (``texts[i]`` without
    codes). Formatting distinct values only is what makes repeated text cheap."""

    texts: pa.Array
    codes: np.ndarray | None = None

    def map(self, function: Callable[[pa.Array], pa.Array]) -> _Cells:
        """The same cells with ``function`` applied to their texts."""
        return _Cells(function(self.texts), self.codes)


def text_columns(table: pa.Table) -> tuple[str, ...]:
    """The text table's columns for ``table``: :data:`TEXT_COLUMNS`, with the readout's
    ``decision`` after ``date`` when ``table`` has that column and a row of it holds one
    (experiments whose metrics have roles); the table is unchanged for the others."""
    if DECISION not in table.column_names or table.column(DECISION).null_count == len(table):
        return TEXT_COLUMNS
    return (TEXT_COLUMNS[0], DECISION, *TEXT_COLUMNS[1:])


def history_json(table: pa.Table) -> bytes:
    """The rows as a JSON list of objects, one per row and line, every column."""
    return b"".join(json_parts(table))


def json_parts(table: pa.Table) -> Iterator[bytes | memoryview]:
    """:func:`history_json`'s text in pieces, made batch by batch as they are written."""
    if table.num_rows == 0:
        yield b"[]\n"
        return

    def pieces(batch: pa.Table) -> list[_Cells | str]:
        laid: list[_Cells | str] = []
        for index, name in enumerate(batch.column_names):
            laid.append(("{" if index == 0 else ", ") + json.dumps(name) + ": ")
            laid.append(_json_cells(_column(batch, name)))
        return [*laid, "},\n"]

    yield b"[\n"
    for last, body in _batches(table, pieces):
        yield body[: -len(b",\n")] if last else body
    yield b"\n]\n"


def history_csv(table: pa.Table) -> bytes:
    """The rows as CSV with a header, every column, quoted where needed."""
    return b"".join(csv_parts(table))


def csv_parts(table: pa.Table) -> Iterator[bytes | memoryview]:
    """:func:`history_csv`'s text in pieces, made batch by batch as they are written."""
    header = ",".join(_csv_field(name) for name in table.column_names) + "\n"
    yield header.encode("utf-8")
    if table.num_rows == 0:
        return

    def pieces(batch: pa.Table) -> list[_Cells | str]:
        laid: list[_Cells | str] = []
        for index, name in enumerate(batch.column_names):
            laid += [","] if index else []
            laid.append(_csv_cells(_column(batch, name)))
        return [*laid, "\n"]

    for _, body in _batches(table, pieces):
        yield body


def history_text(table: pa.Table, columns: Sequence[str] = TEXT_COLUMNS) -> str:
    """The rows as an aligned text table of ``columns``, two spaces between columns.

    Numbers have :data:`DIGITS` decimals (deltas and intervals signed, adjusted p-values
    below 0.0001 written ``<0.0001``); ``segment`` is ``overall`` for the overall
    comparisons; a missing value is ``-``.
    """
    return b"".join(text_parts(table, columns)).decode("utf-8")


def text_parts(
    table: pa.Table, columns: Sequence[str] = TEXT_COLUMNS
) -> Iterator[bytes | memoryview]:
    """:func:`history_text`'s text in pieces (UTF-8), made batch by batch."""
    if table.num_rows == 0:
        yield ("  ".join(columns) + "\n").encode("utf-8")
        return
    headers, pieces = [], []
    for index, name in enumerate(columns):
        cells = _text_cells(_column(table, name), name)
        width = max(len(name), pc.max(pc.utf8_length(cells.texts)).as_py())
        left = name in _LEFT
        last = index == len(columns) - 1
        if left and not last:
            cells = cells.map(partial(pc.utf8_rpad, width=width))
        elif not left:
            cells = cells.map(partial(pc.utf8_lpad, width=width))
        headers.append(name.ljust(width) if left else name.rjust(width))
        pieces += [cells, "  " if not last else "\n"]
    header = "  ".join(headers).rstrip() + "\n"
    yield header.encode("utf-8")
    rows = table.num_rows

    def laid(start: int) -> memoryview:
        batch = [_rows_of(piece, start, BATCH) for piece in pieces]
        return _interleave(batch, min(BATCH, rows - start))

    for _, body in _side_by_side(laid, range(0, rows, BATCH)):
        yield body


# --------------------------------------------------------------------------- layout


def _rows_of(piece: _Cells | str, start: int, count: int) -> _Cells | str:
    """The cells of rows ``start`` to ``start + count`` (a constant as it is)."""
    if isinstance(piece, str):
        return piece
    if piece.codes is None:
        return _Cells(piece.texts.slice(start, count))
    return _Cells(piece.texts, piece.codes[start : start + count])


def _batches(
    table: pa.Table, pieces: Callable[[pa.Table], list[_Cells | str]]
) -> Iterator[tuple[bool, memoryview]]:
    """(last?, :func:`_interleave` of ``pieces(batch)``) for each batch of at most
    :data:`BATCH` rows, in order: small batches reuse the same memory and stay far below
    Arrow's 2 GiB limit on one string array."""
    rows = table.num_rows

    def laid(start: int) -> memoryview:
        count = min(BATCH, rows - start)
        return _interleave(pieces(table.slice(start, count)), count)

    for start, body in _side_by_side(laid, range(0, rows, BATCH)):
        yield start + BATCH >= rows, body


def _side_by_side(
    function: Callable[[int], memoryview], starts: Sequence[int]
) -> Iterator[tuple[int, memoryview]]:
    """(start, ``function(start)``) for each start, in order, with up to
    :data:`FORMAT_THREADS` batches made at once (Arrow's kernels release the GIL)."""
    workers = min(FORMAT_THREADS, os.cpu_count() or 1, len(starts))
    if workers < 2:
        yield from ((start, function(start)) for start in starts)
        return
    with ThreadPoolExecutor(workers) as pool:
        for first in range(0, len(starts), workers):
            window = starts[first : first + workers]
            yield from zip(window, pool.map(function, window))


def _interleave(pieces: Sequence[_Cells | str], rows: int) -> memoryview:
    """Row after row, each row's pieces in order: a constant text or a column's cell.

    Each constant is first joined to the texts of the cells that follow it (or, at the
    end, precede it). All texts then go into one pool; one index array (rows x columns,
    made by NumPy) picks each row's cells from it; one ``take`` lays them out, and its
    data buffer is the output.
    """
    cells: list[_Cells] = []
    prefix = ""
    for piece in pieces:
        if isinstance(piece, str):
            prefix += piece
            continue
        texts = pc.cast(piece.texts, pa.string())
        if prefix:
            texts = pc.binary_join_element_wise(text_value(prefix), texts, _EMPTY)
        cells.append(_Cells(texts, piece.codes))
        prefix = ""
    if prefix:
        last = cells[-1]
        cells[-1] = _Cells(
            pc.binary_join_element_wise(last.texts, text_value(prefix), _EMPTY), last.codes
        )
    index = np.empty((rows, len(cells)), dtype=np.int32)
    start = 0
    for column, piece in enumerate(cells):
        index[:, column] = start + (np.arange(rows) if piece.codes is None else piece.codes)
        start += len(piece.texts)
    laid = pa.concat_arrays([piece.texts for piece in cells]).take(int32s(index.ravel()))
    offsets = np.frombuffer(laid.buffers()[1], dtype=np.int32, count=len(laid) + 1 + laid.offset)
    begin, end = offsets[laid.offset], offsets[-1]
    return memoryview(laid.buffers()[2])[begin:end]


def _column(table: pa.Table, name: str) -> pa.Array:
    """A table's column as one array (the kernels below work on arrays)."""
    return table.column(name).combine_chunks()


def _distinct(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A column's distinct values (missing included, as one) and each row's code."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    return encoded.dictionary, index_codes(encoded.indices)


# --------------------------------------------------------------------------- JSON and CSV


def _json_cells(column: pa.Array) -> _Cells:
    """A column's values as JSON text (``null`` for a missing value or a NaN)."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_timestamp(kind):
        values, codes = _distinct(column)
        texts = _json_strings(_iso_times(values) if pa.types.is_timestamp(kind) else values)
        return _Cells(pc.fill_null(texts, _NULL), codes)
    if pa.types.is_floating(kind):
        return _float_cells(column).map(lambda texts: pc.fill_null(texts, _NULL))
    if pa.types.is_list(kind):
        return _Cells(pc.fill_null(_intervals(column, _shortest, "null"), _NULL))
    return _Cells(pc.fill_null(pc.cast(column, pa.string()), _NULL))  # integers, booleans


def _csv_cells(column: pa.Array) -> _Cells:
    """A column's values as CSV fields (empty for a missing value or a NaN)."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_timestamp(kind):
        values, codes = _distinct(column)
        if pa.types.is_timestamp(kind):
            values = _iso_times(values)
        fields = [None if v is None else _csv_field(v) for v in values.to_pylist()]
        return _Cells(pc.fill_null(strings(fields), _EMPTY), codes)
    if pa.types.is_floating(kind):
        return _float_cells(column).map(lambda texts: pc.fill_null(texts, _EMPTY))
    if pa.types.is_list(kind):
        text = _intervals(column, _shortest, "null")
        return _Cells(
            pc.fill_null(
                pc.binary_join_element_wise(text_value('"'), text, text_value('"'), _EMPTY), _EMPTY
            )
        )
    return _Cells(pc.fill_null(pc.cast(column, pa.string()), _EMPTY))


def _csv_field(value: str) -> str:
    """One CSV field: quoted (quotes doubled) when it holds a comma, quote or line break."""
    if any(mark in value for mark in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _json_strings(values: pa.Array) -> pa.Array:
    """Strings as JSON string literals (missing ones stay missing)."""
    return strings([None if v is None else json.dumps(v) for v in values.to_pylist()])


def _float_cells(column: pa.Array) -> _Cells:
    """Floats in their shortest exact form, each distinct value formatted once when a
    column repeats its values (a confidence level, a date's SRM p-value)."""
    values, codes = _distinct(column)
    if len(values) * REPEATED <= len(column):
        return _Cells(_shortest(values), codes)
    return _Cells(_shortest(column))


def _shortest(values: pa.Array) -> pa.Array:
    """Floats in their shortest exact decimal form; NaN and infinities missing."""
    return pc.cast(_finite(values), pa.string())


def _finite(values: pa.Array) -> pa.Array:
    """A float column with NaN and infinities made missing (JSON has no such numbers)."""
    return pc.if_else(pc.is_finite(values), values, null_value(values.type))


def _intervals(column: pa.Array, number: Callable[[pa.Array], pa.Array], missing: str) -> pa.Array:
    """A list<float64> column of intervals as ``[low, high]`` text; a missing interval
    stays missing, a missing end is written ``missing``."""
    low = pc.fill_null(number(pc.list_element(column, int_value(0))), text_value(missing))
    high = pc.fill_null(number(pc.list_element(column, int_value(1))), text_value(missing))
    text = pc.binary_join_element_wise(
        text_value("["), low, text_value(", "), high, text_value("]"), _EMPTY
    )
    return pc.if_else(pc.is_null(column), null_value(pa.string()), text)


def _iso_times(values: pa.Array) -> pa.Array:
    """UTC times in ISO 8601 with microseconds (``2026-12-01T17:15:03.865306+00:00``)."""
    text = pc.strftime(values, format="%Y-%m-%dT%H:%M:%S")
    return pc.binary_join_element_wise(text, text_value("+00:00"), _EMPTY)


# --------------------------------------------------------------------------- text cells


def _text_cells(column: pa.Array, name: str) -> _Cells:
    """A column's cells of the text table."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_timestamp(kind):
        values, codes = _distinct(column)
        if pa.types.is_timestamp(kind):
            values = _iso_times(values)
        return _Cells(
            pc.fill_null(values, text_value(OVERALL if name == "segment" else MISSING)), codes
        )
    if name == "p_adjusted":
        small = pc.less(column, float_value(10.0**-DIGITS))
        text = pc.if_else(
            small, text_value("<" + format(10.0**-DIGITS, f".{DIGITS}f")), _fixed(column)
        )
        return _Cells(pc.fill_null(text, text_value(MISSING)))
    if pa.types.is_list(kind):
        signed = lambda values: _fixed(values, signed=True)  # noqa: E731
        return _Cells(pc.fill_null(_intervals(column, signed, MISSING), text_value(MISSING)))
    if pa.types.is_floating(kind):
        return _Cells(pc.fill_null(_fixed(column, signed=name == "delta"), text_value(MISSING)))
    return _Cells(pc.fill_null(pc.cast(column, pa.string()), text_value(MISSING)))


def _fixed(values: pa.Array, *, signed: bool = False) -> pa.Array:
    """Floats with :data:`DIGITS` decimals (``0.5388``, ``-0.0120``; ``+0.0120`` when
    ``signed``; zero unsigned). NaN and infinities are missing; values of 1e12 and more
    are written in their shortest form instead."""
    values = _finite(values)
    scale = 10**DIGITS
    huge = pc.greater_equal(pc.abs(values), float_value(1e12))
    safe = pc.if_else(huge, float_value(0.0), values)
    scaled = pc.cast(pc.round(pc.multiply(pc.abs(safe), float_value(scale))), pa.int64())
    whole = pc.divide(scaled, int_value(scale))
    fraction = pc.subtract(scaled, pc.multiply(whole, int_value(scale)))
    negative = pc.and_(pc.less(safe, float_value(0.0)), pc.greater(scaled, int_value(0)))
    positive = pc.and_(pc.greater(safe, float_value(0.0)), pc.greater(scaled, int_value(0)))
    sign = pc.if_else(
        negative, text_value("-"), pc.if_else(positive, text_value("+" if signed else ""), _EMPTY)
    )
    digits = pc.utf8_lpad(pc.cast(fraction, pa.string()), width=DIGITS, padding="0")
    text = pc.binary_join_element_wise(
        sign, pc.cast(whole, pa.string()), text_value("."), digits, _EMPTY
    )
    return pc.if_else(huge, pc.cast(values, pa.string()), text)


_EMPTY = text_value("")
_NULL = text_value("null")
