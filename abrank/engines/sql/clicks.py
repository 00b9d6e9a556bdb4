"""Click metrics and per-unit sums of an online log, defined once for every SQL engine.

The same numbers as :mod:`abrank.engines.clicks` (the memory engine), computed where the
log lies: per impression the rank of its first click (and of its first satisfied click)
and its clicks within each cutoff, then per unit the sum of each metric and the count of
impressions, overall and per segment value (one GROUPING SETS query), and the CTR at each
rank. Only those sums (a few numbers per unit) come back to Python.

The happy path reads the log once: one pass groups its rows by impression into a
relation the engine keeps (:data:`IMPRESSIONS`: per impression its arm, unit, segment
values, each metric's value, its top rank, the ranks it had clicked as bits, and whether
any check failed on it), and the per-unit sums, the CTR by rank and the checks all read
that relation, not the log; each file's rows are counted from the files alone (a Parquet
file's footer tells them). Only when a check failed do further statements look for the
first bad row or impression, so that the message names the file, the row (where the
engine tells it) and the impression, as the memory engine's do: ids present,
``clicked`` 0/1, ranks whole numbers >= 1 and exactly 1..n in each impression, one unit,
arm and segment value per impression, dwell times >= 0, arm values that name the arms.
(A log with ranks deeper than :data:`~abrank.engines.sql.sources.RANK_BITS`, whose clicks
do not fit the bits, has its CTR by rank counted from the rows.)

Ids are compared as text whatever their type in the file (the int64 12 is the id "12"),
and units come back in byte order of their text, the memory engine's order, so that the
resampling draws the same units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.engines.sql import Backend, compile_sql
from abrank.engines.sql.click_sums import arm_codes, shared_units, split_sums
from abrank.engines.sql.sources import (
    IMPRESSION_CHECKS,
    IMPRESSION_PROBLEMS,
    LEAN_CHECKS,
    LEAN_PROBLEMS,
    RANK_BITS,
    CellCheck,
    Layout,
    LogSource,
    cell_checks,
    check_deep_ranks,
    check_rows_per_file,
    literal,
    missing_id,
    raise_bad_cell,
    raise_impression_problem,
    row_columns,
    row_place,
    shown_path,
)
from abrank.engines.sql.sources import native_ids as native_columns
from abrank.errors import DataError
from abrank.io.online import MixedUnits
from abrank.metrics.names import Metric, click_metrics

__all__ = ["IMPRESSIONS", "ClickAggregates", "ClickRequest", "LogSource", "click_aggregates"]

#: The relation of the log's impressions (:func:`_per_impression_sql`) that the engine keeps
#: for the statements after the one pass over the log.
IMPRESSIONS = "abrank_impressions"


@dataclass(frozen=True)
class ClickRequest:
    """What to aggregate: click metrics, the arms (in readout order), the unit column,
    segment columns, the dwell of a satisfied click, and whether units seen in more than
    one arm are dropped."""

    metrics: tuple[Metric, ...]
    arms: tuple[str, ...]
    unit: str = "user_id"
    segments: tuple[str, ...] = ()
    sat_dwell: float = 30.0
    drop_mixed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "metrics": [m.name for m in self.metrics],
            "arms": list(self.arms),
            "unit": self.unit,
            "segments": list(self.segments),
            "sat_dwell": float(self.sat_dwell),
            "drop_mixed": bool(self.drop_mixed),
        }


@dataclass(frozen=True)
class ClickAggregates:
    """The per-unit sums of every arm, as :func:`abrank.engines.clicks.unit_sums` gives
    them: ``sums[arm]`` indexed by unit (text, byte order) with columns ``impressions``
    and one per metric; ``segment_sums[column][arm]`` indexed by (segment value, unit).
    Also the CTR by rank (columns arm, rank, impressions, clicks, ctr), the rows of each
    file read, the units seen in several arms and how many were dropped."""

    sums: dict[str, pd.DataFrame]
    segment_sums: dict[str, dict[str, pd.DataFrame]]
    ctr_by_rank: pd.DataFrame
    file_rows: dict[str, int]
    mixed: MixedUnits
    dropped_units: int

    def to_dict(self) -> dict[str, Any]:
        """Sizes, JSON-safe: units and impressions per arm, files, mixed units."""
        return {
            "units": {arm: int(len(t)) for arm, t in self.sums.items()},
            "impressions": {arm: int(t["impressions"].sum()) for arm, t in self.sums.items()},
            "file_rows": dict(self.file_rows),
            "mixed": self.mixed.to_dict(),
            "dropped_units": int(self.dropped_units),
        }


def click_aggregates(
    backend: Backend, sources: Sequence[LogSource], request: ClickRequest
) -> ClickAggregates:
    """Per-unit sums of click metrics over the logs, computed by ``backend``.

    Bad input is a DataError naming the log: a missing column (the columns found are
    listed), a bad cell (its file and row), an impression whose ranks are not 1..n or
    that has two units, arms or segment values, an arm value that is no arm, an arm
    without rows.
    """
    metrics = tuple(click_metrics(request.metrics))
    layouts = [_layout(backend, i, source, request, metrics) for i, source in enumerate(sources)]
    rows = _rows_sql(layouts, request)
    sat = any(m.family == "sat_ctr" for m in metrics)
    cutoffs = sorted({m.k for m in metrics if m.family == "clicks"}, key=_cutoff_order)
    # the one pass over the log: every later statement reads its impressions
    per_impression = _per_impression_sql(rows, request, metrics, sat, cutoffs)
    backend.materialize(IMPRESSIONS, compile_sql(per_impression, backend.dialect))
    # the checks' verdict and the deepest impression come with the CTR by rank's counts
    counted = backend.run(compile_sql(_rank_counts_sql(None), backend.dialect))
    if counted.num_rows and pc.sum(counted.column("bad")).as_py():
        _raise_first_problem(backend, rows, layouts, request)
    deep = bool(counted.num_rows) and int(pc.max(counted.column("top")).as_py()) > RANK_BITS
    if deep:
        check_deep_ranks(backend, rows, layouts, every_rank=True)
    table = backend.run(compile_sql(_sums_sql(request, metrics), backend.dialect))
    codes = arm_codes(table)  # the sums come by arm code: the arm's place in request.arms
    file_rows = _file_rows(backend, layouts)
    check_rows_per_file(layouts, file_rows)
    _check_arms(codes, layouts, request)
    sums, segment_sums, units = split_sums(
        table, codes, request.arms, request.unit, request.segments, metrics
    )
    mixed, dropped = shared_units(units, request.unit), 0
    left_out = None
    if request.drop_mixed and mixed.count:
        left_out = "abrank_dropped_units"
        backend.register_table(left_out, pa.table({"unit": sorted(mixed.units)}))
    if deep:  # clicks below rank RANK_BITS: counted from the rows
        ranks = _by_rank(backend, rows, left_out)
    else:
        if left_out is not None:  # counted again without the units left out
            counted = backend.run(compile_sql(_rank_counts_sql(left_out), backend.dialect))
        ranks = _rank_counts(counted, request.arms)
    backend.drop(IMPRESSIONS)
    if left_out is not None:
        sums = {arm: t[~t.index.isin(mixed.units)] for arm, t in sums.items()}
        segment_sums = {
            column: {
                arm: t[~t.index.get_level_values(1).isin(mixed.units)] for arm, t in by.items()
            }
            for column, by in segment_sums.items()
        }
        dropped = int(mixed.count)
    return ClickAggregates(
        sums=sums,
        segment_sums=segment_sums,
        ctr_by_rank=_ctr_table(ranks, request.arms),
        file_rows=file_rows,
        mixed=mixed,
        dropped_units=dropped,
    )


# --------------------------------------------------------------------------- columns


def _layout(
    backend: Backend,
    index: int,
    source: LogSource,
    request: ClickRequest,
    metrics: Sequence[Metric],
) -> Layout:
    """One source registered as a relation, with the columns the request reads checked."""
    layout = Layout.open(backend, f"abrank_log_{index}", source)
    layout.require(request.unit, "analysis.unit")
    for column in request.segments:
        layout.require(column, "segments.columns")
    if any(m.family == "sat_ctr" for m in metrics) and "dwell" not in layout.column:
        wanted_names = ", ".join(m.name for m in metrics if m.family == "sat_ctr")
        raise DataError(
            f"{source.label}: metric {wanted_names}: expected a dwell column (seconds) in "
            f"the impressions, found columns: {layout.listing}"
        )
    if source.arm is None and "arm" not in layout.column:
        raise DataError(
            f"{source.label}: expected an arm column (its values the arm names "
            f"{', '.join(request.arms)}), found columns: {layout.listing}"
        )
    return layout


def _source_sql(layout: Layout, request: ClickRequest, native: set[str]) -> str:
    """One source's rows in canonical columns (converted, with the raw text for messages).
    Ids named in ``native`` (integers in every source) stay integers, which group faster
    and equal as their text does; other ids become text."""
    source = layout.source
    arm = (
        f"CAST({literal(source.arm)} AS VARCHAR)"
        if source.arm is not None
        else f"CAST({layout.ref('arm')} AS VARCHAR)"
    )
    parts = [
        *row_columns(layout, request.unit, native, _reads_dwell(request)),
        f"{arm} AS arm",
        f"{_arm_code(arm, request.arms)} AS arm_code",
    ]
    for i, column in enumerate(request.segments):
        parts.append(f"{layout.ref(column)} AS segment_{i}")
    return f"SELECT {', '.join(parts)} FROM {layout.relation}"


def _reads_dwell(request: ClickRequest) -> bool:
    """Whether the metrics read the log's dwell times (those counting satisfied clicks)."""
    return any(m.family == "sat_ctr" for m in request.metrics)


def _arm_code(arm: str, arms: Sequence[str]) -> str:
    """The arm's place in ``arms`` (NULL for a value that names no arm): impressions group
    on this small integer, which is cheaper to compare than the arm's text."""
    cases = " ".join(f"WHEN {literal(name)} THEN {i}" for i, name in enumerate(arms))
    return f"CASE {arm} {cases} END"


def native_ids(layouts: Sequence[Layout], request: ClickRequest) -> set[str]:
    """The id columns (``impression_id``, the unit) that are integers in every source."""
    return native_columns(layouts, ("impression_id", request.unit))


def _rows_sql(layouts: Sequence[Layout], request: ClickRequest) -> str:
    """Every source's rows as one relation, with ``row_bad`` (1 for a bad cell)."""
    native = native_ids(layouts, request)
    union = " UNION ALL ".join(_source_sql(layout, request, native) for layout in layouts)
    bad = [
        missing_id("impression_id", native, "impression_id"),
        missing_id("unit", native, request.unit),
        "clicked IS NULL",
        "rank_bad > 0",
        "dwell_bad > 0",
        "arm_code IS NULL",
        *[f"segment_{i} IS NULL" for i in range(len(request.segments))],
    ]
    flag = " OR ".join(f"({condition})" for condition in bad)
    return f"SELECT *, CASE WHEN {flag} THEN 1 ELSE 0 END AS row_bad FROM ({union}) AS logs"


# --------------------------------------------------------------------------- metrics


def _cutoff_order(k: int | None) -> float:
    return float("inf") if k is None else float(k)


def _within(k: int | None, column: str) -> str:
    return f"{column} IS NOT NULL" if k is None else f"{column} <= {int(k)}"


def _value_sql(metric: Metric) -> str:
    """One metric's value per impression from the impression's first click (``first_click``,
    NULL for none), first satisfied click and clicks within each cutoff."""
    k = metric.k
    if metric.family == "click_rr":
        return (
            f"CASE WHEN {_within(k, 'first_click')} THEN CAST(1 AS DOUBLE) / first_click "
            "ELSE CAST(0 AS DOUBLE) END"
        )
    if metric.family == "ctr":
        return f"CASE WHEN {_within(k, 'first_click')} THEN 1 ELSE 0 END"
    if metric.family == "sat_ctr":
        return f"CASE WHEN {_within(k, 'first_sat')} THEN 1 ELSE 0 END"
    if metric.family == "abandonment":
        return "CASE WHEN first_click IS NULL THEN 1 ELSE 0 END"
    if metric.family == "clicks":
        return _clicks_name(k)
    raise NotImplementedError(f"click metrics: family {metric.family!r} has no SQL definition")


def _clicks_name(k: int | None) -> str:
    return "clicks_all" if k is None else f"clicks_{int(k)}"


def _impressions_sql(
    rows: str,
    request: ClickRequest,
    sat: bool,
    cutoffs: Sequence[int | None],
    dwell: float,
    first_from_bits: bool = False,
    lean: bool = False,
) -> str:
    """One row per impression: its arm, unit and segment values (with their maxima, to
    find an impression that has two), its rows' checks, first click and clicks. With
    ``first_from_bits`` the first click is the lowest of the clicked-rank bits, one
    aggregate fewer per row (:func:`_first_click_from_bits` says when that is exact).

    ``lean`` (the one pass over the log) spends aggregates fewer per row: the checks are
    two aggregates (:data:`LEAN_CHECKS`: the rows' count and a bit per rank or bad cell;
    the top rank is the count), and the arm of two arms is one SUM of their codes 0 / 1
    (0: arm 0, n: arm 1, else NULL: two arms), where MIN and MAX are two. The messages'
    statements keep the full aggregates."""
    summed = lean and len(request.arms) <= 2
    parts = [
        "impression_id",
        *(
            ["SUM(arm_code) AS arm_sum"]
            if summed
            else ["MIN(arm_code) AS arm", "MAX(arm_code) AS arm_max"]
        ),
        "MIN(unit) AS unit",
        "MAX(unit) AS unit_max",
        *(LEAN_CHECKS if lean else IMPRESSION_CHECKS),
        # the clicked ranks up to RANK_BITS, a bit each: the CTR by rank without the rows
        f"BIT_OR(CASE WHEN clicked = 1 AND rank_bad = 0 AND rank <= {RANK_BITS} THEN "
        "CAST(1 AS BIGINT) << CAST(rank - 1 AS INT) ELSE CAST(0 AS BIGINT) END) AS clicked_bits",
    ]
    if not first_from_bits:
        # bad ranks left out: an impression with one is refused, but its values are still
        # computed first (a rank of 0 would divide click_rr by zero, which Spark refuses)
        parts.append("MIN(CASE WHEN clicked = 1 AND rank_bad = 0 THEN rank END) AS first_click")
    if sat:
        parts.append(
            f"MIN(CASE WHEN clicked = 1 AND rank_bad = 0 AND dwell >= {dwell!r} THEN rank END) "
            "AS first_sat"
        )
    for k in cutoffs:
        within = "" if k is None else f" AND rank <= {int(k)}"
        parts.append(f"SUM(CASE WHEN clicked = 1{within} THEN 1 ELSE 0 END) AS {_clicks_name(k)}")
    for i in range(len(request.segments)):
        parts += [f"MIN(segment_{i}) AS segment_{i}", f"MAX(segment_{i}) AS segment_{i}_max"]
    grouped = f"SELECT {', '.join(parts)} FROM ({rows}) AS log_rows GROUP BY impression_id"
    derived = []
    if first_from_bits:
        # the lowest bit set, x & -x, is 2^(its rank - 1); ROUND: a log's last digit may differ
        lowest = "ROUND(LOG2(clicked_bits & -clicked_bits)) + 1"
        derived.append(f"CASE WHEN clicked_bits = 0 THEN NULL ELSE {lowest} END AS first_click")
    if summed:  # NULL (the impression is bad) for rows of two arms, or of none
        derived.append("CASE WHEN arm_sum = 0 THEN 0 WHEN arm_sum = n THEN 1 END AS arm")
    if not derived:
        return grouped
    return f"SELECT *, {', '.join(derived)} FROM ({grouped}) AS grouped"


def _first_click_from_bits(metrics: Sequence[Metric]) -> bool:
    """Whether every metric that reads an impression's first click reads it only up to a
    cutoff within RANK_BITS (click_rr@k, ctr@k), so that the clicked-rank bits tell it:
    abandonment, and click_rr or ctr without a cutoff or deeper, need the first click at
    any rank."""
    reading = [m for m in metrics if m.family in ("click_rr", "ctr", "abandonment")]
    return all(m.family != "abandonment" and m.k is not None and m.k <= RANK_BITS for m in reading)


def _impression_bad(request: ClickRequest) -> str:
    """The condition of a bad impression (over the columns of :func:`_impressions_sql`,
    ``lean``)."""
    bad = [
        *LEAN_PROBLEMS,
        "arm IS NULL" if len(request.arms) <= 2 else "arm <> arm_max",
        "unit <> unit_max",
        *[f"segment_{i} <> segment_{i}_max" for i in range(len(request.segments))],
    ]
    return " OR ".join(f"({condition})" for condition in bad)


def _per_impression_sql(
    rows: str,
    request: ClickRequest,
    metrics: Sequence[Metric],
    sat: bool,
    cutoffs: Sequence[int | None],
) -> str:
    """One row per impression, all that the statements after the pass over the log read:
    its arm (code), unit and segment values, the value of each metric (``v0``, ``v1``,
    ...), its top rank (its count of rows, which the checks make its top rank), its
    clicked ranks as bits (``clicked_bits``) and ``bad`` (1 when a cell of its rows is
    bad, its ranks are not 1..n, or it has two units, arms or segment values)."""
    from_bits = _first_click_from_bits(metrics)
    dwell = float(request.sat_dwell)
    impressions = _impressions_sql(rows, request, sat, cutoffs, dwell, from_bits, lean=True)
    values = [f"{_value_sql(m)} AS v{i}" for i, m in enumerate(metrics)]
    segments = [f"segment_{i}" for i in range(len(request.segments))]
    return (
        f"SELECT arm, unit, n AS top, clicked_bits, {', '.join([*segments, *values])}, "
        f"CASE WHEN {_impression_bad(request)} THEN 1 ELSE 0 END AS bad "
        f"FROM ({impressions}) AS per_impression"
    )


def _sums_sql(request: ClickRequest, metrics: Sequence[Metric]) -> str:
    """Per (arm, unit) and per (arm, segment value, unit) of :data:`IMPRESSIONS`:
    impressions and the sum of each metric (columns ``m0``, ``m1``, ...); ``grouped_i`` is
    1 on the rows that do not break down by segment i."""
    segments = [f"segment_{i}" for i in range(len(request.segments))]
    columns = ["arm", "CAST(unit AS VARCHAR) AS unit", *segments]
    columns += [f"GROUPING({s}) AS grouped_{i}" for i, s in enumerate(segments)]
    columns += ["COUNT(*) AS impressions"]
    columns += [f"CAST(SUM(v{i}) AS DOUBLE) AS m{i}" for i in range(len(metrics))]
    if segments:
        sets = ["(arm, unit)", *[f"(arm, {s}, unit)" for s in segments]]
        group = f"GROUPING SETS ({', '.join(sets)})"
        order = [f"grouped_{i} DESC" for i in range(len(segments))]
        order = ["arm", *order, *segments, "CAST(unit AS VARCHAR)"]
    else:
        group, order = "arm, unit", ["arm", "CAST(unit AS VARCHAR)"]
    return (
        f"SELECT {', '.join(columns)} FROM {IMPRESSIONS} "
        f"GROUP BY {group} ORDER BY {', '.join(order)}"
    )


def _left_out(dropped: str | None) -> str:
    """The condition leaving out the units of relation ``dropped`` (none when None)."""
    if dropped is None:
        return ""
    return f" WHERE NOT CAST(unit AS VARCHAR) IN (SELECT unit FROM {dropped})"


def _rank_counts_sql(dropped: str | None) -> str:
    """Impressions of :data:`IMPRESSIONS` per (arm, top rank, clicked ranks), a few
    hundred rows, with the bad ones among them (``bad``), leaving out the units of
    relation ``dropped`` (none when None)."""
    return (
        "SELECT arm, top, clicked_bits, COUNT(*) AS n, CAST(SUM(bad) AS BIGINT) AS bad "
        f"FROM {IMPRESSIONS}{_left_out(dropped)} GROUP BY arm, top, clicked_bits"
    )


def _rank_counts(found: pa.Table, arms: Sequence[str]) -> pd.DataFrame:
    """Rows shown and clicked per (arm, rank), from the impressions counted by
    :func:`_rank_counts_sql` (checked: each impression's ranks are 1..top, every top at
    most RANK_BITS): an impression shows every rank up to its top and has a click at rank
    r when bit r - 1 of its clicked ranks is set."""
    code = found.column("arm").to_numpy(zero_copy_only=False).astype(np.int64)
    top = found.column("top").to_numpy(zero_copy_only=False).astype(np.int64)
    bits = found.column("clicked_bits").to_numpy(zero_copy_only=False).astype(np.uint64)
    count = found.column("n").to_numpy(zero_copy_only=False).astype(np.int64)
    frames = []
    for i, arm in enumerate(arms):
        mine = code == i
        if not mine.any():
            continue
        deepest = int(top[mine].max())
        # impressions whose top is r or deeper: the tail sums of the impressions per top
        per_top = np.bincount(top[mine], weights=count[mine]).astype(np.int64)
        shown = np.cumsum(per_top[::-1])[::-1][1:]
        clicks = np.array(
            [
                count[mine][(bits[mine] >> np.uint64(r)) & np.uint64(1) == 1].sum()
                for r in range(deepest)
            ],
            dtype=np.int64,
        )
        ranks = np.arange(1, deepest + 1)
        frames.append(pd.DataFrame({"arm": arm, "rank": ranks, "shown": shown, "clicks": clicks}))
    columns = ["arm", "rank", "shown", "clicks"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _file_rows(backend: Backend, layouts: Sequence[Layout]) -> dict[str, int]:
    """The rows of each file of the logs, counted from the files alone (no column read)."""
    counts = " UNION ALL ".join(
        f"SELECT abrank_file AS log_file, COUNT(*) AS shown FROM {layout.relation} "
        "GROUP BY abrank_file"
        for layout in layouts
    )
    found = backend.run(compile_sql(counts, backend.dialect)).to_pylist()
    return {str(row["log_file"]): int(row["shown"]) for row in found}


def _by_rank(backend: Backend, rows: str, dropped: str | None) -> pd.DataFrame:
    """Rows shown and clicked per (arm, rank), counted from the rows of the log (ranks
    deeper than RANK_BITS: their clicks are in no impression's bits)."""
    sql = (
        "SELECT arm, rank, COUNT(*) AS shown, SUM(clicked) AS clicks "
        f"FROM ({rows}) AS log_rows{_left_out(dropped)} GROUP BY arm, rank"
    )
    return backend.run(compile_sql(sql, backend.dialect)).to_pandas()


def _ctr_table(ranks: pd.DataFrame, arms: Sequence[str]) -> pd.DataFrame:
    """The CTR at each rank per arm, arms in readout order, ranks ascending."""
    order = {arm: i for i, arm in enumerate(arms)}
    table = ranks.assign(order=ranks["arm"].map(order)).sort_values(["order", "rank"])
    shown = table["shown"].to_numpy(dtype=np.int64)
    clicks = table["clicks"].to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "arm": table["arm"].astype(str).to_numpy(),
            "rank": table["rank"].to_numpy(dtype=np.int64),
            "impressions": shown,
            "clicks": clicks,
            "ctr": clicks / shown,
        }
    )


# --------------------------------------------------------------------------- results


def _check_arms(codes: np.ndarray, layouts: Sequence[Layout], request: ClickRequest) -> None:
    """Every arm has rows (the log's arm values name the arms: checked with the rows);
    ``codes``: each sums row's arm code."""
    found = {request.arms[int(code)] for code in np.unique(codes)}
    empty = [arm for arm in request.arms if arm not in found]
    if not empty:
        return
    labels = sorted({layout.source.label for layout in layouts})
    if not found:
        raise DataError(f"{', '.join(labels)}: expected impressions, got an empty log")
    raise DataError(
        f"{', '.join(labels)}: arm: expected rows for every arm, got none for "
        f"{', '.join(map(repr, empty))} (arms found: {', '.join(map(repr, sorted(found)))})"
    )


# --------------------------------------------------------------------------- bad input


def _raise_first_problem(
    backend: Backend, rows: str, layouts: Sequence[Layout], request: ClickRequest
) -> None:
    """Find the first bad row (or impression) and raise a DataError naming it."""

    def first(sql: str) -> dict[str, Any] | None:
        table = backend.run(compile_sql(sql, backend.dialect))
        return table.to_pylist()[0] if table.num_rows else None

    unit = request.unit
    native = native_ids(layouts, request)
    checks = cell_checks(layouts, unit, native, _reads_dwell(request))
    if any(layout.source.arm is None for layout in layouts):  # a log with an arm column
        checks.insert(2, CellCheck("arm", "arm IS NULL OR arm = ''", "a non-empty id"))
    checks += [
        CellCheck(column, f"segment_{i} IS NULL", "a segment value")
        for i, column in enumerate(request.segments)
    ]
    raise_bad_cell(backend, rows, checks, row_place(layouts))
    base = f"SELECT * FROM ({rows}) AS log_rows"
    # every cell is good: an impression is bad for its ranks, or for two units, arms
    # (by name: a name that is no arm has no code) or segment values
    impressions = _impressions_sql(rows, request, False, [], 0.0)
    texts = (
        "SELECT impression_id AS arm_impression, MIN(arm) AS arm_name, MAX(arm) AS "
        f"arm_name_max FROM ({rows}) AS log_rows GROUP BY impression_id"
    )
    broken = " OR ".join(
        f"({condition})"
        for condition in (
            *IMPRESSION_PROBLEMS[1:],
            "arm_name <> arm_name_max",
            "unit <> unit_max",
            *[f"segment_{i} <> segment_{i}_max" for i in range(len(request.segments))],
        )
    )
    bad = first(
        f"SELECT *, CAST(impression_id AS VARCHAR) AS impression_text FROM ({impressions}) "
        f"AS per_impression JOIN ({texts}) AS names ON impression_id = arm_impression "
        f"WHERE {broken} ORDER BY CAST(impression_id AS VARCHAR) LIMIT 1"
    )
    if bad is not None:
        _raise_bad_impression(backend, rows, layouts, request, bad)
    # arm values that name no arm, once every impression is whole (the memory engine
    # splits the log by arm after reading it)
    arms = ", ".join(literal(a) for a in request.arms)
    row = first(
        f"{base} WHERE arm IS NULL OR arm NOT IN ({arms}) ORDER BY log_file, log_row LIMIT 1"
    )
    if row is not None:
        values = backend.run(
            compile_sql(
                f"SELECT arm, COUNT(*) AS n FROM ({rows}) AS log_rows GROUP BY arm ORDER BY arm",
                backend.dialect,
            )
        ).to_pylist()
        found = ", ".join(f"{v['arm']!r} ({int(v['n'])} rows)" for v in values)
        unknown = sorted(str(v["arm"]) for v in values if v["arm"] not in request.arms)
        raise DataError(
            f"{row['log_file']}: arm: expected the arm names "
            f"{', '.join(map(repr, request.arms))}, got {', '.join(map(repr, unknown))} "
            f"(values found: {found})"
        )
    # the sums counted a problem that no check names: say so plainly
    raise DataError(f"{layouts[0].source.label}: expected a valid impression log")


def _raise_bad_impression(
    backend: Backend,
    rows: str,
    layouts: Sequence[Layout],
    request: ClickRequest,
    bad: dict[str, Any],
) -> None:
    """The message of the impression ``bad`` (its aggregates), as the memory engine words
    it: in two arms' logs, its ranks not 1..n, two units, arms or segment values."""
    impression = bad["impression_text"]
    detail = backend.run(
        compile_sql(
            f"SELECT * FROM ({rows}) AS log_rows WHERE CAST(impression_id AS VARCHAR) = "
            f"{literal(impression)} ORDER BY log_file, log_row, rank",
            backend.dialect,
        )
    ).to_pylist()
    per_arm = all(layout.source.arm is not None for layout in layouts)
    if per_arm and bad["arm_name"] != bad["arm_name_max"]:
        first_arm, second_arm = request.arms[bad["arm"]], request.arms[bad["arm_max"]]
        files = {r["arm"]: shown_path(r["log_file"]) for r in detail}
        impressions = _impressions_sql(rows, request, False, [], 0.0)
        shared = backend.run(
            compile_sql(
                f"SELECT COUNT(*) AS n FROM ({impressions}) AS per_impression WHERE arm <> arm_max",
                backend.dialect,
            )
        ).to_pylist()[0]["n"]
        raise DataError(
            f"{files[first_arm]} (arm {first_arm!r}) and {files[second_arm]} (arm "
            f"{second_arm!r}): impression_id: expected each impression in one arm, got "
            f"{int(shared)} in more than one, e.g. {impression!r}"
        )
    columns = [(request.unit, "unit", True), ("arm", "arm", True)]
    columns += [(column, f"segment_{i}", False) for i, column in enumerate(request.segments)]
    raise_impression_problem(layouts, impression, detail, columns)
    raise DataError(
        f"{shown_path(detail[0]['log_file'])}: impression {impression!r}: expected a valid "
        "impression"
    )
