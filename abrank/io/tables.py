"""Table files (CSV, TSV, Parquet, JSON Lines) parsed into frames, one reader per format.

:data:`READERS` maps each table format of :mod:`abrank.io.formats` to its reader; a test
checks that every table format has one. Readers parse whole files with pyarrow's readers
and leave the columns' checks to :mod:`abrank.io`; :func:`read_table` runs those checks on
a text file's first lines (:func:`abrank.io.head.read_head`) before it reads the file
whole, so that a file of garbage is refused at its first bad rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Literal

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.columns import ALIASES, describe_missing_text
from abrank.io.files import SNIFF_BYTES, arrow_input, check_file, head_bytes, is_gzip
from abrank.io.formats import BY_NAME, TABLE_NAMES
from abrank.io.head import long_line_error, read_head, read_only


def check_readable(path: str | Path) -> None:
    """Reject missing, unreadable, empty, binary and non-UTF-8 files before a parser sees them."""
    path = Path(path)
    check_file(path)
    head = head_bytes(path)
    if not head:
        raise DataError(f"{path}: expected at least one row, got an empty file")
    if b"\x00" in head:
        raise DataError(f"{path}: expected a text file, got binary data (NUL bytes)")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end < len(head) - 4 or len(head) < SNIFF_BYTES:  # not just a cut-off character
            line = head[: exc.start].count(b"\n") + 1
            raise DataError(
                f"{path}: line {line}: expected UTF-8 text, got the byte 0x{head[exc.start]:02x}"
            ) from None


def read_table(
    path: str | Path,
    fmt: str,
    *,
    sep: str | None = None,
    decimal: str | None = None,
    text_columns: Collection[str] = (),
    first_rows: Callable[[pd.DataFrame, int], Any] | None = None,
) -> tuple[pd.DataFrame, int]:
    """Parse a table file of format ``fmt``; return the frame and the line of its first row
    (1 for formats without a header line, whose errors count rows).

    ``text_columns`` names columns that delimited text keeps as written (ids such as
    ``007`` that a number parser would turn into 7), besides every spelling of query_id and
    doc_id; Parquet and JSON Lines carry their own types.

    ``first_rows(frame, first_line)`` is the caller's check of a frame of the file's rows,
    run first on the frame of a text file's first lines (when the file is longer than
    those): a DataError there is raised at once, saying that only those lines were read,
    and the file is not read whole. It must only refuse what the whole file would be
    refused for (a bad cell; not a check that needs every row, such as ranks 1..n of an
    impression whose rows may lie apart)."""
    path = Path(path)
    reader = READERS.get(fmt)
    if reader is None:
        raise DataError(f"{path}: expected a table ({', '.join(TABLE_NAMES)}), got format {fmt}")
    if fmt != "parquet":
        check_readable(path)
        if first_rows is not None:
            check_head(path, fmt, first_rows, sep=sep, decimal=decimal, text_columns=text_columns)
    frame, first_line = reader(path, sep, decimal, text_columns)
    if frame.empty:
        raise DataError(
            f"{path}: expected at least one row, got none (columns: {listing(frame) or 'none'})"
        )
    return frame, first_line


def check_head(
    path: str | Path,
    fmt: str,
    first_rows: Callable[[pd.DataFrame, int], Any],
    *,
    sep: str | None = None,
    decimal: str | None = None,
    text_columns: Collection[str] = (),
) -> None:
    """Parse a text table's first lines (:func:`abrank.io.head.read_head`) and run
    ``first_rows(frame, first_line)`` on their frame, as :func:`read_table` does before it
    reads the file whole; a DataError there says that only those lines were read. A file
    that its first lines hold whole is left to the whole file's reading."""
    path = Path(path)
    head = read_head(path)
    if head.whole:
        return
    try:
        frame, first_line = READERS[fmt](path, sep, decimal, text_columns, data=head.data)
        if len(frame):
            first_rows(frame, first_line)
    except DataError as exc:
        raise read_only(exc, head.lines) from None


def parquet(
    path: Path,
    sep: str | None,
    decimal: str | None,
    text_columns: Collection[str] = (),
    data: bytes | None = None,
) -> tuple[pd.DataFrame, int]:
    """Apache Parquet, through pyarrow; errors count rows (``data`` is for text formats)."""
    check_file(path)
    check_parquet(path)
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise unreadable_parquet(path, exc) from None
    return frame, 1


def check_parquet(path: str | Path) -> None:
    """A DataError naming ``path`` when its Parquet footer cannot be read (a file cut short,
    random bytes, an empty file): every engine says so in the same words, from pyarrow's
    reason. It reads only the footer."""
    import pyarrow.parquet as pq

    try:
        pq.ParquetFile(str(path)).close()
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise unreadable_parquet(path, exc) from None


def unreadable_parquet(path: str | Path, exc: Exception) -> DataError:
    """The message of a Parquet file that pyarrow cannot read."""
    return DataError(f"{path}: expected a Parquet file, got unreadable data ({reason(exc)})")


def missing_cells(
    path: str | Path, fmt: str, column: str, sep: str | None = None
) -> Callable[[int], str]:
    """For messages about a cell that a reader took for a missing value: a function of the
    cell's 0-based row (of column ``column``, as the file names it) that reads the file
    again and says what the cell holds (:func:`abrank.io.columns.describe_missing_text`:
    nothing, a NaN, or a text such as ``NULL``). It runs only on the way to that error."""

    def describe(row: int) -> str:
        try:
            return describe_missing_text(_raw_cell(Path(path), fmt, column, row, sep))
        except Exception:  # noqa: BLE001 - the file was read once: say what the parser saw
            return "an empty value"

    return describe


def _raw_cell(path: Path, fmt: str, column: str, row: int, sep: str | None) -> Any:
    """The cell at ``row`` of ``column`` as the file holds it: text as written (CSV, TSV),
    the stored value (Parquet), the JSON value (JSON Lines; None when absent)."""
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path, columns=[column]).column(column)[row].as_py()
    if fmt == "jsonl":
        import gzip
        import json

        opener = gzip.open if is_gzip(path) else open
        with opener(path, "rt", encoding="utf-8") as handle:
            objects = (line for line in handle if line.strip())
            for number, line in enumerate(objects):
                if number == row:
                    value = json.loads(line)
                    return value.get(column) if isinstance(value, dict) else None
        return None
    import pyarrow.csv as pc

    with arrow_input(path) as source:
        table = pc.read_csv(
            source,
            parse_options=pc.ParseOptions(delimiter=sep or BY_NAME[fmt].delimiter),
            convert_options=pc.ConvertOptions(
                include_columns=[column],
                column_types={column: pa.string()},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    return table.column(column)[row].as_py()


def delimited(
    path: Path,
    sep: str | None,
    decimal: str | None,
    fmt: str,
    text_columns: Collection[str] = (),
    data: bytes | None = None,
) -> tuple[pd.DataFrame, int]:
    """CSV or TSV through pyarrow's reader (ids kept as strings); the header is line 1.
    ``data``: the text to parse instead of the file's (its first lines)."""
    import pyarrow as pa
    import pyarrow.csv as pc

    try:
        with _input(path, data) as source:
            table = pc.read_csv(
                source,
                parse_options=pc.ParseOptions(delimiter=sep or BY_NAME[fmt].delimiter),
                convert_options=pc.ConvertOptions(
                    decimal_point=decimal or ".",
                    column_types={
                        name: pa.string()
                        for name in (*ALIASES["query_id"], *ALIASES["doc_id"], *text_columns)
                    },
                    strings_can_be_null=True,
                ),
            )
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as exc:
        raise _long_line(path, exc) or DataError(
            f"{path}: expected valid {fmt.upper()} data, got a parse error ({reason(exc)})"
        ) from None
    return table.to_pandas(), 2


def csv(
    path: Path,
    sep: str | None,
    decimal: str | None,
    text_columns: Collection[str] = (),
    data: bytes | None = None,
) -> tuple[pd.DataFrame, int]:
    """Comma-separated values (or another ``sep``)."""
    return delimited(path, sep, decimal, "csv", text_columns, data)


def tsv(
    path: Path,
    sep: str | None,
    decimal: str | None,
    text_columns: Collection[str] = (),
    data: bytes | None = None,
) -> tuple[pd.DataFrame, int]:
    """Tab-separated values (or another ``sep``)."""
    return delimited(path, sep, decimal, "tsv", text_columns, data)


def jsonl(
    path: Path,
    sep: str | None,
    decimal: str | None,
    text_columns: Collection[str] = (),
    data: bytes | None = None,
) -> tuple[pd.DataFrame, int]:
    """JSON Lines: one object a line."""
    import pyarrow as pa

    try:
        return read_json_lines(path, data), 1
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as exc:
        raise DataError(
            f"{path}: expected valid JSONL data, got a parse error ({reason(exc)})"
        ) from None


def read_json_lines(path: Path, data: bytes | None = None) -> pd.DataFrame:
    """JSON Lines through pyarrow; a column of mixed types goes through pandas instead, so
    that the offending value is then reported with its line by the column checks.
    ``data``: the text to parse instead of the file's (its first lines)."""
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    try:
        with _input(path, data) as source:
            return pj.read_json(source).to_pandas()
    except pa.ArrowInvalid as exc:
        if "changed from" not in str(exc):
            message = re.sub(
                r"in row (\d+)", lambda m: f"at line {int(m.group(1)) + 1}", reason(exc)
            )
            raise _long_line(path, exc) or DataError(
                f"{path}: expected valid JSONL data, got a parse error ({message})"
            ) from None
    if data is not None:
        return pd.read_json(io.BytesIO(data), lines=True, dtype=False)
    compression: Literal["gzip"] | None = "gzip" if is_gzip(path) else None
    return pd.read_json(path, lines=True, dtype=False, compression=compression)


def _input(path: Path, data: bytes | None) -> Any:
    """A pyarrow input of ``data``, else of the file's (decompressed) bytes."""
    import pyarrow as pa

    return pa.BufferReader(data) if data is not None else arrow_input(path)


def _long_line(path: Path, exc: Exception) -> DataError | None:
    """The error naming a line longer than the readers' block, when pyarrow's ``exc`` is the
    failure such a line causes (a row that "straddles" two blocks); else None."""
    return long_line_error(path) if "straddl" in str(exc) else None


def first_nested_json_value(files: Collection[str], key: str) -> tuple[str, int, Any] | None:
    """(file, 1-based line, value) of the first JSON Lines object whose ``key`` holds an
    object or a list, or None. For the SQL engines, whose JSON readers turn such a value
    into the text of an id: looked for only when the engine typed the column as nested or
    mixed, and the search stops at the first one."""
    import gzip
    import json

    for file in files:
        opener = gzip.open if is_gzip(file) else open
        with opener(file, "rt", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if "{" not in line[1:] and "[" not in line:
                    continue  # no nested value on this line
                try:
                    value = json.loads(line).get(key)
                except (ValueError, AttributeError):
                    continue  # the engine reports lines that are no JSON object
                if isinstance(value, (dict, list)):
                    return str(file), number, value
    return None


def reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def listing(frame: pd.DataFrame) -> str:
    """The frame's column names, for messages."""
    return ", ".join(str(c) for c in frame.columns)


#: Table format name -> reader(path, sep, decimal, text_columns, data=None) -> (frame, line
#: of the first row); ``data`` (text formats) is text to parse instead of the file's.
READERS: dict[str, Callable[..., tuple[pd.DataFrame, int]]] = {
    "csv": csv,
    "tsv": tsv,
    "parquet": parquet,
    "jsonl": jsonl,
}
