"""Impression logs of online experiments: one row per shown result, clicked or not.

:func:`read_impressions` loads a log (CSV, TSV, Parquet or JSON Lines, optionally gzip) into
the canonical impressions frame and checks it as a whole: ids present, ``clicked`` 0/1,
ranks 1..n within each impression, one user (and one arm) per impression, dwell times
>= 0. :func:`split_log` cuts one log with an ``arm`` column into a frame per arm;
:func:`check_arms` checks the arms' frames against each other (an impression in two arms is
an error, a user in two arms is counted, :class:`MixedUnits`) and :func:`drop_units` leaves
such users out. Every check runs over whole columns (Arrow dictionary codes, NumPy).

Ids are compared as text whatever their type in the file: the int64 ``12`` of a Parquet
log and the ``"12"`` of a CSV log are the same id (CSV ids are kept as written, so ``007``
stays ``007``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.arrow import as_arrow, positions, query_codes, take_rows
from abrank.io.columns import IMPRESSION_ALIASES, parse_numbers
from abrank.io.detect import check_table_options, detect_format
from abrank.io.formats import BY_NAME, TABLE_NAMES
from abrank.io.idcodes import category_text, text_codes
from abrank.io.impression_columns import (
    IMPRESSION_COLUMNS,
    canonical_names,
    clicked_column,
    clicked_flags,
    dwell_column,
    id_column,
    is_kept,
    other_column,
    parquet_columns,
    rank_column,
    segment_values_present,
    text_column,
)
from abrank.io.tables import check_head, listing, missing_cells, read_table

__all__ = [
    "IMPRESSION_COLUMNS",
    "MixedUnits",
    "check_arms",
    "check_log_head",
    "clicked_flags",
    "drop_units",
    "impression_codes",
    "read_impressions",
    "split_log",
    "take_frame",
]

#: Canonical columns of the impressions frame, in the order the frame holds them.
_CANONICAL_ORDER = (*IMPRESSION_COLUMNS, "dwell", "timestamp", "query", "arm", "team")
_IDS = ("impression_id", "user_id", "doc_id")


def read_impressions(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    decimal: str | None = None,
    keep: Collection[str] | None = None,
    filled: Collection[str] = (),
    teams: Collection[str] | None = None,
    numeric: Collection[str] = (),
) -> pd.DataFrame:
    """Load an impression log into the canonical impressions frame.

    Columns: ``impression_id``, ``user_id``, ``doc_id``, ``query``, ``arm`` and ``team`` (of
    an interleaved log) as categoricals of text (categories: the distinct ids as text in byte order, each used by
    some row; ``query`` NaN where missing), ``rank`` (int64, 1 = top), ``clicked`` (int8
    0/1), ``dwell`` (float64 seconds, NaN where missing; only when the log has it),
    ``timestamp`` (as read), then every other column as it is, text columns as categoricals
    of their values (segments such as ``device``). Ids compare as text whatever their type
    in the file; a categorical costs a small code per row, and the frame's consumers use the
    codes (:func:`abrank.io.idcodes.text_codes`) instead of hashing ids row by row. Rows
    are sorted by (impression_id, rank), impression ids in byte order. ``columns`` maps
    canonical names to the log's names (``{"user_id": "visitor"}``); ``sep`` and
    ``decimal`` as for :func:`abrank.io.read_rankings`.

    ``keep`` (default: every column) names the columns to load besides ``impression_id``,
    ``rank`` and ``clicked``, by canonical name (``user_id``, ``dwell``) or, for other
    columns, by the log's name (``device``): a Parquet log's other columns are not read,
    and no column left out is checked. Every column of :data:`IMPRESSION_COLUMNS` must be
    in the log all the same.

    Bad input is a DataError naming the file and the line (the row of a Parquet file), the
    impression or the column: a missing required column, a ``clicked`` that is not 0, 1,
    true or false, a rank that is not a whole number >= 1, ranks of an impression that are
    not exactly 1..n (one missing or repeated), an impression with two users or in two
    arms, a dwell that is negative or no number, an empty log; and an empty cell in one of
    the columns ``filled`` names (the segment columns, by the log's name or canonically);
    a ``team`` that names none of ``teams`` (the arms of an interleaved log), when given;
    a cell of a ``numeric`` column (by the log's name: the columns of numeric metrics) that
    is not a number or is infinite (an empty one is NaN: a missing value, counted by the
    metric); those columns are float64.
    """
    fmt = detect_format(path, format, judgments=True)
    if BY_NAME[fmt].kind != "table":
        raise DataError(
            f"{path}: expected an impression log table ({', '.join(TABLE_NAMES)}), got a TREC "
            f"file (format {'trec' if fmt == 'qrels' else fmt})"
        )
    check_table_options(path, fmt, sep, decimal)
    if fmt == "parquet":
        log, names = parquet_columns(Path(path), columns, keep)
        first_line = 1
    else:
        frame, first_line = read_table(
            path,
            fmt,
            sep=sep,
            decimal=decimal,
            text_columns=_text_columns(columns),
            first_rows=_cell_checks(path, columns, keep, decimal, fmt, sep),
        )
        log = _named(frame, path, columns, keep)
        names = canonical_names(list(frame.columns), path, columns)
    where = _place_of(path, "row" if fmt == "parquet" else "line", first_line)
    rank_name = next(str(name) for name, canon in names.items() if canon == "rank")
    missing = missing_cells(path, fmt, rank_name, sep)
    out = _converted(
        log, where, decimal, missing=missing, filled=filled, teams=teams, numeric=numeric
    )
    codes = np.asarray(out["impression_id"].codes, dtype=np.int32)
    rows = _row_order(codes, out["rank"])
    if rows is not None:
        out = {column: _take(values, rows) for column, values in out.items()}
        codes = codes[rows]
    else:
        rows = np.arange(codes.size, dtype=np.int64)
    _check_impressions(out, codes, rows, path, where, [c for c in filled if c in out])
    order = [c for c in _CANONICAL_ORDER if c in out]
    rest = [c for c in log if c not in order]
    return pd.DataFrame({column: out[column] for column in order + rest}, copy=False)


def check_log_head(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    decimal: str | None = None,
) -> None:
    """Run the cell checks of :func:`read_impressions` (ids present, ``clicked``, ranks
    and dwell of each row) on the first lines of a text log only
    (:func:`abrank.io.tables.check_head`), for the SQL engines, which read the whole log
    themselves: a log of garbage is then refused at its first bad rows, with the message
    :func:`read_impressions` gives. A missing column is left to the engine, which sees the
    columns of every file (and those of a hive-partitioned path); so is a Parquet log."""
    fmt = detect_format(path, format, judgments=True)
    if BY_NAME[fmt].kind != "table" or fmt == "parquet":
        return

    def check(frame: pd.DataFrame, first_line: int) -> None:
        try:
            canonical_names(list(frame.columns), path, columns)
        except DataError:
            return  # a column problem: the engine's to name
        _cell_checks(path, columns, None, decimal, fmt, sep)(frame, first_line)

    check_head(path, fmt, check, sep=sep, decimal=decimal, text_columns=_text_columns(columns))


def _text_columns(columns: Mapping[str, str] | None) -> set[str]:
    """The columns that delimited text keeps as written: every spelling of the ids and
    labels (``007`` stays ``007``)."""
    labels = (*_IDS, "query", "arm", "team")
    text = {name for canon in labels for name in IMPRESSION_ALIASES[canon]}
    return text | {u for canon, u in (columns or {}).items() if canon in labels}


def _cell_checks(
    path: str | Path,
    columns: Mapping[str, str] | None,
    keep: Collection[str] | None,
    decimal: str | None,
    fmt: str = "csv",
    sep: str | None = None,
) -> Callable[[pd.DataFrame, int], Any]:
    """The checks of a text log's rows that need no other row, as ``read_table``'s
    ``first_rows``: run on its first lines before it is read whole."""

    def check(frame: pd.DataFrame, first_line: int) -> Any:
        names = canonical_names(list(frame.columns), path, columns)
        rank_name = next(str(name) for name, canon in names.items() if canon == "rank")
        return _converted(
            _named(frame, path, columns, keep),
            _place_of(path, "line", first_line),
            decimal,
            missing=missing_cells(path, fmt, rank_name, sep),
        )

    return check


def _named(
    frame: pd.DataFrame,
    path: str | Path,
    columns: Mapping[str, str] | None,
    keep: Collection[str] | None,
) -> dict[str, Any]:
    """A table's columns that are loaded, by canonical name (the required ones checked)."""
    names = canonical_names(list(frame.columns), path, columns)
    return {canon: frame[name] for name, canon in names.items() if is_kept(canon, keep)}


def _place_of(path: str | Path, unit: str, first_line: int) -> Callable[[int], str]:
    """``where(row)``: the file and line (or row) of a 0-based row, for messages."""

    def where(row: int) -> str:
        return f"{path}: {unit} {row + first_line}"

    return where


def _converted(
    log: Mapping[str, Any],
    where: Callable[[int], str],
    decimal: str | None,
    *,
    missing: Callable[[int], str] | None = None,
    filled: Collection[str] = (),
    teams: Collection[str] | None = None,
    numeric: Collection[str] = (),
) -> dict[str, Any]:
    """The log's columns converted to the canonical types, each cell checked (ids present,
    team values that name an arm of ``teams``, ``clicked`` 0/1, ranks whole numbers >= 1,
    ``missing`` describing an empty one, dwell >= 0, the ``filled`` columns holding a value
    in every row); rows in the file's order. What needs an impression's rows together is
    checked by :func:`_check_impressions`."""
    out: dict[str, Any] = {}
    for column in (*_IDS, "arm", "team"):
        if column in log:
            out[column] = id_column(log[column], _in_column(where, column))
    if teams is not None and "team" in out:
        _check_teams(out["team"], teams, lambda row: f"{where(row)}: team")
    if "query" in log:
        out["query"] = text_column(log["query"])
    out["clicked"] = clicked_column(log["clicked"], lambda row: f"{where(row)}: clicked")
    out["rank"] = rank_column(log["rank"], lambda row: f"{where(row)}: rank", decimal, missing)
    if "dwell" in log:
        out["dwell"] = dwell_column(log["dwell"], lambda row: f"{where(row)}: dwell", decimal)
    for column in filled:
        if column in log:
            segment_values_present(log[column], _in_column(where, column))
    for column in numeric:
        if column in log and column not in out:
            out[column] = parse_numbers(
                log[column], _in_column(where, column), allow_missing=True, decimal=decimal
            )
    for column, values in log.items():
        if column not in out:
            out[column] = other_column(values)
    return out


def _in_column(where: Callable[[int], str], column: str) -> Callable[[int], str]:
    """Where a row's cell of ``column`` is: ``where(row)`` followed by the column's name."""
    return lambda row: f"{where(row)}: {column}"


def _check_teams(team: pd.Categorical, arms: Collection[str], where: Callable[[int], str]) -> None:
    """Every team value names one of ``arms``: else a DataError naming the first row (in
    the file's order) of a value that names none, with the count of the others."""
    categories = [str(c) for c in team.categories]
    unknown = [i for i, c in enumerate(categories) if c not in arms]
    if not unknown:
        return
    bad = np.isin(np.asarray(team.codes), unknown)
    row = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(
        f"{where(row)}: expected one of the arms ({', '.join(arms)}), got "
        f"{categories[int(team.codes[row])]!r}{more}"
    )


def impression_codes(values: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Dense codes of a column of ids (text) and the distinct ids in byte order (code i is
    ``ids[i]``), as :func:`abrank.io.arrow.query_codes` gives them.

    A log as :func:`read_impressions` returns it holds each impression in one block, blocks
    in id order: then the first id of each block is compared with the next one and no id is
    hashed or sorted (20 million rows in a fraction of a second). Any other order goes
    through :func:`~abrank.io.arrow.query_codes`.
    """
    n = len(values)
    if n > 1:
        change = np.concatenate(
            [c.to_numpy(zero_copy_only=False) for c in pc.not_equal(values[1:], values[:-1]).chunks]
        )
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
        heads = take_rows(values, starts)
        if starts.size == 1 or pc.all(pc.less(heads[:-1], heads[1:])).as_py():
            lengths = np.diff(np.append(starts, n))
            codes = np.repeat(np.arange(starts.size, dtype=np.int32), lengths)
            return codes, heads
    return query_codes(values)


# --------------------------------------------------------------------------- impressions


def _row_order(codes: np.ndarray, rank: np.ndarray) -> np.ndarray | None:
    """The rows' order by (impression code, rank): None when they are in it already.

    A log whose impressions are each one block of rows in rank order (most logs: a served
    list is written at once) is put in order block by block: one sort of the blocks' codes,
    and each row moves with its block. Any other log gets a stable sort of one int64 key, so
    that rows of equal (impression, rank) keep the file's order.
    """
    n = codes.size
    if n < 2:
        return None
    step = np.diff(codes)
    same = step == 0
    unranked = same & (rank[1:] <= rank[:-1])
    if not (step < 0).any() and not unranked.any():
        return None
    starts = np.flatnonzero(~same) + 1
    heads = np.concatenate([codes[:1], codes[starts]])
    if not unranked.any() and int(np.bincount(heads).max()) == 1:  # one block each
        return _block_order(starts, heads, n)
    top = int(rank.max())
    if top < 2**31:  # one int64 key: a stable sort, fast on partly ordered logs
        return np.argsort(codes.astype(np.int64) * (top + 1) + rank, kind="stable")
    return np.lexsort((rank, codes))


def _block_order(starts: np.ndarray, heads: np.ndarray, n: int) -> np.ndarray:
    """The rows' order when blocks of rows move whole: blocks start at row 0 and at
    ``starts``, and go in the order of their codes ``heads`` (distinct).

    Each new row is the row after the previous one, except at the start of a block, which
    jumps to where that block begins in the file: a running sum of steps of 1 and jumps.
    """
    begin = np.concatenate([[0], starts])
    end = np.append(starts, n)
    blocks = np.argsort(heads)
    first, last = begin[blocks], end[blocks] - 1  # each block's first and last row
    step = np.ones(n, dtype=np.int64)
    placed = np.cumsum(end[blocks] - first)[:-1]  # where blocks 2, 3, ... start anew
    step[0] = first[0]
    step[placed] = first[1:] - last[:-1]
    return np.cumsum(step, out=step)


def _take(values: Any, rows: np.ndarray) -> Any:
    """A converted column's values at ``rows``."""
    if isinstance(values, pd.Categorical):
        return pd.Categorical.from_codes(values.codes[rows], dtype=values.dtype, validate=False)
    if isinstance(values, np.ndarray):
        return values[rows]
    return values.take(rows)


def _check_impressions(
    columns: Mapping[str, Any],
    codes: np.ndarray,
    rows: np.ndarray,
    path: str | Path,
    where: Callable[[int], str],
    segments: Sequence[str] = (),
) -> None:
    """Ranks 1..n in each impression, one user, one arm and one value of each of
    ``segments`` per impression (rows sorted; ``codes`` their impressions, ``rows`` their
    places in the file)."""
    rank = columns["rank"]
    impressions = columns["impression_id"].categories
    position = positions(codes) + 1
    bad = np.flatnonzero(rank != position)
    if bad.size:
        at = int(bad[0])
        impression = impressions[codes[at]]
        if position[at] > 1 and rank[at] == rank[at - 1]:
            raise DataError(
                f"{where(int(rows[at]))}: rank: expected each rank once per impression, got "
                f"rank {int(rank[at])} again in impression {impression!r} (first at "
                f"{_place(where(int(rows[at - 1])))})"
            )
        last = at + int(np.count_nonzero(codes[at:] == codes[at]))  # sorted: one block
        first = at - int(position[at]) + 1
        raise DataError(
            f"{path}: impression {impression!r} ({_place(where(int(rows[first])))}): rank: "
            f"expected ranks 1..{int(rank[last - 1])}, rank {int(position[at])} is missing"
        )
    same = codes[1:] == codes[:-1]
    for column in ("user_id", "arm", *segments):
        if column not in columns:
            continue
        values = columns[column]
        value_codes = (
            values.codes if isinstance(values, pd.Categorical) else pd.factorize(values)[0]
        )
        clash = np.flatnonzero(same & (value_codes[1:] != value_codes[:-1]))
        if clash.size:
            at = int(clash[0]) + 1
            first = at - int(position[at]) + 1
            raise DataError(
                f"{where(int(rows[at]))}: {column}: expected one {column} per impression, got "
                f"{_scalar(values[at])!r} in impression {impressions[codes[at]]!r}, which has "
                f"{_scalar(values[first])!r} at {_place(where(int(rows[first])))}"
            )


def _scalar(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (for messages)."""
    return value.item() if hasattr(value, "item") else value


def _place(where: str) -> str:
    """``line 5`` of ``path: line 5``."""
    return where.rsplit(": ", 1)[-1]


# --------------------------------------------------------------------------- arms


def split_log(log: pd.DataFrame, arms: Sequence[str], *, path: str) -> dict[str, pd.DataFrame]:
    """One log with an ``arm`` column -> a frame per arm (in ``arms`` order, rows in the
    log's order, without the arm column).

    DataError (naming ``path``): no arm column (the columns found are listed), a value of
    ``arm`` that names no arm (the values found and the arm names are listed), an arm
    without rows.
    """
    names = [str(a) for a in arms]
    if "arm" not in log.columns:
        raise DataError(
            f"{path}: expected an arm column (its values the arm names {', '.join(names)}), "
            f"found columns: {listing(log)}"
        )
    codes, values = text_codes(log["arm"], f"{path}: arm")
    found = [str(v) for v in values.to_pylist()]
    counts = np.bincount(codes, minlength=len(found))
    shown = ", ".join(f"{v!r} ({int(n)} rows)" for v, n in sorted(zip(found, counts)))
    unknown = sorted(set(found) - set(names))
    if unknown:
        raise DataError(
            f"{path}: arm: expected the arm names {', '.join(map(repr, names))}, got "
            f"{', '.join(map(repr, unknown))} (values found: {shown})"
        )
    empty = [name for name in names if name not in found]
    if empty:
        raise DataError(
            f"{path}: arm: expected rows for every arm, got none for "
            f"{', '.join(map(repr, empty))} (values found: {shown})"
        )
    rest = log.drop(columns="arm")
    return {name: take_frame(rest, np.flatnonzero(codes == found.index(name))) for name in names}


@dataclass(frozen=True)
class MixedUnits:
    """Units (users) seen in more than one arm: ``count`` of them, the first few
    ``examples`` in byte order, and all of them in ``units`` (for :func:`drop_units`)."""

    column: str
    count: int
    examples: tuple[str, ...]
    units: frozenset[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: column, count, examples."""
        return {"column": self.column, "count": int(self.count), "examples": list(self.examples)}


def check_arms(
    frames: Mapping[str, pd.DataFrame], paths: Mapping[str, str], *, unit: str = "user_id"
) -> MixedUnits:
    """Check the arms' impressions against each other.

    One impression_id in two arms is a DataError naming both files and arms and an example
    (a log joined twice, or two arms' logs that share ids: their clicks would count twice).
    Units in more than one arm are counted and returned (a warning, not an error: the
    randomization leaked); a frame without the unit column is a DataError.
    """
    for name, frame in frames.items():
        for column in ("impression_id", unit):
            if column not in frame.columns:
                what = "the unit of analysis" if column == unit else "the impressions' key"
                raise DataError(
                    f"{_file(paths, name)}: expected a {column} column ({what}), found "
                    f"columns: {listing(frame)}"
                )
    shared, arms_of = _shared(frames, "impression_id")
    if len(shared):
        example = shared[0]
        first, second = arms_of(example)[:2]
        raise DataError(
            f"{_file(paths, first)} (arm {first!r}) and {_file(paths, second)} (arm "
            f"{second!r}): impression_id: expected each impression in one arm, got "
            f"{len(shared)} in more than one, e.g. {example!r}"
        )
    units, _ = _shared(frames, unit)
    return MixedUnits(
        column=unit,
        count=len(units),
        examples=tuple(units[:5]),
        units=frozenset(units),
    )


def drop_units(
    frames: Mapping[str, pd.DataFrame],
    units: MixedUnits | Iterable[Any],
    *,
    unit: str = "user_id",
) -> dict[str, pd.DataFrame]:
    """The frames without the rows of ``units`` (a :class:`MixedUnits`, or ids of any type,
    compared as text); a frame without the unit column is a DataError."""
    chosen = units.units if isinstance(units, MixedUnits) else units
    value_set = pa.array(sorted(str(u) for u in chosen), type=pa.large_string())
    out = {}
    for name, frame in frames.items():
        if unit not in frame.columns:
            raise DataError(
                f"arm {name!r}: expected a {unit} column (the unit of analysis), found columns: "
                f"{listing(frame)}"
            )
        values = frame[unit]
        if isinstance(values.dtype, pd.CategoricalDtype) and values.notna().all():
            # the categories' text against the set, then each row by its code
            text = category_text(values.cat.categories)
            hit = pc.is_in(text, value_set=value_set).to_numpy(zero_copy_only=False)
            gone = hit[values.cat.codes.to_numpy()]
        else:
            gone = pc.is_in(as_arrow(values), value_set=value_set)
            gone = gone.to_numpy(zero_copy_only=False)
        out[name] = take_frame(frame, np.flatnonzero(~gone)) if gone.any() else frame
    return out


def take_frame(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """The frame's ``rows`` on a new 0..n-1 index, column by column: a categorical's codes
    are taken and its categories shared, no index is built and no columns are merged."""
    if frame.columns.has_duplicates:
        return frame.take(rows).reset_index(drop=True)
    columns: dict[Any, Any] = {}
    for name in frame.columns:
        column = frame[name]
        values = column.array
        if isinstance(values, pd.Categorical):
            codes = values.codes[rows]
            columns[name] = pd.Categorical.from_codes(codes, dtype=values.dtype, validate=False)
        elif isinstance(column.dtype, np.dtype):
            columns[name] = column.to_numpy()[rows]
        else:
            columns[name] = values.take(rows)
    return pd.DataFrame(columns, columns=frame.columns, copy=False)


def _file(paths: Mapping[str, str], arm: str) -> str:
    return str(paths.get(arm, f"arm {arm!r}"))


def _shared(
    frames: Mapping[str, pd.DataFrame], column: str
) -> tuple[list[str], Callable[[str], list[str]]]:
    """Values of ``column`` found in more than one frame (sorted), and a function naming
    the frames (arms) that hold a given value.

    Frames split from one log share their categoricals' categories: then the codes say
    which frames hold a value, and only the values held twice are turned into text.
    """
    names = list(frames)
    if len(names) < 2:
        return [], lambda value: []
    series = [frames[n][column] for n in names]
    first = series[0].dtype
    if (
        isinstance(first, pd.CategoricalDtype)
        and all(s.dtype is first for s in series)
        and pd.api.types.is_string_dtype(first.categories)
    ):
        held = np.zeros((len(names), len(first.categories)), dtype=bool)
        for i, s in enumerate(series):
            codes = np.asarray(s.cat.codes.to_numpy())
            if codes.size and int(codes.min()) < 0:  # a missing id: as_arrow names the row
                as_arrow(s, f"arm {names[i]!r}: {column}")
            held[i, codes] = True
        twice = np.flatnonzero(held.sum(axis=0) > 1)
        text = category_text(first.categories.take(twice)).to_pylist()
        where = dict(zip(text, twice))
        values = sorted(where, key=lambda v: v.encode("utf-8"))

        def arms_by_code(value: str) -> list[str]:
            code = where.get(value)
            return [] if code is None else [n for n, h in zip(names, held) if h[code]]

        return values, arms_by_code
    distinct = [text_codes(s, f"arm {n!r}: {column}")[1] for n, s in zip(names, series)]
    together = pa.chunked_array(distinct).combine_chunks()
    encoded = pc.dictionary_encode(together)
    counts = np.bincount(encoded.indices.to_numpy(zero_copy_only=False))
    repeated = encoded.dictionary.filter(pa.array(counts > 1))
    values = repeated.take(pc.sort_indices(repeated)).to_pylist()

    def arms_of(value: str) -> list[str]:
        probe = pa.array([value], type=pa.large_string())
        return [n for n, d in zip(names, distinct) if pc.is_in(probe, value_set=d)[0].as_py()]

    return values, arms_of
