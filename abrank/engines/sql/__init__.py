"""SQL engines: one definition of each aggregation, compiled for every SQL engine.

The click metrics of an online log and their per-unit sums (DESIGN.md "Online logs",
"Clustered inference") are defined once, in :mod:`abrank.engines.sql.clicks`, and the
interleaving credits and their per-unit counts (DESIGN.md "Interleaving") in
:mod:`abrank.engines.sql.interleaved`, and the judged metrics of offline replays
(trec_eval's numbers) in :mod:`abrank.engines.sql.judged`, as SQL in sqlglot's neutral
dialect over relations of canonical columns (:mod:`abrank.engines.sql.sources` opens the
logs so, :mod:`abrank.engines.sql.rankings` reads and checks rankings and judgments);
:func:`compile_sql` turns a definition into the dialect of the engine that runs it. A backend module
(:mod:`abrank.engines.sql.duckdb`, :mod:`abrank.engines.sql.spark`; :data:`BACKENDS` names
them, :func:`open_backend` opens one by engine name) only says how to open a log as a relation,
how to run a statement and how the engine reports failures (:class:`Backend`): it holds
no aggregation of its own, so a new engine is one small module, not a second copy of the
metrics.

Why SQL transpiled by sqlglot rather than Ibis expressions: both compile one definition
to DuckDB and Spark (Ibis itself compiles through sqlglot), but

- sqlglot is one pure-Python wheel; ``ibis-framework[duckdb]`` brings a dozen packages and
  a deferred-expression API that has broken between its yearly major releases;
- the checks of bad input need the first bad row with its file and row number, and the
  engine's own out-of-memory and I/O errors: plain statements run by the backend keep
  those one step away, where Ibis hides them behind its execution layer;
- the definitions read as the SQL an analyst would write by hand, and the benchmark
  compares them with exactly that (``benchmarks/bench_engines.py``).

Results come back as Arrow tables of a few numbers per unit; the statistics then run on
them in NumPy as for the memory engine.

The Spark backend has this shape: its ``register`` reads the files with ``spark.read``
(the path of each row's file as ``abrank_file``, the row of a Parquet file as
``abrank_row``) into a temporary view, its ``register_lines`` reads text files with
``spark.read.text``, ``materialize`` is a cached temporary view, and ``run`` is
``spark.sql(...).toArrow()``, with ``dialect = "spark"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from abrank.errors import ConfigError

__all__ = ["BACKENDS", "Backend", "compile_sql", "open_backend", "quote"]

#: Engine name -> ``module:class`` of its backend. A backend class takes the caller's
#: connection or session (None: it opens its own, from the options) and the engine's
#: options (:attr:`abrank.config.engine.EngineConfig.options`). A new SQL engine is one
#: module and one entry here.
BACKENDS: dict[str, str] = {
    "duckdb": "abrank.engines.sql.duckdb:DuckDBBackend",
    "spark": "abrank.engines.sql.spark:SparkBackend",
}


class Backend(Protocol):
    """What the shared definitions ask of an SQL engine."""

    #: sqlglot's name of the engine's dialect ("duckdb", "spark")
    dialect: str
    #: whether rankings whose ranks are 1..n are numbered from their ranks, the window
    #: running over the judged rows only (:mod:`abrank.engines.sql.numbering`); False
    #: where a window over every row pays for itself (absent: False)
    numbers_from_ranks: bool
    #: whether rows that come back in an order are best sorted by the engine (its ORDER
    #: BY) rather than by Arrow once they are back: False where a sort of every row costs
    #: the engine a job of its own (absent: True)
    sorts_fetched_rows: bool
    #: whether the statements over a ranking log in Parquet read its files again rather
    #: than a kept copy of its parsed rows (:meth:`materialize`): True where a scan of the
    #: columns a statement reads costs less than keeping every row (absent: False)
    rereads_parquet: bool
    #: whether an offline arm's kept numbered rows hold every ranked row even when no
    #: explanation table reads them: True where they are partitioned by query, so that
    #: the repeated-pair count and the per-query counts read them without moving a row;
    #: False where those cost the same on the parsed rows, and only the judged rows are
    #: kept (absent: True)
    keeps_every_numbered_row: bool

    def register(self, name: str, source: object) -> list[tuple[str, str]]:
        """Open one log source (:class:`abrank.engines.sql.sources.LogSource`) as the
        relation ``name``, with its columns plus ``abrank_file`` (the file of each row)
        and ``abrank_row`` (its 0-based row in that file, NULL where the engine cannot
        tell); return the log's own columns as (name, kind), kind one of ``bool``,
        ``int``, ``float``, ``text``, ``other``."""
        ...

    def register_lines(self, name: str, files: Sequence[str]) -> None:
        """Make the text lines of ``files`` (gzip-compressed ones read through) the
        relation ``name``: ``abrank_file`` (the file), ``abrank_row`` (the 0-based line
        number in that file; NULL where the engine cannot tell) and ``line`` (the text,
        NULL or empty for an empty line). Splitting and typing are left to the
        definitions (:mod:`abrank.engines.sql.rankings`)."""
        ...

    def materialize(self, name: str, sql: str, *, by: str | None = None) -> None:
        """Make the result of one compiled statement the relation ``name``, computed once
        (parsed and typed input rows that several statements read; the engine may spill
        it to disk). DuckDB: a temporary table; Spark: a cached temporary view. ``by``: a
        column that the statements reading it group, join or number by (``query_id``);
        an engine that spreads rows over workers keeps them spread by it, so that those
        statements move no row (Spark); others may ignore it."""
        ...

    def drop(self, name: str) -> None:
        """Forget the relation ``name`` (and what the engine kept for it), once no later
        statement reads it: the text lines of a file, once its rows are materialized."""
        ...

    def register_table(self, name: str, table: pa.Table) -> None:
        """Make a small Arrow table (e.g. the units to leave out) the relation ``name``."""
        ...

    def run(self, sql: str) -> pa.Table:
        """Run one compiled statement and return its result (engine failures become
        abrank errors that name the log)."""
        ...

    def close(self) -> None:
        """Drop the relations registered; close the connection (or stop the session) only
        when the backend opened it."""
        ...


def open_backend(
    name: str, options: Mapping[str, Any] | None = None, session_or_connection: Any = None
) -> Backend:
    """The backend of SQL engine ``name`` on the caller's DuckDB connection or SparkSession
    (used as it is, not closed), or on one it opens with ``options``; a ConfigError for an
    engine without one, or one whose packages are missing (saying what to install)."""
    target = BACKENDS.get(name) if isinstance(name, str) else None
    if target is None:
        listed = ", ".join(BACKENDS)
        raise ConfigError(f"engine: expected an SQL engine ({listed}), got {name!r}")
    module, _, cls = target.partition(":")
    backend = getattr(importlib.import_module(module), cls)
    return backend(session_or_connection, options)


def compile_sql(sql: str, dialect: str) -> str:
    """A definition in the neutral dialect, written for ``dialect`` (one statement)."""
    import sqlglot

    return sqlglot.transpile(sql, read=None, write=dialect)[0]


def quote(name: str) -> str:
    """A column name as a quoted identifier of the neutral dialect."""
    return '"' + name.replace('"', '""') + '"'
