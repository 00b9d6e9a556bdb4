"""Interleaving credits and their per-unit counts, defined once for every SQL engine.

The same numbers as the memory engine's :func:`abrank.interleaving.impression_outcomes`
followed by the per-unit counts the clustered preference test reads
(:func:`abrank.designs.interleaved.outcomes.unit_counts`), computed where the log lies. Per
impression: each team's credited clicks (every click, or the clicks with ``dwell >=
sat_dwell``; a click without a dwell is not satisfied), whether any result was clicked,
the team of the first result (rank 1) and which teams showed a result. Per (treatment,
control) pair and credit the treatment wins an impression when its team got more credited
clicks, loses when fewer and ties otherwise; with more than two teams (multileaving) each
pair is scored on its own, the other teams' clicks ignored. Then per unit, overall and per
segment value (one GROUPING SETS query, one scan of the log): the impressions won, tied
and lost per (pair, credit), those with a click, those each team started and those each
team showed a result in, and, given the source rankings' agreement depth per query, the
impressions whose list both rankings would have shown alike. Only those counts (a few
numbers per unit) come back to Python.

Units come back in the memory engine's order: by their first impression, impression ids
compared as text in byte order (the order of :func:`abrank.io.read_impressions`), which
both SQL engines' string comparison follows; the resampling then draws the same units.

The happy path is one scan, plus a light one for the rows of each file. The counts carry
the number of bad impressions beside them; only when it is not zero do further statements
look for the first bad row or impression, so that the message names the file, the row
(where the engine tells it) and the impression: ids present, ``clicked`` 0/1, ranks whole
numbers >= 1 and exactly 1..n in each impression, a team that names an arm, one unit (and
one value of each segment column) per impression, dwell times >= 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.engines.sql import Backend, compile_sql
from abrank.engines.sql.sources import (
    IMPRESSION_CHECKS,
    IMPRESSION_PROBLEMS,
    RANK_BITS,
    CellCheck,
    Layout,
    LogSource,
    cell_checks,
    check_deep_ranks,
    check_rows_per_file,
    literal,
    missing_id,
    native_ids,
    raise_bad_cell,
    raise_impression_problem,
    row_columns,
    row_place,
    selected_values,
    shown_path,
    text_id,
)
from abrank.errors import DataError

__all__ = [
    "COUNT_COLUMNS",
    "InterleavedAggregates",
    "InterleavedRequest",
    "interleaved_aggregates",
]

#: The relation of the source rankings' agreement depth per query.
_AGREEMENT = "abrank_agreement"
#: The columns of every per-unit table of :class:`InterleavedAggregates`.
COUNT_COLUMNS: tuple[str, ...] = (
    "wins",
    "ties",
    "losses",
    "clicked",
    "first_control",
    "first_treatment",
)

Key = tuple[str, str, str]  # (control, treatment, credit)


@dataclass(frozen=True)
class InterleavedRequest:
    """What to count: the arms (the team values), the (control, treatment) pairs, the
    credits (``clicks``, ``sat_clicks``), the unit column (``impression_id``: each
    impression its own unit), segment columns, the dwell of a satisfied click, and the
    source rankings' agreement depth (a table of ``query`` text and ``depth``: the leading
    ranks both rankings share) or None."""

    arms: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    credits: tuple[str, ...]
    unit: str = "user_id"
    segments: tuple[str, ...] = ()
    sat_dwell: float = 30.0
    agreement: pa.Table | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "arms": list(self.arms),
            "pairs": [list(p) for p in self.pairs],
            "credits": list(self.credits),
            "unit": self.unit,
            "segments": list(self.segments),
            "sat_dwell": float(self.sat_dwell),
            "agreement": None if self.agreement is None else int(self.agreement.num_rows),
        }


@dataclass(frozen=True)
class InterleavedAggregates:
    """The per-unit counts of every (control, treatment, credit): ``counts[key]`` indexed
    by unit (text, in order of each unit's first impression) with :data:`COUNT_COLUMNS`;
    ``segment_counts[column][key]`` indexed by (segment value as text, unit), values in
    text order. Also the log's totals (impressions, units, impressions with a click), per
    arm the impressions and units it showed a result to and the impressions it started,
    the same-list counts (compared, same, unmatched; None without an agreement table) and
    the rows of each file read."""

    counts: dict[Key, pd.DataFrame]
    segment_counts: dict[str, dict[Key, pd.DataFrame]]
    impressions: int
    units: int
    clicked: int
    per_arm: dict[str, tuple[int, int]]
    first_team: dict[str, int]
    same_lists: tuple[int, int, int] | None
    file_rows: dict[str, int]
    fixed_lists: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Totals, JSON-safe."""
        return {
            "impressions": self.impressions,
            "units": self.units,
            "clicked": self.clicked,
            "per_arm": {arm: list(n) for arm, n in self.per_arm.items()},
            "first_team": dict(self.first_team),
            "same_lists": None if self.same_lists is None else list(self.same_lists),
            "file_rows": dict(self.file_rows),
        }


def interleaved_aggregates(
    backend: Backend, sources: Sequence[LogSource], request: InterleavedRequest
) -> InterleavedAggregates:
    """The per-unit counts of an interleaved log, computed by ``backend``.

    Bad input is a DataError naming the log: a missing column (the columns found are
    listed), a bad cell or a team that names no arm (its file, row and impression), an
    impression whose ranks are not 1..n or that has two units or segment values, an arm
    that contributed no result, an empty log.
    """
    layouts = [_layout(backend, i, source, request) for i, source in enumerate(sources)]
    if request.agreement is not None:
        backend.register_table(_AGREEMENT, request.agreement)
    rows = _rows_sql(layouts, request)
    several_files = sum(len(layout.source.files) for layout in layouts) > 1
    arrow = backend.run(compile_sql(_counts_sql(rows, request, several_files), backend.dialect))
    table = arrow.to_pandas()
    labels = ", ".join(dict.fromkeys(layout.source.label for layout in layouts))
    file_rows = _file_rows(backend, layouts)
    check_rows_per_file(layouts, file_rows)
    if not len(table):
        raise DataError(f"{labels}: expected impressions, got an empty log")
    if int(table["bad"].sum()):
        _raise_first_problem(backend, rows, layouts, request, several_files)
    if float(table["top"].max()) > RANK_BITS:
        check_deep_ranks(backend, rows, layouts)
    overall = np.ones(len(table), dtype=bool)
    for i in range(len(request.segments)):
        overall &= table[f"grouped_{i}"].to_numpy() == 1
    units = table[overall]
    shown = {
        arm: units[f"shown_{k}"].to_numpy(dtype=np.int64) for k, arm in enumerate(request.arms)
    }
    absent = [arm for arm, n in shown.items() if not n.sum()]
    if absent:
        raise DataError(
            f"{labels}: team: expected results from every arm ({', '.join(request.arms)}), "
            f"got none from {', '.join(repr(a) for a in absent)}"
        )
    impressions = int(units["impressions"].sum())
    same = None
    if request.agreement is not None:
        compared = int(units["compared"].sum())
        same = (compared, int(units["same"].sum()), impressions - compared)
    counts, segment_counts = _split(table, arrow, overall, request)
    return InterleavedAggregates(
        counts=counts,
        segment_counts=segment_counts,
        impressions=impressions,
        units=int(len(units)),
        clicked=int(units["clicked"].sum()),
        per_arm={arm: (int(n.sum()), int(np.count_nonzero(n))) for arm, n in shown.items()},
        first_team={arm: int(units[f"first_{k}"].sum()) for k, arm in enumerate(request.arms)},
        same_lists=same,
        file_rows=file_rows,
        fixed_lists=_fixed_lists(backend, layouts),
    )


def _fixed_lists(backend: Backend, layouts: Sequence[Layout]) -> tuple[int, int] | None:
    """(queries seen in two impressions or more, those whose impressions all show one list)
    as :func:`abrank.interleaving.fixed_lists` counts them; None when a source has no
    query column. One list: at every rank any impression of the query shows, every
    impression shows a result, the same document and the same team."""
    if not all("query" in layout.column for layout in layouts):
        return None

    def text(layout: Layout, canon: str) -> str:
        return text_id(layout.ref(canon), layout.kind_of(canon))

    union = " UNION ALL ".join(
        f"SELECT {text(layout, 'impression_id')} AS impression_id, {text(layout, 'query')} AS "
        f"query, CAST({layout.ref('rank')} AS VARCHAR) AS rank, {text(layout, 'doc_id')} AS doc, "
        f"{text(layout, 'team')} AS team FROM {layout.relation}"
        for layout in layouts
    )
    sql = (
        f"WITH shown AS ({union}), "
        "heads AS (SELECT impression_id, MIN(query) AS query FROM shown GROUP BY impression_id), "
        "visits AS (SELECT query, COUNT(*) AS n FROM heads GROUP BY query), "
        "cells AS (SELECT heads.query AS query, shown.rank AS rank, COUNT(*) AS n, "
        "COUNT(DISTINCT shown.doc) AS docs, COUNT(DISTINCT shown.team) AS teams FROM shown "
        "JOIN heads ON shown.impression_id = heads.impression_id GROUP BY heads.query, shown.rank), "
        "per_query AS (SELECT visits.query AS query, MAX(CASE WHEN cells.n <> visits.n OR "
        "cells.docs <> 1 OR cells.teams <> 1 THEN 1 ELSE 0 END) AS varied FROM visits JOIN cells "
        "ON cells.query = visits.query WHERE visits.n >= 2 GROUP BY visits.query) "
        "SELECT CAST(COUNT(*) AS BIGINT) AS queries, "
        "CAST(COALESCE(SUM(1 - varied), 0) AS BIGINT) AS fixed FROM per_query"
    )
    row = backend.run(compile_sql(sql, backend.dialect)).to_pylist()[0]
    return int(row["queries"]), int(row["fixed"])


# --------------------------------------------------------------------------- columns


def _layout(backend: Backend, index: int, source: LogSource, request: InterleavedRequest) -> Layout:
    """One source registered as a relation, with the columns the request reads checked."""
    layout = Layout.open(backend, f"abrank_interleaved_{index}", source)
    wanted = [("team", "the arm that contributed each result"), (request.unit, "analysis.unit")]
    wanted += [(c, "segments.columns") for c in request.segments]
    if "sat_clicks" in request.credits:
        wanted.append(("dwell", "metrics: sat_clicks counts the clicks by their dwell time"))
    for column, hint in wanted:
        if column not in layout.column:
            raise DataError(
                f"{source.label}: expected a {column} column ({hint}), found columns: "
                f"{layout.listing}"
            )
    return layout


def _ids(request: InterleavedRequest) -> tuple[str, ...]:
    """The id columns of the rows: the impression, the unit and (checked per impression
    too, as the memory engine's reader does) the user."""
    return tuple(dict.fromkeys(("impression_id", request.unit, "user_id")))


def _own_user(request: InterleavedRequest) -> bool:
    """The user is checked apart from the unit (the unit is another column)."""
    return request.unit != "user_id"


def _source_sql(layout: Layout, request: InterleavedRequest, native: set[str]) -> str:
    """One source's rows in canonical columns: those of
    :func:`~abrank.engines.sql.sources.row_columns`, the team (text and its arm's index,
    NULL for a team that names no arm), the user, the segments and the query."""
    team = text_id(layout.ref("team"), layout.kind_of("team"))
    index = " ".join(f"WHEN {literal(arm)} THEN {k}" for k, arm in enumerate(request.arms))
    parts = [
        *row_columns(layout, request.unit, native, "sat_clicks" in request.credits),
        f"{team} AS team",
        f"CASE {team} {index} END AS team_index",
    ]
    if _own_user(request):
        user = layout.ref("user_id")
        if "user_id" not in native:
            user = text_id(user, layout.kind_of("user_id"))
        parts.append(f"{user} AS user_key")
    parts += [f"{layout.ref(c)} AS segment_{i}" for i, c in enumerate(request.segments)]
    if request.agreement is not None and "query" in layout.column:
        parts.append(f"{text_id(layout.ref('query'), layout.kind_of('query'))} AS query")
    elif request.agreement is not None:
        parts.append("CAST(NULL AS VARCHAR) AS query")
    return f"SELECT {', '.join(parts)} FROM {layout.relation}"


def _rows_sql(layouts: Sequence[Layout], request: InterleavedRequest) -> str:
    """Every source's rows as one relation, with ``row_bad`` (1 for a bad cell)."""
    native = native_ids(layouts, _ids(request))
    union = " UNION ALL ".join(_source_sql(layout, request, native) for layout in layouts)
    flag = " OR ".join(f"({check.condition})" for check in _row_checks(layouts, request, native))
    return f"SELECT *, CASE WHEN {flag} THEN 1 ELSE 0 END AS row_bad FROM ({union}) AS logs"


def _row_checks(
    layouts: Sequence[Layout], request: InterleavedRequest, native: set[str]
) -> list[CellCheck]:
    """The checks of a row's cells, in the memory engine's order: ids (the team's
    among them), ``clicked``, rank, dwell, segment values, then team values that name no
    arm."""
    checks = cell_checks(layouts, request.unit, native, "sat_clicks" in request.credits)
    teams = [
        CellCheck("team", "team IS NULL OR team = ''", "a non-empty id"),
        CellCheck(
            "team",
            "team_index IS NULL",
            f"one of the arms ({', '.join(request.arms)})",
            text="team",
            cell_kind="label",
        ),
    ]
    if _own_user(request):
        teams.insert(
            0, CellCheck("user_id", missing_id("user_key", native, "user_id"), "a non-empty id")
        )
    checks[2:2] = teams
    checks += [
        CellCheck(column, f"segment_{i} IS NULL", "a segment value")
        for i, column in enumerate(request.segments)
    ]
    return checks


# --------------------------------------------------------------------------- counts


def _credit_column(credit: str, k: int) -> str:
    return f"{'sat' if credit == 'sat_clicks' else 'clicks'}_{k}"


def _impressions_sql(rows: str, request: InterleavedRequest, several_files: bool) -> str:
    """One row per impression: its unit, user and segment values (with their maxima, to
    find an impression that has two), its rows' checks, its first team, whether it was
    clicked, and per team its clicks, satisfied clicks and whether it showed a result."""
    parts = [
        "impression_id",
        "MIN(unit) AS unit",
        "MAX(unit) AS unit_max",
        *IMPRESSION_CHECKS,
        "MAX(clicked) AS clicked",
        "MAX(CASE WHEN rank = 1 THEN team_index END) AS first_team",
    ]
    if _own_user(request):
        parts += ["MIN(user_key) AS user_key", "MAX(user_key) AS user_max"]
    sat = "sat_clicks" in request.credits
    for k in range(len(request.arms)):
        on = f"team_index = {k}"
        parts.append(f"SUM(CASE WHEN {on} THEN clicked ELSE 0 END) AS clicks_{k}")
        if sat:
            parts.append(
                f"SUM(CASE WHEN {on} AND dwell >= {float(request.sat_dwell)!r} THEN clicked "
                f"ELSE 0 END) AS sat_{k}"
            )
        parts.append(f"MAX(CASE WHEN {on} THEN 1 ELSE 0 END) AS shown_{k}")
    for i in range(len(request.segments)):
        parts += [f"MIN(segment_{i}) AS segment_{i}", f"MAX(segment_{i}) AS segment_{i}_max"]
    if request.agreement is not None:
        parts.append("MAX(CASE WHEN rank = 1 THEN query END) AS query")
    if several_files:
        parts += ["MIN(log_file) AS file_min", "MAX(log_file) AS file_max"]
    return f"SELECT {', '.join(parts)} FROM ({rows}) AS log_rows GROUP BY impression_id"


def _impression_bad(request: InterleavedRequest, several_files: bool) -> str:
    """The condition of a bad impression (over :func:`_impressions_sql`'s columns)."""
    bad = [
        *IMPRESSION_PROBLEMS,
        "unit <> unit_max",
        *(["user_key <> user_max"] if _own_user(request) else []),
        *[f"segment_{i} <> segment_{i}_max" for i in range(len(request.segments))],
    ]
    if several_files:
        bad.append("file_min <> file_max")
    return " OR ".join(f"({condition})" for condition in bad)


def _counts_sql(rows: str, request: InterleavedRequest, several_files: bool) -> str:
    """Per unit and per (segment value, unit): the counts of :class:`InterleavedAggregates`
    (columns ``w_j`` / ``l_j`` for the j-th (pair, credit)), the bad impressions, the top
    rank and each unit's first impression (as text), by which the rows are ordered;
    ``grouped_i`` is 1 on the rows that do not break down by segment i."""
    impressions = _impressions_sql(rows, request, several_files)
    source = f"({impressions}) AS per_impression"
    depth = "NULL"
    if request.agreement is not None:
        source += f" LEFT JOIN {_AGREEMENT} AS agreement ON per_impression.query = agreement.query"
        depth = "agreement.depth"
    segments = [f"segment_{i}" for i in range(len(request.segments))]
    arms = dict((arm, k) for k, arm in enumerate(request.arms))
    values = []
    for j, (control, treatment, credit) in enumerate(_keys(request)):
        t = _credit_column(credit, arms[treatment])
        c = _credit_column(credit, arms[control])
        values += [
            f"CASE WHEN {t} > {c} THEN 1 ELSE 0 END AS w_{j}",
            f"CASE WHEN {t} < {c} THEN 1 ELSE 0 END AS l_{j}",
        ]
    for k in range(len(request.arms)):
        values += [f"CASE WHEN first_team = {k} THEN 1 ELSE 0 END AS first_{k}", f"shown_{k}"]
    inner = (
        f"SELECT unit, CAST(impression_id AS VARCHAR) AS impression_text, top, clicked, "
        f"{', '.join([*segments, *values])}, "
        f"CASE WHEN {depth} IS NOT NULL THEN 1 ELSE 0 END AS compared, "
        f"CASE WHEN {depth} >= n THEN 1 ELSE 0 END AS same, "
        f"CASE WHEN {_impression_bad(request, several_files)} THEN 1 ELSE 0 END AS bad "
        f"FROM {source}"
    )
    names = ["unit", *segments, *[f"grouped_{i}" for i in range(len(segments))]]
    columns = ["CAST(unit AS VARCHAR) AS unit", *segments]
    columns += [f"GROUPING({s}) AS grouped_{i}" for i, s in enumerate(segments)]
    columns += ["MIN(impression_text) AS first_impression", "MAX(top) AS top"]
    sums = ["impressions", "bad", "clicked", "compared", "same"]
    for j in range(len(_keys(request))):
        sums += [f"w_{j}", f"l_{j}"]
    for k in range(len(request.arms)):
        sums += [f"first_{k}", f"shown_{k}"]
    # sums as BIGINT: an engine's wider integer sums (DuckDB's HUGEINT) come back as decimals
    columns += [f"CAST(SUM({'1' if s == 'impressions' else s}) AS BIGINT) AS {s}" for s in sums]
    names += ["top", *sums]
    if segments:
        sets = ["(unit)", *[f"({s}, unit)" for s in segments]]
        group = f"GROUPING SETS ({', '.join(sets)})"
        order = [*[f"grouped_{i} DESC" for i in range(len(segments))], "first_impression"]
    else:
        group, order = "unit", ["first_impression"]
    return (
        f"SELECT {', '.join(names)} FROM (SELECT {', '.join(columns)} FROM ({inner}) AS "
        f"per_value GROUP BY {group}) AS per_unit ORDER BY {', '.join(order)}"
    )


def _keys(request: InterleavedRequest) -> list[Key]:
    """Every (control, treatment, credit), pairs first."""
    return [(c, t, credit) for c, t in request.pairs for credit in request.credits]


def _split(
    table: pd.DataFrame, arrow: pa.Table, overall: np.ndarray, request: InterleavedRequest
) -> tuple[dict[Key, pd.DataFrame], dict[str, dict[Key, pd.DataFrame]]]:
    """The counts query's rows (``table``, and ``arrow`` as the engine returned them) as
    per-unit tables per (pair, credit), overall and per segment value, values as the
    memory engine writes them as text (``astype(str)`` of the column's own type: taken
    from the Arrow rows of the value, since the NULLs of the other grouping sets would
    make an integer column float in pandas), in text order; units in the order of the
    rows."""
    arms = {arm: k for k, arm in enumerate(request.arms)}

    def tables(rows: pd.DataFrame, index: pd.Index) -> dict[Key, pd.DataFrame]:
        impressions = rows["impressions"].to_numpy(dtype=np.int64)
        clicked = rows["clicked"].to_numpy(dtype=np.int64)
        out = {}
        for j, key in enumerate(_keys(request)):
            wins = rows[f"w_{j}"].to_numpy(dtype=np.int64)
            losses = rows[f"l_{j}"].to_numpy(dtype=np.int64)
            out[key] = pd.DataFrame(
                {
                    "wins": wins,
                    "ties": impressions - wins - losses,
                    "losses": losses,
                    "clicked": clicked,
                    "first_control": rows[f"first_{arms[key[0]]}"].to_numpy(dtype=np.int64),
                    "first_treatment": rows[f"first_{arms[key[1]]}"].to_numpy(dtype=np.int64),
                },
                index=index,
                copy=False,
            )
        return out

    unit = request.unit
    units = table[overall]
    counts = tables(units, pd.Index(units["unit"].astype(str), name=unit, dtype="str"))
    segment_counts: dict[str, dict[Key, pd.DataFrame]] = {}
    for i, column in enumerate(request.segments):
        mine = table[f"grouped_{i}"].to_numpy() == 0
        rows = table[mine]
        values = selected_values(arrow, f"segment_{i}", mine)
        text = pd.Series(values.astype(str).to_numpy(dtype=object), index=rows.index)
        order = np.argsort(text.to_numpy(dtype=object), kind="stable")
        rows, text = rows.iloc[order], text.iloc[order]
        index = pd.MultiIndex.from_arrays(
            [
                pd.Index(text.to_numpy(), dtype="str"),
                pd.Index(rows["unit"].astype(str), dtype="str"),
            ],
            names=[column, unit],
        )
        segment_counts[column] = tables(rows, index)
    return counts, segment_counts


def _file_rows(backend: Backend, layouts: Sequence[Layout]) -> dict[str, int]:
    """The rows of each file read."""
    union = " UNION ALL ".join(f"SELECT abrank_file FROM {layout.relation}" for layout in layouts)
    sql = f"SELECT abrank_file AS log_file, COUNT(*) AS n FROM ({union}) AS files GROUP BY abrank_file"
    table = backend.run(compile_sql(sql, backend.dialect)).to_pylist()
    return {str(row["log_file"]): int(row["n"]) for row in table}


# --------------------------------------------------------------------------- bad input


def _raise_first_problem(
    backend: Backend,
    rows: str,
    layouts: Sequence[Layout],
    request: InterleavedRequest,
    several_files: bool,
) -> None:
    """Find the first bad row (or impression) and raise a DataError naming it."""

    def first(sql: str) -> dict[str, Any] | None:
        table = backend.run(compile_sql(sql, backend.dialect))
        return table.to_pylist()[0] if table.num_rows else None

    native = native_ids(layouts, _ids(request))
    base = f"SELECT * FROM ({rows}) AS log_rows"
    raise_bad_cell(backend, rows, _row_checks(layouts, request, native), row_place(layouts))
    impressions = _impressions_sql(rows, request, several_files)
    bad = first(
        f"SELECT *, CAST(impression_id AS VARCHAR) AS impression_text FROM ({impressions}) "
        f"AS per_impression WHERE {_impression_bad(request, several_files)} "
        "ORDER BY CAST(impression_id AS VARCHAR) LIMIT 1"
    )
    labels = ", ".join(dict.fromkeys(layout.source.label for layout in layouts))
    if bad is None:  # the counts saw a problem that no check names: say so plainly
        raise DataError(f"{labels}: expected a valid interleaved log")
    impression = bad["impression_text"]
    detail = backend.run(
        compile_sql(
            f"{base} WHERE CAST(impression_id AS VARCHAR) = {literal(impression)} "
            "ORDER BY log_file, log_row, rank",
            backend.dialect,
        )
    ).to_pylist()
    place = f"{shown_path(detail[0]['log_file'])}: impression {impression!r}"
    if several_files and bad["file_min"] != bad["file_max"]:
        raise DataError(
            f"{shown_path(bad['file_min'])} and {shown_path(bad['file_max'])}: impression_id: "
            f"expected each impression in one file, got {impression!r} in both"
        )
    columns = [(request.unit, "unit", True)]
    if _own_user(request):
        columns.append(("user_id", "user_key", True))
    columns += [(column, f"segment_{i}", False) for i, column in enumerate(request.segments)]
    raise_impression_problem(layouts, impression, detail, columns)
    raise DataError(f"{place}: expected a valid impression")
