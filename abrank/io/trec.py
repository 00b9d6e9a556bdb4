"""TREC run and qrels files.

The readers parse whole files with pyarrow's multi-threaded CSV reader (single spaces, the
common case) and fall back to a whitespace-splitting path for tabs or repeated spaces; the
fallback also locates malformed lines for error messages. No Python code runs per line.
A file's first lines (:func:`abrank.io.head.read_head`) are parsed and checked first, so
that a file of garbage is refused at its first bad line without being read whole.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from abrank._lazy import pandas as pd
from abrank.errors import ConfigError, DataError
from abrank.io.arrow import (
    equal_pairs,
    order_rows,
    positions,
    query_codes,
)
from abrank.io.buffers import arrow_of, numpy_of
from abrank.io.columns import parse_numbers
from abrank.io.doc_keys import doc_keys
from abrank.io.files import SNIFF_BYTES, arrow_input, check_file, open_bytes
from abrank.io.head import HEAD_BYTES, long_line_error, read_head, read_only
from abrank.io.subtopics import SUBTOPIC, collapse_arrays, is_subtopic_column, subtopic_codes

RUN_FIELDS = ("query_id", "iter", "doc_id", "rank", "score", "tag")
QRELS_FIELDS = ("query_id", "iter", "doc_id", "relevance")
_SHOWN = 3  # how many offending items an error message names
_CSV_BLOCK = 16 << 20
_NUMERIC = ("score", "relevance")


def read_trec_run(path: str | Path, *, duplicates: str = "error") -> pd.DataFrame:
    """Read a TREC run (``qid Q0 docid rank score tag``), optionally gzip-compressed.

    Returns the canonical rankings frame: ``query_id``, ``doc_id`` (str), ``score``
    (float64) and ``rank`` (int, 1 = top) computed by :func:`rank_by_score`: the file's
    own rank column is ignored, as trec_eval ignores it. Rows come grouped by query and
    sorted by rank. A (query, doc) pair that occurs twice is an error (trec_eval refuses
    such runs); ``duplicates="first"`` keeps the first occurrence instead.
    """
    if duplicates not in ("error", "first"):
        raise ConfigError(f"duplicates: expected 'error' or 'first', got {duplicates!r}")
    return _read_run(path, duplicates, check=True)


def run_arrays(
    path: str | Path,
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray, _Lines]:
    """Query ids, doc ids and scores of a run file, in file order, scores checked."""
    wanted = {"query_id": 0, "doc_id": 2, "score": 4}
    table, lines = _read_fields(path, RUN_FIELDS, wanted)
    score = _numbers(path, table, lines, "score", RUN_FIELDS, wanted)
    return table["query_id"], table["doc_id"], score, lines


def repeated_pairs(codes: np.ndarray, doc_ids: pa.ChunkedArray) -> np.ndarray:
    """Rows (sorted) whose (query code, doc id) pair already stands at an earlier row."""
    _, later = equal_pairs(codes, doc_keys(doc_ids), doc_ids)
    return np.sort(later)


def name_pairs(
    query_ids: pa.ChunkedArray,
    doc_ids: pa.ChunkedArray,
    rows: np.ndarray,
    line_of: Callable[[int], int],
) -> str:
    """The first few (query, doc) pairs at ``rows`` with their lines, for an error message."""
    shown = ", ".join(
        f"({query_ids[int(r)].as_py()!r}, {doc_ids[int(r)].as_py()!r}) at line {line_of(int(r))}"
        for r in rows[:_SHOWN]
    )
    return shown + (f" and {rows.size - _SHOWN} more" if rows.size > _SHOWN else "")


def _read_run(path: str | Path, duplicates: str, check: bool) -> pd.DataFrame:
    """read_trec_run; ``check=False`` skips the duplicate search."""
    qid, doc, score, lines = run_arrays(path)
    codes, _ = query_codes(qid)
    later = repeated_pairs(codes, doc) if check else np.zeros(0, dtype=np.int64)
    if later.size:
        if duplicates == "error":
            raise DataError(
                f"{path}: line {lines[int(later[0])]}: expected each document once per "
                f"query, got {later.size} duplicate (query, doc) pair(s): "
                f"{name_pairs(qid, doc, later, lines.__getitem__)} "
                "(use duplicates: first to keep the first occurrence)"
            )
        keep = np.ones(codes.size, dtype=bool)
        keep[later] = False
        idx = pa.array(np.flatnonzero(keep))
        qid, doc, codes, score = qid.take(idx), doc.take(idx), codes[keep], score[keep]
    order, within_ties = order_rows(codes, -score, doc)
    if order is not None:
        idx = pa.array(order)
        doc = doc.take(idx)
        if not within_ties:  # inside tie blocks query and score are constant
            qid, codes, score = qid.take(idx), codes[order], score[order]
    return pd.DataFrame(
        {
            "query_id": _to_str_series(qid),
            "doc_id": _to_str_series(doc),
            "score": score,
            "rank": positions(codes).astype(np.int64) + 1,
        }
    )


def read_trec_qrels(path: str | Path) -> pd.DataFrame:
    """Read TREC qrels (``qid iter docid grade``), optionally gzip-compressed.

    Returns the canonical judgments frame ``query_id``, ``doc_id`` (str) and
    ``relevance`` (float64). A (query, doc) pair judged twice is an error, as in trec_eval.
    A file whose second column holds more than one distinct value (``Q0`` counting as
    ``0``) holds subtopic judgments (:mod:`abrank.io.subtopics`): the frame then has a
    ``subtopic`` column (str) too, and a (query, subtopic, doc) triple judged twice is the
    error.
    """
    qid, doc, grade, subtopic = qrels_columns(path)
    columns = {"query_id": _to_str_series(qid), "doc_id": _to_str_series(doc), "relevance": grade}
    if subtopic is not None:
        columns[SUBTOPIC] = _to_str_series(subtopic)
    return pd.DataFrame(columns)


def qrels_arrays(
    path: str | Path, check: bool = True
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray]:
    """Query ids, doc ids and grades of a qrels file, checked (numbers; no repeated pair
    unless ``check`` is False). Subtopic judgments come as one grade per (query, doc), the
    highest over its subtopics (:func:`abrank.io.subtopics.collapse_arrays`)."""
    qid, doc, grade, subtopic = qrels_columns(path, check)
    if subtopic is not None:
        return collapse_arrays(qid, doc, grade)
    return qid, doc, grade


def qrels_columns(
    path: str | Path, check: bool = True
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray, pa.ChunkedArray | None]:
    """Query ids, doc ids, grades and subtopics (None unless the file holds subtopic
    judgments) of a qrels file, in file order, checked (numbers; no repeated (query, doc)
    pair, or (query, subtopic, doc) triple, unless ``check`` is False)."""
    wanted = {"query_id": 0, "iter": 1, "doc_id": 2, "relevance": 3}
    table, lines = _read_fields(path, QRELS_FIELDS, wanted)
    grade = _numbers(path, table, lines, "relevance", QRELS_FIELDS, wanted, bounded=True)
    qid, doc = table["query_id"], table["doc_id"]
    subtopic = table["iter"] if is_subtopic_column(table["iter"]) else None
    if subtopic is not None:
        subtopic = subtopic.cast(pa.string())
    if not check:
        return qid, doc, grade, subtopic
    codes = query_codes(qid)[0]
    if subtopic is None:
        later = repeated_pairs(codes, doc)
        if later.size:
            raise DataError(
                f"{path}: line {lines[int(later[0])]}: expected one judgment per (query, doc) "
                f"pair, got {later.size} repeated: "
                f"{name_pairs(qid, doc, later, lines.__getitem__)}"
            )
        return qid, doc, grade, None
    sub = subtopic_codes(subtopic)
    _, pair = np.unique(codes.astype(np.int64) * (int(sub.max()) + 1) + sub, return_inverse=True)
    later = repeated_pairs(pair.reshape(-1), doc)
    if later.size:
        shown = ", ".join(
            f"({qid[int(r)].as_py()!r}, {subtopic[int(r)].as_py()!r}, {doc[int(r)].as_py()!r}) "
            f"at line {lines[int(r)]}"
            for r in later[:_SHOWN]
        )
        more = f" and {later.size - _SHOWN} more" if later.size > _SHOWN else ""
        raise DataError(
            f"{path}: line {lines[int(later[0])]}: expected one judgment per (query, subtopic, "
            f"doc) triple, got {later.size} repeated: {shown}{more}"
        )
    return qid, doc, grade, subtopic


def _numbers(
    path: str | Path,
    table: pa.Table,
    lines: _Lines,
    column: str,
    fields: Sequence[str],
    wanted: dict[str, int],
    *,
    bounded: bool = False,
    source: Callable[[], pa.NativeFile] | None = None,
) -> np.ndarray:
    """The ``column`` of a TREC file (scores or grades) as float64, checked. A bad value
    is named as the file writes it: when the fast path parsed the numbers (``1e400`` became
    inf), the file is read again as text on the way to the error, so that the message
    quotes the text and counts lines (empty lines included) as the file does."""
    try:
        return parse_numbers(
            table[column], lambda row: f"{path}: line {lines[row]}: {column}", bounded=bounded
        )
    except DataError as exc:
        if lines.numbers is not None:
            raise
        problem = exc
    source = source or (lambda: arrow_input(path))
    text, text_lines = _read_fields_split(
        path, source, fields, wanted, extra_allowed=fields == RUN_FIELDS
    )
    parse_numbers(
        text[column], lambda row: f"{path}: line {text_lines[row]}: {column}", bounded=bounded
    )
    raise problem


def _to_str_series(column: pa.ChunkedArray) -> pd.Series:
    return column.to_pandas().astype("str")


class _Lines:
    """Maps row indices of a parsed table to 1-based line numbers of the file."""

    def __init__(self, numbers: np.ndarray | None):
        self.numbers = numbers

    def __getitem__(self, row: int) -> int:
        return int(self.numbers[row]) if self.numbers is not None else row + 1


def check_trec_file(path: str | Path) -> None:
    """Reject a missing, empty or binary TREC file before any parser reads it (every
    engine checks its TREC files so, in the same words)."""
    _sniff(path)


def _sniff(path: str | Path) -> None:
    """Reject missing, empty and binary files before parsing them."""
    p = Path(path)
    check_file(p, "a regular data file", missing="an existing file")
    try:
        with open_bytes(p) as handle:
            head = handle.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: expected a readable (gzip) text file, got {exc}") from None
    if not head.strip():
        raise DataError(f"{path}: expected TREC lines, got an empty file")
    if b"\x00" in head:
        offset = head.index(b"\x00")
        raise DataError(
            f"{path}: expected a text file, got binary data (a NUL byte at offset {offset})"
        )


def _read_fields(
    path: str | Path, fields: Sequence[str], wanted: dict[str, int]
) -> tuple[pa.Table, _Lines]:
    """Parse a whitespace-separated TREC file into the wanted columns (all as text; the
    numeric ones as float64 when the fast path reads them).

    The file's first lines are parsed and checked first (:func:`check_head`); then the
    whole file, by :func:`_parse_fields`.
    """
    _sniff(path)
    check_head(path, fields, wanted)
    return _parse_fields(path, lambda: arrow_input(path), fields, wanted)


def check_head(
    path: str | Path, fields: Sequence[str], wanted: dict[str, int] | None = None
) -> None:
    """Parse and check the first lines of a TREC file (``fields``: :data:`RUN_FIELDS` or
    :data:`QRELS_FIELDS`) as the readers check the whole file: fields per line, UTF-8, a
    number in the score or grade field, no line over the length limit. A problem is the
    DataError the whole file's reading would raise at that line, saying that only the first
    lines were read. A file that the head holds whole is left to the reader (nothing to
    gain); the SQL engines call this before they read a TREC file whole."""
    head = read_head(path)
    if head.whole:
        return
    if wanted is None:
        value = "score" if "score" in fields else "relevance"
        wanted = {"query_id": 0, "doc_id": 2, value: list(fields).index(value)}
    try:
        table, lines = _parse_fields(
            path, lambda: pa.BufferReader(head.data), fields, wanted, block=HEAD_BYTES
        )
        for name in wanted:
            if name in _NUMERIC:
                _numbers(
                    path,
                    table,
                    lines,
                    name,
                    fields,
                    wanted,
                    bounded=name == "relevance",
                    source=lambda: pa.BufferReader(head.data),
                )
    except DataError as exc:
        raise read_only(exc, head.lines) from None


def _parse_fields(
    path: str | Path,
    source: Callable[[], pa.NativeFile],
    fields: Sequence[str],
    wanted: dict[str, int],
    block: int = _CSV_BLOCK,
) -> tuple[pa.Table, _Lines]:
    """Parse the TREC text that ``source()`` opens (messages name ``path``), ``block``
    bytes at a time (the reader's buffers: small for a file's first lines).

    Tries pyarrow's CSV reader with a single-space delimiter first; files with tabs,
    repeated spaces or malformed lines go through a splitting path that also reports the
    offending line number.
    """
    names = list(fields)
    try:
        with source() as opened:
            table = pacsv.read_csv(
                opened,
                read_options=pacsv.ReadOptions(column_names=names, block_size=block),
                parse_options=pacsv.ParseOptions(
                    delimiter=" ", quote_char=False, double_quote=False
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={name: _column_type(name) for name in wanted},
                    include_columns=list(wanted),
                    strings_can_be_null=False,
                    null_values=[],
                ),
            )
        # a comment line (trec_eval 10: '#' as a line's first character) that happened to
        # have the right number of fields: the splitting path leaves such lines out
        if not pc.any(pc.starts_with(table["query_id"], pattern="#")).as_py():
            return table, _Lines(None)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        pass
    return _read_fields_split(path, source, fields, wanted, extra_allowed=fields == RUN_FIELDS)


def _column_type(name: str) -> pa.DataType:
    """How the fast path reads a field: numbers as float64, the rest as strings (the qrels'
    second column too: dictionary-encoding it, one value repeated in most files, made
    the whole file's parse a fifth slower than reading it as text)."""
    if name in _NUMERIC:
        return pa.float64()
    return pa.string()


def _read_fields_split(
    path: str | Path,
    source: Callable[[], pa.NativeFile],
    fields: Sequence[str],
    wanted: dict[str, int],
    extra_allowed: bool,
) -> tuple[pa.Table, _Lines]:
    try:
        with source() as opened:
            lines = pacsv.read_csv(
                opened,
                read_options=pacsv.ReadOptions(column_names=["line"]),
                parse_options=pacsv.ParseOptions(
                    delimiter="\x1f", quote_char=False, double_quote=False, ignore_empty_lines=False
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={"line": pa.binary()}, strings_can_be_null=False, null_values=[]
                ),
            )["line"]
    except pa.ArrowInvalid as exc:
        if "straddl" in str(exc):  # a line longer than the reader's block
            raise long_line_error(path) or _not_lines(path, exc) from None
        raise _not_lines(path, exc) from None
    try:
        text = pc.cast(lines, pa.large_string())
    except pa.ArrowInvalid:
        row = _first_non_utf8(lines)
        raise DataError(
            f"{path}: line {row + 1}: expected UTF-8 text, got bytes that are not UTF-8"
        ) from None
    trimmed = pc.utf8_trim_whitespace(text)
    blank = numpy_of(pc.binary_length(trimmed)) == 0
    parts = pc.utf8_split_whitespace(trimmed)
    counts = numpy_of(pc.list_value_length(parts)).copy()
    counts[blank] = 0
    # trec_eval 10 skips comment lines: '#' as the line's first character
    counts[numpy_of(pc.starts_with(text, pattern="#"))] = 0
    numbers = np.flatnonzero(counts > 0) + 1
    if numbers.size == 0:
        raise DataError(f"{path}: expected TREC lines, got an empty file")
    width = len(fields)
    # trec_eval ignores anything after a run's sixth field; qrels need exactly four
    wrong = (counts < width) if extra_allowed else (counts != width)
    bad = np.flatnonzero(wrong & (counts > 0))
    if bad.size:
        row = int(bad[0])
        expected = " ".join(fields)
        least = "at least " if extra_allowed else ""
        raise DataError(
            f"{path}: line {row + 1}: expected {least}{width} whitespace-separated fields "
            f"({expected}), got {int(counts[row])}"
        )
    parts = parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
    starts = numpy_of(parts.offsets)[:-1][counts > 0]
    values = parts.values
    columns = {name: values.take(arrow_of(starts + index)) for name, index in wanted.items()}
    return pa.table(columns), _Lines(numbers)


def _not_lines(path: str | Path, exc: Exception) -> DataError:
    return DataError(f"{path}: expected whitespace-separated text lines, got {exc}")


def _first_non_utf8(lines: pa.ChunkedArray) -> int:
    """Index of the first line whose bytes are not UTF-8 (one decode call per chunk)."""
    base = 0
    for chunk in lines.chunks:
        chunk = chunk.cast(pa.large_binary())
        _, offsets_buf, data_buf = chunk.buffers()
        offsets = np.frombuffer(
            offsets_buf, dtype=np.int64, count=len(chunk) + 1, offset=chunk.offset * 8
        )
        data = (
            bytes(np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]])
            if data_buf
            else b""
        )
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return base + int(np.searchsorted(offsets - offsets[0], exc.start, side="right")) - 1
        base += len(chunk)
    return 0
