"""Loaders: ranking logs and judgments in any supported format, into the canonical frames.

Canonical rankings have ``query_id`` and ``doc_id`` (strings) and ``rank`` (int, 1 = top),
plus whatever else the log carries (``score``, inline ``relevance``, segment columns).
Canonical judgments have ``query_id``, ``doc_id`` and ``relevance`` (float grade).
Impression logs of online experiments (one row per shown result, clicked or not) are read
by :func:`read_impressions` (:mod:`abrank.io.online`).

Files are parsed by pyarrow or pandas' C readers over whole columns; validation is
vectorized too, and every rejection names the file, the line (or row) and the column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.columns import (
    ALIASES,
    alias_renames,
    check_scalar_ids,
    describe_cell,
    parse_numbers,
)
from abrank.io.detect import check_table_options, detect_format
from abrank.io.formats import TABLE_NAMES
from abrank.io.online import (
    IMPRESSION_COLUMNS,
    MixedUnits,
    check_arms,
    check_log_head,
    drop_units,
    read_impressions,
    split_log,
)
from abrank.io.subtopics import SUBTOPIC
from abrank.io.tables import check_head, listing, read_table

__all__ = [
    "ALIASES",
    "IMPRESSION_COLUMNS",
    "MixedUnits",
    "check_arms",
    "check_first_lines",
    "check_log_head",
    "detect_format",
    "drop_units",
    "read_attributes",
    "read_impressions",
    "read_judgments",
    "read_rankings",
    "split_log",
]


def read_rankings(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    duplicates: str = "error",
    sep: str | None = None,
    decimal: str | None = None,
) -> pd.DataFrame:
    """Load one arm's ranking log into the canonical rankings frame.

    ``columns`` maps canonical names to the file's names (``{"query_id": "qid"}``); common
    spellings are recognised without it. Rank comes from a rank column, else from ``score``
    with trec_eval's rule (score descending, ties by doc_id descending). Duplicate
    (query, doc) pairs are an error unless ``duplicates="first"``. ``sep`` and ``decimal``
    read CSV/TSV files written with another field separator or decimal mark (a
    spreadsheet's ``;`` and ``0,5``).
    """
    fmt = detect_format(path, format)
    check_table_options(path, fmt, sep, decimal)
    if fmt == "trec":
        from abrank.io.trec import read_trec_run

        return read_trec_run(path, duplicates=duplicates)
    frame, first_line = read_table(
        path,
        fmt,
        sep=sep,
        decimal=decimal,
        first_rows=lambda rows, line: _rankings(
            rows, line, path, columns, duplicates, decimal, fmt, sep
        ),
    )
    return _rankings(frame, first_line, path, columns, duplicates, decimal, fmt, sep)


def _rankings(
    frame: pd.DataFrame,
    first_line: int,
    path: str | Path,
    columns: Mapping[str, str] | None,
    duplicates: str,
    decimal: str | None,
    fmt: str,
    sep: str | None,
) -> pd.DataFrame:
    """The canonical rankings frame of a table's rows (``first_line``: the file's line of
    the first row), checked; :func:`read_rankings` runs it on the file's first lines, then
    on the whole file (``fmt`` and ``sep``: how to read a cell again for a message)."""
    frame = _canonical_columns(frame, path, columns, required=("query_id", "doc_id"))
    if "rank" not in frame.columns and "score" not in frame.columns:
        raise DataError(
            f"{path}: expected a rank column ({', '.join(ALIASES['rank'])}) or a score column "
            f"(set columns.rank or columns.score), found columns: {listing(frame)}"
        )
    frame = _ids_as_strings(frame, path, first_line)
    cells = _cells(frame, path, fmt, sep)
    for column in ("score", "relevance"):
        if column in frame.columns:
            frame[column] = _numeric(
                frame[column],
                path,
                column,
                first_line,
                allow_missing=column == "relevance",
                decimal=decimal,
                missing=cells(column),
                bounded=column == "relevance",
            )
    if "rank" in frame.columns:
        rank = _numeric(
            frame["rank"],
            path,
            "rank",
            first_line,
            decimal=decimal,
            missing=cells("rank"),
            bounded=True,
        )
        whole = rank.to_numpy() == np.round(rank.to_numpy())
        if not whole.all():
            _fail_at(path, first_line, frame["rank"], ~whole, "rank", "a whole number")
        positive = rank.to_numpy() >= 1
        if not positive.all():
            _fail_at(path, first_line, frame["rank"], ~positive, "rank", "a whole number >= 1")
        frame["rank"] = rank.astype(np.int64)
    # duplicates first, in file order, so that "first" means first in the file (as for TREC
    # runs) and the lines named are the file's; the index then holds each row's position in
    # the file (a Parquet file may bring an index of its own: it is no canonical column)
    frame = frame.reset_index(drop=True)
    frame = _deduplicate(frame, path, first_line, duplicates, renumber=False)
    if "rank" in frame.columns:
        _check_repeated_ranks(frame, path, first_line)
        return frame.reset_index(drop=True)
    from abrank.io.arrow import rank_by_score

    return rank_by_score(frame.reset_index(drop=True))


def read_judgments(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    decimal: str | None = None,
) -> pd.DataFrame:
    """Load relevance judgments (TREC qrels, or a table with query, doc and grade columns;
    ``sep`` and ``decimal`` as for :func:`read_rankings`)."""
    fmt = detect_format(path, format, judgments=True)
    check_table_options(path, fmt, sep, decimal)
    if fmt == "qrels":
        from abrank.io.trec import read_trec_qrels

        return read_trec_qrels(path)
    frame, first_line = read_table(
        path,
        fmt,
        sep=sep,
        decimal=decimal,
        first_rows=lambda rows, line: _judgments(rows, line, path, columns, decimal, fmt, sep),
    )
    return _judgments(frame, first_line, path, columns, decimal, fmt, sep)


def _judgments(
    frame: pd.DataFrame,
    first_line: int,
    path: str | Path,
    columns: Mapping[str, str] | None,
    decimal: str | None,
    fmt: str,
    sep: str | None,
) -> pd.DataFrame:
    """The canonical judgments frame of a table's rows, checked (as :func:`_rankings`)."""
    frame = _canonical_columns(frame, path, columns, required=("query_id", "doc_id", "relevance"))
    frame = _ids_as_strings(frame, path, first_line)
    frame["relevance"] = _numeric(
        frame["relevance"],
        path,
        "relevance",
        first_line,
        decimal=decimal,
        missing=_cells(frame, path, fmt, sep)("relevance"),
        bounded=True,
    )
    if SUBTOPIC in frame.columns:  # subtopic judgments: one judgment per triple
        frame[SUBTOPIC] = _subtopic_labels(frame[SUBTOPIC], path, first_line)
        repeated = frame.duplicated(["query_id", SUBTOPIC, "doc_id"]).to_numpy()
        if repeated.any():
            row = int(np.flatnonzero(repeated)[0])
            q, t, d = (frame[c].iloc[row] for c in ("query_id", SUBTOPIC, "doc_id"))
            raise DataError(
                f"{path}: {_where(path, row + first_line)}: expected one judgment per "
                f"(query_id, subtopic, doc_id) triple, got {int(repeated.sum())} repeated: "
                f"({q!r}, {t!r}, {d!r})"
            )
        return frame[["query_id", "doc_id", "relevance", SUBTOPIC]]
    frame = _deduplicate(frame, path, first_line, "error", what="judgments")
    return frame[["query_id", "doc_id", "relevance"]]


def _subtopic_labels(values: pd.Series, path: str | Path, first_line: int) -> pd.Series:
    """A table's subtopic column as strings (integers as written: ``3``, not ``3.0``); a
    missing cell is an error naming its line."""
    missing = values.isna().to_numpy()
    if missing.any():
        _fail_at(path, first_line, values, missing, SUBTOPIC, "a subtopic label")
    if pd.api.types.is_float_dtype(values.dtype):
        whole = values == values.round()
        if whole.all():
            values = values.astype(np.int64)
    return values.astype(str)


def read_attributes(
    path: str | Path,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    decimal: str | None = None,
) -> pd.DataFrame:
    """Load a per-query attributes table (segment columns), one row per query_id (``sep``
    and ``decimal`` as for :func:`read_rankings`)."""
    fmt = detect_format(path, format)
    if fmt == "trec":
        raise DataError(f"{path}: expected a table ({', '.join(TABLE_NAMES)}), got a TREC file")
    check_table_options(path, fmt, sep, decimal)
    frame, first_line = read_table(
        path,
        fmt,
        sep=sep,
        decimal=decimal,
        first_rows=lambda rows, line: _attributes(rows, line, path, columns),
    )
    return _attributes(frame, first_line, path, columns)


def _attributes(
    frame: pd.DataFrame, first_line: int, path: str | Path, columns: Mapping[str, str] | None
) -> pd.DataFrame:
    """The attributes frame of a table's rows, checked (as :func:`_rankings`)."""
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


def check_first_lines(
    path: str | Path,
    kind: str,
    *,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    duplicates: str = "error",
    sep: str | None = None,
    decimal: str | None = None,
) -> None:
    """Run the checks of :func:`read_rankings` (``kind`` ``"rankings"``) or
    :func:`read_judgments` (``"judgments"``) on the first lines of a text file only
    (:mod:`abrank.io.head`), for the SQL engines, which read the whole file themselves: a
    file of garbage is then refused at its first bad rows, with the reader's message.

    Only the rows are checked: a column that is missing is left to the engine, which sees
    the columns of every file of the input (and those of a hive-partitioned path); so are
    a Parquet file and a file that its first lines hold whole."""
    from abrank.io.trec import QRELS_FIELDS, RUN_FIELDS
    from abrank.io.trec import check_head as check_trec_head

    judgments = kind == "judgments"
    fmt = detect_format(path, format, judgments=judgments)
    if fmt in ("trec", "qrels"):
        check_trec_head(path, RUN_FIELDS if fmt == "trec" else QRELS_FIELDS)
        return
    if fmt == "parquet":
        return
    required = ("query_id", "doc_id", "relevance") if judgments else ("query_id", "doc_id")

    def rows(frame: pd.DataFrame, line: int) -> None:
        try:
            named = _canonical_columns(frame, path, columns, required=required)
        except DataError:
            return  # a column problem: the engine's to name
        if judgments:
            _judgments(frame, line, path, columns, decimal, fmt, sep)
        elif {"rank", "score"} & set(named.columns):
            _rankings(frame, line, path, columns, duplicates, decimal, fmt, sep)

    check_head(path, fmt, rows, sep=sep, decimal=decimal)


# --------------------------------------------------------------------------- columns


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
                f"{path}: columns.{canon}: expected a column named {user!r}, found columns: {listing(frame)}"
            )
        renames[user] = canon
    renames = alias_renames(frame.columns, renames)
    for canon in required:
        if canon not in renames.values():
            raise DataError(
                f"{path}: expected a {canon} column (one of {', '.join(ALIASES[canon])}, or set "
                f"columns.{canon} in the config), found columns: {listing(frame)}"
            )
    clashes = [
        c for c in frame.columns if c in ALIASES and c not in renames and c in renames.values()
    ]
    frame = frame.drop(columns=clashes).rename(columns=renames)
    frame.attrs["file_columns"] = {canon: user for user, canon in renames.items()}
    return frame


def _cells(
    frame: pd.DataFrame, path: str | Path, fmt: str, sep: str | None
) -> Callable[[str], Callable[[int], str]]:
    """For a canonical column, how a missing cell of it is described from the file
    (:func:`abrank.io.tables.missing_cells`): an empty cell, or a NaN."""
    from abrank.io.tables import missing_cells

    names = frame.attrs.get("file_columns", {})
    return lambda column: missing_cells(path, fmt, str(names.get(column, column)), sep)


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

        def where(row: int, c: str = column) -> str:
            return f"{path}: {_where(path, row + first_line)}: {c}"

        check_scalar_ids(values, where)
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
    decimal: str | None = None,
    missing: Callable[[int], str] | None = None,
    bounded: bool = False,
) -> pd.Series:
    """The column as float64; a non-numeric cell is an error naming its line. ``decimal=","``
    reads ``0,5`` in a text column (the CSV reader already parsed all-numeric columns);
    ``missing`` and ``bounded`` as for :func:`abrank.io.columns.parse_numbers`."""
    numbers = parse_numbers(
        values,
        lambda row: f"{path}: {_where(path, row + first_line)}: {column}",
        allow_missing=allow_missing,
        decimal=decimal,
        missing=missing,
        bounded=bounded,
    )
    return pd.Series(numbers, index=values.index, name=values.name)


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
    where = _where(path, row + first_line)
    got = describe_cell(values.iloc[row])
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(f"{path}: {where}: {column}: expected {expected}, got {got}{more}")


def _deduplicate(
    frame: pd.DataFrame,
    path: str | Path,
    first_line: int,
    policy: str,
    *,
    what: str = "ranking",
    renumber: bool = True,
) -> pd.DataFrame:
    from abrank.io.arrow import as_arrow, query_codes
    from abrank.io.trec import name_pairs, repeated_pairs

    queries, docs = as_arrow(frame["query_id"]), as_arrow(frame["doc_id"])
    rows = repeated_pairs(query_codes(queries)[0], docs)
    if not rows.size:
        return frame
    if policy == "first":
        keep = np.ones(len(frame), dtype=bool)
        keep[rows] = False
        kept = frame.loc[keep]  # ``renumber=False`` keeps the file's row numbers as the index
        return kept.reset_index(drop=True) if renumber else kept
    shown = name_pairs(queries, docs, rows, lambda row: row + first_line)
    hint = "" if what == "judgments" else "; set `duplicates: first` to keep the first occurrence"
    raise DataError(
        f"{path}: expected each (query_id, doc_id) pair once per {what}, got {len(rows)} duplicates: {shown}{hint}"
    )


def _check_repeated_ranks(frame: pd.DataFrame, path: str | Path, first_line: int) -> None:
    """Refuse a rank that occurs twice within one query, naming the query and both lines.

    The rank column orders the documents (trec_eval ignores ranks and orders by score, but
    a table log with ranks is ranked by them). Two documents at the same rank have no order:
    which one counts as first would be decided by the doc-id tie rule, not by the data, and
    MRR or NDCG would change with it. A repeated rank nearly always means a broken log (two
    logs appended, a page's positions restarting at 1), so it is an error, not a warning.
    ``frame.index`` holds the rows' positions in the file.
    """
    from abrank.io.arrow import as_arrow, query_codes

    codes = query_codes(as_arrow(frame["query_id"]))[0]
    rank = frame["rank"].to_numpy()
    same = codes[1:] == codes[:-1]
    grouped = codes.size - int(np.count_nonzero(same)) == int(codes.max()) + 1
    if grouped and bool(np.all((rank[1:] > rank[:-1]) | ~same)):
        return  # each query in one block, ranks ascending: the common, cheap case
    key = pd.DataFrame({"query": codes, "rank": rank})
    repeated = key.duplicated(keep="first").to_numpy()
    if not repeated.any():
        return
    at = int(np.flatnonzero(repeated)[0])
    first = int(np.flatnonzero((codes == codes[at]) & (rank == rank[at]))[0])
    rows = frame.index.to_numpy()
    count = int(np.count_nonzero(repeated))
    more = f" ({count - 1} more such rows)" if count > 1 else ""
    raise DataError(
        f"{path}: {_where(path, int(rows[at]) + first_line)}: rank: expected each rank once per "
        f"query, got rank {int(rank[at])} again in query {frame['query_id'].iat[at]!r} (first at "
        f"{_where(path, int(rows[first]) + first_line)}){more}"
    )


def _where(path: str | Path, number: int) -> str:
    """``line N`` of a text file, ``row N`` of a Parquet file."""
    return f"row {number}" if Path(path).suffix.lower() in (".parquet", ".pq") else f"line {number}"
