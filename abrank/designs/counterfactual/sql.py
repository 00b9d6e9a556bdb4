"""The counterfactual design's logs read and coded by an SQL engine (DuckDB, Spark).

:func:`code_logs_sql` is :func:`abrank.designs.counterfactual.pipeline.read_logs` on an
SQL engine: the engine reads the logs where they lie (every format, glob and window the
online design's SQL path reads), makes the online checks on them
(:func:`abrank.engines.sql.clicks.click_aggregates`, with the memory engine's messages),
the design's own (a ``query`` and ``doc_id`` on every row, a logged ``propensity`` in
(0, 1]), and turns every row's text ids into integer codes (query, document, (query,
document) pair, unit, impression) by joins on small dictionary tables. Only those codes
come back, as the :class:`~abrank.designs.counterfactual.logs.CodedLogs` that the NumPy
core reads, so that the propensities, the estimates and the checks are the memory
engine's.

The codes follow the memory engine's order where the numbers depend on it: units (whose
codes seed the propensities' unit bootstrap), queries and documents are numbered by their
text in byte order, within the first arm (control first) that shows them when each arm has
its own log (over every row, those of units dropped for being in two arms too);
impressions are numbered arm by arm (the logging arm's first, so that its impressions are
0..N-1), each arm's by their text. Pairs are numbered by (query, document) code, which
changes only the order of floating-point sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.config import Experiment
from abrank.designs.counterfactual.logs import CodedLogs, coded_logs
from abrank.errors import DataError

__all__ = ["SqlLogs", "code_logs_sql"]


@dataclass(frozen=True)
class SqlLogs:
    """What the design reads of the logs besides their codes, in the shape of
    :class:`~abrank.designs.online.logs.OnlineData`'s fields it uses: the files read
    (the readout's ``inputs``), the units seen in several arms, the log of each arm."""

    inputs: list[dict[str, Any]]
    mixed: Any  # abrank.io.MixedUnits
    paths: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {"inputs": list(self.inputs), "mixed": self.mixed.to_dict(), "paths": self.paths}


def code_logs_sql(
    experiment: Experiment, inputs: Any, choice: Any, say: Any
) -> tuple[SqlLogs, CodedLogs]:
    """The logs of ``experiment`` read, checked and coded by the SQL engine ``choice``
    (:class:`~abrank.analysis.engine.EngineChoice`); a DataError for bad input, worded
    as the memory engine's."""
    from abrank.analysis.engine import log_sources
    from abrank.analysis.load import shown_files
    from abrank.designs.online.logs import needed_columns
    from abrank.engines.sql import open_backend
    from abrank.engines.sql.clicks import ClickRequest, click_aggregates
    from abrank.engines.sql.sources import Layout
    from abrank.metrics import parse_metric

    names = tuple(arm.name for arm in experiment.arms)
    unit = experiment.analysis.unit or "user_id"
    sources = log_sources(experiment, inputs, choice.name)
    files = [file for source, _ in sources for file in source.files]
    say(f"checking the logs on {choice.name} ({shown_files(files)})")
    request = ClickRequest(
        metrics=tuple(parse_metric(m) for m in experiment.metrics),
        arms=names,
        unit=unit,
        drop_mixed=experiment.analysis.mixed_units == "drop",
    )
    backend = open_backend(choice.name, choice.options, choice.connection)
    try:
        checked = click_aggregates(backend, [s for s, _ in sources], request)
        paths = {name: next(s.label for s, _ in sources if s.arm in (None, name)) for name in names}
        layouts = [
            Layout.open(backend, f"abrank_cf_{i}", source) for i, (source, _) in enumerate(sources)
        ]
        column = experiment.propensities == "column"
        keep = {"impression_id", "rank", "clicked", *needed_columns(experiment)}
        keep |= {"doc_id", "query"} | ({"propensity"} if column else set())
        for layout in layouts:
            _require_columns(layout, keep, paths, names, column)
        dropped = sorted(checked.mixed.units) if request.drop_mixed else []
        say(f"coding the logs on {choice.name}")
        logs = _coded(backend, layouts, names, unit, column, dropped, paths)
    finally:
        backend.close()
    read = [
        log.entry(file, checked.file_rows.get(file, 0))
        for source, log in sources
        for file in source.files
    ]
    return SqlLogs(inputs=read, mixed=checked.mixed, paths=paths), logs


def _arms_of(layout: Any, names: tuple[str, ...]) -> list[str]:
    source = layout.source
    return [source.arm] if source.arm is not None else list(names)


def _require_columns(
    layout: Any, keep: set[str], paths: dict[str, str], names: tuple[str, ...], column: bool
) -> None:
    """A ``query`` (and ``propensity`` when the config says so) column in the log, named
    as the memory engine names it (with the columns it read)."""
    canon = {log: canonical for canonical, log in layout.column.items()}
    listing = ", ".join(canon.get(n, n) for n in layout.names if canon.get(n, n) in keep)
    path = paths[_arms_of(layout, names)[0]]
    if "query" not in layout.column:
        raise DataError(
            f"{path}: query: expected a `query` column (the query text or id that candidate "
            f"rankings are keyed by), found columns: {listing}"
        )
    if "doc_id" not in layout.column:
        raise DataError(
            f"{path}: doc_id: expected a `doc_id` column (the document shown at each rank), "
            f"found columns: {listing}"
        )
    if column and "propensity" not in layout.column:
        raise DataError(
            f"{path}: propensities: column: expected a `propensity` column, found columns: "
            f"{listing}"
        )


def _rows_sql(layout: Any, index: int, names: tuple[str, ...], unit: str, column: bool) -> str:
    """One source's rows: its place (source, file, row), arm code, ids as text, rank,
    click (and logged propensity)."""
    from abrank.engines.sql.sources import as_text, clicked_flag, literal, number, text_id

    source = layout.source
    arm = (
        f"CAST({literal(source.arm)} AS VARCHAR)"
        if source.arm is not None
        else f"CAST({layout.ref('arm')} AS VARCHAR)"
    )
    cases = " ".join(f"WHEN {literal(name)} THEN {i}" for i, name in enumerate(names))

    def ident(canon: str) -> str:
        return text_id(layout.ref(canon), layout.kind_of(canon))

    files = " ".join(f"WHEN {literal(str(f))} THEN {i}" for i, f in enumerate(source.files))
    parts = [
        f"{int(index)} AS source_index",
        f"CASE abrank_file {files} ELSE {len(source.files)} END AS file_index",
        "abrank_file AS log_file",
        "abrank_row AS log_row",
        f"CASE {arm} {cases} END AS arm",
        f"{ident('impression_id')} AS impression_id",
        f"{ident(unit)} AS unit",
        f"{ident('query')} AS query",
        f"{ident('doc_id')} AS doc_id",
        f"CAST({number(layout.ref('rank'), layout.kind_of('rank'), source.decimal)} AS BIGINT) "
        "AS rank",
        f"CAST({clicked_flag(layout.ref('clicked'), layout.kind_of('clicked'))} AS DOUBLE) "
        "AS clicked",
    ]
    if column:
        ref, kind = layout.ref("propensity"), layout.kind_of("propensity")
        parts += [
            f"{number(ref, kind, source.decimal)} AS propensity",
            f"{as_text(ref, kind)} AS propensity_text",
        ]
    return f"SELECT {', '.join(parts)} FROM {layout.relation}"


def _coded(
    backend: Any,
    layouts: list[Any],
    names: tuple[str, ...],
    unit: str,
    column: bool,
    dropped: list[str],
    paths: dict[str, str],
) -> CodedLogs:
    """The rows coded in the engine, fetched as arrays."""
    import pyarrow as pa

    from abrank.engines.sql import compile_sql

    def run(sql: str) -> pd.DataFrame:
        return backend.run(compile_sql(sql, backend.dialect)).to_pandas()

    def materialize(name: str, sql: str) -> None:
        backend.materialize(name, compile_sql(sql, backend.dialect))

    union = " UNION ALL ".join(
        _rows_sql(layout, i, names, unit, column) for i, layout in enumerate(layouts)
    )
    materialize("abrank_cf_all", f"SELECT * FROM ({union}) AS logs")
    _check_rows(run, "abrank_cf_all", column, paths, names, layouts)
    # the ids are numbered over every row, as the memory engine's categories are (the
    # rows of the units dropped too); the rows coded are those kept
    rows = "abrank_cf_all"
    if dropped:
        backend.register_table("abrank_cf_dropped", pa.table({"unit": dropped}))
        materialize(
            "abrank_cf_rows",
            "SELECT * FROM abrank_cf_all WHERE NOT unit IN (SELECT unit FROM abrank_cf_dropped)",
        )
        rows = "abrank_cf_rows"
    # per arm logs: the memory engine numbers each id within the first arm showing it
    per_arm = all(layout.source.arm is not None for layout in layouts)
    dictionaries = {}
    for name in ("query", "unit", "doc_id"):
        first = "MIN(arm)" if per_arm else "0"
        sql = (
            f"SELECT {name} AS label, ROW_NUMBER() OVER (ORDER BY {first}, {name}) - 1 AS code "
            f"FROM abrank_cf_all GROUP BY {name}"
        )
        materialize(f"abrank_cf_{name}", sql)
        dictionaries[name] = run(f"SELECT label FROM abrank_cf_{name} ORDER BY code")["label"]
    materialize(
        "abrank_cf_impressions",
        # numbered arm by arm by their text, the order the memory engine reads them in
        "SELECT arm, impression_id, ROW_NUMBER() OVER (ORDER BY arm, impression_id) - 1 "
        "AS code, "
        f"MIN(query) AS query FROM {rows} GROUP BY arm, impression_id",
    )
    coded = (
        f"SELECT i.code AS impression, q.code AS query, d.code AS doc, u.code AS unit, r.rank, "
        f"r.clicked{', r.propensity' if column else ''} FROM {rows} AS r "
        "JOIN abrank_cf_impressions AS i ON r.arm = i.arm AND r.impression_id = i.impression_id "
        "JOIN abrank_cf_query AS q ON r.query = q.label "
        "JOIN abrank_cf_doc_id AS d ON r.doc_id = d.label "
        "JOIN abrank_cf_unit AS u ON r.unit = u.label ORDER BY impression, rank"
    )
    frame = run(coded)
    impressions = run(
        "SELECT i.arm, q.code AS query FROM abrank_cf_impressions AS i "
        "JOIN abrank_cf_query AS q ON i.query = q.label ORDER BY i.code"
    )
    queries = pd.Index(dictionaries["query"].astype(str), dtype="str")
    units = pd.Index(dictionaries["unit"].astype(str), dtype="str")
    docs = pd.Index(dictionaries["doc_id"].astype(str), dtype="str")
    impression = frame["impression"].to_numpy(dtype=np.int64)
    rank = frame["rank"].to_numpy(dtype=np.int64)
    key = frame["query"].to_numpy(dtype=np.int64) * max(len(docs), 1)
    key += frame["doc"].to_numpy(dtype=np.int64)
    pairs, pair = np.unique(key, return_inverse=True)
    arm_of = impressions["arm"].to_numpy(dtype=np.int64)
    return coded_logs(
        impression=impression,
        pair=pair.astype(np.int64).reshape(-1),
        rank=rank,
        clicked=frame["clicked"].to_numpy(dtype=np.float64),
        unit=frame["unit"].to_numpy(dtype=np.int64),
        query=impressions["query"].to_numpy(dtype=np.int64),
        arm_of=arm_of,
        queries=queries,
        units=units,
        docs=docs,
        pairs=pd.Index(pairs),
        arms=names,
        propensity=frame["propensity"].to_numpy(dtype=np.float64) if column else None,
    )


def _check_rows(
    run: Any,
    rows: str,
    column: bool,
    paths: dict[str, str],
    names: tuple[str, ...],
    layouts: list[Any],
) -> None:
    """The design's checks of the rows (the online ones were made): a query on every row,
    a logged propensity in (0, 1] on every row."""
    bad = [
        "CASE WHEN query IS NULL THEN 1 ELSE 0 END",
        "CASE WHEN doc_id IS NULL OR doc_id = '' THEN 1 ELSE 0 END",
    ]
    if column:
        bad.append(
            "CASE WHEN propensity IS NULL OR isnan(propensity) OR propensity <= 0 "
            "OR propensity > 1 THEN 1 ELSE 0 END"
        )
    sums = ", ".join(f"MAX({b}) AS bad_{i}" for i, b in enumerate(bad))
    found = run(f"SELECT {sums} FROM {rows}")
    if not len(found):
        return
    flags = [int(found[f"bad_{i}"].fillna(0).iloc[0]) for i in range(len(bad))]
    if not any(flags):
        return

    def first(condition: str) -> dict[str, Any]:
        table = run(
            f"SELECT * FROM {rows} WHERE {condition} ORDER BY arm, log_file, log_row LIMIT 1"
        )
        return table.iloc[0].to_dict()

    if flags[0]:
        row = first("query IS NULL")
        raise DataError(
            f"{paths[names[int(row['arm'])]]}: query: expected a query on every row, got "
            "empty values"
        )
    if flags[1]:
        row = first("doc_id IS NULL OR doc_id = ''")
        raise DataError(
            f"{paths[names[int(row['arm'])]]}: doc_id: expected a document on every row, got "
            "empty values"
        )
    row = first("propensity IS NULL OR isnan(propensity) OR propensity <= 0 OR propensity > 1")
    raise DataError(
        f"{paths[names[int(row['arm'])]]}: propensity: expected a number in (0, 1] on every "
        f"row, got {str(row['propensity_text'])!r}"
    )
