"""The history store's files: naming, listing with their stat, reading and checking one.

An experiment's folder holds one ``<YYYY-MM-DD>.parquet`` file per date (the rows), the
consolidated copy ``_rows.parquet`` (:mod:`abrank.history.consolidated`), and hidden
temporary files ``.<name>.parquet.tmp-<pid>`` of writers at work. Both the store's writer
and its consolidated copy read date files through :func:`read_date_file`, which returns the
file's stat taken on the very handle read, so that a copy's record of a file always
describes the bytes its rows came from.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from abrank.errors import DataError
from abrank.history.schema import HISTORY_COLUMNS, HISTORY_SCHEMA
from abrank.history.values import int32s, strings

COPY_NAME = "_rows.parquet"  # a leading underscore: Parquet dataset discovery skips it
DATE_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.parquet$")
# a writer's temporary file: of a date file, or of the consolidated copy
TEMP_FILE = re.compile(r"^\.(\d{4}-\d{2}-\d{2}|_rows)\.parquet\.tmp-(\d+)$")


@dataclasses.dataclass(frozen=True)
class DateFile:
    """One date file of an experiment's folder and what its stat said: a file replaced
    (a re-run renames a new file over it) has another inode, and any rewrite in place
    another size or modification time."""

    date: str
    path: Path
    inode: int
    size: int
    mtime_ns: int

    @property
    def key(self) -> tuple[int, int, int]:
        """(inode, size, mtime_ns): what a consolidated copy records of the file."""
        return (self.inode, self.size, self.mtime_ns)

    def to_dict(self) -> dict[str, object]:
        """The file's fields, the path as text."""
        return {**dataclasses.asdict(self), "path": str(self.path)}


def date_files(folder: Path) -> list[DateFile]:
    """Every visible Parquet file of an experiment's folder with its stat, by date.

    DataError for a Parquet file whose name is not a date's: the store's one-call readers
    would read it as history.
    """
    found = []
    for entry in os.scandir(folder):
        if entry.name.startswith((".", "_")) or not entry.name.endswith(".parquet"):
            continue
        match = DATE_FILE.match(entry.name)
        if match is None:
            raise DataError(
                f"{entry.path}: expected history files named <YYYY-MM-DD>.parquet, "
                f"got {entry.name!r}"
            )
        try:
            stat = entry.stat()
        except FileNotFoundError:  # removed since the folder was listed
            continue
        found.append(
            DateFile(match.group(1), Path(entry.path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        )
    return sorted(found, key=lambda file: file.date)


def with_keys(columns: Sequence[str]) -> list[str]:
    """``columns`` and ``experiment`` and ``date``, in the schema's order."""
    wanted = {"experiment", "date", *columns}
    return [name for name in HISTORY_COLUMNS if name in wanted]


def read_date_file(
    path: Path, columns: Sequence[str] | None = None
) -> tuple[pa.Table, tuple[int, int, int]]:
    """One history file (its ``columns`` and the keys, or all) with its schema checked,
    and the (inode, size, mtime_ns) of the file read. DataError naming the file when it is
    not a history file. Its keys are checked by :func:`check_keys`."""
    if columns is not None:
        columns = with_keys(columns)
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            parquet = pq.ParquetFile(handle)
            schema = parquet.schema_arrow
            if not schema.equals(HISTORY_SCHEMA):
                raise DataError(
                    f"{path}: expected a history file (columns {', '.join(HISTORY_COLUMNS)} "
                    f"with their types), got columns {', '.join(schema.names)}"
                )
            table = parquet.read(columns=columns, use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: expected a history file (Parquet), got {exc}") from None
    return table, (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def key_column(values: Sequence[str], counts: Sequence[int]) -> pa.Array:
    """``values[i]`` repeated ``counts[i]`` times, as one string array."""
    owner = int32s(np.repeat(np.arange(len(values), dtype=np.int32), counts))
    return pa.DictionaryArray.from_arrays(owner, strings(list(values))).dictionary_decode()


def first_mismatch(column: pa.ChunkedArray | pa.Array, expected: pa.Array) -> int | None:
    """The first row where ``column`` differs from ``expected`` (a missing value differs
    from everything), or None when none does."""
    same = pc.equal(column, expected)
    if pc.all(same, skip_nulls=False).as_py():  # (a missing value makes it null)
        return None
    return pc.index(pc.fill_null(same, False), False).as_py()


def check_keys(table: pa.Table, files: list[tuple[str, str, Path]], counts: list[int]) -> None:
    """Every row holds the experiment and date of the file it was read from (its folder's
    and its name's), checked on the whole table at once; DataError naming the first file
    whose rows do not."""
    for position, column in ((0, "experiment"), (1, "date")):
        expected = key_column([file[position] for file in files], counts)
        first = first_mismatch(table.column(column), expected)
        if first is None:
            continue
        name, date, path = files[int(np.searchsorted(np.cumsum(counts), first, side="right"))]
        expect = name if column == "experiment" else date
        where = "folder" if column == "experiment" else "name"
        raise DataError(
            f"{path}: {column}: expected {expect!r} in every row (the file's {where}), "
            f"got {table.column(column)[first].as_py()!r}"
        )
