"""Per-unit sums of a log's numeric columns, on every engine.

The evidence of a design that compares the arms on the mean of a log column per unit
(latency, dwell, revenue per row): for each arm and unit, the sum of each column over the
unit's rows and how many rows have a value, overall and per segment value
(:class:`abrank.evidence.Evidence`). The memory engine reads the files with the table
readers; DuckDB and Spark run one aggregation where the files lie and return the sums
only. Every engine gives the same numbers, and refuses the same bad input: a missing
column, a cell that is not a number, a row without a unit or an arm, an arm not in the
config.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.engines.sql.sources import LogSource, literal
from abrank.errors import DataError
from abrank.evidence import ROWS, Evidence

__all__ = ["ColumnRequest", "column_impressions", "column_sums", "impression_sql"]


@dataclass(frozen=True)
class ColumnRequest:
    """What to sum: numeric ``columns`` of the logs, per ``unit`` and arm (``arms`` in the
    readout's order; a log holding several arms names each row's in ``arm_column``), and
    per value of each ``segments`` column."""

    columns: tuple[str, ...]
    arms: tuple[str, ...]
    unit: str
    segments: tuple[str, ...] = ()
    arm_column: str = "arm"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "columns": list(self.columns),
            "arms": list(self.arms),
            "unit": self.unit,
            "segments": list(self.segments),
            "arm_column": self.arm_column,
        }


def column_sums(engine: Any, sources: Sequence[LogSource], request: ColumnRequest) -> Evidence:
    """The per-unit sums of ``request``'s columns over the logs ``sources`` on ``engine``
    (an :class:`~abrank.analysis.engine.EngineChoice`: memory, duckdb or spark); the
    files read are the evidence's ``inputs`` (file and rows)."""
    if engine.name == "memory":
        rows, read = _memory_rows(sources, request)
    else:
        rows, read = _sql_rows(engine, sources, request)
    return _evidence(rows, read, request)


def column_impressions(
    engine: Any, sources: Sequence[LogSource], request: ColumnRequest, impression: str
) -> pd.DataFrame:
    """One row per (arm, impression) of the logs, computed by an SQL engine where the
    files lie: ``arm``, the ``impression`` id, the unit and segment values as text, and per
    column of ``request`` its value (NaN: missing). The quantiles of a numeric metric read
    every value, so the engine returns one row per impression instead of sums (a tenth of
    a log with a row per shown result). An impression whose rows hold two different values
    of a column is a DataError naming the log, the column and the impression; the cells
    are checked as :func:`column_sums` checks them."""
    from abrank.engines.sql import compile_sql, open_backend

    backend = open_backend(engine.name, engine.options, engine.connection)
    try:
        grouped = impression_sql(backend, sources, request, impression)
        table = backend.run(compile_sql(grouped, backend.dialect)).to_pandas()
    finally:
        backend.close()
    for column in request.columns:
        low = table[column].to_numpy(dtype=np.float64, na_value=np.nan)
        high = table[f"{column}:max"].to_numpy(dtype=np.float64, na_value=np.nan)
        differs = np.flatnonzero(low != high)
        differs = differs[~np.isnan(low[differs])]
        if differs.size:
            row = table.iloc[int(differs[0])]
            raise DataError(
                f"{row['abrank_log']}: {column}: expected one value per impression (on each "
                f"of its rows, or on some rows with the others empty), got {low[differs[0]]:g} "
                f"and {high[differs[0]]:g} in impression {row[impression]}"
            )
        table[column] = low
    table = table.drop(columns=[f"{c}:max" for c in request.columns] + ["abrank_log"])
    return table.rename(columns={"abrank_arm": "arm"})


def impression_sql(
    backend: Any, sources: Sequence[LogSource], request: ColumnRequest, impression: str
) -> str:
    """The neutral-dialect query of one row per (arm, impression) of the logs registered on
    ``backend`` (see :func:`column_impressions`): ``abrank_arm``, ``abrank_log`` (the log's
    name), the ``impression`` id, the unit and segments (their first value) and per column
    of ``request`` its smallest value and, as ``<column>:max``, its largest (two differ
    where an impression's rows disagree). The cells are checked on the way."""
    from abrank.engines.sql import quote
    from abrank.engines.sql.sources import is_nan, number, text_id

    selects = []
    for index, source in enumerate(sources):
        relation = f"abrank_impressions_{index}"
        wanted = _wanted(source, request)
        wanted[impression] = source.columns.get(impression, impression)
        described = _registered(backend, relation, source, wanted)
        cells = {}
        for canon in [*_keys(source, request), impression]:
            cells[canon] = text_id(quote(wanted[canon]), described[wanted[canon]])
        for column in request.columns:
            kind = described[wanted[column]]
            value = number(quote(wanted[column]), kind, source.decimal)
            _check_cells(backend, relation, source, quote(wanted[column]), kind, value, column)
            _check_finite(backend, relation, source, value, kind, column)
            cells[column] = f"CASE WHEN {is_nan(value, kind)} THEN NULL ELSE {value} END"
        arm = literal(source.arm) if source.arm is not None else cells.pop(request.arm_column)
        if source.arm is None:
            _check_sql_arms(backend, relation, source, arm, request)
        listed = ", ".join(f"{sql} AS {quote(name)}" for name, sql in cells.items())
        selects.append(
            f"SELECT {arm} AS abrank_arm, '{_label(source)}' AS abrank_log, {listed} "
            f"FROM {relation}"
        )
    union = " UNION ALL ".join(selects)
    keys = [request.unit, *[s for s in request.segments if s != request.unit]]
    firsts = ", ".join(f"MIN({quote(k)}) AS {quote(k)}" for k in keys)
    values = ", ".join(
        f"MIN({quote(c)}) AS {quote(c)}, MAX({quote(c)}) AS {quote(c + ':max')}"
        for c in request.columns
    )
    return (
        f"SELECT abrank_arm, MIN(abrank_log) AS abrank_log, {quote(impression)}, {firsts}, "
        f"{values} FROM ({union}) AS abrank_rows GROUP BY abrank_arm, {quote(impression)}"
    )


def _label(source: LogSource) -> str:
    """A log's name as messages show it, as an SQL string's text."""
    return str(source.label).replace("'", "''")


# --------------------------------------------------------------------------- memory


def _memory_rows(
    sources: Sequence[LogSource], request: ColumnRequest
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every row of the logs as (arm, unit, segments..., columns...), read in memory."""
    from abrank.io.columns import parse_numbers
    from abrank.io.tables import read_table

    parts = []
    read: dict[str, int] = {}
    for source in sources:
        wanted = _wanted(source, request)
        for file in source.files:
            frame, first = read_table(
                file,
                source.format,
                sep=source.sep,
                decimal=source.decimal,
                text_columns=[wanted[c] for c in _keys(source, request)],
            )
            missing = [log for log in wanted.values() if log not in frame.columns]
            if missing:
                raise DataError(_missing_column(file, missing[0], list(frame.columns)))

            def where(row: int, column: str, file: str = file, first: int = first) -> str:
                # text formats count lines (the header is line 1), Parquet rows
                place = f"row {row + 1}" if first <= 1 else f"line {row + first}"
                return f"{file}: {place}: {column}"

            part = {}
            for canon in _keys(source, request):
                part[canon] = _text_cells(
                    frame[wanted[canon]], functools.partial(where, column=canon)
                )
            for column in request.columns:
                part[column] = parse_numbers(
                    frame[wanted[column]],
                    functools.partial(where, column=column),
                    allow_missing=True,
                    decimal=source.decimal,
                )
            table = pd.DataFrame(part)
            if source.arm is not None:
                table.insert(0, "arm", source.arm)
            else:
                table = table.rename(columns={request.arm_column: "arm"})
                _check_arms(table["arm"], request.arms, lambda r: where(r, request.arm_column))
            parts.append(table)
            read[str(file)] = int(len(frame))
    return pd.concat(parts, ignore_index=True), read


def _text_cells(values: pd.Series, where: Any) -> np.ndarray:
    """An id column as text (whole floats as the integers they hold); a DataError naming
    the first row without a value."""
    if pd.api.types.is_float_dtype(values):
        whole = values.notna() & (values == np.floor(values))
        text = values.astype(object).where(~whole, values.astype("Int64").astype(str))
        values = text.where(values.notna(), None)
    text = values.astype("string")
    absent = (text.isna() | (text.str.len() == 0)).to_numpy()
    if absent.any():
        row = int(np.flatnonzero(absent)[0])
        raise DataError(f"{where(row)}: expected a value, got an empty cell")
    return text.astype(object).to_numpy()


def _check_arms(arms: pd.Series, expected: Sequence[str], where: Any) -> None:
    unknown = ~arms.isin(expected).to_numpy()
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise DataError(
            f"{where(row)}: expected one of the arms ({', '.join(expected)}), got {arms.iloc[row]!r}"
        )


# --------------------------------------------------------------------------- SQL


def _sql_rows(
    engine: Any, sources: Sequence[LogSource], request: ColumnRequest
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The per-(arm, segment values, unit) sums computed by an SQL engine, as rows."""
    from abrank.engines.sql import compile_sql, open_backend, quote
    from abrank.engines.sql.sources import is_nan, number, text_id

    backend = open_backend(engine.name, engine.options, engine.connection)
    try:
        selects = []
        for index, source in enumerate(sources):
            relation = f"abrank_columns_{index}"
            wanted = _wanted(source, request)
            described = _registered(backend, relation, source, wanted)
            cells = {}
            for canon in _keys(source, request):
                cells[canon] = text_id(quote(wanted[canon]), described[wanted[canon]])
            for column in request.columns:
                kind = described[wanted[column]]
                value = number(quote(wanted[column]), kind, source.decimal)
                _check_cells(backend, relation, source, quote(wanted[column]), kind, value, column)
                cells[column] = f"CASE WHEN {is_nan(value, kind)} THEN NULL ELSE {value} END"
            for canon in _keys(source, request):
                _check_present(backend, relation, source, cells[canon], canon)
            arm = literal(source.arm) if source.arm is not None else cells.pop(request.arm_column)
            if source.arm is None:
                _check_sql_arms(backend, relation, source, arm, request)
            listed = ", ".join(f"{sql} AS {quote(name)}" for name, sql in cells.items())
            selects.append(f"SELECT {arm} AS abrank_arm, abrank_file, {listed} FROM {relation}")
        union = " UNION ALL ".join(selects)
        keys = [quote(c) for c in (request.unit, *request.segments)]
        sums = ", ".join(
            f"SUM({quote(c)}) AS {quote(c)}, COUNT({quote(c)}) AS {quote(c + ':n')}"
            for c in request.columns
        )
        grouped = (
            f"SELECT abrank_arm, {', '.join(keys)}, COUNT(*) AS {ROWS}, {sums} "
            f"FROM ({union}) AS abrank_rows GROUP BY abrank_arm, {', '.join(keys)}"
        )
        table = backend.run(compile_sql(grouped, backend.dialect)).to_pandas()
        files = backend.run(
            compile_sql(
                f"SELECT abrank_file, COUNT(*) AS n FROM ({union}) AS abrank_rows GROUP BY abrank_file",
                backend.dialect,
            )
        ).to_pylist()
    finally:
        backend.close()
    table = table.rename(columns={"abrank_arm": "arm"})
    read = {str(r["abrank_file"]): int(r["n"]) for r in files}
    by_name = {_file_key(f): f for s in sources for f in s.files}
    read = {by_name.get(_file_key(f), f): n for f, n in read.items()}
    return table, read


def _check_cells(
    backend: Any, relation: str, source: LogSource, ref: str, kind: str, value: str, column: str
) -> None:
    """A DataError naming the first cell of ``column`` that is not a number."""
    from abrank.engines.sql import compile_sql
    from abrank.engines.sql.sources import as_text

    if kind in ("int", "float"):
        return
    text = f"NULLIF(TRIM({as_text(ref, kind)}), '')"
    sql = (
        f"SELECT abrank_file, abrank_row, {text} AS cell FROM {relation} "
        f"WHERE {text} IS NOT NULL AND {value} IS NULL ORDER BY abrank_file, abrank_row LIMIT 1"
    )
    found = backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    if found:
        row = found[0]
        raise DataError(f"{_place(source, row)}: {column}: expected a number, got {row['cell']!r}")


def _check_finite(
    backend: Any, relation: str, source: LogSource, value: str, kind: str, column: str
) -> None:
    """A DataError naming the first infinite cell of ``column`` (as the memory engine's
    reader refuses it: a numeric metric's values are finite or missing)."""
    from abrank.engines.sql import compile_sql
    from abrank.engines.sql.sources import is_nan

    if kind == "int":
        return
    sql = (
        f"SELECT abrank_file, abrank_row, {value} AS cell FROM {relation} "
        f"WHERE NOT ({is_nan(value, kind)}) "
        f"AND ABS({value}) > 1.7976931348623157E308 ORDER BY abrank_file, abrank_row LIMIT 1"
    )
    found = backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    if found:
        row = found[0]
        cell = repr(str(float(row["cell"])))  # 'inf' or '-inf', as the memory engine says
        raise DataError(f"{_place(source, row)}: {column}: expected a finite number, got {cell}")


def _check_present(backend: Any, relation: str, source: LogSource, cell: str, column: str) -> None:
    """A DataError naming the first row without a value of id column ``column``."""
    from abrank.engines.sql import compile_sql

    sql = (
        f"SELECT abrank_file, abrank_row FROM {relation} WHERE {cell} IS NULL OR {cell} = '' "
        "ORDER BY abrank_file, abrank_row LIMIT 1"
    )
    found = backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    if found:
        raise DataError(
            f"{_place(source, found[0])}: {column}: expected a value, got an empty cell"
        )


def _check_sql_arms(
    backend: Any, relation: str, source: LogSource, arm: str, request: ColumnRequest
) -> None:
    from abrank.engines.sql import compile_sql

    listed = ", ".join(literal(a) for a in request.arms)
    sql = (
        f"SELECT abrank_file, abrank_row, {arm} AS arm FROM {relation} WHERE {arm} NOT IN ({listed}) "
        "ORDER BY abrank_file, abrank_row LIMIT 1"
    )
    found = backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    if found:
        row = found[0]
        raise DataError(
            f"{_place(source, row)}: {request.arm_column}: expected one of the arms "
            f"({', '.join(request.arms)}), got {row['arm']!r}"
        )


def _place(source: LogSource, row: Mapping[str, Any]) -> str:
    """A row of a log as the memory engine names it: the file and its line (text) or row."""
    file = next(
        (f for f in source.files if _file_key(f) == _file_key(str(row["abrank_file"]))),
        str(row["abrank_file"]),
    )
    number = row.get("abrank_row")
    if number is None:
        return str(file)
    if source.format == "parquet":
        return f"{file}: row {int(number) + 1}"
    return f"{file}: line {int(number) + 2}"


def _file_key(path: str) -> str:
    """A file's path as engines may spell it (``file:`` prefixes and the like removed)."""
    from pathlib import Path

    text = str(path)
    if text.startswith("file:"):
        text = text[5:].lstrip("/")
        text = "/" + text
    try:
        return str(Path(text).resolve())
    except OSError:
        return text


# --------------------------------------------------------------------------- shared


def _registered(
    backend: Any, relation: str, source: LogSource, wanted: dict[str, str]
) -> dict[str, str]:
    """Register ``source`` as ``relation`` and return its columns' kinds, after checking
    that the log has every column ``wanted`` (a DataError listing those it has)."""
    from abrank.engines.sql.sources import register_source

    described = dict(register_source(backend, relation, source))
    for log in wanted.values():
        if log not in described:
            found = [c for c in described if not c.startswith("abrank_")]
            raise DataError(_missing_column(source.label, log, found))
    return described


def _keys(source: LogSource, request: ColumnRequest) -> list[str]:
    """The text columns read: the unit, the segments, and the arm of a log of every arm."""
    keys = [request.unit, *[s for s in request.segments if s != request.unit]]
    if source.arm is None:
        keys.append(request.arm_column)
    return list(dict.fromkeys(keys))


def _wanted(source: LogSource, request: ColumnRequest) -> dict[str, str]:
    """Canonical name -> the log's column, through the config's column mapping."""
    names = [*_keys(source, request), *request.columns]
    return {name: source.columns.get(name, name) for name in dict.fromkeys(names)}


def _missing_column(where: str, column: str, found: Sequence[str]) -> str:
    return f"{where}: expected a column {column!r}, found columns: {', '.join(map(str, found))}"


def _evidence(rows: pd.DataFrame, read: dict[str, int], request: ColumnRequest) -> Evidence:
    """Rows of (arm, unit, segments..., values or sums) made per-unit sums frames: the
    memory engine's rows are summed here, the SQL engines' are sums already."""
    grouped = ROWS in rows.columns
    sums: dict[str, pd.DataFrame] = {}
    segment_sums: dict[str, dict[str, pd.DataFrame]] = {s: {} for s in request.segments}
    for arm in request.arms:
        mine = rows[rows["arm"] == arm]
        sums[arm] = _per_unit(mine, [request.unit], request, grouped)
        for column in request.segments:
            if column == request.unit:
                continue
            segment_sums[column][arm] = _per_unit(mine, [column, request.unit], request, grouped)
    inputs = tuple({"file": file, "rows": n} for file, n in read.items())
    return Evidence(request.unit, sums, segment_sums, inputs)


def _per_unit(
    rows: pd.DataFrame, keys: list[str], request: ColumnRequest, grouped: bool
) -> pd.DataFrame:
    """One arm's sums per ``keys`` (the unit, or a segment column and the unit), in byte
    order of the keys, with ``<column>:n`` where some rows lack the column's value."""
    if grouped:
        parts = {ROWS: rows[ROWS]}
        for column in request.columns:
            parts[column] = rows[column].fillna(0.0)
            parts[f"{column}:n"] = rows[f"{column}:n"]
        frame = pd.DataFrame(parts).groupby([rows[k] for k in keys], sort=False).sum()
    else:
        values = {ROWS: np.ones(len(rows), dtype=np.int64)}
        for column in request.columns:
            numbers = rows[column].to_numpy(dtype=np.float64)
            present = ~np.isnan(numbers)
            values[column] = np.where(present, numbers, 0.0)
            values[f"{column}:n"] = present.astype(np.int64)
        frame = (
            pd.DataFrame(values, index=rows.index)
            .groupby([rows[k] for k in keys], sort=False)
            .sum()
        )
    frame = frame.sort_index(key=lambda level: level.astype(str))
    frame.index = frame.index.set_names(keys if len(keys) > 1 else keys[0])
    out = {ROWS: frame[ROWS].to_numpy(dtype=np.int64)}
    counts = {}
    for column in request.columns:
        out[column] = frame[column].to_numpy(dtype=np.float64)
        n = frame[f"{column}:n"].to_numpy(dtype=np.int64)
        if (n != out[ROWS]).any():
            counts[f"{column}:n"] = n
    return pd.DataFrame({**out, **counts}, index=frame.index)
