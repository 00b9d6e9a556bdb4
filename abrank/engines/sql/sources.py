"""Log sources as the SQL definitions read them: one relation of canonical columns per log.

Every definition over impression logs (:mod:`abrank.engines.sql.clicks`,
:mod:`abrank.engines.sql.interleaved`) opens its logs the same way: the backend registers
the files as a relation, the log's columns are mapped onto the canonical names
(:func:`abrank.io.impression_columns.canonical_names`: the config's ``columns`` first,
then the aliases; the required columns checked with the columns found listed), and each
row becomes the canonical cells with a flag per bad cell and the raw text the messages
quote (:func:`row_columns`). Ids are compared as text whatever their type in the file
(the int64 12 is the id "12"), unless they are integers in every source, which group
faster and equal as their text does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.engines.sql import Backend, compile_sql, quote
from abrank.errors import DataError
from abrank.io.impression_columns import canonical_names

__all__ = [
    "LARGEST",
    "Layout",
    "LogSource",
    "clicked_flag",
    "literal",
    "missing_id",
    "native_ids",
    "number",
    "row_columns",
    "shown_path",
    "text_id",
]

#: The largest double: a dwell above it is infinite.
LARGEST = "1.7976931348623157E308"


@dataclass(frozen=True)
class LogSource:
    """One log as the engine reads it: its files (one format), the arm of every row (a
    log per arm) or None (the log's ``arm`` column names it), the config's column
    mapping (canonical -> the log's name), and how messages name it (``label``)."""

    files: tuple[str, ...]
    format: str  # parquet, csv or tsv
    label: str
    arm: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)
    sep: str | None = None
    decimal: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "files": list(self.files),
            "format": self.format,
            "label": self.label,
            "arm": self.arm,
            "columns": dict(self.columns),
            "sep": self.sep,
            "decimal": self.decimal,
        }


@dataclass(frozen=True)
class Layout:
    """One source registered as a relation: its columns by canonical name and kind."""

    relation: str
    source: LogSource
    names: list[str]  # the log's own columns, in its order
    column: dict[str, str]  # canonical (or unit / segment name) -> the log's column
    kind: dict[str, str]  # the log's column -> kind

    @classmethod
    def open(cls, backend: Backend, relation: str, source: LogSource) -> Layout:
        """Register ``source`` as ``relation`` and map its columns onto the canonical
        names (a DataError listing the columns found when a required one is missing).

        Each local text file's first lines are checked first by the file reader
        (:func:`abrank.io.check_log_head`): a log of garbage is refused at its first bad
        rows, not after the engine has read it whole."""
        from abrank.io import check_log_head
        from abrank.io.files import path_problem

        for file in source.files:
            if path_problem(file) is None:  # a regular file here (not a folder, not a URL)
                check_log_head(
                    file,
                    format=source.format,
                    columns=source.columns,
                    sep=source.sep,
                    decimal=source.decimal,
                )
        described = backend.register(relation, source)
        names = [name for name, _ in described]
        renamed = canonical_names(names, source.label, source.columns)
        column = {canon: name for name, canon in renamed.items()}
        return cls(relation, source, names, column, dict(described))

    @property
    def listing(self) -> str:
        """The log's columns as messages list them."""
        return ", ".join(self.names)

    def require(self, name: str, expected: str) -> None:
        """DataError unless the log has column ``name`` (``expected`` says what it is for)."""
        if name not in self.column:
            raise DataError(
                f"{self.source.label}: {expected}: expected a column {name!r}, found "
                f"columns: {self.listing}"
            )

    def ref(self, canon: str) -> str:
        """The quoted column of canonical name ``canon``."""
        return quote(self.column[canon])

    def kind_of(self, canon: str) -> str:
        """The kind (bool, int, float, text, other) of canonical column ``canon``."""
        return self.kind[self.column[canon]]


def native_ids(layouts: Sequence[Layout], ids: Sequence[str]) -> set[str]:
    """The id columns of ``ids`` (canonical names) that are integers in every source."""
    return {canon for canon in ids if all(layout.kind_of(canon) == "int" for layout in layouts)}


def missing_id(column: str, native: set[str], canon: str) -> str:
    """The condition of a missing id in ``column`` (an empty text counts as missing)."""
    return f"{column} IS NULL" if canon in native else f"{column} IS NULL OR {column} = ''"


def text_id(ref: str, kind: str) -> str:
    """An id as text: whole floats as the integers they hold (12.0 is the id "12")."""
    if kind == "float":
        return (
            f"CASE WHEN {ref} = FLOOR({ref}) THEN CAST(CAST({ref} AS BIGINT) AS VARCHAR) "
            f"ELSE CAST({ref} AS VARCHAR) END"
        )
    return f"CAST({ref} AS VARCHAR)"


def number(ref: str, kind: str, decimal: str | None) -> str:
    """A numeric column as DOUBLE (NULL where a text cell is no number)."""
    if kind in ("int", "float"):
        return f"CAST({ref} AS DOUBLE)"
    text = f"TRIM(CAST({ref} AS VARCHAR))"
    if decimal == ",":
        text = f"REPLACE({text}, ',', '.')"
    return f"TRY_CAST(NULLIF({text}, '') AS DOUBLE)"


def clicked_flag(ref: str, kind: str) -> str:
    """``clicked`` as 1 / 0, NULL where it is not 0, 1, true or false."""
    if kind == "bool":
        return f"CASE WHEN {ref} THEN 1 WHEN NOT {ref} THEN 0 END"
    if kind in ("int", "float"):
        return f"CASE WHEN {ref} = 1 THEN 1 WHEN {ref} = 0 THEN 0 END"
    text = f"LOWER(TRIM(CAST({ref} AS VARCHAR)))"
    return (
        f"CASE WHEN {text} IN ('1', '1.0', 'true') THEN 1 "
        f"WHEN {text} IN ('0', '0.0', 'false') THEN 0 END"
    )


def row_columns(layout: Layout, unit: str, native: set[str]) -> list[str]:
    """The canonical cells of one source's rows, as select items: ``log_file``,
    ``log_row``, ``impression_id`` and ``unit`` (text, or integers where ``native``),
    ``rank`` (DOUBLE) with ``rank_bad`` and ``rank_text``, ``clicked`` (1 / 0 / NULL) with
    ``clicked_text``, ``dwell`` (DOUBLE seconds, NULL where missing; NULL without a dwell
    column) with ``dwell_bad`` and ``dwell_text``."""

    def ident(canon: str) -> str:
        ref = layout.ref(canon)
        return ref if canon in native else text_id(ref, layout.kind_of(canon))

    source = layout.source
    rank_ref, rank_kind = layout.ref("rank"), layout.kind_of("rank")
    rank = number(rank_ref, rank_kind, source.decimal)
    if rank_kind == "int":
        rank_bad = f"{rank_ref} IS NULL OR {rank_ref} < 1"
    else:
        rank_bad = f"{rank} IS NULL OR {rank} < 1 OR {rank} <> FLOOR({rank})"
    parts = [
        "abrank_file AS log_file",
        "abrank_row AS log_row",
        f"{ident('impression_id')} AS impression_id",
        f"{ident(unit)} AS unit",
        f"{rank} AS rank",
        f"CASE WHEN {rank_bad} THEN 1 ELSE 0 END AS rank_bad",
        f"CAST({rank_ref} AS VARCHAR) AS rank_text",
        f"{clicked_flag(layout.ref('clicked'), layout.kind_of('clicked'))} AS clicked",
        f"CAST({layout.ref('clicked')} AS VARCHAR) AS clicked_text",
    ]
    if "dwell" in layout.column:
        ref, kind = layout.ref("dwell"), layout.kind_of("dwell")
        seconds = number(ref, kind, source.decimal)
        # NaN (a float, or the text 'nan') is a missing dwell, as in the memory engine
        seconds = f"CASE WHEN ISNAN({seconds}) THEN NULL ELSE {seconds} END"
        bad = (
            f"({ref} IS NOT NULL AND {seconds} IS NULL AND NULLIF(TRIM(CAST({ref} AS VARCHAR)), "
            f"'') IS NOT NULL AND LOWER(TRIM(CAST({ref} AS VARCHAR))) <> 'nan') "
            f"OR {seconds} < 0 OR {seconds} > {LARGEST}"
        )
        parts += [
            f"{seconds} AS dwell",
            f"CASE WHEN {bad} THEN 1 ELSE 0 END AS dwell_bad",
            f"CAST({ref} AS VARCHAR) AS dwell_text",
        ]
    else:
        parts += [
            "CAST(NULL AS DOUBLE) AS dwell",
            "0 AS dwell_bad",
            "CAST(NULL AS VARCHAR) AS dwell_text",
        ]
    return parts


def literal(value: str) -> str:
    """A text literal of the neutral dialect."""
    return "'" + str(value).replace("'", "''") + "'"


def shown_path(path: str) -> str:
    """A file as messages show it: relative to the working folder when below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def selected_values(table: pa.Table, column: str, rows: np.ndarray) -> pd.Series:
    """A result column's values on the selected ``rows`` (a boolean mask), in the type the
    engine gave them: an integer segment column stays integer (in pandas, the NULLs that
    the other grouping sets leave in the column would make the whole of it float)."""
    return table.column(column).filter(pa.array(rows)).to_pandas()


#: Ranks up to this are checked by a bit each in one BIGINT (below its sign bit) by the
#: log definitions; deeper ones by :func:`check_deep_ranks`.
RANK_BITS = 62

#: The per-impression aggregates (over the rows of :func:`row_columns`) that check its
#: rows: bad cells, and ranks 1..n each once: n = the top rank, every rank up to
#: RANK_BITS seen once (a bit each), deeper ranks checked apart (:func:`check_deep_ranks`)
#: when any exists.
IMPRESSION_CHECKS = (
    "COUNT(*) AS n",
    "MAX(rank) AS top",
    f"COUNT(CASE WHEN rank <= {RANK_BITS} THEN 1 END) AS shallow",
    f"BIT_OR(CASE WHEN rank_bad = 0 AND rank <= {RANK_BITS} THEN CAST(1 AS BIGINT) << "
    "CAST(rank - 1 AS INT) ELSE CAST(0 AS BIGINT) END) AS seen",
    "SUM(row_bad) AS bad_rows",
)

#: The conditions, over :data:`IMPRESSION_CHECKS`, of an impression with a bad cell or
#: ranks that are not 1..n.
IMPRESSION_PROBLEMS = (
    "bad_rows > 0",
    "n <> top",
    f"shallow <> LEAST(top, {RANK_BITS})",
    f"seen <> (CAST(1 AS BIGINT) << CAST(LEAST(top, {RANK_BITS}) AS INT)) - 1",
)


def ranks_broken(impression: Mapping[str, Any]) -> bool:
    """An impression's ranks (its :data:`IMPRESSION_CHECKS` values) are not 1..n."""
    shallow = min(impression["top"], RANK_BITS)
    return (
        impression["n"] != impression["top"]
        or impression["shallow"] != shallow
        or impression["seen"] != (1 << int(shallow)) - 1
    )


def check_deep_ranks(backend: Backend, rows: str) -> None:
    """Ranks deeper than :data:`RANK_BITS` (of the log rows ``rows``: impression_id, rank,
    log_file): none repeated in an impression (with n = the top rank and each shallow rank
    once, that makes them 1..n); else a DataError naming the file, impression and rank."""
    sql = (
        "SELECT CAST(impression_id AS VARCHAR) AS impression_id, rank, MIN(log_file) AS "
        f"log_file, COUNT(*) AS times FROM ({rows}) AS log_rows WHERE rank > {RANK_BITS} "
        "GROUP BY impression_id, rank HAVING COUNT(*) > 1 "
        "ORDER BY CAST(impression_id AS VARCHAR), rank LIMIT 1"
    )
    table = backend.run(compile_sql(sql, backend.dialect))
    if table.num_rows:
        row = table.to_pylist()[0]
        raise DataError(
            f"{shown_path(row['log_file'])}: impression {row['impression_id']!r}: rank: "
            f"expected each rank once per impression, got rank {int(row['rank'])} "
            f"{int(row['times'])} times"
        )
