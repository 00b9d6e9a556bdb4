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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import ConfigError, DataError
from abrank.io.arrow import as_arrow, positions, query_codes, take_rows
from abrank.io.columns import IMPRESSION_ALIASES, alias_renames, describe_cell, parse_numbers
from abrank.io.detect import check_table_options, detect_format
from abrank.io.formats import BY_NAME, TABLE_NAMES
from abrank.io.tables import listing, read_table

__all__ = [
    "IMPRESSION_COLUMNS",
    "MixedUnits",
    "check_arms",
    "clicked_flags",
    "drop_units",
    "impression_codes",
    "read_impressions",
    "split_log",
]

#: The columns every impression log has (under these names or a spelling of
#: :data:`abrank.io.columns.IMPRESSION_ALIASES`, or mapped by ``columns``).
IMPRESSION_COLUMNS = ("impression_id", "user_id", "rank", "doc_id", "clicked")

#: Canonical columns of the impressions frame, in the order the frame holds them.
_CANONICAL_ORDER = (*IMPRESSION_COLUMNS, "dwell", "timestamp", "query", "arm")
_IDS = ("impression_id", "user_id", "doc_id")
_CLICK_TEXT = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}


def read_impressions(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    decimal: str | None = None,
) -> pd.DataFrame:
    """Load an impression log into the canonical impressions frame.

    Columns: ``impression_id``, ``user_id``, ``doc_id`` (str), ``rank`` (int64, 1 = top),
    ``clicked`` (int8 0/1), ``dwell`` (float64 seconds, NaN where missing; only when the
    log has it), ``timestamp`` (as read), ``query`` and ``arm`` (str) when present, then
    every other column as it is (segments such as ``device``). Rows are sorted by
    (impression_id, rank), impression ids in byte order. ``columns`` maps canonical names
    to the log's names (``{"user_id": "visitor"}``); ``sep`` and ``decimal`` as for
    :func:`abrank.io.read_rankings`.

    Bad input is a DataError naming the file and the line (the row of a Parquet file), the
    impression or the column: a missing required column, a ``clicked`` that is not 0, 1,
    true or false, a rank that is not a whole number >= 1, ranks of an impression that are
    not exactly 1..n (one missing or repeated), an impression with two users or in two
    arms, a dwell that is negative or no number, an empty log.
    """
    fmt = detect_format(path, format, judgments=True)
    if BY_NAME[fmt].kind != "table":
        raise DataError(
            f"{path}: expected an impression log table ({', '.join(TABLE_NAMES)}), got a TREC "
            f"file (format {'trec' if fmt == 'qrels' else fmt})"
        )
    check_table_options(path, fmt, sep, decimal)
    text = {name for canon in (*_IDS, "query", "arm") for name in IMPRESSION_ALIASES[canon]}
    text |= {user for canon, user in (columns or {}).items() if canon in (*_IDS, "query", "arm")}
    frame, first_line = read_table(path, fmt, sep=sep, decimal=decimal, text_columns=text)
    frame = _canonical_columns(frame, path, columns).reset_index(drop=True)
    unit = "row" if fmt == "parquet" else "line"

    def where(row: int) -> str:
        return f"{path}: {unit} {row + first_line}"

    for column in (*_IDS, *(c for c in ("arm",) if c in frame.columns)):
        frame[column] = _ids(frame[column], lambda row, c=column: f"{where(row)}: {c}")
    if "query" in frame.columns:
        frame["query"] = _text(frame["query"])
    frame["clicked"] = clicked_flags(frame["clicked"], lambda row: f"{where(row)}: clicked")
    frame["rank"] = _ranks(frame["rank"], lambda row: f"{where(row)}: rank", decimal)
    if "dwell" in frame.columns:
        frame["dwell"] = _dwell(frame["dwell"], lambda row: f"{where(row)}: dwell", decimal)
    frame, codes, rows = _sorted(frame)
    _check_impressions(frame, codes, rows, path, where)
    order = [c for c in _CANONICAL_ORDER if c in frame.columns]
    rest = [c for c in frame.columns if c not in order]
    return frame[order + rest].reset_index(drop=True)


def clicked_flags(values: pd.Series, where: Callable[[int], str]) -> np.ndarray:
    """A ``clicked`` column as int8 0/1: booleans, the numbers 0 and 1, or the words 0, 1,
    true and false in any case. Anything else (2, "yes", an empty cell) is a DataError
    ``"{where(row)}: expected 0, 1, true or false, got ..."`` for the first such row."""
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


# --------------------------------------------------------------------------- columns


def _canonical_columns(
    frame: pd.DataFrame, path: str | Path, columns: Mapping[str, str] | None
) -> pd.DataFrame:
    """Rename the log's columns to canonical names: explicit mapping first, then aliases."""
    renames: dict[str, str] = {}
    for canon, user in dict(columns or {}).items():
        if canon not in IMPRESSION_ALIASES:
            raise ConfigError(
                f"{path}: columns.{canon}: expected one of {', '.join(IMPRESSION_ALIASES)}, "
                f"got {canon!r}"
            )
        if user not in frame.columns:
            raise DataError(
                f"{path}: columns.{canon}: expected a column named {user!r}, found columns: "
                f"{listing(frame)}"
            )
        renames[user] = canon
    renames = alias_renames(frame.columns, renames, aliases=IMPRESSION_ALIASES)
    for canon in IMPRESSION_COLUMNS:
        if canon not in renames.values():
            raise DataError(
                f"{path}: expected a {canon} column (one of "
                f"{', '.join(IMPRESSION_ALIASES[canon])}, or set columns.{canon}), found "
                f"columns: {listing(frame)}"
            )
    # a column named canonically but mapped away from (another column takes its name)
    clashes = [c for c in frame.columns if c in renames.values() and c not in renames]
    return frame.drop(columns=clashes).rename(columns=renames)


def _ids(values: pd.Series, where: Callable[[int], str]) -> pd.Series:
    missing = values.isna().to_numpy()
    if missing.any():
        _fail(where, values, missing, "a non-empty id")
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


def _ranks(values: pd.Series, where: Callable[[int], str], decimal: str | None) -> np.ndarray:
    if pd.api.types.is_integer_dtype(values) and not values.isna().any():
        rank = values.to_numpy(dtype=np.int64)
    else:
        numbers = parse_numbers(values, where, decimal=decimal)
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


# --------------------------------------------------------------------------- impressions


def _sorted(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Rows by (impression_id in byte order, rank), with each row's impression code and its
    place in the file (for messages). An already sorted log is not copied row by row."""
    codes, _ = impression_codes(as_arrow(frame["impression_id"]))
    rank = frame["rank"].to_numpy()
    rows = np.arange(len(frame), dtype=np.int64)
    if codes.size > 1:
        step = np.diff(codes)
        if (step < 0).any() or ((step == 0) & (rank[1:] <= rank[:-1])).any():
            top = int(rank.max())
            if top < 2**31:  # one int64 key: a stable sort, fast on partly ordered logs
                rows = np.argsort(codes.astype(np.int64) * (top + 1) + rank, kind="stable")
            else:
                rows = np.lexsort((rank, codes))
            frame, codes = frame.take(rows), codes[rows]
    return frame.reset_index(drop=True), codes, rows


def _check_impressions(
    frame: pd.DataFrame,
    codes: np.ndarray,
    rows: np.ndarray,
    path: str | Path,
    where: Callable[[int], str],
) -> None:
    """Ranks 1..n in each impression, one user and one arm per impression (rows sorted;
    ``codes`` their impressions, ``rows`` their places in the file)."""
    rank = frame["rank"].to_numpy()
    position = positions(codes) + 1
    bad = np.flatnonzero(rank != position)
    if bad.size:
        at = int(bad[0])
        impression = frame["impression_id"].iat[at]
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
    for column in ("user_id", "arm"):
        if column not in frame.columns:
            continue
        values = as_arrow(frame[column])
        same = codes[1:] == codes[:-1]
        differ = pc.not_equal(values[1:], values[:-1]).to_numpy(zero_copy_only=False)
        clash = np.flatnonzero(same & differ)
        if clash.size:
            at = int(clash[0]) + 1
            first = at - int(position[at]) + 1
            raise DataError(
                f"{where(int(rows[at]))}: {column}: expected one {column} per impression, got "
                f"{frame[column].iat[at]!r} in impression {frame['impression_id'].iat[at]!r}, "
                f"which has {frame[column].iat[first]!r} at "
                f"{_place(where(int(rows[first])))}"
            )


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
    encoded = pc.dictionary_encode(as_arrow(log["arm"], f"{path}: arm")).combine_chunks()
    found = [str(v) for v in encoded.dictionary.to_pylist()]
    codes = encoded.indices.to_numpy(zero_copy_only=False)
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
    return {name: rest.loc[codes == found.index(name)].reset_index(drop=True) for name in names}


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
        gone = pc.is_in(as_arrow(frame[unit]), value_set=value_set).to_numpy(zero_copy_only=False)
        out[name] = frame.loc[~gone].reset_index(drop=True) if gone.any() else frame
    return out


def _file(paths: Mapping[str, str], arm: str) -> str:
    return str(paths.get(arm, f"arm {arm!r}"))


def _shared(
    frames: Mapping[str, pd.DataFrame], column: str
) -> tuple[list[str], Callable[[str], list[str]]]:
    """Values of ``column`` found in more than one frame (sorted), and a function naming
    the frames (arms) that hold a given value."""
    names = list(frames)
    distinct = [pc.unique(as_arrow(frames[n][column], f"arm {n!r}: {column}")) for n in names]
    if len(distinct) < 2:
        return [], lambda value: []
    together = pa.chunked_array(distinct).combine_chunks()
    encoded = pc.dictionary_encode(together)
    counts = np.bincount(encoded.indices.to_numpy(zero_copy_only=False))
    repeated = encoded.dictionary.filter(pa.array(counts > 1))
    values = repeated.take(pc.sort_indices(repeated)).to_pylist()

    def arms_of(value: str) -> list[str]:
        probe = pa.array([value], type=pa.large_string())
        return [n for n, d in zip(names, distinct) if pc.is_in(probe, value_set=d)[0].as_py()]

    return values, arms_of
