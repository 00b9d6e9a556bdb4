"""Opening data files: one rule for compression, shared by every reader.

A file is gzip-compressed when its first two bytes are gzip's magic number, whatever its
name; a file whose name ends in ``.gz`` but holds plain bytes is refused, as a name that
says the contrary of the data is a mistake worth naming. Readers open files through
:func:`open_bytes` (Python streams) or :func:`arrow_input` (pyarrow's readers), so that
TREC files, tables and ``runid`` lookups all agree on what a file holds.
"""

from __future__ import annotations

import errno
import glob
import gzip
import io
import os
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from abrank.errors import DataError

__all__ = [
    "GZIP_MAGIC",
    "arrow_input",
    "check_file",
    "expand_pattern",
    "head_bytes",
    "is_gzip",
    "open_bytes",
    "path_problem",
    "regular_files",
]

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 1 << 16


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def path_problem(path: str | Path) -> str | None:
    """What keeps ``path`` from being read as a regular file, in words for a message's
    "got ..." part; None when it is one (symbolic links followed).

    "no such file", "a folder", "not a regular file (a FIFO)" (a FIFO, socket or device:
    opening one for reading may wait forever), "a symbolic link loop", "a path holding a
    NUL byte", "a file name longer than the system allows (N characters)", or the OS's
    reason in lower case. It only asks the file system for the path's status, so it never
    blocks on a FIFO.
    """
    try:
        status = os.stat(path)
    except ValueError:  # os refuses paths with NUL bytes before asking the system
        return "a path holding a NUL byte"
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        if exc.errno == errno.ENAMETOOLONG:
            longest = max((len(part) for part in Path(path).parts), default=0)
            return f"a file name longer than the system allows ({longest} characters)"
        return (exc.strerror or str(exc) or type(exc).__name__).lower()
    if stat.S_ISDIR(status.st_mode):
        return "a folder"
    if not stat.S_ISREG(status.st_mode):
        kind = next((name for test, name in _SPECIAL if test(status.st_mode)), "a special file")
        return f"not a regular file ({kind})"
    return None


def check_file(
    path: str | Path, expected: str = "a data file", *, missing: str | None = None
) -> None:
    """Reject, before any reader opens it, a path that is not a regular file that can be
    read: missing, a folder, a FIFO or device (which would block the reader forever), a
    symbolic link loop, a NUL byte or an over-long name, or permission denied. Every
    loader checks its files through this one function; DataError naming the path
    (``<path>: expected <expected>, got <problem>``; ``missing`` is said instead of
    ``expected`` for a file that does not exist)."""
    problem = path_problem(path)
    if problem is not None:
        if problem == "no such file" and missing is not None:
            expected = missing
        raise DataError(f"{path}: expected {expected}, got {problem}")
    try:
        with open(path, "rb"):  # a regular file: opening it does not block
            pass
    except OSError as exc:
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        raise DataError(f"{path}: expected a readable data file, got {reason}") from None


def regular_files(paths: Iterable[str | Path], pattern: str) -> list[str]:
    """The regular files among ``paths`` (the matches of the glob or the entries below the
    folder ``pattern``), sorted; folders (and names gone since they were listed) are passed
    over, anything else (a FIFO, a device, a symbolic link loop) is a DataError naming it,
    so that no reader ever waits on it."""
    files = []
    for path in paths:
        problem = path_problem(path)
        if problem is None:
            files.append(str(path))
        elif problem not in ("a folder", "no such file"):
            raise DataError(f"{path}: expected a data file (matched by {pattern}), got {problem}")
    return sorted(files)


#: Names that a folder of data files holds beside its data and that no reader should read:
#: ``_SUCCESS``, ``_committed_*``, ``_temporary/`` (Spark's and Hadoop's markers and
#: unfinished output), ``.part-0.parquet.crc``, ``.ipynb_checkpoints/``.
HIDDEN_PREFIXES = (".", "_")


def expand_pattern(path: str, shown: str) -> list[str]:
    """The files a log path names, sorted: every data file below a folder (hive
    partitions such as ``date=2024-05-01/`` too), the files a glob matches
    (``logs/date=*/part-*.parquet``, ``**`` across folders), or the path itself when it is
    neither (left to its reader to check).

    Below a folder, a file is hidden, and passed over, when its name or that of a folder
    between it and ``path`` starts with ``.`` or ``_`` (:data:`HIDDEN_PREFIXES`), as Spark
    and Hive pass them over. A glob's matches are what the pattern says (its ``*`` does
    not match a leading ``.``). A match that is not a regular file is a DataError
    (:func:`regular_files`, ``shown`` naming the path); no match is an empty list.
    """
    if Path(path).is_dir():
        return regular_files(_visible_files(path), shown)
    if any(char in path for char in "*?["):
        return regular_files(glob.glob(path, recursive=True), shown)
    return [path]


def _visible_files(folder: str) -> Iterable[str]:
    """The entries below ``folder`` that are not folders, hidden ones left out (and hidden
    folders not entered); symbolic links to folders are not followed."""
    for root, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(HIDDEN_PREFIXES)]
        for name in names:
            if not name.startswith(HIDDEN_PREFIXES):
                yield os.path.join(root, name)


def is_gzip(path: str | Path) -> bool:
    """The file starts with gzip's magic number. A ``.gz`` name on plain bytes is an error."""
    with open(path, "rb") as handle:
        compressed = handle.read(2) == GZIP_MAGIC
    if not compressed and str(path).lower().endswith(".gz"):
        raise DataError(f"{path}: expected gzip-compressed data (.gz), got an uncompressed file")
    return compressed


def open_bytes(path: str | Path) -> gzip.GzipFile | io.BufferedReader:
    """The file's bytes, decompressed when it is gzip data (:func:`is_gzip`); either
    stream can ``peek``."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def head_bytes(path: str | Path, size: int = SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of the (decompressed) file; damaged gzip data is a DataError."""
    try:
        with open_bytes(path) as handle:
            return handle.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path}: expected gzip-compressed data, got a damaged file ({exc})"
        ) from None


def arrow_input(path: str | Path) -> pa.NativeFile:
    """A pyarrow input for the file's (decompressed) bytes: a memory map of a plain file (no
    copy of its text in memory), a decompressing stream of gzip data."""
    if is_gzip(path):
        return pa.input_stream(str(path), compression="gzip")
    return pa.memory_map(str(path))
