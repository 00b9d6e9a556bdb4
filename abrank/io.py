"""Loaders: ranking logs and judgments in any supported format, into the canonical frames.

Canonical rankings have ``query_id`` and ``doc_id`` (strings) and ``rank`` (int, 1 = top),
plus whatever else the log carries (``score``, inline ``relevance``, segment columns).
Canonical judgments have ``query_id``, ``doc_id`` and ``relevance`` (float grade).

Files are parsed by pyarrow or pandas' C readers over whole columns; validation is
vectorized too, and every rejection names the file, the line (or row) and the column.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from abrank.errors import DataError

#: Column names recognised without a mapping, for each canonical column.
ALIASES: dict[str, tuple[str, ...]] = {
    "query_id": ("query_id", "qid", "query", "queryid", "topic"),
    "doc_id": ("doc_id", "docid", "doc", "docno", "document", "item_id", "item"),
    "rank": ("rank", "position", "pos"),
    "score": ("score", "sim"),
    "relevance": ("relevance", "grade", "label", "rel", "judgment"),
}

_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".qrels": "qrels",
    ".run": "trec",
    ".trec": "trec",
    ".txt": "trec",
    ".res": "trec",
}
_SNIFF_BYTES = 1 << 16


def detect_format(path: str | Path, declared: str | None = None, *, judgments: bool = False) -> str:
    """The file's format: as declared, else from its extension (``.gz`` looked through)."""
    if declared:
        fmt = declared
    else:
        suffixes = [s.lower() for s in Path(path).suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes = suffixes[:-1]
        fmt = _EXTENSIONS.get(suffixes[-1]) if suffixes else None
        if fmt is None:
            fmt = _sniff_format(Path(path))
        if fmt is None:
            known = ", ".join(sorted(_EXTENSIONS))
            raise DataError(
                f"{path}: expected a known extension ({known}, optionally .gz) or a `format` "
                f"in the config, got {''.join(Path(path).suffixes) or 'no extension'}"
            )
    if judgments and fmt == "trec":
        fmt = "qrels"
    if not judgments and fmt == "qrels":
        raise DataError(f"{path}: expected a ranking log, got a qrels file (format qrels)")
    return fmt


def _sniff_format(path: Path) -> str | None:
    """Guess the format of a file with an unfamiliar extension from its first line."""
    if not path.is_file():
        return None
    try:
        first = next(
            (
                line
                for line in _head_bytes(path).decode("utf-8", "replace").splitlines()
                if line.strip()
            ),
            "",
        )
    except DataError:
        return None
    if first.lstrip().startswith("{"):
        return "jsonl"
    if "\t" in first and len(first.split("\t")) not in (4, 6):
        return "tsv"
    if "," in first:
        return "csv"
    fields = len(first.split())
    # trec_eval ignores whatever follows a run line's sixth field
    return "qrels" if fields == 4 else "trec" if fields >= 6 else None


def read_rankings(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    duplicates: str = "error",
) -> pd.DataFrame:
    """Load one arm's ranking log into the canonical rankings frame.

    ``columns`` maps canonical names to the file's names (``{"query_id": "qid"}``); common
    spellings are recognised without it. Rank comes from a rank column, else from ``score``
    with trec_eval's rule (score descending, ties by doc_id descending). Duplicate
    (query, doc) pairs are an error unless ``duplicates="first"``.
    """
    fmt = detect_format(path, format)
    if fmt == "trec":
        from abrank.trec import read_trec_run

        return read_trec_run(path, duplicates=duplicates)
    frame, first_line = _read_table(path, fmt)
    frame = _canonical_columns(frame, path, columns, required=("query_id", "doc_id"))
    if "rank" not in frame.columns and "score" not in frame.columns:
        raise DataError(
            f"{path}: expected a rank column ({', '.join(ALIASES['rank'])}) or a score column "
            f"(set columns.rank or columns.score), found columns: {_listing(frame)}"
        )
    frame = _ids_as_strings(frame, path, first_line)
    for column in ("score", "relevance"):
        if column in frame.columns:
            frame[column] = _numeric(
                frame[column], path, column, first_line, allow_missing=column == "relevance"
            )
    if "rank" in frame.columns:
        rank = _numeric(frame["rank"], path, "rank", first_line)
        whole = np.isfinite(rank.to_numpy()) & (rank.to_numpy() == np.round(rank.to_numpy()))
        if not whole.all():
            _fail_at(path, first_line, frame["rank"], ~whole, "rank", "a whole number")
        frame["rank"] = rank.astype(np.int64)
    else:
        from abrank.trec import rank_by_score

        frame = rank_by_score(frame)
    return _deduplicate(frame, path, first_line, duplicates)


def read_judgments(
    path: str | Path, *, format: str | None = None, columns: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Load relevance judgments (TREC qrels, or a table with query, doc and grade columns)."""
    fmt = detect_format(path, format, judgments=True)
    if fmt == "qrels":
        from abrank.trec import read_trec_qrels

        return read_trec_qrels(path)
    frame, first_line = _read_table(path, fmt)
    frame = _canonical_columns(frame, path, columns, required=("query_id", "doc_id", "relevance"))
    frame = _ids_as_strings(frame, path, first_line)
    frame["relevance"] = _numeric(frame["relevance"], path, "relevance", first_line)
    frame = _deduplicate(frame, path, first_line, "error", what="judgments")
    return frame[["query_id", "doc_id", "relevance"]]


def read_attributes(
    path: str | Path, *, format: str | None = None, columns: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Load a per-query attributes table (segment columns), one row per query_id."""
    fmt = detect_format(path, format)
    if fmt == "trec":
        raise DataError(f"{path}: expected a table (csv, tsv, parquet, jsonl), got a TREC file")
    frame, first_line = _read_table(path, fmt)
    frame = _canonical_columns(frame, path, columns, required=("query_id",))
    frame = _ids_as_strings(frame, path, first_line, ids=("query_id",))
    repeated = frame["query_id"].duplicated()
    if repeated.any():
        _fail_at(
            path,
            first_line,
            frame["query_id"],
            repeated.to_numpy(),
            "query_id",
            "one row per query",
        )
    return frame


# --------------------------------------------------------------------------- reading


def _check_readable(path: str | Path) -> None:
    """Reject missing, empty, binary and non-UTF-8 files before a parser sees them."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: expected a data file, got no such file")
    if path.is_dir():
        raise DataError(f"{path}: expected a data file, got a folder")
    head = _head_bytes(path)
    if not head:
        raise DataError(f"{path}: expected at least one row, got an empty file")
    if b"\x00" in head:
        raise DataError(f"{path}: expected a text file, got binary data (NUL bytes)")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end < len(head) - 4 or len(head) < _SNIFF_BYTES:  # not just a cut-off character
            line = head[: exc.start].count(b"\n") + 1
            raise DataError(
                f"{path}: line {line}: expected UTF-8 text, got the byte 0x{head[exc.start]:02x}"
            ) from None


def _head_bytes(path: Path) -> bytes:
    with open(path, "rb") as handle:
        magic = handle.read(2)
    try:
        if magic == b"\x1f\x8b":
            with gzip.open(path, "rb") as handle:
                return handle.read(_SNIFF_BYTES)
        if str(path).lower().endswith(".gz"):
            raise DataError(
                f"{path}: expected gzip-compressed data (.gz), got an uncompressed file"
            )
        with open(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path}: expected gzip-compressed data, got a damaged file ({exc})"
        ) from None


def _read_table(path: str | Path, fmt: str) -> tuple[pd.DataFrame, int]:
    """Parse a CSV/TSV/JSONL/Parquet file; return the frame and the line of its first row."""
    path = Path(path)
    if fmt == "parquet":
        if not path.exists():
            raise DataError(f"{path}: expected a data file, got no such file")
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for bad files
            raise DataError(
                f"{path}: expected a Parquet file, got unreadable data ({_reason(exc)})"
            ) from None
        first_line = 1  # rows, not lines
    else:
        _check_readable(path)
        import pyarrow as pa

        try:
            if fmt == "jsonl":
                frame = _read_jsonl(path)
                first_line = 1
            else:
                import pyarrow.csv as pc

                table = pc.read_csv(
                    path,
                    parse_options=pc.ParseOptions(delimiter="\t" if fmt == "tsv" else ","),
                    convert_options=pc.ConvertOptions(
                        column_types={
                            name: pa.string()
                            for key in ("query_id", "doc_id")
                            for name in ALIASES[key]
                        },
                        strings_can_be_null=True,
                    ),
                )
                first_line = 2
                frame = table.to_pandas()
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as exc:
            raise DataError(
                f"{path}: expected valid {fmt.upper()} data, got a parse error ({_reason(exc)})"
            ) from None
    if frame.empty:
        raise DataError(
            f"{path}: expected at least one row, got none (columns: {_listing(frame) or 'none'})"
        )
    return frame, first_line


def _read_jsonl(path: Path) -> pd.DataFrame:
    """JSON Lines through pyarrow; a column of mixed types goes through pandas instead, so
    that the offending value is then reported with its line by the column checks."""
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        return pj.read_json(path).to_pandas()
    except pa.ArrowInvalid as exc:
        if "changed from" not in str(exc):
            message = re.sub(
                r"in row (\d+)", lambda m: f"at line {int(m.group(1)) + 1}", _reason(exc)
            )
            raise DataError(
                f"{path}: expected valid JSONL data, got a parse error ({message})"
            ) from None
    return pd.read_json(path, lines=True, dtype=False)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- columns


def _listing(frame: pd.DataFrame) -> str:
    return ", ".join(str(c) for c in frame.columns)


def _canonical_columns(
    frame: pd.DataFrame,
    path: str | Path,
    columns: Mapping[str, str] | None,
    *,
    required: tuple[str, ...],
) -> pd.DataFrame:
    """Rename the file's columns to canonical names: explicit mapping first, then aliases."""
    columns = dict(columns or {})
    present = set(frame.columns)
    renames: dict[str, str] = {}
    for canon, user in columns.items():
        if user not in present:
            raise DataError(
                f"{path}: columns.{canon}: expected a column named {user!r}, found columns: {_listing(frame)}"
            )
        renames[user] = canon
    for canon, names in ALIASES.items():
        if canon in columns or canon in renames.values():
            continue
        match = next((name for name in names if name in present and name not in renames), None)
        if match is None:
            lowered = {str(c).lower(): c for c in frame.columns}
            match = next(
                (lowered[n] for n in names if n in lowered and lowered[n] not in renames), None
            )
        if match is not None:
            renames[match] = canon
    for canon in required:
        if canon not in renames.values():
            raise DataError(
                f"{path}: expected a {canon} column (one of {', '.join(ALIASES[canon])}, or set "
                f"columns.{canon} in the config), found columns: {_listing(frame)}"
            )
    clashes = [
        c for c in frame.columns if c in ALIASES and c not in renames and c in renames.values()
    ]
    frame = frame.drop(columns=clashes).rename(columns=renames)
    return frame


def _ids_as_strings(
    frame: pd.DataFrame,
    path: str | Path,
    first_line: int,
    ids: tuple[str, ...] = ("query_id", "doc_id"),
) -> pd.DataFrame:
    for column in ids:
        values = frame[column]
        missing = values.isna().to_numpy()
        if missing.any():
            _fail_at(path, first_line, values, missing, column, "a non-empty id")
        if not (pd.api.types.is_string_dtype(values) and not pd.api.types.is_object_dtype(values)):
            frame[column] = values.astype(str)
    return frame


def _numeric(
    values: pd.Series,
    path: str | Path,
    column: str,
    first_line: int,
    *,
    allow_missing: bool = False,
) -> pd.Series:
    """The column as float64; a non-numeric cell is an error naming its line."""
    if pd.api.types.is_bool_dtype(values):
        _fail_at(path, first_line, values, np.ones(len(values), bool), column, "a number")
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.astype(np.float64)
    else:
        numbers = pd.to_numeric(values, errors="coerce").astype(np.float64)
        bad = numbers.isna().to_numpy() & values.notna().to_numpy()
        if bad.any():
            _fail_at(path, first_line, values, bad, column, "a number")
    if not allow_missing:
        missing = numbers.isna().to_numpy()
        if missing.any():
            _fail_at(path, first_line, values, missing, column, "a number")
    return numbers


def _fail_at(
    path: str | Path,
    first_line: int,
    values: pd.Series,
    bad: np.ndarray,
    column: str,
    expected: str,
) -> None:
    row = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    where = (
        f"row {row + 1}"
        if Path(path).suffix.lower() in (".parquet", ".pq")
        else f"line {row + first_line}"
    )
    value = values.iloc[row]
    got = (
        "an empty value"
        if pd.isna(value)
        else repr(value.item() if hasattr(value, "item") else value)
    )
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(f"{path}: {where}: {column}: expected {expected}, got {got}{more}")


def _deduplicate(
    frame: pd.DataFrame, path: str | Path, first_line: int, policy: str, *, what: str = "ranking"
) -> pd.DataFrame:
    from abrank.trec import as_arrow, name_pairs, query_codes, repeated_pairs

    queries, docs = as_arrow(frame["query_id"]), as_arrow(frame["doc_id"])
    rows = repeated_pairs(query_codes(queries)[0], docs)
    if not rows.size:
        return frame
    if policy == "first":
        keep = np.ones(len(frame), dtype=bool)
        keep[rows] = False
        return frame.loc[keep].reset_index(drop=True)
    shown = name_pairs(queries, docs, rows, lambda row: row + first_line)
    hint = "" if what == "judgments" else "; set `duplicates: first` to keep the first occurrence"
    raise DataError(
        f"{path}: expected each (query_id, doc_id) pair once per {what}, got {len(rows)} duplicates: {shown}{hint}"
    )
