"""The history store's files: naming, listing with their stat, reading and checking one.

An experiment's folder holds one ``<YYYY-MM-DD>.parquet`` file per date (the rows), the
consolidated copy ``_rows.parquet`` (:mod:`abrank.history.consolidated`), and hidden
temporary files ``.<name>.parquet.tmp-<pid>`` of writers at work. Both the store's writer
and its consolidated copy read date files through :func:`read_date_file`, which returns the
file's stat taken on the very handle read, so that a copy's record of a file always
describes the bytes its rows came from.

A file the store cannot use (truncated, empty, not Parquet, another schema, rows of
another experiment or date, a stray name, not a regular file) is skipped, never an error:
one broken file must not stop every later run under the reports root. Each skipped file is
named, by :func:`skip_file`, in the caller's ``skipped`` list when it passes one, else as a
:class:`HistoryWarning`; rewriting that date replaces the file.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat as stat_mode
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from abrank.errors import DataError
from abrank.history.schema import HISTORY_COLUMNS, missing_columns, with_missing_columns
from abrank.history.values import int32s, strings

COPY_NAME = "_rows.parquet"  # a leading underscore: Parquet dataset discovery skips it
DATE_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.parquet$")
# a writer's temporary file: of a date file, or of the consolidated copy
TEMP_FILE = re.compile(r"^\.(\d{4}-\d{2}-\d{2}|_rows)\.parquet\.tmp-(\d+)$")


class HistoryWarning(UserWarning):
    """A file of the history store was skipped: it is not a history file abrank can read."""


def skip_file(path: Path | str, reason: str, skipped: list[str] | None) -> None:
    """Name a skipped file: ``<path>: skipped: <reason>``, appended to ``skipped`` (once),
    or warned as a :class:`HistoryWarning` when the caller passed no list."""
    message = f"{path}: skipped: {reason}"
    if skipped is None:
        warnings.warn(message, HistoryWarning, stacklevel=3)
    elif message not in skipped:
        skipped.append(message)


def _reason(exc: DataError, path: Path) -> str:
    """A DataError's message without the path it starts with."""
    text = str(exc)
    prefix = f"{path}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


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


def date_files(folder: Path, skipped: list[str] | None = None) -> list[DateFile]:
    """Every visible Parquet file of an experiment's folder with its stat, by date.

    A Parquet file whose name is not a date's, or that is not a regular file (a folder, a
    FIFO: opening one would wait forever), is skipped and named (:func:`skip_file`).
    """
    found = []
    for entry in os.scandir(folder):
        if entry.name.startswith((".", "_")) or not entry.name.endswith(".parquet"):
            continue
        match = DATE_FILE.match(entry.name)
        if match is None:
            skip_file(
                entry.path,
                f"expected history files named <YYYY-MM-DD>.parquet, got {entry.name!r}",
                skipped,
            )
            continue
        try:
            stat = entry.stat()
        except FileNotFoundError:  # removed since the folder was listed, or a broken link
            if os.path.lexists(entry.path):
                skip_file(entry.path, "expected a history file, got a broken link", skipped)
            continue
        if not stat_mode.S_ISREG(stat.st_mode):
            skip_file(entry.path, "expected a history file, got not a regular file", skipped)
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
    not a history file. A file written by an earlier version reads with the columns it
    lacks null (:func:`~abrank.history.schema.missing_columns`). Its keys are checked by
    :func:`check_keys`."""
    wanted = list(HISTORY_COLUMNS) if columns is None else with_keys(columns)
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            parquet = pq.ParquetFile(handle)
            schema = parquet.schema_arrow
            lacking = missing_columns(schema)
            if lacking is None:
                raise DataError(
                    f"{path}: expected a history file (columns {', '.join(HISTORY_COLUMNS)} "
                    f"with their types), got columns {', '.join(schema.names)}"
                )
            held = [name for name in wanted if name not in lacking]
            table = parquet.read(columns=held, use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: expected a history file (Parquet), got {exc}") from None
    if lacking:
        table = with_missing_columns(table, wanted)
    return table, (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def readable_files(
    files: Sequence[DateFile],
    results: Sequence[tuple[pa.Table, tuple[int, int, int]] | DataError],
    experiment: str,
    skipped: list[str] | None,
) -> list[tuple[DateFile, pa.Table, tuple[int, int, int]]]:
    """The files whose read (``results[i]``, of :func:`read_date_file`) gave a history
    table holding their experiment and date in every row, with their table and stat; the
    others are skipped and named. The keys are checked on all tables at once, and file by
    file only when that finds a mismatch."""
    good = []
    for file, result in zip(files, results, strict=True):
        if isinstance(result, DataError):
            skip_file(file.path, _reason(result, file.path), skipped)
        else:
            good.append((file, *result))
    if not good:
        return good
    try:
        check_keys(
            pa.concat_tables([table for _, table, _ in good]),
            [(experiment, file.date, file.path) for file, _, _ in good],
            [table.num_rows for _, table, _ in good],
        )
        return good
    except DataError:
        pass
    kept = []
    for file, table, stat in good:
        try:
            check_keys(table, [(experiment, file.date, file.path)], [table.num_rows])
        except DataError as exc:
            skip_file(file.path, _reason(exc, file.path), skipped)
            continue
        kept.append((file, table, stat))
    return kept


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
    keys = {"experiment": [name for name, _, _ in files], "date": [date for _, date, _ in files]}
    for column, values in keys.items():
        expected = key_column(values, counts)
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
