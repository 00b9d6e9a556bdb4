"""Opening data files: one rule for compression, shared by every reader.

A file is gzip-compressed when its first two bytes are gzip's magic number, whatever its
name; a file whose name ends in ``.gz`` but holds plain bytes is refused, as a name that
says the contrary of the data is a mistake worth naming. Readers open files through
:func:`open_bytes` (Python streams) or :func:`arrow_input` (pyarrow's readers), so that
TREC files, tables and ``runid`` lookups all agree on what a file holds.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import IO

import pyarrow as pa

from abrank.errors import DataError

__all__ = ["GZIP_MAGIC", "arrow_input", "check_file", "head_bytes", "is_gzip", "open_bytes"]

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 1 << 16


def check_file(path: str | Path) -> None:
    """Reject a path that is missing, a folder, or a file that cannot be opened for reading
    (permission denied), before a parser meets it and fails with its own, vaguer error."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: expected a data file, got no such file")
    if path.is_dir():
        raise DataError(f"{path}: expected a data file, got a folder")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        raise DataError(f"{path}: expected a readable data file, got {reason}") from None


def is_gzip(path: str | Path) -> bool:
    """The file starts with gzip's magic number. A ``.gz`` name on plain bytes is an error."""
    with open(path, "rb") as handle:
        compressed = handle.read(2) == GZIP_MAGIC
    if not compressed and str(path).lower().endswith(".gz"):
        raise DataError(f"{path}: expected gzip-compressed data (.gz), got an uncompressed file")
    return compressed


def open_bytes(path: str | Path) -> IO[bytes]:
    """The file's bytes, decompressed when it is gzip data (:func:`is_gzip`)."""
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
