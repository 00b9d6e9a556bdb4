"""An experiment's consolidated copy: every date's rows in one file, checked against them.

Reading hundreds of small date files costs about a millisecond each; one file of all the
rows reads in a few. ``<root>/history/<experiment>/_rows.parquet`` holds every date's rows
in date order, and in its Parquet key-value metadata a manifest of the date files it was
made from: (date, inode, size, mtime_ns, rows) each. The leading underscore makes Parquet
dataset discovery skip it, so ``pd.read_parquet("<root>/history")`` still sees each row
once.

The date files stay the truth; the copy is only a cache of them. A reader lists the date
files with their stat (cheap), takes from the copy the rows of every date whose file is
the one the manifest records, reads only the new or changed files, and leaves out dates
whose file is gone: the result is what reading every file gives (same rows, order and
types). A copy that does not read, or whose manifest or schema is not this version's, or
whose rows do not match its manifest is ignored (and rebuilt), never an error. So a stale
copy, or one lost to a race between two writers, can only cost time.

:func:`refresh_copy` (run by each writer once its date file is in place) and a reader
find whether the copy is far out of date (more than a tenth of the dates); if so they write
a new copy whole (its cost grows with all the rows, hence the tenth) to a hidden temporary
file (``._rows.parquet.tmp-<pid>``) and rename it over the old one, as the
date files are written; the store's writers remove such a file left by a killed process.
Without the right to write (a read-only store) the reader still reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from abrank.errors import DataError
from abrank.history.files import (
    COPY_NAME,
    DateFile,
    date_files,
    first_mismatch,
    key_column,
    read_date_file,
    readable_files,
    with_keys,
)
from abrank.history.schema import HISTORY_SCHEMA

MANIFEST_KEY = b"abrank.history.manifest"
MANIFEST_FORMAT = 1  # the manifest's layout; a copy of another format is ignored
REBUILD_SHARE = 0.1  # a reader rebuilds a copy that misses more than this share of dates
READ_THREADS = 4  # most date files read at once (each is small: its decoding is the cost)

# the temporary copy's name holds the process id only: one copy written at a time
_COPYING = threading.Lock()


@dataclasses.dataclass(frozen=True)
class ManifestEntry:
    """What a copy records of one date file it holds the rows of."""

    date: str
    inode: int
    size: int
    mtime_ns: int
    rows: int

    def to_dict(self) -> dict[str, object]:
        """The entry's fields."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Assembled:
    """An experiment's rows, with the manifest they would be stored under and how many
    dates the copy read could not give (read from their files, or gone from the folder)."""

    table: pa.Table
    manifest: tuple[ManifestEntry, ...]
    stale: int

    def to_dict(self) -> dict[str, object]:
        """Row count, manifest and stale dates (the rows themselves are not listed)."""
        return {
            "rows": self.table.num_rows,
            "manifest": [entry.to_dict() for entry in self.manifest],
            "stale": self.stale,
        }


@dataclasses.dataclass(frozen=True)
class _Copy:
    table: pa.Table
    starts: dict[str, tuple[ManifestEntry, int]]  # date -> (its entry, its first row)


def _copy_rows(copy: _Copy | None, piece: list[int]) -> pa.Table:
    """Rows [first, end) of the copy; only a folder with a copy has pieces of it."""
    if copy is None:
        raise ValueError("rows of the consolidated copy asked for, but there is no copy")
    return copy.table.slice(piece[0], piece[1] - piece[0])


def copy_path(folder: Path) -> Path:
    """The consolidated copy of an experiment's folder."""
    return folder / COPY_NAME


def experiment_rows(
    folder: Path,
    experiment: str,
    files: Sequence[DateFile],
    columns: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> pa.Table:
    """The rows of ``files`` (one experiment's date files, by date), from the copy where it
    holds them, from the files where it does not; ``columns`` (with the keys) or all.
    A copy missing more than :data:`REBUILD_SHARE` of the dates is rebuilt (best effort).
    A date file read that is not a history file of its date is skipped and named
    (:func:`~abrank.history.files.skip_file`, into ``skipped``)."""
    assembled = assemble(folder, experiment, files, columns, skipped)
    if assembled.stale > REBUILD_SHARE * len(files):
        whole = assembled if columns is None else assemble(folder, experiment, files, None, [])
        with contextlib.suppress(OSError, pa.ArrowException):  # a read-only store still reads
            write_copy(folder, whole)
    return assembled.table


def refresh_copy(folder: Path, experiment: str, *, always: bool = False) -> bool:
    """Bring the experiment's copy up to date with its date files when it misses more than
    :data:`REBUILD_SHARE` of the dates (or whenever it misses one, with ``always``); return
    whether a copy was written. Unreadable date files are left out of it, unnamed (the
    readers name them).

    Whether it is out of date is told from the manifest alone (the file's footer): a
    writer pays for rewriting the copy (all the rows) only once a tenth of the dates have
    changed, so a backfill of 500 dates rewrites it about 50 times, not 500 times.
    """
    files = date_files(folder, [])
    stale = _stale_dates(folder, files)
    if stale == 0 or (not always and stale <= REBUILD_SHARE * len(files)):
        return False
    write_copy(folder, assemble(folder, experiment, files, None, []))
    return True


def copy_manifest(folder: Path) -> tuple[ManifestEntry, ...] | None:
    """The manifest of the folder's copy (from its footer, without reading the rows); None
    when there is no copy or it is not one of this format and schema (a copy written by an
    earlier version lacks columns: it holds none of the dates)."""
    try:
        with open(copy_path(folder), "rb") as handle:
            parquet = pq.ParquetFile(handle)
            if not parquet.schema_arrow.equals(HISTORY_SCHEMA):
                return None
            return tuple(_manifest(parquet.metadata.metadata or {}))
    except (OSError, pa.ArrowException, ValueError, TypeError, KeyError):
        return None


def assemble(
    folder: Path,
    experiment: str,
    files: Sequence[DateFile],
    columns: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> Assembled:
    """The rows of ``files`` in date order, each date's from the copy when the copy holds
    that very file, else from the file (left out, and named into ``skipped``, when it is
    not a history file of its date); see :class:`Assembled`."""
    wanted = None if columns is None else with_keys(columns)
    copy = _load_copy(folder, experiment, wanted)
    held = {} if copy is None else copy.starts
    fresh = [
        file for file in files if file.date not in held or _key(held[file.date][0]) != file.key
    ]
    read = readable_files(fresh, _read_files(fresh, wanted), experiment, skipped)
    by_date = {file.date: (table, stat) for file, table, stat in read}
    unreadable = {file.date for file in fresh} - by_date.keys()
    pieces: list[pa.Table | list[int]] = []  # a date file's rows, or [first, end) of the copy's
    manifest = []
    run: list[int] | None = None  # the last piece when it is rows of the copy
    for file in files:
        if file.date in by_date:
            table, (inode, size, mtime_ns) = by_date[file.date]
            pieces.append(table)
            manifest.append(ManifestEntry(file.date, inode, size, mtime_ns, table.num_rows))
            run = None
            continue
        if file.date in unreadable:
            continue
        entry, start = held[file.date]
        manifest.append(entry)
        if run is not None and run[1] == start:
            run[1] += entry.rows
        else:
            run = [start, start + entry.rows]
            pieces.append(run)
    tables = [_copy_rows(copy, piece) if isinstance(piece, list) else piece for piece in pieces]
    gone = len(set(held) - {file.date for file in files})
    if tables:
        table = pa.concat_tables(tables).combine_chunks()
    else:
        table = HISTORY_SCHEMA.empty_table()
        table = table if wanted is None else table.select(wanted)
    return Assembled(table, tuple(manifest), len(fresh) + gone)


def write_copy(folder: Path, assembled: Assembled) -> Path:
    """Store ``assembled`` (every column) as the folder's copy: written whole to a hidden
    temporary file, then renamed over the old copy. Return the copy's path."""
    if assembled.table.column_names != HISTORY_SCHEMA.names:
        raise ValueError("a consolidated copy holds every column of the history")
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": [
            [entry.date, entry.inode, entry.size, entry.mtime_ns, entry.rows]
            for entry in assembled.manifest
        ],
    }
    table = assembled.table.replace_schema_metadata({MANIFEST_KEY: json.dumps(manifest)})
    target = copy_path(folder)
    with _COPYING:
        temp = folder / f".{COPY_NAME}.tmp-{os.getpid()}"
        try:
            with contextlib.suppress(FileNotFoundError):  # left by a killed process of this id
                temp.unlink()
            with open(temp, "xb") as handle:  # made here: never written through a link
                # no flush to disk: a copy lost in a crash only costs a rebuild
                pq.write_table(table, handle, write_statistics=False)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
            raise
    return target


# --------------------------------------------------------------------------- helpers


def _stale_dates(folder: Path, files: Sequence[DateFile]) -> int:
    """How many dates the copy's manifest says it cannot give: new or changed date files,
    and dates whose file is gone (all of them without a copy)."""
    manifest = copy_manifest(folder)
    if manifest is None:
        return len(files) + 1
    held = {entry.date: _key(entry) for entry in manifest}
    changed = sum(held.get(file.date) != file.key for file in files)
    return changed + len(held.keys() - {file.date for file in files})


def _key(entry: ManifestEntry) -> tuple[int, int, int]:
    return (entry.inode, entry.size, entry.mtime_ns)


def _read_files(
    files: Sequence[DateFile], columns: Sequence[str] | None
) -> list[tuple[pa.Table, tuple[int, int, int]] | DataError]:
    """Each file read (:func:`read_date_file`), or the DataError saying why it could not
    be, several at once: a file's decoding releases the GIL."""

    def read(file: DateFile) -> tuple[pa.Table, tuple[int, int, int]] | DataError:
        try:
            return read_date_file(file.path, columns)
        except DataError as exc:
            return exc

    workers = min(len(files), READ_THREADS, os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(read, files))
    return [read(file) for file in files]


def _load_copy(folder: Path, experiment: str, columns: Sequence[str] | None) -> _Copy | None:
    """The folder's copy (``columns``, or all) when it reads and holds what its manifest
    says; None otherwise (no copy, a corrupt one, one of another format or schema)."""
    try:
        with open(copy_path(folder), "rb") as handle:
            parquet = pq.ParquetFile(handle)
            entries = _manifest(parquet.metadata.metadata or {})
            if not parquet.schema_arrow.equals(HISTORY_SCHEMA):
                return None
            if sum(entry.rows for entry in entries) != parquet.metadata.num_rows:
                return None
            table = parquet.read(columns=columns)  # one large file: its columns side by side
    except (OSError, pa.ArrowException, ValueError, TypeError, KeyError):
        return None
    counts = [entry.rows for entry in entries]
    for column, keys in (("experiment", [experiment]), ("date", [e.date for e in entries])):
        expected = key_column(keys, [len(table)] if column == "experiment" else counts)
        if first_mismatch(table.column(column), expected) is not None:
            return None
    starts, start = {}, 0
    for entry in entries:
        starts[entry.date] = (entry, start)
        start += entry.rows
    return _Copy(table.replace_schema_metadata(None), starts)


def _manifest(metadata: dict[bytes, bytes]) -> list[ManifestEntry]:
    """The manifest's entries; ValueError when it is missing or not of this format."""
    manifest = json.loads(metadata[MANIFEST_KEY])
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError("another manifest format")
    entries: list[ManifestEntry] = []
    for date, inode, size, mtime_ns, rows in manifest["files"]:
        values = (inode, size, mtime_ns, rows)
        if not isinstance(date, str) or not all(type(value) is int for value in values):
            raise ValueError("a manifest entry of other types")
        if rows < 0 or (entries and date <= entries[-1].date):
            raise ValueError("a manifest out of order")
        entries.append(ManifestEntry(date, inode, size, mtime_ns, rows))
    return entries
