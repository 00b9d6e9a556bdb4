"""Numeric and quantile metrics of log columns in the online design (DESIGN.md "Numeric and
quantile metrics from log columns").

Each arm's log columns are read per impression (:func:`impression_values`: an impression's
value is the one its rows hold; a missing one is counted, never silently dropped), and each
numeric metric (:class:`abrank.metrics.numeric.NumericMetric`) becomes what the comparison
loop reads:

- ``mean``, ``sum`` and ``ratio`` become per-unit sums (M_u, D_u) beside the click metrics'
  in the evidence (:func:`with_numeric`), so the clustered delta method, the unit bootstrap
  and the permutation test of every ratio metric compare them unchanged:
  mean per impression M_u = Σ values, D_u = values; ratio per impression M_u = Σ numerator,
  D_u = Σ denominator; at ``level: unit`` (and for ``sum``) M_u is the unit's mean, total or
  ratio and D_u = 1, so the arm's value is the mean over units;
- ``quantile`` metrics are compared on the impression values themselves
  (:mod:`abrank.designs.online.numeric_samples`,
  :func:`abrank.stats.quantile_comparison.compare_quantile_arms`),
  clustered on the unit; at ``level: unit`` on the units' means, each unit its own cluster.

``cap`` winsorizes the values a stat reads (impression values, or per-unit values at
``level: unit``; a ratio's numerator) at that quantile of the arm's values, separately
overall and in each segment value. ``diagnostics.numeric_metrics`` (the evidence's extra
``numeric``) says per metric and arm how many impressions had a value, how many had none,
and where the cap fell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from abrank.config import Experiment
from abrank.errors import DataError
from abrank.evidence import Evidence
from abrank.metrics.numeric import NumericMetric

__all__ = [
    "ArmColumns",
    "arm_columns",
    "check_columns",
    "impression_values",
    "memory_columns",
    "metric_sums",
    "quantile_values",
    "segment_mask",
    "sql_columns",
    "valid_impressions",
    "winsorized",
    "with_numeric",
]


@dataclasses.dataclass(frozen=True)
class ArmColumns:
    """One arm's log columns per impression: each impression's unit (code into
    ``unit_labels``, the index of the arm's per-unit sums), its segment value per segment
    column (codes into the column's values), and each column's value (NaN: missing)."""

    unit: np.ndarray
    unit_labels: pd.Index
    segments: Mapping[str, tuple[np.ndarray, pd.Index]]
    values: Mapping[str, np.ndarray]

    @property
    def impressions(self) -> int:
        return int(self.unit.size)

    def to_dict(self) -> dict[str, Any]:
        """Sizes, JSON-safe: impressions, units, the segment columns and value columns."""
        return {
            "impressions": self.impressions,
            "units": len(self.unit_labels),
            "segments": list(self.segments),
            "columns": list(self.values),
        }


def impression_values(
    values: np.ndarray, codes: np.ndarray, n: int, *, column: str, path: str, ids: Any
) -> np.ndarray:
    """Per impression (codes 0..n-1 of the rows) the value its rows hold: the first value
    that is not missing (NaN where none is); a DataError naming the file, the column and
    the impression when two rows of an impression hold different values."""
    out = np.full(n, np.nan)
    valid = np.flatnonzero(~np.isnan(values))
    if valid.size == 0:
        return out
    coded = codes[valid]
    if coded.size > 1 and bool((coded[1:] >= coded[:-1]).all()):
        # rows in blocks by impression (as read_impressions returns them): no sort needed
        first = np.flatnonzero(np.concatenate(([True], coded[1:] != coded[:-1])))
        impressions = coded[first]
    else:
        impressions, first = np.unique(coded, return_index=True)
    out[impressions] = values[valid[first]]
    differs = values[valid] != out[codes[valid]]
    if differs.any():
        row = int(valid[np.flatnonzero(differs)[0]])
        code = int(codes[row])
        raise DataError(
            f"{path}: {column}: expected one value per impression (on each of its rows, or "
            f"on some rows with the others empty), got {out[code]:g} and {values[row]:g} in "
            f"impression {ids[code]}"
        )
    return out


def arm_columns(
    frame: pd.DataFrame,
    columns: list[str],
    *,
    unit: str,
    segments: list[str],
    unit_labels: pd.Index,
    path: str,
    whole: Any,
) -> ArmColumns:
    """An arm's columns per impression, from its impressions frame (the rows of
    :func:`abrank.io.read_impressions`); ``unit_labels`` is the index of the arm's per-unit
    sums (units in code order). A column missing from the log is a DataError naming the
    file and listing the columns found (``whole()`` reads them)."""
    from abrank.engines.clicks import ImpressionIndex

    index = ImpressionIndex.of(frame)
    n = len(index.ids)
    unit_of, unit_ids = index.column_codes(frame, unit)
    if len(unit_ids) != len(unit_labels):
        raise DataError(f"{path}: {unit}: expected the units of the per-unit sums")
    by_segment = {
        column: index.column_codes(frame, column, segment=True)
        for column in segments
        if column != unit
    }
    values = {}
    for column in columns:
        if column not in frame.columns:
            found = ", ".join(map(str, whole().columns))
            raise DataError(
                f"{path}: metrics: expected a column {column!r} (a numeric metric reads it), "
                f"found columns: {found}"
            )
        raw = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
        values[column] = impression_values(
            raw, index.codes, n, column=column, path=path, ids=index.ids
        )
    return ArmColumns(
        unit=np.asarray(unit_of, dtype=np.int64),
        unit_labels=unit_labels,
        segments={
            c: (np.asarray(codes, dtype=np.int64), pd.Index(v))
            for c, (codes, v) in by_segment.items()
        },
        values=values,
    )


def winsorized(values: np.ndarray, cap: float | None) -> tuple[np.ndarray, float | None]:
    """``values`` winsorized at their ``cap`` quantile (numpy's linear rule), and the cap."""
    if cap is None or values.size == 0:
        return values, None
    limit = float(np.quantile(values, cap))
    return np.minimum(values, limit), limit


def valid_impressions(
    metric: NumericMetric, arm: ArmColumns, keep: np.ndarray | None
) -> np.ndarray:
    """The impressions (of ``keep``, a mask; None: all) where every column has a value."""
    mask = np.ones(arm.impressions, dtype=bool) if keep is None else keep.copy()
    for column in metric.columns:
        mask &= np.isfinite(arm.values[column])
    return mask


def metric_sums(
    metric: NumericMetric, arm: ArmColumns, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Per unit of the arm (code order), M_u and D_u of a mean, sum or ratio metric over the
    impressions of ``keep`` (None: all), and the cap applied (None: none)."""
    valid = valid_impressions(metric, arm, keep)
    units = arm.unit[valid]
    n = len(arm.unit_labels)
    if metric.stat == "ratio":
        numerator = arm.values[str(metric.numerator)][valid]
        denominator = arm.values[str(metric.denominator)][valid]
    else:
        numerator = arm.values[str(metric.column)][valid]
        denominator = np.ones(numerator.size)
    if metric.level == "impression":  # mean or ratio of the pooled impressions
        numerator, limit = winsorized(numerator, metric.cap)
        return (
            np.bincount(units, numerator, minlength=n),
            np.bincount(units, denominator, minlength=n),
            limit,
        )
    total = np.bincount(units, numerator, minlength=n)
    weight = np.bincount(units, denominator, minlength=n)
    has = weight > 0 if metric.stat == "ratio" else np.bincount(units, minlength=n) > 0
    if metric.stat == "sum":
        per_unit = total
    else:
        per_unit = np.divide(total, weight, out=np.zeros(n), where=weight > 0)
    capped, limit = winsorized(per_unit[has], metric.cap)
    out = np.zeros(n)
    out[has] = capped
    return out, has.astype(np.float64), limit


def quantile_values(
    metric: NumericMetric, arm: ArmColumns, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None, float | None]:
    """A quantile metric's values over the impressions of ``keep`` (None: all), capped,
    their units, and the cap applied: the impression values with their units, or at
    ``level: unit`` each unit's mean (units None: every unit its own cluster)."""
    valid = valid_impressions(metric, arm, keep)
    values = arm.values[str(metric.column)]
    units = arm.unit
    if not valid.all():  # (no copy of the arm's values when every impression has one)
        values, units = values[valid], units[valid]
    if metric.level == "unit":
        n = len(arm.unit_labels)
        count = np.bincount(units, minlength=n)
        has = count > 0
        means = np.bincount(units, values, minlength=n)[has] / count[has]
        capped, limit = winsorized(means, metric.cap)
        return capped, None, limit
    capped, limit = winsorized(values, metric.cap)
    return capped, units, limit


def segment_mask(arm: ArmColumns, column: str, value: str) -> np.ndarray:
    """The arm's impressions whose ``column`` holds ``value`` (as text: a segment label's
    value), a boolean mask; none when the arm never has it."""
    codes, values = arm.segments[column]
    found = np.flatnonzero(values.astype(str) == value)
    if found.size == 0:
        return np.zeros(arm.impressions, dtype=bool)
    return codes == int(found[0])


def _segment_sums(metric: NumericMetric, arm: ArmColumns, column: str) -> pd.DataFrame:
    """Per (segment value, unit) of the arm, M_u and D_u of ``metric`` (capped within each
    value), indexed as the segment sums of the click metrics."""
    codes, values = arm.segments[column]
    parts = []
    for code, value in enumerate(values):
        keep = codes == code
        if not keep.any():
            continue
        total, weight, _ = metric_sums(metric, arm, keep)
        present = np.flatnonzero(np.bincount(arm.unit[keep], minlength=len(arm.unit_labels)))
        index = pd.MultiIndex.from_arrays(
            [pd.Index([value] * present.size, dtype=values.dtype), arm.unit_labels.take(present)],
            names=[column, arm.unit_labels.name],
        )
        parts.append(
            pd.DataFrame(
                {metric.name: total[present], f"{metric.name}:n": weight[present]}, index=index
            )
        )
    if not parts:
        return pd.DataFrame(columns=[metric.name, f"{metric.name}:n"])
    return pd.concat(parts)


def memory_columns(experiment: Experiment, data: Any, evidence: Evidence) -> dict[str, ArmColumns]:
    """Every arm's numeric columns per impression from its impressions in memory
    (:func:`abrank.designs.online.logs.load_online`)."""
    from abrank.designs.online.logs import numeric_columns, whole_frame

    unit = experiment.analysis.unit or "user_id"
    columns = numeric_columns(experiment)
    arms: dict[str, ArmColumns] = {}
    for name, frame in data.impressions.items():
        path = data.paths[name]
        arms[name] = arm_columns(
            frame,
            columns,
            unit=unit,
            segments=list(experiment.segments.columns),
            unit_labels=evidence.sums[name].index,
            path=path,
            whole=lambda name=name, path=path: whole_frame(experiment, name, path),
        )
    return arms


def check_columns(experiment: Experiment, data: Any, engine: Any, inputs: Any) -> None:
    """What ``abrank validate`` checks of the numeric metrics' columns, on the run's engine:
    each log has them, their cells are numbers, each impression's rows agree (DataErrors
    as :func:`arm_columns` and :func:`abrank.engines.column_sums.column_impressions` raise
    them; the columns only sketch quantiles read are checked in the engine)."""
    from abrank.designs.online.logs import numeric_columns, whole_frame
    from abrank.designs.online.numeric_sketch import sketched

    if not experiment.numeric_metrics:
        return
    columns = numeric_columns(experiment)
    if engine.name != "memory":
        from abrank.designs.online.numeric_sketch import check_sketched

        skip = sketched(experiment, engine.name)
        exact = {
            c for n, m in experiment.numeric_metrics.items() if n not in skip for c in m.columns
        }
        if exact:
            _impressions(experiment, engine, inputs, [c for c in columns if c in exact])
        check_sketched(experiment, engine, inputs, [c for c in columns if c not in exact])
        return
    from abrank.engines.clicks import ImpressionIndex

    for name, frame in data.impressions.items():
        path = data.paths[name]
        for column in columns:
            if column not in frame.columns:
                found = ", ".join(map(str, whole_frame(experiment, name, path).columns))
                raise DataError(
                    f"{path}: metrics: expected a column {column!r} (a numeric metric reads "
                    f"it), found columns: {found}"
                )
            index = ImpressionIndex.of(frame)
            raw = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
            impression_values(
                raw, index.codes, len(index.ids), column=column, path=path, ids=index.ids
            )


def _impressions(
    experiment: Experiment, engine: Any, inputs: Any, columns: list[str]
) -> pd.DataFrame:
    """The SQL engine's rows per impression of ``columns`` (see :func:`sql_columns`)."""
    from abrank.analysis.log_columns import column_request
    from abrank.engines.column_sums import column_impressions

    request, sources = column_request(experiment, inputs, engine.name, columns)
    return column_impressions(engine, sources, request, "impression_id")


def sql_columns(
    experiment: Experiment, engine: Any, inputs: Any, evidence: Evidence
) -> dict[str, ArmColumns]:
    """Every arm's numeric columns per impression, computed by an SQL engine where the logs
    lie (:func:`abrank.engines.column_sums.column_impressions`: one row per impression
    comes back); impressions of units the per-unit sums left out (mixed units dropped) are
    left out too. The columns only approximate quantiles read are left in the engine
    (:mod:`abrank.designs.online.numeric_sketch`): none when they are all such."""
    from abrank.designs.online.numeric_sketch import sketched

    unit = experiment.analysis.unit or "user_id"
    segments = [c for c in experiment.segments.columns if c != unit]
    skip = sketched(experiment, engine.name)
    columns = list(
        dict.fromkeys(
            c for n, m in experiment.numeric_metrics.items() if n not in skip for c in m.columns
        )
    )
    if not columns:  # approximate quantiles only: nothing per impression leaves the engine
        return {}
    table = _impressions(experiment, engine, inputs, columns)
    arms: dict[str, ArmColumns] = {}
    for name, labels in ((n, t.index) for n, t in evidence.sums.items()):
        mine = table[table["arm"] == name]
        codes = labels.get_indexer(pd.Index(mine[unit].astype(str)))
        kept = codes >= 0
        mine = mine[kept]
        by_segment = {}
        for column in segments:
            found, values = pd.factorize(mine[column].astype(str), sort=True)
            by_segment[column] = (np.asarray(found, dtype=np.int64), pd.Index(values))
        arms[name] = ArmColumns(
            unit=codes[kept].astype(np.int64),
            unit_labels=labels,
            segments=by_segment,
            values={c: mine[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in columns},
        )
    return arms


def with_numeric(
    experiment: Experiment, evidence: Evidence, arms: Mapping[str, ArmColumns]
) -> Evidence:
    """``evidence`` with the numeric metrics, from every arm's columns per impression
    (:func:`memory_columns` or :func:`sql_columns`): per-unit sums of the mean, sum and
    ratio metrics added to every arm's sums (overall and per segment), and as extras the
    arms' columns (``numeric_columns``) and ``numeric``, each metric's counts of values and
    missing values per arm and the cap applied (summary.json's
    ``diagnostics.numeric_metrics``)."""
    from abrank.designs.online.numeric_sketch import sketch_diagnostics

    unit = experiment.analysis.unit or "user_id"
    segments = list(experiment.segments.columns)
    sums = {name: table.copy() for name, table in evidence.sums.items()}
    segment_sums = {
        column: {name: table.copy() for name, table in by_arm.items()}
        for column, by_arm in evidence.segment_sums.items()
    }
    diagnostics: dict[str, dict[str, Any]] = {}
    for metric in experiment.numeric_metrics.values():
        if any(c not in arm.values for arm in arms.values() for c in metric.columns):
            continue  # a sketch quantile, left in the engine (numeric_sketch.with_sketches)
        if not arms:
            continue
        entry: dict[str, Any] = {
            **metric.to_dict(),
            "describes": metric.describe(),
            "impressions": {},
            "missing": {},
            "capped_at": {} if metric.cap is not None else None,
        }
        for name, arm in arms.items():
            valid = valid_impressions(metric, arm, None)
            entry["impressions"][name] = int(valid.sum())
            entry["missing"][name] = int(arm.impressions - valid.sum())
            if metric.stat == "quantile":
                _, _, limit = quantile_values(metric, arm)
            else:
                total, weight, limit = metric_sums(metric, arm)
                sums[name][metric.name] = total
                sums[name][f"{metric.name}:n"] = weight
                for column in segments:
                    if column == unit:
                        continue
                    table = segment_sums[column][name]
                    found = _segment_sums(metric, arm, column)
                    joined = table.join(found, how="left")
                    segment_sums[column][name] = joined.fillna(
                        {metric.name: 0.0, f"{metric.name}:n": 0.0}
                    )
            if metric.cap is not None:
                entry["capped_at"][name] = limit
        if metric.approximate:
            entry["sketch"] = sketch_diagnostics("memory")
        diagnostics[metric.name] = entry
    return dataclasses.replace(
        evidence,
        sums=sums,
        segment_sums=segment_sums,
        extras={**evidence.extras, "numeric_columns": arms, "numeric": diagnostics},
    )
