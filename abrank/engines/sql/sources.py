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

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from abrank._lazy import pandas as pd
from abrank.engines.sql import Backend, compile_sql, quote
from abrank.errors import DataError
from abrank.io.columns import describe_number
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

#: The bound of grades and ranks (:data:`abrank.io.columns.LARGEST_WHOLE`), as SQL.
LARGEST_WHOLE = str(2**53)

#: The kinds of a bad number cell, in the order the memory engine's readers check a column
#: (the first kind found in any row is the one named), and what each message expects:
#: ``number_kind`` gives them.
NOT_A_NUMBER, MISSING, INFINITE, TOO_LARGE, NOT_WHOLE, BELOW_ONE, NEGATIVE = 1, 2, 3, 4, 5, 6, 7
EXPECTED = {
    NOT_A_NUMBER: "a number",
    MISSING: "a number",
    INFINITE: "a finite number",
    TOO_LARGE: "a number between -2^53 and 2^53",
    NOT_WHOLE: "a whole number",
    BELOW_ONE: "a whole number >= 1",
    NEGATIVE: "a number of seconds >= 0",
}
#: What an impression log's messages expect of a rank (the memory engine's reader of
#: logs says "a whole number >= 1" of a fractional rank too).
RANK_EXPECTED = {**EXPECTED, NOT_WHOLE: "a whole number >= 1"}

#: Text that pyarrow's CSV reader takes for an integer (it shows such a cell unquoted).
_INTEGER = re.compile(r"^-?[0-9]+$")


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

        check_text_files(source.files, source.format)
        for file in source.files:
            if path_problem(file) is None:  # a regular file here (not a folder, not a URL)
                check_log_head(
                    file,
                    format=source.format,
                    columns=source.columns,
                    sep=source.sep,
                    decimal=source.decimal,
                )
        described = register_source(backend, relation, source)
        names = [name for name, _ in described]
        try:
            renamed = canonical_names(names, source.label, source.columns)
        except DataError:  # a log without rows is named as empty first, as by the memory engine
            probe = f"SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM {relation} LIMIT 1) AS r"
            if not backend.run(compile_sql(probe, backend.dialect)).to_pylist()[0]["n"]:
                raise DataError(no_rows(source.files[0], ", ".join(names))) from None
            raise
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


def check_text_files(files: Sequence[str], fmt: str) -> None:
    """The files of a text table (CSV, TSV, JSON Lines) refused before the engine reads
    them, as the memory engine's reader refuses them: empty, binary (NUL bytes), not UTF-8
    (:func:`abrank.io.tables.check_readable`, on each file's first bytes)."""
    if fmt in ("csv", "tsv", "jsonl"):
        from abrank.io.files import path_problem
        from abrank.io.tables import check_readable

        for file in files:
            if path_problem(file) is None:  # a regular file here (not a folder, not a URL)
                check_readable(file)


def register_source(backend: Backend, name: str, source: LogSource) -> list[tuple[str, str]]:
    """``backend.register(name, source)``; when the engine cannot read a Parquet source,
    the first file that pyarrow cannot read either is named in the memory engine's words
    (:func:`abrank.io.tables.check_parquet`), so that a file cut short or of random bytes
    gets one message on every engine."""
    try:
        return backend.register(name, source)
    except DataError:
        if source.format == "parquet":
            from abrank.io.tables import check_parquet

            for file in source.files:
                check_parquet(file)
        raise


def no_rows(file: str, listing: str) -> str:
    """The memory engine's message for a table file without rows."""
    return f"{file}: expected at least one row, got none (columns: {listing or 'none'})"


def check_rows_per_file(layouts: Sequence[Layout], file_rows: Mapping[str, int]) -> None:
    """Every file of the logs has rows (``file_rows``: the rows read per file): else a
    DataError naming the first file without any, with its log's columns, as the memory
    engine's reader names it."""
    for layout in layouts:
        for file in layout.source.files:
            if not file_rows.get(str(file)):
                raise DataError(no_rows(file, layout.listing))


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
    return as_text(ref, kind)


def number(ref: str, kind: str, decimal: str | None) -> str:
    """A numeric column as DOUBLE (NULL where a text cell is no number)."""
    if kind in ("int", "float"):
        return f"CAST({ref} AS DOUBLE)"
    text = f"TRIM({as_text(ref, kind)})"
    if decimal == ",":
        text = f"REPLACE({text}, ',', '.')"
    return f"TRY_CAST(NULLIF({text}, '') AS DOUBLE)"


def is_nan(value: str, kind: str) -> str:
    """The SQL condition of a NaN ``value`` (a DOUBLE) read from a column of ``kind``. A
    float column's test goes through the value's text: DuckDB takes a Parquet column's
    statistics, which leave NaN out, for proof that the column holds none, and folds
    ``ISNAN`` to false. An integer column holds no NaN."""
    if kind == "int":
        return "FALSE"
    if kind == "float":
        return f"LOWER(CAST({value} AS VARCHAR)) = 'nan'"
    return f"ISNAN({value})"


def number_kind(
    value: str,
    text: str,
    *,
    kind: str = "text",
    bounded: bool = False,
    whole: bool = False,
    missing_ok: bool = False,
) -> str:
    """The SQL of a number cell's problem (0 for none; the kinds of :data:`EXPECTED`), from
    ``value`` (the cell as DOUBLE, NULL where it is no number) and ``text`` (the cell as
    text, NULL where it is empty): text that is no number, an empty cell or a NaN (unless
    ``missing_ok``: then NULL is fine), an infinite value, one beyond ±2^53 when
    ``bounded``, and when ``whole`` one that is not a whole number or is below 1 (``kind``:
    the column's, :func:`is_nan`). The memory engine checks a column in this order, so the
    smallest kind found is the one it names."""
    missing = "0" if missing_ok else str(MISSING)
    if kind in ("int", "float"):
        # a number column: its cell is empty exactly when its value is, never text that
        # is no number; an integer is never NaN, infinite or fractional. The tests left
        # out are those that cannot hold, so that a clean column of ranks costs no cast
        # to text per row.
        parts = [f"WHEN {value} IS NULL THEN {missing}"]
        if kind == "float":
            parts += [
                f"WHEN {is_nan(value, kind)} THEN {missing}",
                f"WHEN {value} > {LARGEST} OR {value} < -{LARGEST} THEN {INFINITE}",
            ]
    else:
        parts = [
            f"WHEN {text} IS NOT NULL AND {value} IS NULL THEN {NOT_A_NUMBER}",
            f"WHEN {text} IS NULL THEN {missing}",
            f"WHEN {is_nan(value, kind)} THEN {missing}",
            f"WHEN {value} > {LARGEST} OR {value} < -{LARGEST} THEN {INFINITE}",
        ]
    if bounded:
        parts.append(
            f"WHEN {value} > {LARGEST_WHOLE} OR {value} < -{LARGEST_WHOLE} THEN {TOO_LARGE}"
        )
    if whole and kind != "int":  # % rather than FLOOR: Spark's FLOOR gives a BIGINT
        parts.append(f"WHEN {value} % 1 <> 0 THEN {NOT_WHOLE}")
    if whole:
        parts.append(f"WHEN {value} < 1 THEN {BELOW_ONE}")
    return f"CASE {' '.join(parts)} ELSE 0 END"


def shown_cell(text: Any, kind: str) -> str:
    """A bad cell as the memory engine's message shows it, from its text as the engine
    gives it (``text``, None for an empty cell) and the kind of its column: an empty value;
    NaN; a number as :func:`abrank.io.columns.describe_number` writes it (``0``, ``2.5``,
    ``inf``, ``1e+20``: a column of numbers, or a text cell that pyarrow's CSV reader
    would take for one); else the text, quoted."""
    if text is None:
        return "an empty value"
    raw = str(text)
    if kind in ("int", "float", "text", "json"):
        stripped = raw.strip()
        if kind != "float" and _INTEGER.match(stripped) and abs(int(stripped)) < 2**63:
            return str(int(stripped))
        if "_" not in stripped:
            try:
                number = float(stripped)
            except ValueError:
                pass
            else:
                return "NaN" if math.isnan(number) else describe_number(number)
    return repr(raw)


def clicked_flag(ref: str, kind: str) -> str:
    """``clicked`` as 1 / 0, NULL where it is not 0, 1, true or false."""
    if kind == "bool":
        return f"CASE WHEN {ref} THEN 1 WHEN NOT {ref} THEN 0 END"
    if kind in ("int", "float"):
        return f"CASE WHEN {ref} = 1 THEN 1 WHEN {ref} = 0 THEN 0 END"
    text = f"LOWER(TRIM({as_text(ref, kind)}))"
    return (
        f"CASE WHEN {text} IN ('1', '1.0', 'true') THEN 1 "
        f"WHEN {text} IN ('0', '0.0', 'false') THEN 0 END"
    )


def row_columns(layout: Layout, unit: str, native: set[str], dwell: bool = True) -> list[str]:
    """The canonical cells of one source's rows, as select items: ``log_file``,
    ``log_row``, ``impression_id`` and ``unit`` (text, or integers where ``native``),
    ``rank`` (DOUBLE, or the column itself when it holds integers) with ``rank_bad`` (the
    kind of its problem, :func:`number_kind`; 0 for none) and ``rank_text``, ``clicked``
    (1 / 0 / NULL) with ``clicked_text``, ``dwell`` (DOUBLE seconds, NULL where missing;
    NULL without a dwell column, or unless ``dwell``: a log's dwell is read, and checked,
    only for the metrics that count satisfied clicks, as by the memory engine) with
    ``dwell_bad`` (the kind of its problem) and ``dwell_text``."""

    def ident(canon: str) -> str:
        ref = layout.ref(canon)
        return ref if canon in native else text_id(ref, layout.kind_of(canon))

    source = layout.source
    rank_ref, rank_kind = layout.ref("rank"), layout.kind_of("rank")
    # an integer column's ranks stay integers: nothing to convert per row
    rank = rank_ref if rank_kind == "int" else number(rank_ref, rank_kind, source.decimal)
    parts = [
        "abrank_file AS log_file",
        "abrank_row AS log_row",
        f"{ident('impression_id')} AS impression_id",
        f"{ident(unit)} AS unit",
        f"{rank} AS rank",
        f"{number_kind(rank, cell_text(rank_ref, rank_kind), kind=rank_kind, bounded=True, whole=True)} "
        "AS rank_bad",
        f"{as_text(rank_ref, rank_kind)} AS rank_text",
        f"{clicked_flag(layout.ref('clicked'), layout.kind_of('clicked'))} AS clicked",
        f"{as_text(layout.ref('clicked'), layout.kind_of('clicked'))} AS clicked_text",
    ]
    if dwell and "dwell" in layout.column:
        ref, kind = layout.ref("dwell"), layout.kind_of("dwell")
        value = number(ref, kind, source.decimal)
        # NaN (a float, or the text 'nan') is a missing dwell, as in the memory engine
        seconds = f"CASE WHEN {is_nan(value, kind)} THEN NULL ELSE {value} END"
        bad = number_kind(value, cell_text(ref, kind), kind=kind, missing_ok=True)
        parts += [
            f"{seconds} AS dwell",
            f"CASE WHEN {bad} > 0 THEN {bad} WHEN {value} < 0 THEN {NEGATIVE} ELSE 0 END "
            "AS dwell_bad",
            f"{as_text(ref, kind)} AS dwell_text",
        ]
    else:
        parts += [
            "CAST(NULL AS DOUBLE) AS dwell",
            "0 AS dwell_bad",
            "CAST(NULL AS VARCHAR) AS dwell_text",
        ]
    return parts


def cell_text(ref: str, kind: str) -> str:
    """A cell as text, NULL where it is empty (a number column's NULL; a text column's
    empty or blank cell)."""
    if kind in ("int", "float", "bool"):
        return f"CAST({ref} AS VARCHAR)"
    return f"NULLIF(TRIM({as_text(ref, kind)}), '')"


def as_text(ref: str, kind: str) -> str:
    """A cell as the text it holds: a JSON value (DuckDB's type for a JSON Lines column of
    mixed types) as its scalar (``two``, not ``"two"``), anything else cast."""
    if kind == "json":
        return f"JSON_EXTRACT_SCALAR({ref}, '$')"
    return f"CAST({ref} AS VARCHAR)"


@dataclass(frozen=True)
class CellCheck:
    """One check of the cells of a log's rows, for the message of its first bad cell: the
    column named, the SQL condition of a bad cell, what is expected (by the kind of the
    problem when ``kind`` names the SQL column that holds it: the smallest kind found is
    named, as the memory engine checks a column's problems in that order), the SQL column
    of the cell's text (None: the cell is empty) and the kind of the log's column (how
    :func:`shown_cell` shows the text)."""

    column: str
    condition: str
    expected: str | Mapping[int, str]
    kind: str | None = None
    text: str | None = None
    cell_kind: str = "text"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        expected = self.expected if isinstance(self.expected, str) else dict(self.expected)
        return {
            "column": self.column,
            "condition": self.condition,
            "expected": expected,
            "kind": self.kind,
            "text": self.text,
            "cell_kind": self.cell_kind,
        }


def cell_checks(
    layouts: Sequence[Layout], unit: str, native: set[str], dwell: bool = True
) -> list[CellCheck]:
    """The checks of :func:`row_columns`' cells every log definition makes, in the memory
    engine's order: ids present, ``clicked`` 0/1, rank, dwell (when read: ``dwell``)."""
    kinds = {canon: {layout.kind_of(canon) for layout in layouts} for canon in ("rank", "clicked")}
    dwells = {layout.kind_of("dwell") for layout in layouts if "dwell" in layout.column}

    def one(found: set[str]) -> str:
        return found.pop() if len(found) == 1 else "text"

    empty = "a non-empty id"
    return [
        CellCheck("impression_id", missing_id("impression_id", native, "impression_id"), empty),
        CellCheck(unit, missing_id("unit", native, unit), empty),
        CellCheck(
            "clicked", "clicked IS NULL", "0, 1, true or false", None, "clicked_text",
            one(kinds["clicked"]),
        ),
        CellCheck("rank", "rank_bad > 0", RANK_EXPECTED, "rank_bad", "rank_text", one(kinds["rank"])),
        *([CellCheck("dwell", "dwell_bad > 0", EXPECTED, "dwell_bad", "dwell_text", one(dwells))]
          if dwell else []),
    ]  # fmt: skip


def raise_bad_cell(
    backend: Backend,
    rows: str,
    checks: Sequence[CellCheck],
    where: Any,
) -> None:
    """The first of ``checks`` that a row of ``rows`` fails: a DataError naming the first
    such row (``where(row)``: its file and row, or its impression where the engine numbers
    no rows), the column, what was expected, the cell, and how many more rows have the
    same problem, as the memory engine's reader words it."""
    base = f"SELECT * FROM ({rows}) AS log_rows"
    # one scan finds which checks fail, and each one's smallest kind of problem
    found = []
    for i, check in enumerate(checks):
        kind_sql = check.kind or "0"
        found += [
            f"SUM(CASE WHEN {check.condition} THEN 1 ELSE 0 END) AS n{i}",
            f"MIN(CASE WHEN {check.condition} THEN {kind_sql} END) AS k{i}",
        ]
    summary = backend.run(
        compile_sql(f"SELECT {', '.join(found)} FROM ({rows}) AS log_rows", backend.dialect)
    ).to_pylist()[0]
    for i, check in enumerate(checks):
        if not summary[f"n{i}"]:
            continue
        kind = int(summary[f"k{i}"] or 0)
        chosen, count = check.condition, int(summary[f"n{i}"])
        if check.kind is not None:  # the rows of that kind only
            chosen = f"({check.condition}) AND {check.kind} = {kind}"
            counting = f"SELECT COUNT(*) AS n FROM ({rows}) AS log_rows WHERE {chosen}"
            count = int(backend.run(compile_sql(counting, backend.dialect)).to_pylist()[0]["n"])
        row = backend.run(
            compile_sql(
                f"{base} WHERE {chosen} ORDER BY log_file, log_row LIMIT 1", backend.dialect
            )
        ).to_pylist()[0]
        text = None if check.text is None else row[check.text]
        got = shown_cell(text, check.cell_kind)
        if kind == MISSING and text is not None:
            got = "NaN"
        expected = check.expected if isinstance(check.expected, str) else check.expected[kind]
        more = f" ({count - 1} more such rows)" if count > 1 else ""
        raise DataError(f"{where(row)}: {check.column}: expected {expected}, got {got}{more}")


def row_place(layouts: Sequence[Layout]) -> Any:
    """A function saying where a log row lies, as the memory engine's messages say it: its
    file and its line (CSV and TSV under their header line, JSON Lines) or its 1-based row
    (Parquet); its file and impression where the engine numbers no rows (Spark's CSV and
    JSON readers)."""
    formats = {
        str(file): layout.source.format for layout in layouts for file in layout.source.files
    }

    def where(row: Mapping[str, Any]) -> str:
        file = row["log_file"]
        if row.get("log_row") is None:
            return f"{file}: impression {str(row['impression_id'])!r}"
        fmt = formats.get(str(file), "parquet")
        word, first = (
            ("row", 1) if fmt == "parquet" else ("line", 2 if fmt in ("csv", "tsv") else 1)
        )
        return f"{file}: {word} {int(row['log_row']) + first}"

    return where


def row_line(layouts: Sequence[Layout]) -> Any:
    """A function giving a log row's ``line N`` or ``row N`` as :func:`row_place` words it,
    or None where the engine numbers no rows."""
    place = row_place(layouts)

    def line(row: Mapping[str, Any]) -> str | None:
        if row.get("log_row") is None:
            return None
        return place(row).rsplit(": ", 1)[-1]

    return line


def raise_impression_problem(
    layouts: Sequence[Layout],
    impression: str,
    detail: Sequence[Mapping[str, Any]],
    columns: Sequence[tuple[str, str, bool]],
) -> None:
    """The memory engine's message for an impression whose rows break it (``detail``:
    its rows, with ``log_file``, ``log_row``, ``rank`` and the columns): its ranks not
    exactly 1..n (a rank again, naming both rows; or the smallest missing rank), else two
    values of one of ``columns`` ((column named, key of ``detail``, whether it holds ids,
    shown as text whatever their type): the unit, the arm, the segments), naming the row of
    the second value and where the first stands. The rows
    are read as the memory engine sorts them, by rank, rows of one rank in file order.
    Where the engine numbers no rows (Spark's CSV and JSON readers), no line is named."""
    line = row_line(layouts)
    rows = sorted(
        detail,
        key=lambda r: (r["rank"], str(r["log_file"]), -1 if r["log_row"] is None else r["log_row"]),
    )

    def place(row: Mapping[str, Any]) -> str:
        number = line(row)
        return str(row["log_file"]) if number is None else f"{row['log_file']}: {number}"

    def at(row: Mapping[str, Any], words: str) -> str:
        number = line(row)
        return "" if number is None else words.format(number)

    for position, row in enumerate(rows, start=1):
        if row["rank"] == position:
            continue
        if position > 1 and row["rank"] == rows[position - 2]["rank"]:
            raise DataError(
                f"{place(row)}: rank: expected each rank once per impression, got rank "
                f"{int(row['rank'])} again in impression {impression!r}"
                f"{at(rows[position - 2], ' (first at {})')}"
            )
        raise DataError(
            f"{rows[0]['log_file']}: impression {impression!r}{at(rows[0], ' ({})')}: rank: "
            f"expected ranks 1..{int(rows[-1]['rank'])}, rank {position} is missing"
        )
    for column, key, ids in columns:

        def shown(value: Any, ids: bool = ids) -> str:
            return repr(str(value)) if ids else repr(value)

        for before, row in zip(rows, rows[1:]):
            if row[key] != before[key]:
                raise DataError(
                    f"{place(row)}: {column}: expected one {column} per impression, got "
                    f"{shown(row[key])} in impression {impression!r}, which has "
                    f"{shown(rows[0][key])}{at(rows[0], ' at {}')}"
                )


def literal(value: str) -> str:
    """A text literal of the neutral dialect."""
    return "'" + str(value).replace("'", "''") + "'"


def shown_path(path: str) -> str:
    """A file as messages show it: as the config resolved its path, which is how the
    memory engine's readers name it (the engines give each row's file as they were given
    it)."""
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


#: The checks of one pass over a whole log, in two aggregates per row: the rows' count
#: ``n`` and ``seen``, a bit per rank up to RANK_BITS and bit RANK_BITS for a bad cell
#: (a bad cell's row sets that bit alone). ``seen`` = 2^min(n, RANK_BITS) - 1 then says
#: that no cell is bad and that ranks 1..min(n, RANK_BITS) are there; with n rows and at
#: most RANK_BITS of them, that they are exactly 1..n, each once. The impression's top
#: rank is then n. Deeper impressions are checked again by :func:`check_deep_ranks` with
#: ``every_rank`` (no rank repeated, the top rank n).
LEAN_CHECKS = (
    "COUNT(*) AS n",
    f"BIT_OR(CASE WHEN row_bad > 0 THEN CAST(1 AS BIGINT) << {RANK_BITS} "
    f"WHEN rank <= {RANK_BITS} THEN CAST(1 AS BIGINT) << CAST(rank - 1 AS INT) "
    "ELSE CAST(0 AS BIGINT) END) AS seen",
)

#: The condition over :data:`LEAN_CHECKS` of an impression with a bad cell or ranks that
#: are not 1..n (within RANK_BITS).
LEAN_PROBLEMS = (f"seen <> (CAST(1 AS BIGINT) << CAST(LEAST(n, {RANK_BITS}) AS INT)) - 1",)


def ranks_broken(impression: Mapping[str, Any]) -> bool:
    """An impression's ranks (its :data:`IMPRESSION_CHECKS` values) are not 1..n."""
    shallow = min(impression["top"], RANK_BITS)
    return (
        impression["n"] != impression["top"]
        or impression["shallow"] != shallow
        or impression["seen"] != (1 << int(shallow)) - 1
    )


def check_deep_ranks(
    backend: Backend, rows: str, layouts: Sequence[Layout], every_rank: bool = False
) -> None:
    """Ranks deeper than :data:`RANK_BITS` (of the log rows ``rows``: impression_id, rank,
    log_file): none repeated in an impression (with n = the top rank and each shallow rank
    once, that makes them 1..n); else the memory engine's message for the first such
    impression (:func:`raise_impression_problem`). With ``every_rank`` (the impressions
    were checked by :data:`LEAN_CHECKS`, which see neither the shallow ranks' count nor
    the top rank) no rank at all is repeated and each impression's top rank is its count
    of rows: that makes them 1..n."""
    deep = "" if every_rank else f" WHERE rank > {RANK_BITS}"
    repeated = (
        "SELECT CAST(impression_id AS VARCHAR) AS impression_id FROM "
        f"({rows}) AS log_rows{deep} GROUP BY impression_id, rank HAVING COUNT(*) > 1"
    )
    if every_rank:
        repeated += (
            " UNION ALL SELECT CAST(impression_id AS VARCHAR) AS impression_id FROM "
            f"({rows}) AS log_rows GROUP BY impression_id HAVING MAX(rank) <> COUNT(*)"
        )
    sql = f"SELECT impression_id FROM ({repeated}) AS found ORDER BY impression_id LIMIT 1"
    table = backend.run(compile_sql(sql, backend.dialect))
    if table.num_rows:
        impression = table.to_pylist()[0]["impression_id"]
        detail = backend.run(
            compile_sql(
                f"SELECT * FROM ({rows}) AS log_rows WHERE CAST(impression_id AS VARCHAR) = "
                f"{literal(impression)}",
                backend.dialect,
            )
        ).to_pylist()
        raise_impression_problem(layouts, impression, detail, [])
