"""The per-unit sums query's result, as the comparisons read it: a frame per arm.

The sums come back from the engine as one Arrow table of a row per (arm, unit) and per
(arm, segment value, unit), millions of rows for millions of users. They are split by arm
straight from Arrow's columns: the numbers as NumPy arrays, the units as a text index
that shares Arrow's buffers, so that no cell becomes a Python object. The units with sums
in more than one arm are found on 64-bit keys of their text (:func:`abrank.io.doc_keys`),
not by hashing strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.engines.sql.sources import selected_values
from abrank.io.arrow import equal_pairs
from abrank.io.doc_keys import doc_keys
from abrank.io.online import MixedUnits
from abrank.metrics import Metric

__all__ = ["arm_codes", "shared_units", "split_sums"]


def arm_codes(table: pa.Table) -> np.ndarray:
    """Each row's arm code (its arm's place in the request's arms)."""
    return table.column("arm").to_numpy(zero_copy_only=False).astype(np.int64)


def split_sums(
    table: pa.Table,
    codes: np.ndarray,
    arms: Sequence[str],
    unit: str,
    segments: Sequence[str],
    metrics: Sequence[Metric],
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, pd.DataFrame]], list[pa.ChunkedArray]]:
    """The sums query's rows (``table``, with ``codes`` from :func:`arm_codes`) as frames
    of ``impressions`` and each metric's sum, indexed by unit (text), one per arm overall
    and one per (segment column, arm) indexed by (segment value, unit), rows in the query's
    order; and each arm's units as the engine returned them (for :func:`shared_units`)."""

    def numbers(name: str, dtype: type) -> np.ndarray:
        return table.column(name).to_numpy(zero_copy_only=False).astype(dtype, copy=False)

    # per segment column: 1 on the rows that do not break down by it
    grouped = [numbers(f"grouped_{i}", np.int64) for i in range(len(segments))]
    overall = np.ones(table.num_rows, dtype=bool)
    for flags in grouped:
        overall &= flags == 1
    values = {"impressions": numbers("impressions", np.int64)}
    values.update({m.name: numbers(f"m{i}", np.float64) for i, m in enumerate(metrics)})
    units = table.column("unit")

    def frame(rows: slice | np.ndarray, index: pd.Index) -> pd.DataFrame:
        return pd.DataFrame({k: v[rows] for k, v in values.items()}, index=index, copy=False)

    def text(rows: slice | np.ndarray) -> pa.ChunkedArray:
        if isinstance(rows, slice):
            return units.slice(rows.start, rows.stop - rows.start)
        return units.take(pa.array(rows))

    sums: dict[str, pd.DataFrame] = {}
    segment_sums: dict[str, dict[str, pd.DataFrame]] = {c: {} for c in segments}
    arm_units = []
    for code, name in enumerate(arms):
        mine = codes == code
        rows = _selection(mine & overall)
        ids = text(rows)
        arm_units.append(ids)
        sums[name] = frame(rows, pd.Index(ids.to_pandas(), name=unit, dtype="str"))
        for i, column in enumerate(segments):
            mask = mine & (grouped[i] == 0)
            rows = _selection(mask)
            found = selected_values(table, f"segment_{i}", mask)
            level = pd.Index(found.astype(str) if found.dtype == object else found, name=column)
            index = pd.MultiIndex.from_arrays(
                [level, pd.Index(text(rows).to_pandas(), dtype="str")], names=[column, unit]
            )
            segment_sums[column][name] = frame(rows, index)
    return sums, segment_sums, arm_units


def _selection(mask: np.ndarray) -> slice | np.ndarray:
    """The rows of a boolean mask: a slice (views, not copies) when they are one run, as
    the sums query's order (by arm, then grouping) makes them, else their indices."""
    where = np.flatnonzero(mask)
    if where.size == 0:
        return slice(0, 0)
    first, last = int(where[0]), int(where[-1])
    return slice(first, last + 1) if last - first + 1 == where.size else where


def shared_units(units: Sequence[pa.ChunkedArray], column: str) -> MixedUnits:
    """Units (each arm's distinct, as text) found in more than one arm: their count, the
    first few in byte order and all of them."""
    every = pa.chunked_array(
        [chunk for arm in units for chunk in arm.chunks],
        type=units[0].type if units else pa.string(),
    )
    if len(every) < 2:
        return MixedUnits(column=column, count=0, examples=(), units=frozenset())
    # within an arm a unit comes once: every key found twice is of two arms
    keys = doc_keys(every)
    if keys.exact and len(keys.words) == 1:  # ids of up to 7 bytes: their bytes, one word
        word = keys.words[0]
        ordered = np.sort(word)
        twice = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
        rows = np.flatnonzero(np.isin(word, twice)) if twice.size else np.zeros(0, np.int64)
    else:
        _, rows = equal_pairs(np.zeros(len(every), dtype=np.int32), keys, every)
    found = pc.unique(every.take(pa.array(np.sort(rows)))).to_pylist() if rows.size else []
    shared = sorted(found, key=lambda u: u.encode("utf-8"))
    return MixedUnits(
        column=column, count=len(shared), examples=tuple(shared[:5]), units=frozenset(shared)
    )
