"""Rankings and judgments files opened in an SQL engine, checked, in canonical columns.

TREC runs (``qid Q0 doc rank score tag``) and qrels (``qid iter doc rel``) are read as
text lines by the backend (``register_lines``: file, 0-based line number, line); the
splitting on whitespace and the typing are SQL of the neutral dialect, so that every
engine reads a TREC file the same way. Tables (CSV, TSV, Parquet, JSON Lines) are opened
by the backend's ``register`` with their own columns, mapped to the canonical names as the
file readers map them (:data:`abrank.io.ALIASES`, or the config's ``columns``).

The checks are those of :mod:`abrank.io`'s readers, with their wording: a line with too
few fields, a score or grade that is no number, a rank that is no whole number >= 1 or is
repeated in a query, a (query, doc) pair ranked twice or judged twice, an empty file. One
statement counts the problems; only when it finds some do further statements look for
the first one, to name its file and line. Before the engine reads a text file, the file
reader checks its first lines (:func:`abrank.io.check_first_lines`), so that a file of
garbage is refused at its first bad rows, not after the engine has read it whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abrank.engines.sql import Backend, compile_sql, quote
from abrank.engines.sql.bad_rows import (
    Place,
    more,
    raise_repeated_pairs,
    raise_repeated_rank,
    raise_repeated_triples,
)
from abrank.engines.sql.sources import (
    EXPECTED,
    MISSING,
    cell_text,
    check_text_files,
    literal,
    number_kind,
    register_source,
    shown_cell,
)
from abrank.errors import ConfigError, DataError
from abrank.io.columns import ALIASES, alias_renames
from abrank.io.subtopics import PLACEHOLDERS, SUBTOPIC

__all__ = [
    "Opened",
    "TableSource",
    "Unchecked",
    "check_numbered",
    "open_judgments",
    "open_rankings",
]

RUN_FIELDS = ("query_id", "iter", "doc_id", "rank", "score", "tag")
QRELS_FIELDS = ("query_id", "iter", "doc_id", "relevance")


@dataclass(frozen=True)
class TableSource:
    """One rankings or judgments input: its files (one format: ``trec``, ``qrels``,
    ``csv``, ``tsv``, ``parquet``, ``jsonl``), how messages name it, the config's column
    mapping (canonical -> the file's name), CSV options and the duplicates policy.
    ``kept``: of a table's other columns, those that later statements read (a ranking
    log's segment columns); the engine's copy of the parsed rows holds only these (a log
    often carries many more), every one when None."""

    files: tuple[str, ...]
    format: str
    label: str
    columns: Mapping[str, str] = field(default_factory=dict)
    sep: str | None = None
    decimal: str | None = None
    duplicates: str = "error"
    kept: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "files": list(self.files),
            "format": self.format,
            "label": self.label,
            "columns": dict(self.columns),
            "sep": self.sep,
            "decimal": self.decimal,
            "duplicates": self.duplicates,
            "kept": None if self.kept is None else list(self.kept),
        }


@dataclass(frozen=True)
class Unchecked:
    """The checks that opening left to the pass that numbers a ranking's rows
    (:func:`open_rankings` with ``later``), where they cost no pass of their own:
    ``pairs``, a (query, doc) pair ranked twice (the numbered rows sit together by query,
    so counting pairs moves no row between an engine's workers); ``ranks``, a rank
    column's rank found again (the row after its equal in rank order). Then what names a
    bad row found there (:class:`abrank.engines.sql.bad_rows.Place`): ``rows``, the
    relation of the checked rows; ``word``, "line" or "row"; the first line's number; the
    files; whether they are TREC files. :func:`check_numbered` makes the checks."""

    rows: str
    word: str
    first_line: int
    files: tuple[str, ...]
    trec: bool
    pairs: bool
    ranks: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "rows": self.rows,
            "word": self.word,
            "first_line": self.first_line,
            "files": list(self.files),
            "trec": self.trec,
            "pairs": self.pairs,
            "ranks": self.ranks,
        }


@dataclass(frozen=True)
class Opened:
    """A checked input as a relation of canonical columns: ``sql`` is a parenthesised
    query (``query_id``, ``doc_id`` as text, ``score`` or ``rank`` as ``ranked_by`` says,
    or ``relevance``; then those of the file's other columns ``extra`` that its source
    keeps, :attr:`TableSource.kept`), and the rows of each file read. Subtopic judgments
    (:mod:`abrank.io.subtopics`: a qrels file's second column of several values, or a
    table's ``subtopic`` column) are ``sql`` with one judgment per (query, doc), the
    highest grade over its subtopics, as every metric but the diversity ones reads them;
    ``subtopics`` is then the relation of the judgments as given (``query_id``,
    ``doc_id``, ``relevance``, ``subtopic`` as text), unique per (query, subtopic, doc).
    ``unchecked``: rankings opened with ``later``, the checks left to the numbering (None
    when every check was made here)."""

    sql: str
    ranked_by: str | None
    extra: tuple[str, ...]
    file_rows: dict[str, int]
    subtopics: str | None = None  # subtopic judgments only: the relation with them
    unchecked: Unchecked | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "sql": self.sql,
            "ranked_by": self.ranked_by,
            "extra": list(self.extra),
            "file_rows": dict(self.file_rows),
            "subtopics": self.subtopics,
            "unchecked": None if self.unchecked is None else self.unchecked.to_dict(),
        }


def open_rankings(
    backend: Backend, name: str, source: TableSource, *, later: bool = False
) -> Opened:
    """Register and check one arm's rankings; the relation of its canonical rows.

    ``later``: the checks that the caller's window pass over the rows in rank order can
    make at no cost of their own (:class:`Unchecked`: repeated pairs, unless
    ``duplicates: first`` keeps each pair's first row; a ``rank`` column's repeated ranks)
    are not made here; the caller keeps the numbered rows and calls
    :func:`check_numbered`. Either way the ranks checked are those of the rows kept: with
    ``duplicates: first``, a repeated pair's later rows do not count, as by the memory
    engine."""
    if source.duplicates not in ("error", "first"):
        raise ConfigError(f"duplicates: expected 'error' or 'first', got {source.duplicates!r}")
    _check_files(source, "rankings")
    if source.format == "trec":
        rows = _trec_rows(backend, name, source, RUN_FIELDS, {"query_id": 0, "doc_id": 2})
        return _checked(backend, name, source, rows, later=later)
    if source.format == "qrels":
        raise DataError(f"{source.label}: expected a ranking log, got a qrels file (format qrels)")
    rows = _table_rows(backend, name, source, judgments=False)
    return _checked(backend, name, source, rows, later=later)


def check_numbered(
    backend: Backend, opened: Opened, numbered: str, *, every_row: bool = True
) -> None:
    """The checks that rankings opened with ``later`` left to the numbering, made on the
    numbered rows ``numbered`` (:func:`abrank.engines.sql.judged.numbered_rows_sql`: every
    ranked row, with ``doc_id`` and ``rank_again``) in one statement: a DataError, as
    opening would have raised it, for a pair found twice, else for a rank found again.
    ``every_row=False``: ``numbered`` holds the judged rows only, and pairs are counted on
    the opened rows."""
    unchecked = opened.unchecked
    if unchecked is None:
        return
    counts = []
    if unchecked.pairs:
        rows = numbered if every_row else f"{opened.sql} AS given"
        counts.append(
            "SELECT 1 AS kind, COUNT(*) AS n FROM (SELECT query_id, doc_id FROM "
            f"{rows} GROUP BY query_id, doc_id HAVING COUNT(*) > 1) AS pairs"
        )
    if unchecked.ranks:
        counts.append(f"SELECT 2 AS kind, COUNT(*) AS n FROM {numbered} WHERE rank_again = 1")
    if not counts:
        return
    sql = " UNION ALL ".join(counts)
    found = {
        int(row["kind"]): int(row["n"] or 0)
        for row in backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    }
    place = Place(backend, unchecked.word, unchecked.first_line, unchecked.files)
    if found.get(1):
        raise_repeated_pairs(backend, unchecked.rows, place, trec=unchecked.trec, judgments=False)
    if found.get(2):
        raise_repeated_rank(backend, unchecked.rows, place)


def open_judgments(backend: Backend, name: str, source: TableSource) -> Opened:
    """Register and check the judgments; the relation of its canonical rows."""
    _check_files(source, "judgments")
    if source.format in ("qrels", "trec"):
        rows = _trec_rows(backend, name, source, QRELS_FIELDS, {"query_id": 0, "doc_id": 2})
        return _checked(backend, name, source, rows)
    return _checked(backend, name, source, _table_rows(backend, name, source, judgments=True))


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Rows:
    """An input's rows as a query with the checks' columns: ``abrank_file`` (the file's
    place among the input's files, :func:`_file_number`), ``abrank_row``, ``query_id``,
    ``doc_id``, ``value_text`` (the number cell as text), the number as ``score``,
    ``rank`` or ``relevance``, ``fields_bad`` (a TREC line of too few fields: 1; a
    table's missing query_id: 1, doc_id: 2) and ``number_bad`` (the kinds of
    :data:`abrank.engines.sql.sources.EXPECTED`). ``kind`` is the number column's kind
    (``trec``: the text of a TREC field) and ``listing`` a table's columns."""

    sql: str
    ranked_by: str | None
    extra: tuple[str, ...] = ()
    kind: str = "trec"
    listing: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "sql": self.sql,
            "ranked_by": self.ranked_by,
            "extra": list(self.extra),
            "kind": self.kind,
            "listing": self.listing,
        }


def _check_files(source: TableSource, kind: str) -> None:
    """Each file is a regular file; a text table (CSV, TSV, JSON Lines) is refused as the
    memory engine's reader refuses it (empty, binary with NUL bytes, not UTF-8), and so is
    a TREC file (empty, binary), before the engine reads a byte of it; then its first
    lines are checked by the file reader."""
    from abrank.io import check_first_lines
    from abrank.io.files import check_file

    for file in source.files:
        check_file(file, "a regular data file", missing="an existing file")
    if source.format in ("trec", "qrels"):
        from abrank.io.trec import check_trec_file

        for file in source.files:
            check_trec_file(file)
    else:
        check_text_files(source.files, source.format)
    for file in source.files:
        check_first_lines(
            file,
            kind,
            format=source.format,
            columns=source.columns,
            duplicates=source.duplicates,
            sep=source.sep,
            decimal=source.decimal,
        )


def _file_number(files: Sequence[str]) -> str:
    """Each row's file (the backend's ``abrank_file``: the path as given) as its place in
    ``files``: the checked rows carry a small number where the path would fill every row
    (a tenth of a second and hundreds of megabytes per ten million rows), and ordering on
    it puts the files in the order they are listed, as the memory engine reads them."""
    if len(files) == 1:
        return "0"
    places = " ".join(f"WHEN {literal(str(file))} THEN {place}" for place, file in enumerate(files))
    return f"CASE abrank_file {places} END"


def _line_word(source: TableSource) -> str:
    return "row" if source.format == "parquet" else "line"


def _blank_to_space(column: str) -> str:
    """Tabs, carriage returns, vertical tabs and form feeds as spaces (whitespace)."""
    for code in (9, 11, 12, 13):
        column = f"REPLACE({column}, CHR({code}), ' ')"
    return f"TRIM({column})"


def _trec_rows(
    backend: Backend,
    name: str,
    source: TableSource,
    fields: Sequence[str],
    ids: Mapping[str, int],
) -> _Rows:
    """The lines of a TREC file split on whitespace, with the checks' columns."""
    backend.register_lines(name, list(source.files))
    width = len(fields)
    number_field = fields.index("score" if "score" in fields else "relevance")
    value_name = fields[number_field]
    # fields split on single spaces, or (a line with a run of spaces) on runs of them
    fields = (
        "CASE WHEN STRPOS(trimmed, '  ') > 0 THEN REGEXP_SPLIT(trimmed, ' +') "
        "ELSE SPLIT(trimmed, ' ') END"
    )
    # a comment line ('#' as its first character, trec_eval 10) counts as blank
    trimmed = (
        f"SELECT abrank_file, abrank_row, {_blank_to_space('line')} AS trimmed, "
        f"CASE WHEN line LIKE '#%' THEN 1 ELSE 0 END AS comment FROM {name}"
    )
    parts_of = (
        f"SELECT abrank_file, abrank_row, trimmed, comment, {fields} AS f FROM ({trimmed}) AS lines"
    )
    split = (
        "SELECT abrank_file, abrank_row, f, CASE WHEN trimmed IS NULL OR trimmed = '' "
        f"OR comment = 1 THEN 0 ELSE ARRAY_SIZE(f) END AS n FROM ({parts_of}) AS parts"
    )
    enough = f"n >= {width}"
    text = f"CASE WHEN {enough} THEN f[{number_field}] END"
    value = f"TRY_CAST({text} AS DOUBLE)"
    fields_bad = f"n > 0 AND n < {width}" if value_name == "score" else f"n > 0 AND n <> {width}"
    parts = [
        f"{_file_number(source.files)} AS abrank_file",
        "abrank_row",
        "n",
        f"CASE WHEN {enough} THEN f[{ids['query_id']}] END AS query_id",
        f"CASE WHEN {enough} THEN f[{ids['doc_id']}] END AS doc_id",
        f"{text} AS value_text",
        f"{value} AS {value_name}",
        f"CASE WHEN {fields_bad} THEN 1 ELSE 0 END AS fields_bad",
        f"{number_kind(value, text, bounded=value_name == 'relevance')} AS number_bad",
    ]
    extra: tuple[str, ...] = ()
    if value_name == "relevance":  # qrels: the second field, subtopics when it varies
        parts.append(f"CASE WHEN {enough} THEN f[1] END AS {SUBTOPIC}")
        extra = (SUBTOPIC,)
    sql = f"SELECT {', '.join(parts)} FROM ({split}) AS split WHERE n > 0"
    return _Rows(sql, "score" if value_name == "score" else None, extra)


def _table_rows(backend: Backend, name: str, source: TableSource, *, judgments: bool) -> _Rows:
    """A table's rows in canonical columns, with the checks' columns."""
    from abrank.engines.sql.clicks import LogSource

    log = LogSource(
        files=source.files,
        format=source.format,
        label=source.label,
        sep=source.sep,
        decimal=source.decimal,
    )
    described = register_source(backend, name, log)
    names = [column for column, _ in described]
    kind = dict(described)
    listing = ", ".join(names)
    renames: dict[str, str] = {}
    for canon, user in dict(source.columns).items():
        if user not in kind:
            _refuse_empty(backend, name, source, listing)
            raise DataError(
                f"{source.label}: columns.{canon}: expected a column named {user!r}, found "
                f"columns: {listing}"
            )
        renames[user] = canon
    renames = alias_renames(names, renames)
    column = {canon: user for user, canon in renames.items()}
    required = ("query_id", "doc_id", "relevance") if judgments else ("query_id", "doc_id")
    for canon in required:
        if canon not in column:
            _refuse_empty(backend, name, source, listing)
            raise DataError(
                f"{source.label}: expected a {canon} column (one of {', '.join(ALIASES[canon])}, "
                f"or set columns.{canon} in the config), found columns: {listing}"
            )
    if judgments:
        value_name, ranked_by = "relevance", None
    elif "rank" in column:
        value_name, ranked_by = "rank", "rank"
    elif "score" in column:
        value_name, ranked_by = "score", "score"
    else:
        _refuse_empty(backend, name, source, listing)
        raise DataError(
            f"{source.label}: expected a rank column ({', '.join(ALIASES['rank'])}) or a score "
            f"column (set columns.rank or columns.score), found columns: {listing}"
        )
    ref = quote(column[value_name])
    value_kind = kind[column[value_name]]
    if value_kind in ("int", "float"):
        value = f"CAST({ref} AS DOUBLE)"
        text = f"CAST({ref} AS VARCHAR)"
    else:
        text = cell_text(ref, value_kind)
        cell = f"REPLACE({text}, ',', '.')" if source.decimal == "," else text
        value = f"TRY_CAST({cell} AS DOUBLE)"
    number_bad = number_kind(
        value, text, kind=value_kind, bounded=value_name != "score", whole=value_name == "rank"
    )
    canonical = set(column.values())
    extra = tuple(c for c in names if c not in canonical)
    if judgments and SUBTOPIC in column:  # a subtopic column named by columns.subtopic
        extra = (*extra, SUBTOPIC)
    ids = {c: _id_text(source, c, column[c], kind[column[c]]) for c in ("query_id", "doc_id")}
    missing = {
        c: f"{quote(column[c])} IS NULL OR {ids[c]} IS NULL OR {ids[c]} = ''"
        for c in ("query_id", "doc_id")
    }
    parts = [
        f"{_file_number(source.files)} AS abrank_file",
        "abrank_row",
        f"{ids['query_id']} AS query_id",
        f"{ids['doc_id']} AS doc_id",
        f"{text} AS value_text",
        f"{value} AS {value_name}",
        f"CASE WHEN {missing['query_id']} THEN 1 WHEN {missing['doc_id']} THEN 2 ELSE 0 END "
        "AS fields_bad",
        f"{number_bad} AS number_bad",
        *[
            quote(c)
            if c != SUBTOPIC or SUBTOPIC not in column
            else f"{quote(column[SUBTOPIC])} AS {SUBTOPIC}"
            for c in _kept(extra, source)
        ],
    ]
    sql = f"SELECT {', '.join(parts)} FROM {name}"
    return _Rows(sql, ranked_by, extra, value_kind, listing)


def _kept(extra: tuple[str, ...], source: TableSource) -> tuple[str, ...]:
    """The other columns of a table that its parsed rows carry (:attr:`TableSource.kept`)."""
    if source.kept is None:
        return extra
    return tuple(c for c in extra if c in source.kept or c == SUBTOPIC)


def _refuse_empty(backend: Backend, name: str, source: TableSource, listing: str) -> None:
    """A table without rows is refused as empty before its columns are looked at, as the
    memory engine's reader refuses it (its message lists the columns found)."""
    probe = f"SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM {name} LIMIT 1) AS first_row"
    if not backend.run(compile_sql(probe, backend.dialect)).to_pylist()[0]["n"]:
        raise DataError(_no_rows(source.files[0], source, listing))


def _no_rows(file: str, source: TableSource, listing: str | None) -> str:
    if source.format in ("trec", "qrels"):
        return f"{file}: expected TREC lines, got an empty file"
    return f"{file}: expected at least one row, got none (columns: {listing or 'none'})"


def _id_text(source: TableSource, canon: str, user: str, kind: str) -> str:
    """An id column as text. A JSON Lines id column that the engine did not type as text or
    a number may hold objects or lists, whose text would silently become an id: the first
    such value is a DataError naming its file, line and column. A column of mixed scalars
    (DuckDB's JSON type) gives each value's own text, as the memory engine reads it."""
    ref = quote(user)
    if source.format == "jsonl" and kind not in ("int", "float", "text", "bool"):
        from abrank.io.tables import first_nested_json_value

        found = first_nested_json_value(source.files, user)
        if found is not None:
            file, line, value = found
            what = "an object" if isinstance(value, dict) else "a list"
            shown = json.dumps(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise DataError(
                f"{file}: line {line}: {canon}: expected an id (a text or a number), got "
                f"{what} {shown}"
            )
        if kind == "json":
            return f"JSON_EXTRACT_SCALAR({ref}, '$')"
    return f"CAST({ref} AS VARCHAR)"


# --------------------------------------------------------------------------- checks


def _checked(
    backend: Backend, name: str, source: TableSource, rows: _Rows, *, later: bool = False
) -> Opened:
    """Count the problems of ``rows`` in one statement; raise on the first one found (the
    checks the numbering can make left to it with ``later``: :func:`open_rankings`)."""
    ranked_by, extra = rows.ranked_by, rows.extra
    ranks_later = later and ranked_by == "rank"
    ranks_here = ranked_by == "rank" and not ranks_later  # a rank column checked on opening
    pairs_later = later and ranked_by is not None and source.duplicates == "error"
    value_name = ranked_by or "relevance"
    trec = source.format in ("trec", "qrels")
    first_line = 2 if source.format in ("csv", "tsv") else 1
    if _read_again(backend, source, ranked_by):
        sql = rows.sql  # each statement reads the columns it needs from the files
    else:
        # parsed and typed once: the checks and every later statement read the copy
        rows_sql = compile_sql(rows.sql, backend.dialect)
        backend.materialize(f"{name}_rows", rows_sql, by="query_id")
        backend.drop(name)  # the lines or the file's own columns: read once, into the copy
        sql = f"SELECT * FROM {name}_rows"
    subtopics = ranked_by is None and SUBTOPIC in extra and _holds_subtopics(backend, sql, trec)
    if ranked_by is None and SUBTOPIC in extra and trec and not subtopics:
        extra = tuple(c for c in extra if c != SUBTOPIC)  # ordinary qrels: 0 or Q0 throughout
    keys = f"query_id, {SUBTOPIC}, doc_id" if subtopics else "query_id, doc_id"
    pair_times = f"SELECT {keys}, COUNT(*) AS times FROM good GROUP BY {keys} HAVING COUNT(*) > 1"
    rank_times = (
        "SELECT query_id, rank, COUNT(*) AS times FROM good GROUP BY query_id, rank "
        "HAVING COUNT(*) > 1"
    )
    checks = [
        "SELECT abrank_file, COUNT(*) AS rows_read, SUM(CASE WHEN fields_bad > 0 THEN 1 ELSE 0 "
        "END) AS fields_bad, SUM(CASE WHEN fields_bad = 0 AND number_bad > 0 THEN 1 ELSE 0 END) "
        "AS number_bad, 0 AS pairs, 0 AS ranks FROM checked GROUP BY abrank_file",
    ]
    if not pairs_later:
        checks.append(
            f"SELECT CAST(NULL AS INT) AS abrank_file, 0, 0, 0, COUNT(*), 0 FROM ({pair_times}) "
            "AS p"
        )
    rank_check = f"SELECT CAST(NULL AS INT), 0, 0, 0, 0, COUNT(*) FROM ({rank_times}) AS r"
    if ranks_here:
        checks.append(rank_check)
    with_good = (
        f"WITH checked AS ({sql}), good AS (SELECT * FROM checked WHERE fields_bad = 0 AND "
        "number_bad = 0) "
    )
    counts = backend.run(compile_sql(with_good + " UNION ALL ".join(checks), backend.dialect))
    counts = counts.to_pylist()
    if any(r["abrank_file"] is None and r["rows_read"] for r in counts):
        raise ValueError(f"{source.label}: the engine named a file other than {source.files}")
    read = {int(r["abrank_file"]): int(r["rows_read"]) for r in counts if r["rows_read"]}
    per_file = {str(file): read.get(place, 0) for place, file in enumerate(source.files)}
    totals = {
        key: sum(int(r[key] or 0) for r in counts)
        for key in ("fields_bad", "number_bad", "pairs", "ranks")
    }
    for file in source.files:
        if not per_file.get(str(file)):
            raise DataError(_no_rows(file, source, rows.listing))
    checked = f"({sql}) AS checked"
    place = Place(backend, _line_word(source), first_line, source.files)
    if totals["fields_bad"]:
        kind, count, bad = place.first_of_kind(checked, "fields_bad", "fields_bad > 0")
        if trec:
            fields = RUN_FIELDS if source.format == "trec" else QRELS_FIELDS
            least = "at least " if source.format == "trec" else ""
            raise DataError(
                f"{place.where(bad)}: expected {least}{len(fields)} whitespace-separated fields "
                f"({' '.join(fields)}), got {int(bad['n'])}"
            )
        column = "query_id" if kind == 1 else "doc_id"
        raise DataError(
            f"{place.where(bad)}: {column}: expected a non-empty id, got an empty value"
            f"{more(count)}"
        )
    if totals["number_bad"]:
        kind, count, bad = place.first_of_kind(
            checked, "number_bad", "fields_bad = 0 AND number_bad > 0"
        )
        text = bad["value_text"]
        if trec:
            got = "an empty value" if text is None else repr(str(text))
        elif kind == MISSING and text is not None:
            got = "NaN"
        else:
            got = shown_cell(text, rows.kind)
        raise DataError(
            f"{place.where(bad)}: {value_name}: expected {EXPECTED[kind]}, got {got}{more(count)}"
        )
    good = f"(SELECT * FROM ({sql}) AS checked WHERE fields_bad = 0 AND number_bad = 0) AS good"
    if totals["pairs"] and subtopics:
        raise_repeated_triples(backend, good, place, trec=trec)
    if totals["pairs"] and not (ranked_by is not None and source.duplicates == "first"):
        raise_repeated_pairs(backend, good, place, trec=trec, judgments=ranked_by is None)
    kept = good  # the rows that stay, whose ranks count
    if totals["pairs"] and ranked_by is not None:  # duplicates: first keeps each pair's first
        if place.first(f"SELECT * FROM {good}")["abrank_row"] is None:
            raise ConfigError(
                f"{source.label}: duplicates: first: expected a file whose row order the "
                "engine reads, got a table without row numbers; remove the repeated pairs"
            )
        numbered = (
            f"SELECT *, ROW_NUMBER() OVER (PARTITION BY query_id, doc_id ORDER BY "
            f"abrank_file, abrank_row) AS pair_occurrence FROM {good}"
        )
        kept = f"(SELECT * FROM ({numbered}) AS numbered WHERE pair_occurrence = 1) AS good"
        if ranks_here:  # a pair's later rows do not count, as in memory
            again = f"SELECT query_id, rank FROM {kept} GROUP BY query_id, rank HAVING COUNT(*) > 1"
            found = f"SELECT COUNT(*) AS n FROM ({again}) AS r"
            totals["ranks"] = int(backend.run(compile_sql(found, backend.dialect))["n"][0].as_py())
    if totals["ranks"]:
        raise_repeated_rank(backend, kept, place)
    if subtopics:  # labels as text, whatever the table's column type; one grade a pair
        given = (
            f"SELECT query_id, doc_id, relevance, CAST({quote(SUBTOPIC)} AS VARCHAR) AS "
            f"{SUBTOPIC} FROM {good}"
        )
        collapsed = (
            f"SELECT query_id, doc_id, MAX(relevance) AS relevance FROM ({given}) AS given "
            "GROUP BY query_id, doc_id"
        )
        return Opened(f"({collapsed})", None, (), per_file, f"({given})")
    columns = ["query_id", "doc_id", value_name, *[quote(c) for c in _kept(extra, source)]]
    selected = f"SELECT {', '.join(columns)} FROM {kept}"
    unchecked = None
    if ranks_later or pairs_later:
        word = _line_word(source)
        unchecked = Unchecked(kept, word, first_line, source.files, trec, pairs_later, ranks_later)
    return Opened(f"({selected})", ranked_by, extra, per_file, unchecked=unchecked)


def _read_again(backend: Backend, source: TableSource, ranked_by: str | None) -> bool:
    """Whether a ranking log's statements read its files again rather than a kept copy of
    its parsed rows: a Parquet log on an engine that says so
    (:attr:`abrank.engines.sql.Backend.rereads_parquet`). Judgments, read by many more
    statements, are always kept."""
    return (
        ranked_by is not None
        and source.format == "parquet"
        and getattr(backend, "rereads_parquet", False)
    )


def _holds_subtopics(backend: Backend, rows: str, trec: bool) -> bool:
    """Whether judgments hold subtopics: a table's ``subtopic`` column always; a qrels
    file's second field when it holds more than one value, ``0`` and ``Q0`` counting as
    one (:func:`abrank.io.subtopics.is_subtopic_column`)."""
    if not trec:
        return True
    placeholders = ", ".join(f"'{p}'" for p in sorted(PLACEHOLDERS))
    sql = (
        f"SELECT COUNT(DISTINCT {SUBTOPIC}) AS n, SUM(CASE WHEN {SUBTOPIC} NOT IN "
        f"({placeholders}) THEN 1 ELSE 0 END) AS other FROM ({rows}) AS r WHERE fields_bad = 0"
    )
    found = backend.run(compile_sql(sql, backend.dialect)).to_pylist()[0]
    return int(found["n"] or 0) > 1 and int(found["other"] or 0) > 0
