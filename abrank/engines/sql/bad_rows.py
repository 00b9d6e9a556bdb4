"""Where a bad row of an input opened in an SQL engine stands, and the message naming it.

The checks of :mod:`abrank.engines.sql.rankings` count an input's problems in one
statement (or in the pass that numbers the rows); only once they have found one do the
statements here look for its first occurrence, in file and line order, and say it in the
memory engine's words: the file, the line (a Parquet file's row), and for a pair or rank
found again, where it stood first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abrank.engines.sql import Backend, compile_sql
from abrank.errors import DataError
from abrank.io.subtopics import SUBTOPIC

__all__ = [
    "SHOWN",
    "Place",
    "more",
    "raise_repeated_pairs",
    "raise_repeated_rank",
    "raise_repeated_triples",
]

#: how many offending rows a message shows
SHOWN = 3


class Place:
    """Finds the first of some checked rows (in file and line order) and says where it
    stands: ``word`` is "line" or "row" (a Parquet file's), ``first_line`` the number of a
    file's first data line, ``files`` the input's files in the order listed (a checked
    row's ``abrank_file`` is its file's place among them)."""

    def __init__(self, backend: Backend, word: str, first_line: int, files: Sequence[str]):
        self.backend, self.line, self.first_line = backend, word, first_line
        self.files = [str(file) for file in files]

    def first(self, sql: str, limit: int = 1) -> Any:
        """The first row of ``sql`` (the first ``limit`` rows, when more than one)."""
        ordered = f"{sql} ORDER BY abrank_file, abrank_row LIMIT {int(limit)}"
        rows = self.backend.run(compile_sql(ordered, self.backend.dialect)).to_pylist()
        return rows if limit > 1 else rows[0]

    def first_of_kind(self, checked: str, column: str, condition: str) -> tuple[int, int, Any]:
        """The smallest kind of problem in ``column`` among the rows where ``condition``
        holds (the memory engine checks a column's problems in that order), how many rows
        have it, and the first of them."""
        sql = (
            f"SELECT {column} AS kind, COUNT(*) AS n FROM {checked} WHERE {condition} "
            f"GROUP BY {column} ORDER BY {column} LIMIT 1"
        )
        found = self.backend.run(compile_sql(sql, self.backend.dialect)).to_pylist()[0]
        kind = int(found["kind"])
        row = self.first(f"SELECT * FROM {checked} WHERE {condition} AND {column} = {kind}")
        return kind, int(found["n"]), row

    def number(self, row: Mapping[str, Any]) -> str | None:
        """ "line 12" (or "row 12"), or None where the engine numbers no rows."""
        if row.get("abrank_row") is None:
            return None
        return f"{self.line} {int(row['abrank_row']) + self.first_line}"

    def file(self, row: Mapping[str, Any]) -> str:
        """The file of a checked row (its ``abrank_file`` is the file's place)."""
        return self.files[int(row["abrank_file"])]

    def where(self, row: Mapping[str, Any]) -> str:
        """The file and line of a checked row, as a message starts."""
        number = self.number(row)
        return self.file(row) + ("" if number is None else f": {number}")


def more(count: int) -> str:
    """How many more rows have the problem named, as the memory engine's messages say it."""
    return f" ({count - 1} more such rows)" if count > 1 else ""


def raise_repeated_pairs(
    backend: Backend, good: str, place: Place, *, trec: bool, judgments: bool
) -> None:
    """The memory engine's message for (query, doc) pairs of the checked rows ``good``
    found again: a TREC file's names the line of the first one found again; a table's
    names the file, with the line of each pair shown."""
    count, first, shown = _repeated(backend, good, place, ("query_id", "doc_id"))
    if not trec:
        what = "judgments" if judgments else "ranking"
        hint = "" if judgments else "; set `duplicates: first` to keep the first occurrence"
        raise DataError(
            f"{place.file(first)}: expected each (query_id, doc_id) pair once per "
            f"{what}, got {count} duplicates: {shown}{hint}"
        )
    where = place.where(first)
    if judgments:
        raise DataError(
            f"{where}: expected one judgment per (query, doc) pair, got {count} repeated: {shown}"
        )
    raise DataError(
        f"{where}: expected each document once per query, got {count} duplicate (query, doc) "
        f"pair(s): {shown} (use duplicates: first to keep the first occurrence)"
    )


def raise_repeated_triples(backend: Backend, good: str, place: Place, *, trec: bool) -> None:
    """The memory engine's message for a (query, subtopic, doc) triple judged again."""
    count, first, shown = _repeated(backend, good, place, ("query_id", SUBTOPIC, "doc_id"))
    what = "(query, subtopic, doc)" if trec else "(query_id, subtopic, doc_id)"
    raise DataError(
        f"{place.where(first)}: expected one judgment per {what} triple, got {count} "
        f"repeated: {shown}"
    )


def raise_repeated_rank(backend: Backend, good: str, place: Place) -> None:
    """A rank found twice in a query, named as the memory engine names it: the row of its
    second occurrence, the query, and where the first one stands."""
    numbered = (
        "SELECT *, ROW_NUMBER() OVER (PARTITION BY query_id, rank ORDER BY abrank_file, "
        f"abrank_row) AS occurrence FROM {good}"
    )
    again_rows = f"SELECT * FROM ({numbered}) AS numbered WHERE occurrence > 1"
    count = backend.run(
        compile_sql(f"SELECT COUNT(*) AS n FROM ({again_rows}) AS a", backend.dialect)
    ).to_pylist()[0]["n"]
    again = place.first(again_rows)
    query = str(again["query_id"]).replace("'", "''")
    first = place.first(
        f"SELECT * FROM {good} WHERE query_id = '{query}' AND rank = {float(again['rank'])!r}"
    )
    before = place.number(first)
    first_at = "" if before is None else f" (first at {before})"
    raise DataError(
        f"{place.where(again)}: rank: expected each rank once per query, got rank "
        f"{int(again['rank'])} again in query {again['query_id']!r}{first_at}{more(int(count))}"
    )


def _repeated(
    backend: Backend, good: str, place: Place, keys: tuple[str, ...]
) -> tuple[int, Mapping[str, Any], str]:
    """The rows of ``good`` whose ``keys`` stand at an earlier row (in file and line
    order): how many, the first of them, and the first few shown as the memory engine
    shows them (``('q1', 'd1') at line 4, ... and 2 more``)."""
    partition = ", ".join(keys)
    numbered = (
        f"SELECT *, ROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY abrank_file, "
        "abrank_row) AS occurrence FROM " + good
    )
    later = f"SELECT * FROM ({numbered}) AS numbered WHERE occurrence > 1"
    count = backend.run(
        compile_sql(f"SELECT COUNT(*) AS n FROM ({later}) AS l", backend.dialect)
    ).to_pylist()[0]["n"]
    shown_rows = place.first(later, limit=SHOWN)

    def at(row: Mapping[str, Any]) -> str:
        if row.get("abrank_row") is None:
            return ""
        # the memory engine's readers say "line" whatever the format
        return f" at line {int(row['abrank_row']) + place.first_line}"

    def pair(row: Mapping[str, Any]) -> str:
        return "(" + ", ".join(repr(str(row[k]) if k == SUBTOPIC else row[k]) for k in keys) + ")"

    shown = ", ".join(f"{pair(r)}{at(r)}" for r in shown_rows)
    shown += f" and {count - SHOWN} more" if count > SHOWN else ""
    return int(count), shown_rows[0], shown
