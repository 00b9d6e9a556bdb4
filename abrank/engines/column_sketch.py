"""Sketch quantiles of a log column, computed where the logs lie (``approximate: true``).

An SQL engine's own sketch gives the q-th quantile of an arm's impression values (per
segment value too) without any impression leaving the engine:

- Spark: ``percentile_approx(value, q, accuracy)`` (Greenwald-Khanna), accuracy
  :data:`SPARK_ACCURACY`: the value returned has rank within n / accuracy of q n, n the
  values it summarized (Spark's documented relative error 1 / accuracy);
- DuckDB: ``approx_quantile(value, q)`` (a t-digest): DuckDB states no error bound.

For each grouping (the arms overall, the arms within each value of each segment column)
three aggregate queries, every quantile metric in each, run on the impression values
(:func:`abrank.engines.column_sums.impression_sql`, the units a mixed-unit drop left out
excluded): the sketch's point Q_hat per group; per (group, unit) S_u = the impressions at or
below Q_hat and N_u = those with a value; the sketch's quantiles at a grid of probabilities
around q (:func:`abrank.stats.quantile_sketch.sketch_grid`, from sigma_I of the S_u, N_u).
What comes back is one :class:`~abrank.stats.quantile_sketch.SketchArm` per group: per-unit
sums and a few hundred numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from abrank.engines.column_sums import ColumnRequest, impression_sql
from abrank.engines.sql.sources import LogSource, literal
from abrank.errors import DataError
from abrank.stats.quantile_sketch import SketchArm, sketch_grid

__all__ = [
    "SPARK_ACCURACY",
    "SketchedQuantile",
    "check_sketch_columns",
    "sketch_bound",
    "sketch_function",
    "sketch_quantiles",
]

SPARK_ACCURACY = 10_000
"""``percentile_approx``'s accuracy (Spark's default): rank error at most n / 10,000."""

IMPRESSIONS = "abrank_sketch_impressions"
DROPPED = "abrank_sketch_dropped"


def sketch_function(engine: str) -> str:
    """The sketch an engine's approximate quantiles use, as the notes name it."""
    if engine == "spark":
        return f"percentile_approx (accuracy {SPARK_ACCURACY:,})"
    return "approx_quantile (t-digest)"


def sketch_bound(engine: str) -> str:
    """The error bound of an engine's sketch quantiles, in words."""
    if engine == "spark":
        return (
            f"rank error at most n / {SPARK_ACCURACY:,} (n the arm's values): the quantile "
            f"returned is an order statistic within n / {SPARK_ACCURACY:,} ranks of q n"
        )
    return "DuckDB states no error bound for its t-digest"


@dataclass(frozen=True)
class SketchedQuantile:
    """One quantile metric's sketches: per arm overall, per (segment column, value) and arm;
    per arm the impressions with a value and those without one."""

    overall: dict[str, SketchArm] = field(default_factory=dict)
    segments: dict[tuple[str, str], dict[str, SketchArm]] = field(default_factory=dict)
    impressions: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)


def _expression(dialect: str, value: str, probabilities: Sequence[float]) -> str:
    """The sketch of ``value`` at one probability or an array of them."""
    listed = [repr(float(p)) for p in probabilities]
    if dialect == "spark":
        at = listed[0] if len(listed) == 1 else f"ARRAY({', '.join(listed)})"
        return f"PERCENTILE_APPROX({value}, {at}, {SPARK_ACCURACY})"
    at = listed[0] if len(listed) == 1 else f"[{', '.join(listed)}]"
    return f"APPROX_QUANTILE({value}, {at})"


def sketch_quantiles(
    engine: Any,
    sources: Sequence[LogSource],
    request: ColumnRequest,
    impression: str,
    metrics: Mapping[str, tuple[str, float]],
    *,
    confidence_level: float,
    dropped_units: Sequence[str] = (),
) -> dict[str, SketchedQuantile]:
    """Per metric name (-> (column, q)) its :class:`SketchedQuantile` from ``engine``'s
    sketch over the logs ``sources``; the units ``dropped_units`` are left out. Only
    aggregates come back (see the module's docstring)."""
    from abrank.engines.sql import compile_sql, open_backend, quote

    backend = open_backend(engine.name, engine.options, engine.connection)
    dialect = backend.dialect

    def run(sql: str) -> list[dict[str, Any]]:
        return list(backend.run(compile_sql(sql, dialect)).to_pylist())

    try:
        grouped = impression_sql(backend, sources, request, impression)
        unit = quote(request.unit)
        where = ""
        if dropped_units:
            backend.register_table(DROPPED, pa.table({"unit": [str(u) for u in dropped_units]}))
            where = f" WHERE {unit} NOT IN (SELECT unit FROM {DROPPED})"
        backend.materialize(
            IMPRESSIONS, compile_sql(f"SELECT * FROM ({grouped}) AS abrank_i{where}", dialect)
        )
        columns = list(dict.fromkeys(column for column, _ in metrics.values()))
        for column in columns:
            _check_one_value(run, quote(column), quote(column + ":max"), column, impression)
        totals = {
            str(r["abrank_arm"]): int(r["n"])
            for r in run(f"SELECT abrank_arm, COUNT(*) AS n FROM {IMPRESSIONS} GROUP BY abrank_arm")
        }
        out = {name: SketchedQuantile() for name in metrics}
        segments = [s for s in request.segments if s != request.unit]
        quoted = {name: (quote(column), q) for name, (column, q) in metrics.items()}
        for segment in [None, *segments]:
            by_metric = _sketch(run, dialect, quoted, unit, segment, confidence_level)
            for name, arms in by_metric.items():
                for (arm, value), sketched in arms.items():
                    if segment is None:
                        out[name].overall[arm] = sketched
                    else:
                        out[name].segments.setdefault((segment, str(value)), {})[arm] = sketched
        for found in out.values():
            for arm in request.arms:
                have = found.overall[arm].n_impressions if arm in found.overall else 0
                found.impressions[arm] = have
                found.missing[arm] = totals.get(arm, 0) - have
    finally:
        backend.close()
    return out


def check_sketch_columns(
    engine: Any, sources: Sequence[LogSource], request: ColumnRequest, impression: str
) -> None:
    """What ``abrank validate`` checks of the columns only sketch quantiles read, in the
    engine (nothing per impression comes back): each log has them, their cells are
    numbers, each impression's rows agree (DataErrors as :func:`sketch_quantiles` raises
    them)."""
    from abrank.engines.sql import compile_sql, open_backend, quote

    backend = open_backend(engine.name, engine.options, engine.connection)
    try:
        grouped = impression_sql(backend, sources, request, impression)

        def run(sql: str) -> list[dict[str, Any]]:
            return list(backend.run(compile_sql(sql, backend.dialect)).to_pylist())

        for column in request.columns:
            low, high = quote(column), quote(column + ":max")
            _check_one_value(run, low, high, column, impression, f"({grouped}) AS abrank_i")
    finally:
        backend.close()


def _check_one_value(
    run: Any, low: str, high: str, column: str, impression: str, relation: str = IMPRESSIONS
) -> None:
    from abrank.engines.sql import quote

    rows = run(
        f"SELECT abrank_log, {quote(impression)} AS abrank_id, {low} AS low, {high} AS high "
        f"FROM {relation} WHERE {low} <> {high} ORDER BY abrank_log, abrank_id LIMIT 1"
    )
    if rows:
        row = rows[0]
        raise DataError(
            f"{row['abrank_log']}: {column}: expected one value per impression (on each of its "
            f"rows, or on some rows with the others empty), got {float(row['low']):g} and "
            f"{float(row['high']):g} in impression {row['abrank_id']}"
        )


def _sketch(
    run: Any,
    dialect: str,
    metrics: Mapping[str, tuple[str, float]],
    unit: str,
    segment: str | None,
    confidence_level: float,
) -> dict[str, dict[tuple[str, str | None], SketchArm]]:
    """Per metric (-> its quoted column and q) the sketched arms of one grouping, per
    (arm, segment value or None): three queries for all the metrics."""
    from abrank.engines.sql import quote

    keys = "abrank_arm" if segment is None else f"abrank_arm, {quote(segment)}"
    picked = "NULL" if segment is None else quote(segment)
    names = list(metrics)
    alias = {name: f"abrank_m{i}" for i, name in enumerate(names)}

    def key_of(row: Mapping[str, Any]) -> tuple[str, str | None]:
        return (str(row["abrank_arm"]), None if segment is None else str(row["abrank_value"]))

    listed = ", ".join(
        f"{_expression(dialect, value, [q])} AS {alias[name]}"
        for name, (value, q) in metrics.items()
    )
    points: dict[str, dict[tuple[str, str | None], float]] = {name: {} for name in names}
    for r in run(
        f"SELECT abrank_arm, {picked} AS abrank_value, {listed} FROM {IMPRESSIONS} GROUP BY {keys}"
    ):
        for name in names:
            if r[alias[name]] is not None:  # None: no value in the group
                points[name][key_of(r)] = float(r[alias[name]])
    names = [name for name in names if points[name]]
    if not names:
        return {}

    def match(arm: str, level: str | None) -> str:
        same = f"abrank_arm = {literal(arm)}"
        return same if segment is None else f"{same} AND {quote(segment)} = {literal(str(level))}"

    counted = []
    for name in names:
        value = metrics[name][0]
        cases = " ".join(
            f"WHEN {match(arm, level)} THEN CAST({point!r} AS DOUBLE)"
            for (arm, level), point in points[name].items()
        )
        counted.append(
            f"SUM(CASE WHEN {value} <= (CASE {cases} END) THEN 1 ELSE 0 END) AS "
            f"{alias[name]}_s, COUNT({value}) AS {alias[name]}_n"
        )
    sums: dict[str, dict[tuple[str, str | None], list[tuple[str, int, int]]]] = {
        name: {} for name in names
    }
    for r in run(
        f"SELECT abrank_arm, {picked} AS abrank_value, {unit} AS abrank_unit, "
        f"{', '.join(counted)} FROM {IMPRESSIONS} GROUP BY {keys}, {unit}"
    ):
        for name in names:
            n = int(r[f"{alias[name]}_n"])
            if n:  # a unit without a value is not among the metric's units
                found = sums[name].setdefault(key_of(r), [])
                found.append((str(r["abrank_unit"]), int(r[f"{alias[name]}_s"]), n))
    arms: dict[str, dict[tuple[str, str | None], tuple[np.ndarray, np.ndarray]]] = {}
    grids: dict[str, list[float]] = {}
    for name in names:
        q = metrics[name][1]
        arms[name], grid = {}, set()
        for key, found in sums[name].items():
            found.sort()  # units in byte order, as the exact path codes them
            below = np.array([s for _, s, _ in found], dtype=np.float64)
            counts = np.array([n for _, _, n in found], dtype=np.float64)
            arms[name][key] = (below, counts)
            draft = SketchArm(q, points[name][key], below, counts, np.empty(0), np.empty(0), "", "")
            grid.update(sketch_grid(q, draft.indicator_se, confidence_level))
        grids[name] = sorted(grid)
    curves = ", ".join(
        f"{_expression(dialect, metrics[name][0], grids[name])} AS {alias[name]}" for name in names
    )
    out: dict[str, dict[tuple[str, str | None], SketchArm]] = {name: {} for name in names}
    for r in run(
        f"SELECT abrank_arm, {picked} AS abrank_value, {curves} FROM {IMPRESSIONS} GROUP BY {keys}"
    ):
        key = key_of(r)
        for name in names:
            if key not in arms[name] or r[alias[name]] is None:
                continue
            below, counts = arms[name][key]
            out[name][key] = SketchArm(
                q=metrics[name][1],
                point=points[name][key],
                below=below,
                counts=counts,
                grid=np.asarray(grids[name], dtype=np.float64),
                grid_values=np.maximum.accumulate(np.asarray(r[alias[name]], dtype=np.float64)),
                sketch=sketch_function(dialect),
                bound=sketch_bound(dialect),
            )
    return out
