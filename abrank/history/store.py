"""The history store: one Parquet file per (experiment, date) under the reports root.

Layout: ``<root>/history/<experiment>/<YYYY-MM-DD>.parquet``, every file with
:data:`~abrank.history.schema.HISTORY_SCHEMA`, so that ``pd.read_parquet("<root>/history")``
reads the whole store in one call. A date's file is written whole to a hidden temporary
file in the same folder (``.<date>.parquet.tmp-<pid>``), flushed to disk and moved over the
old one with :func:`os.replace`, an atomic rename: a reader sees the old rows or the new
ones, never part of a file; two writers of the same date each rename a complete file (the
later one wins); writers of different dates never touch each other's files. A writer
killed mid-write leaves only its hidden temporary file, which Parquet readers skip and the
next writer of that experiment removes once its process is gone. Nothing else in the
folders is ever deleted or overwritten, but for each experiment's consolidated copy of its
rows (``_rows.parquet``, :mod:`abrank.history.consolidated`): readers take the rows of
unchanged date files from it, and it is rewritten whole, as a date file is, when it falls
out of date.

This module needs only pyarrow to read (``abrank history`` stays fast); pandas is imported
by the functions that return or take DataFrames.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from abrank.errors import ConfigError, DataError
from abrank.history.consolidated import experiment_rows, refresh_copy
from abrank.history.files import (
    TEMP_FILE,
    DateFile,
    date_files,
    read_date_file,
    readable_files,
    with_keys,
)
from abrank.history.rows import check_date
from abrank.history.schema import HISTORY_COLUMNS, HISTORY_SCHEMA
from abrank.root_names import HISTORY_FOLDER

if TYPE_CHECKING:
    import pandas as pd

HISTORY = HISTORY_FOLDER  # abrank.root_names: the names reserved under the root

# an experiment's name as a config may write it (config ``name``): a folder name too
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# the temporary file's name holds the process id only: one writer at a time per process
_WRITING = threading.Lock()


def history_folder(root: str | Path) -> Path:
    """The history store's folder under the reports root: ``<root>/history``."""
    return Path(root) / HISTORY


def write_history(root: str | Path, experiment: str, date: str, rows: pd.DataFrame) -> Path:
    """Store ``rows`` as the history of ``experiment`` on ``date``; return the file written.

    ``rows`` has the history's columns (:func:`abrank.history.history_rows`), each row of
    this experiment and date. An earlier file of the same date is replaced whole (a re-run
    replaces that date's rows); see the module's notes for what concurrent and killed
    writers can and cannot do. ConfigError when a folder of the store exists as something
    else than a folder, or the rows do not fit the schema.
    """
    _check_name(experiment)
    check_date(date, "date")
    table = _as_table(rows, experiment, date)
    folder = _experiment_folder(root, experiment)
    target = folder / f"{date}.parquet"
    if target.is_dir() or (target.exists() and not target.is_file()):
        raise ConfigError(f"{target}: expected a history file, got a folder or special file")
    with _WRITING:
        remove_abandoned_files(folder)
        temp = folder / f".{date}.parquet.tmp-{os.getpid()}"
        try:
            with contextlib.suppress(FileNotFoundError):  # left by a killed process of this id
                temp.unlink()
            with open(temp, "xb") as handle:  # made here: never written through a link
                # plain pages without statistics: a tenth faster to read back, and smaller
                pq.write_table(table, handle, use_dictionary=False, write_statistics=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
            raise
    _sync_folder(folder)
    # the consolidated copy is only a cache of the date files: failing to bring it up to
    # date (a broken file of another date, a full disk) costs readers time, never rows
    with contextlib.suppress(OSError, pa.ArrowException, DataError):
        refresh_copy(folder, experiment)
    return target


def remove_abandoned_files(folder: Path) -> list[Path]:
    """Remove the temporary files of writers that no longer run; return those removed.

    Only names of abrank's own patterns (``.<YYYY-MM-DD>.parquet.tmp-<pid>``, and
    ``._rows.parquet.tmp-<pid>`` of the consolidated copy) whose process
    is gone from this machine are removed; any other file is left alone.
    """
    removed = []
    for entry in os.scandir(folder):
        match = TEMP_FILE.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        if _process_runs(int(match.group(2))):
            continue
        with contextlib.suppress(FileNotFoundError):  # another writer removed it first
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def history_table(
    root: str | Path,
    experiment: str | None = None,
    columns: Sequence[str] | None = None,
    *,
    skipped: list[str] | None = None,
) -> pa.Table:
    """The store's rows as one Arrow table (what :func:`read_history` returns, unconverted).

    Sorted by experiment and date, each date's rows in the order they were written (the
    readout's comparison order). With ``experiment``, that experiment's rows only: a
    DataError naming the experiments that have a history when it has none. A file that is
    not a history file (unreadable, truncated, empty, of another schema, rows of another
    experiment or date, a stray name) is skipped: ``<path>: skipped: <why>`` is appended to
    ``skipped``, or warned as a :class:`~abrank.history.files.HistoryWarning` when no list
    is given; rewriting its date replaces it. ``columns``: only those (and ``experiment`` and
    ``date``), in the schema's order; reading fewer columns is faster. The rows of each
    date file that its experiment's consolidated copy holds unchanged come from the copy
    (one read instead of one per date); the result is the same.
    """
    if columns is not None:
        unknown = sorted(set(columns) - set(HISTORY_COLUMNS))
        if unknown:
            raise ConfigError(
                f"columns: expected history columns ({', '.join(HISTORY_COLUMNS)}), "
                f"got {', '.join(unknown)}"
            )
        columns = with_keys(columns)
    tables = [
        experiment_rows(folder, name, files, columns, skipped)
        for name, folder, files in _history_files(root, experiment, skipped)
    ]
    if not tables:
        empty = HISTORY_SCHEMA.empty_table()
        return empty if columns is None else empty.select(columns)
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables).combine_chunks()  # one chunk a column: slices are views


def read_history(
    root: str | Path, experiment: str | None = None, *, skipped: list[str] | None = None
) -> pd.DataFrame:
    """The store's rows (every experiment's, or ``experiment``'s) as a DataFrame.

    The columns are the schema's, in order (an empty frame with them when there is no
    history at all); rows as :func:`history_table` orders them, and unreadable files
    skipped as it skips them.
    """
    return history_table(root, experiment, skipped=skipped).to_pandas()


def previous_inputs(
    root: str | Path, experiment: str, date: str, *, skipped: list[str] | None = None
) -> str | None:
    """The ``inputs_sha256`` of the experiment's latest date before ``date``, if any.

    A run whose inputs have this fingerprint read the very bytes of the previous date:
    its rows are ``stale``. None when no earlier date has rows. Unreadable files are
    skipped as :func:`history_table` skips them.
    """
    check_date(date, "date")
    _check_name(experiment)
    folder = history_folder(root) / experiment
    if not folder.is_dir():
        return None
    earlier = [file for file in date_files(folder, skipped) if file.date < date]
    for file in reversed(earlier):
        try:
            result: tuple | DataError = read_date_file(file.path, ["inputs_sha256"])
        except DataError as exc:
            result = exc
        read = readable_files([file], [result], experiment, skipped)
        if not read:
            continue
        column = read[0][1].column("inputs_sha256")
        if len(column):
            return column[0].as_py()
    return None


# --------------------------------------------------------------------------- helpers


def _check_name(experiment: str) -> None:
    if not isinstance(experiment, str) or not _NAME.match(experiment) or len(experiment) > 100:
        raise ConfigError(
            "experiment: expected a name of letters, digits, '.', '_' or '-' (not starting "
            f"with '.', '_' or '-'), got {experiment!r}"
        )


def _experiment_folder(root: str | Path, experiment: str) -> Path:
    """``<root>/history/<experiment>``, made if missing; ConfigError if it is not a folder."""
    store = history_folder(root)
    folder = store / experiment
    for path in (store, folder):
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path}: expected a folder for the history store, got a file")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # made a file between the check and mkdir
        raise ConfigError(
            f"{folder}: expected a folder for the history store, got a file"
        ) from None
    return folder


def _as_table(rows: pd.DataFrame, experiment: str, date: str) -> pa.Table:
    """``rows`` as a table of the history's schema; ConfigError naming what does not fit."""
    missing = [name for name in HISTORY_COLUMNS if name not in rows.columns]
    extra = [str(name) for name in rows.columns if name not in HISTORY_SCHEMA.names]
    if missing or extra:
        raise ConfigError(
            "rows: expected the history's columns, got "
            + "; ".join(
                part
                for part in (
                    missing and f"missing {', '.join(missing)}",
                    extra and f"unknown {', '.join(extra)}",
                )
                if part
            )
        )
    try:
        table = pa.Table.from_pandas(
            rows[list(HISTORY_COLUMNS)], schema=HISTORY_SCHEMA, preserve_index=False
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise ConfigError(f"rows: expected values of the history's column types: {exc}") from None
    table = table.replace_schema_metadata(None)
    for column, expected in (("experiment", experiment), ("date", date)):
        found = set(table.column(column).unique().to_pylist())
        if found - {expected}:
            others = ", ".join(sorted(map(repr, found - {expected})))
            raise ConfigError(f"rows: {column}: expected {expected!r} in every row, got {others}")
    return table


def _process_runs(pid: int) -> bool:
    """Whether a process with this id runs on this machine (this one included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    except OverflowError:
        return False
    return True


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries to disk, so that the rename survives a crash."""
    with contextlib.suppress(OSError):  # not every system opens folders
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _history_files(
    root: str | Path, experiment: str | None, skipped: list[str] | None = None
) -> list[tuple[str, Path, list[DateFile]]]:
    """(experiment, its folder, its date files) of each experiment to read, by name."""
    store = history_folder(root)
    if store.exists() and not store.is_dir():
        raise ConfigError(f"{store}: expected a folder for the history store, got a file")
    names = (
        sorted(
            entry.name
            for entry in os.scandir(store)
            if entry.is_dir() and not entry.name.startswith((".", "_"))
        )
        if store.is_dir()
        else []
    )
    if experiment is not None:
        files = date_files(store / experiment, skipped) if experiment in names else []
        if not files:
            having = [name for name in names if date_files(store / name, [])]
            listed = ", ".join(having) if having else "none"
            raise DataError(
                f"{store}: expected a history for experiment {experiment!r}, got none "
                f"(experiments with a history: {listed})"
            )
        return [(experiment, store / experiment, files)]
    found = [(name, store / name, date_files(store / name, skipped)) for name in names]
    return [(name, folder, files) for name, folder, files in found if files]
