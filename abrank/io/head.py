"""The first lines of a text file, checked before the whole of it is read.

Half a megabyte of gzip can unpack to hundreds of megabytes of garbage; a reader that parses
the whole file before checking it spends gigabytes and a minute on a file whose second line
already shows it is no ranking log. So every reader of text (TREC files, CSV, TSV, JSON
Lines) first takes the file's :func:`read_head`, its first lines up to :data:`HEAD_BYTES`
of text, parses them and runs its checks on them as it would on the whole file; a problem
there is reported at once, and only a file whose first lines pass is read whole. A problem
is reported by its first bad line either way; what :func:`read_only` adds to the message
says how far the file was read, since counts of further bad rows then cover those lines
only.

A line longer than :data:`LINE_LIMIT` is refused here, naming it. No reader takes one:
pyarrow's readers fail on a line longer than their block (1 MiB) with a message that names
no line, and DuckDB skips a line longer than its buffer without a word.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from abrank.errors import DataError
from abrank.io.files import open_bytes

__all__ = [
    "HEAD_BYTES",
    "LINE_LIMIT",
    "Head",
    "find_long_line",
    "long_line_error",
    "read_head",
    "read_only",
]

#: Text read and checked before a file is read whole (pyarrow's block of a CSV file).
HEAD_BYTES = 1 << 20
#: The longest line accepted, line break included.
LINE_LIMIT = 1 << 20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Head:
    """The first whole lines of a file's (decompressed) text.

    ``data`` holds ``lines`` lines, each with its line break (but for the last line of a
    file that ends without one); ``whole`` is True when ``data`` is the whole file.
    """

    path: str
    data: bytes
    lines: int
    whole: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins (the text's size, not the text)."""
        return {
            "path": self.path,
            "bytes": len(self.data),
            "lines": self.lines,
            "whole": self.whole,
        }


def read_head(path: str | Path, size: int = HEAD_BYTES, limit: int = LINE_LIMIT) -> Head:
    """The first whole lines of ``path`` (gzip read through), up to ``size`` bytes.

    Reads at most ``size + limit`` bytes. A line that starts within the first ``size``
    bytes and is longer than ``limit`` bytes is a DataError naming its line; so is damaged
    gzip data. With ``size <= limit`` (the default), a head that is not the whole file holds
    at least one line.
    """
    try:
        with open_bytes(path) as handle:
            data = handle.read(size)
            if len(data) < size or not handle.peek(1)[:1]:
                return _whole(path, data, limit)
            cut = data.rfind(b"\n") + 1
            _check_lengths(path, data[:cut], limit)
            # the line that the head cuts: read on until it ends, or is too long
            line = data.count(b"\n", 0, cut) + 1
            length = len(data) - cut
            while 0 < length <= limit:
                more = handle.read(min(_CHUNK, limit + 1 - length))
                if not more:
                    break
                end = more.find(b"\n")
                if end >= 0:
                    length += end + 1
                    break
                length += len(more)
            if length > limit:
                raise _too_long(path, line, limit)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path}: expected gzip-compressed data, got a damaged file ({exc})"
        ) from None
    return Head(str(path), data[:cut], line - 1, whole=False)


def find_long_line(path: str | Path, limit: int = LINE_LIMIT) -> int | None:
    """The number of the first line of ``path`` longer than ``limit`` bytes, or None.

    Streams the file a megabyte at a time and stops at that line: for a reader's message
    when its parser stumbles on a long line somewhere past the head.
    """
    line, length = 1, 0
    try:
        with open_bytes(path) as handle:
            while chunk := handle.read(_CHUNK):
                breaks = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
                if breaks.size == 0:
                    length += len(chunk)
                    if length > limit:
                        return line
                    continue
                lengths = np.diff(breaks, prepend=-1)
                lengths[0] += length
                long = np.flatnonzero(lengths > limit)
                if long.size:
                    return line + int(long[0])
                line += int(breaks.size)
                length = len(chunk) - int(breaks[-1]) - 1
                if length > limit:
                    return line
    except (OSError, EOFError, zlib.error):
        return None
    return None


def long_line_error(path: str | Path, limit: int = LINE_LIMIT) -> DataError | None:
    """The DataError of :func:`find_long_line`'s line, or None when no line is too long."""
    line = find_long_line(path, limit)
    return None if line is None else _too_long(path, line, limit)


def read_only(error: DataError, count: int, unit: str = "lines") -> DataError:
    """``error``, raised on the first ``count`` lines (or rows) of a file, saying that the
    file was read no further: counts of further bad rows in it cover those only."""
    return DataError(f"{error}; only the first {count:,} {unit} were read")


def _whole(path: str | Path, data: bytes, limit: int) -> Head:
    """The head of a file that ``data`` holds whole."""
    _check_lengths(path, data, limit)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return Head(str(path), data, lines, whole=True)


def _check_lengths(path: str | Path, data: bytes, limit: int) -> None:
    """Every line of ``data`` (the file's first lines) at most ``limit`` bytes long."""
    if len(data) <= limit:
        return
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    ends = np.append(breaks, len(data) - 1) if not data.endswith(b"\n") else breaks
    lengths = np.diff(ends, prepend=-1)
    long = np.flatnonzero(lengths > limit)
    if long.size:
        raise _too_long(path, int(long[0]) + 1, limit)


def _too_long(path: str | Path, line: int, limit: int) -> DataError:
    shown = f"{limit // (1 << 20)} MiB" if limit % (1 << 20) == 0 else f"{limit:,} bytes"
    return DataError(
        f"{path}: line {line}: expected a line of at most {shown}, got a longer one (no line "
        f"break in {limit:,} bytes)"
    )
