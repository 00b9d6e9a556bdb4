"""One readout's query table and query lists, answered by DuckDB over its Parquet files.

``queries.parquet`` (one row per query: every metric per arm, the deltas, ``missing_in``,
``rbo:<treatment>``, ``tags:<treatment>``, the segment columns; :mod:`abrank.explain.tables`)
is loaded once into an in-memory DuckDB table and filtered, sorted and paged there, so that
a readout of a million queries answers a page in milliseconds and no request builds a
pandas frame of the whole table. Both tables are held ordered by query id, so that one
query's rows are a lookup that DuckDB's zone maps narrow to a block or two (``rankings.parquet``
is loaded on the first query page); the side-by-side lists are
then built by :func:`abrank.explain.readout.query_lists` itself from those rows.

:class:`TableCache` keeps one :class:`QueryTable` per readout folder, replaced when a
file's modification time changes. DuckDB connections are not shared between threads: each
request works on its own ``cursor()`` of the table's connection.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import AbrankError, DataError
from abrank.metrics import parse_metric

#: What a page of the query table holds at most, and by default.
MAX_LIMIT, DEFAULT_LIMIT = 1000, 50
#: The reason tags of :mod:`abrank.explain.moves` (a filter may name any of these).
KNOWN_TAGS = (
    "relevant_promoted",
    "relevant_demoted",
    "relevant_entered",
    "relevant_dropped",
    "unjudged_entered",
    "missing_log",
)
#: The parameters of the query table (anything else is a bad request).
TABLE_PARAMETERS = ("metric", "treatment", "sort", "order", "segment", "tag", "limit", "offset")
_FIXED = ("query_id", "missing_in", "undefined")
_PREFIXES = ("delta:", "normaliser:", "rbo:", "tags:")


class ParameterError(AbrankError):
    """A request parameter that is not what it should be: 400, naming the parameter,
    what was expected and what was found."""

    def __init__(self, parameter: str, expected: str, found: object) -> None:
        self.parameter, self.expected, self.found = parameter, expected, found
        super().__init__(f"{parameter}: expected {expected}, got {found!r}")

    def to_dict(self) -> dict[str, Any]:
        """The error as the API's JSON body."""
        return {
            "error": str(self),
            "parameter": self.parameter,
            "expected": self.expected,
            "found": self.found,
        }


def quote(name: str) -> str:
    """``name`` as a DuckDB identifier (column names hold ``:`` and ``@``)."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class TableRequest:
    """A checked request for a page of the query table."""

    metric: str
    treatment: str
    sort: str = "delta"
    order: str = "asc"
    segments: tuple[tuple[str, str], ...] = ()
    tag: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-safe builtins (``segment`` as ``col:value`` texts)."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "sort": self.sort,
            "order": self.order,
            "segment": [f"{column}:{value}" for column, value in self.segments],
            "tag": self.tag,
            "limit": self.limit,
            "offset": self.offset,
        }


@dataclass(frozen=True)
class QueryPage:
    """A page of the query table: how many queries pass the filters (``total``) and the
    rows of this page, each ``query_id``, ``delta``, one value per arm (keyed by the arm's
    name), ``rbo``, ``tags``, ``missing_in``, ``undefined`` and the segment values."""

    request: TableRequest
    total: int
    rows: tuple[dict[str, Any], ...]
    arms: tuple[str, ...]
    segment_columns: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"total", "rows", ...}``: the API's answer."""
        return {
            "total": self.total,
            "rows": [dict(row) for row in self.rows],
            "arms": list(self.arms),
            **self.request.to_dict(),
        }


@dataclass(frozen=True)
class QueryDetail:
    """One query: its rows of the query table (``rows``; one per segment combination,
    usually one) and the arms' lists side by side (``lists``, what ``readout.query``
    gives: ``doc_id``, ``grade``, ``rank_<arm>``, ``contribution``)."""

    query_id: str
    metric: str
    treatment: str
    control: str
    arms: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    lists: pd.DataFrame = field(compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The query as JSON-safe builtins; ``lists`` as records (NaN as null)."""
        return {
            "query_id": self.query_id,
            "metric": self.metric,
            "treatment": self.treatment,
            "control": self.control,
            "arms": list(self.arms),
            "query": [dict(row) for row in self.rows],
            "rows": frame_records(self.lists),
        }


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame``'s rows as dicts of builtins, NaN as None (JSON has no NaN)."""
    names = [str(name) for name in frame.columns]
    return [
        {name: _plain(value) for name, value in zip(names, row, strict=True)}
        for row in frame.itertuples(index=False, name=None)
    ]


def _plain(value: Any) -> Any:
    """A DuckDB or NumPy value as a JSON-safe builtin (NaN as None, lists as lists)."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class _OneQuery:
    """What :func:`abrank.explain.readout.query_lists` reads of a readout (``summary``,
    ``model``, ``queries``, ``rankings``), holding one query's rows only, so that the
    side-by-side lists come from the library's own function without a scan of the whole
    rankings table."""

    summary: dict[str, Any]
    model: Any
    queries: pd.DataFrame
    rankings: pd.DataFrame


class QueryTable:
    """The explanation tables of one readout folder in DuckDB (see the module text)."""

    def __init__(self, folder: Path, summary: Mapping[str, Any]) -> None:
        import duckdb

        from abrank.readout.model import Summary

        self.folder = folder
        self.summary = dict(summary)
        self.model = Summary.from_dict(self.summary)
        self.metrics = tuple(str(m) for m in self.summary.get("metrics", []))
        arms = [str(arm["name"]) for arm in self.summary.get("arms", [])]
        self.control = str(self.model.control or arms[0])
        self.arms = (self.control, *[arm for arm in arms if arm != self.control])
        self.treatments = self.arms[1:]
        self.primary = str(self.summary.get("primary_metric") or self.metrics[0])
        self._lock = threading.Lock()
        self._rankings_loaded = False
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET enable_progress_bar = false")  # a server prints nothing
        path = folder / "queries.parquet"
        try:
            self._con.execute(
                "CREATE TABLE q AS SELECT * FROM read_parquet(?) ORDER BY query_id", [str(path)]
            )
        except duckdb.Error as exc:
            raise DataError(f"{path}: expected the query table abrank wrote, got {exc}") from None
        self.columns = tuple(str(row[0]) for row in self._con.execute("DESCRIBE q").fetchall())
        # the metrics the table splits by query (not the numeric metrics of log columns)
        held = tuple(m for m in self.metrics if f"{self.control}:{m}" in self.columns)
        if held and held != self.metrics:
            self.metrics = held
            if self.primary not in held:
                self.primary = held[0]
        arm_prefixes = tuple(f"{arm}:" for arm in self.arms)
        self.segment_columns = tuple(
            c
            for c in self.columns
            if c not in _FIXED and not c.startswith(_PREFIXES + arm_prefixes)
        )

    def cursor(self) -> Any:
        """A DuckDB cursor of this table's database, for the calling thread only."""
        return self._con.cursor()

    # ---------------------------------------------------------------- requests

    def request(self, params: Mapping[str, Sequence[str]]) -> TableRequest:
        """The checked request of the query string ``params`` (lists of values, as
        :func:`urllib.parse.parse_qs` gives them; empty values count as absent);
        :class:`ParameterError` naming the first bad one."""
        unknown = sorted(set(params) - set(TABLE_PARAMETERS))
        if unknown:
            raise ParameterError(unknown[0], f"one of {', '.join(TABLE_PARAMETERS)}", unknown[0])
        one = {name: _single(params, name) for name in TABLE_PARAMETERS if name not in ("segment",)}
        metric = self.metric(one["metric"])
        treatment = one["treatment"] or self.treatments[0]
        if treatment not in self.treatments:
            raise ParameterError("treatment", f"one of {', '.join(self.treatments)}", treatment)
        sort = one["sort"] or "delta"
        sorts = ("delta", "query_id", "rbo", *self.arms)
        if sort not in sorts:
            raise ParameterError("sort", f"one of {', '.join(sorts)}", sort)
        order = one["order"] or "asc"
        if order not in ("asc", "desc"):
            raise ParameterError("order", "asc or desc", order)
        segments = tuple(self._segment(text) for text in params.get("segment", []) if text)
        tag = one["tag"] or None
        if tag is not None and tag not in self.tags():
            raise ParameterError("tag", f"one of {', '.join(self.tags())}", tag)
        limit = _integer(one["limit"], "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        offset = _integer(one["offset"], "offset", 0, 0, None)
        return TableRequest(metric, treatment, sort, order, segments, tag, limit, offset)

    def metric(self, text: str | None) -> str:
        """The readout's metric named by ``text`` (any spelling the parser reads; default
        the primary); ParameterError naming the readout's metrics otherwise."""
        if not text:
            return self.primary
        try:
            name = parse_metric(text).name
        except AbrankError:
            name = None
        if name not in self.metrics:
            raise ParameterError("metric", f"one of {', '.join(self.metrics)}", text)
        return name

    def _segment(self, text: str) -> tuple[str, str]:
        column, sep, value = text.partition(":")
        if not sep or column not in self.segment_columns:
            expected = (
                "column:value with a segment column ("
                + (", ".join(self.segment_columns) or "this readout has none")
                + ")"
            )
            raise ParameterError("segment", expected, text)
        values = self.segment_values()[column]
        if value not in values:
            raise ParameterError("segment", f"a value of {column} ({', '.join(values)})", text)
        return column, value

    @functools.cached_property
    def _distinct(self) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
        cursor = self.cursor()
        try:
            values = {
                column: tuple(
                    str(row[0])
                    for row in cursor.execute(
                        f"SELECT DISTINCT {quote(column)} FROM q WHERE {quote(column)} IS NOT NULL "
                        f"ORDER BY 1"
                    ).fetchall()
                )
                for column in self.segment_columns
            }
            seen: set[str] = set()
            for treatment in self.treatments:
                column = quote(f"tags:{treatment}")
                if f"tags:{treatment}" in self.columns:
                    rows = cursor.execute(f"SELECT DISTINCT unnest({column}) FROM q").fetchall()
                    seen.update(str(row[0]) for row in rows if row[0] is not None)
        finally:
            cursor.close()
        tags = tuple(dict.fromkeys([*KNOWN_TAGS, *sorted(seen)]))
        return values, tags

    def segment_values(self) -> dict[str, tuple[str, ...]]:
        """Each segment column's values, sorted."""
        return self._distinct[0]

    def tags(self) -> tuple[str, ...]:
        """The tags a filter may name: the known ones, then any other the table holds."""
        return self._distinct[1]

    # ---------------------------------------------------------------- answers

    def page(self, request: TableRequest) -> QueryPage:
        """The page of the query table that ``request`` asks for (filters, then the sort,
        NULLs last and ties by query id, then limit and offset)."""
        metric, treatment = request.metric, request.treatment
        where, values = [], []
        for column, value in request.segments:
            where.append(f"{quote(column)} = ?")
            values.append(value)
        tags = f"tags:{treatment}"
        if request.tag is not None:
            if tags in self.columns:
                where.append(f"list_contains({quote(tags)}, ?)")
                values.append(request.tag)
            else:
                where.append("FALSE")
        condition = f"WHERE {' AND '.join(where)}" if where else ""
        delta = quote(f"delta:{treatment}:{metric}")
        rbo = f"rbo:{treatment}"
        selected = [
            "query_id",
            f"{delta} AS delta",
            *[f"{quote(f'{arm}:{metric}')} AS {quote(arm)}" for arm in self.arms],
            f"{quote(rbo)} AS rbo" if rbo in self.columns else "NULL AS rbo",
            f"{quote(tags)} AS tags" if tags in self.columns else "[]::VARCHAR[] AS tags",
            "missing_in",
            "undefined",
            *[quote(column) for column in self.segment_columns],
        ]
        key = {"delta": delta, "query_id": "query_id", "rbo": quote(rbo)}.get(
            request.sort, quote(f"{request.sort}:{metric}")
        )
        direction = "ASC" if request.order == "asc" else "DESC"
        sql = (
            f"SELECT {', '.join(selected)} FROM q {condition} "
            f"ORDER BY {key} {direction} NULLS LAST, query_id ASC LIMIT ? OFFSET ?"
        )
        cursor = self.cursor()
        try:
            total = int(cursor.execute(f"SELECT count(*) FROM q {condition}", values).fetchone()[0])
            result = cursor.execute(sql, [*values, request.limit, request.offset])
            names = [str(d[0]) for d in result.description]
            rows = tuple(
                {name: _plain(value) for name, value in zip(names, row, strict=True)}
                for row in result.fetchall()
            )
        finally:
            cursor.close()
        return QueryPage(request, total, rows, self.arms, self.segment_columns)

    def _load_rankings(self) -> None:
        import duckdb

        with self._lock:
            if self._rankings_loaded:
                return
            path = self.folder / "rankings.parquet"
            try:
                self._con.execute(
                    "CREATE TABLE r AS SELECT * FROM (SELECT row_number() OVER () AS _row, * "
                    "FROM read_parquet(?)) ORDER BY query_id, _row",
                    [str(path)],
                )
            except duckdb.Error as exc:
                raise DataError(f"{path}: expected the rankings abrank wrote, got {exc}") from None
            self._rankings_loaded = True

    def detail(
        self, query_id: str, metric: str | None = None, treatment: str | None = None
    ) -> QueryDetail | None:
        """The query ``query_id`` (compared as text), or None when the readout has no such
        query: its rows of the query table and :func:`abrank.explain.readout.query_lists`
        over its rankings rows."""
        from abrank.explain.readout import query_lists

        name = self.metric(metric)
        other = treatment or self.treatments[0]
        if other not in self.treatments:
            raise ParameterError("treatment", f"one of {', '.join(self.treatments)}", other)
        self._load_rankings()
        listed = "SELECT arm, query_id, doc_id, rank, grade FROM r"
        cursor = self.cursor()
        try:
            queries = _frame(cursor.execute("SELECT * FROM q WHERE query_id = ?", [query_id]))
            if queries.empty:
                return None
            rankings = _frame(
                cursor.execute(
                    f"{listed} WHERE query_id = ? ORDER BY list_position(?, arm), _row",
                    [query_id, list(self.arms)],
                )
            )
        finally:
            cursor.close()
        view = _OneQuery(self.summary, self.model, queries, rankings)
        if rankings.empty:
            lists = pd.DataFrame(
                columns=["doc_id", "grade", *[f"rank_{arm}" for arm in self.arms], "contribution"]
            )
        else:
            lists = query_lists(view, query_id, name, other)
        rows = tuple(frame_records(queries))
        return QueryDetail(query_id, name, other, self.control, self.arms, rows, lists)


def _frame(result: Any) -> pd.DataFrame:
    """A DuckDB result as a DataFrame of Python objects (text as ``str`` objects, DOUBLE
    columns as float64 with NaN for NULL): for a few rows, cheaper than ``.df()`` and what
    pandas' merges and maps over a few rows handle fastest (Arrow-backed text costs them
    about half the time of :func:`abrank.explain.readout.query_lists`)."""
    names = [str(d[0]) for d in result.description]
    kinds = [str(d[1]) for d in result.description]
    rows = result.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    data: dict[str, Any] = {}
    for name, kind, values in zip(names, kinds, columns, strict=True):
        if kind in ("DOUBLE", "FLOAT"):
            data[name] = np.array(values, dtype=np.float64)  # NULL (None) as NaN
        elif kind in ("INTEGER", "BIGINT", "SMALLINT", "TINYINT") and None not in values:
            data[name] = np.array(values, dtype=np.int64)
        else:
            data[name] = pd.Series(list(values), dtype=object)
    return pd.DataFrame(data, columns=names)


def _single(params: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = [value for value in params.get(name, []) if value != ""]
    if len(values) > 1:
        raise ParameterError(name, "one value", values)
    return values[0] if values else None


def _integer(text: str | None, name: str, default: int, low: int, high: int | None) -> int:
    if text is None:
        return default
    bounds = f"an integer from {low}" + (f" to {high}" if high is not None else " up")
    try:
        value = int(text)
    except ValueError:
        raise ParameterError(name, bounds, text) from None
    if value < low or (high is not None and value > high):
        raise ParameterError(name, bounds, text)
    return value


class TableCache:
    """One :class:`QueryTable` per readout folder, made on first use and made again when
    ``queries.parquet``, ``rankings.parquet`` or ``summary.json`` changes (their
    modification times and sizes are the key)."""

    def __init__(self) -> None:
        self._tables: dict[Path, tuple[tuple[int, ...], QueryTable]] = {}
        self._lock = threading.Lock()

    def get(self, folder: Path, summary: Callable[[], Mapping[str, Any]]) -> QueryTable:
        """The table of ``folder``; ``summary`` reads its summary.json, when the table is
        made."""
        stamp = _stamp(folder)
        with self._lock:
            held = self._tables.get(folder)
            if held is not None and held[0] == stamp:
                return held[1]
            table = QueryTable(folder, summary())
            self._tables[folder] = (stamp, table)
            return table


def _stamp(folder: Path) -> tuple[int, ...]:
    stamp: list[int] = []
    for name in ("queries.parquet", "rankings.parquet", "summary.json"):
        info = (folder / name).stat()
        stamp += [info.st_mtime_ns, info.st_size]
    return tuple(stamp)
