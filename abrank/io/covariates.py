"""The pre-period table of an online experiment (CUPED's covariates), one row per unit.

The table holds the unit column (as named by ``analysis.unit``), optionally ``impressions``
(the unit's pre-period impressions, the weight of its values; 1 when absent) and one
column per metric, named as the metric is named in the config, holding the unit's
pre-period mean of it. Metrics without a column are compared without adjustment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from abrank._lazy import pandas as pd
from abrank.errors import DataError
from abrank.io.columns import parse_numbers
from abrank.io.formats import TABLE_NAMES
from abrank.io.tables import listing, read_table

#: The optional column of pre-period impressions per unit.
WEIGHT_COLUMN = "impressions"


def read_covariates(
    path: str | Path,
    *,
    unit: str,
    metrics: Sequence[str],
    format: str | None = None,
    sep: str | None = None,
    decimal: str | None = None,
) -> pd.DataFrame:
    """The per-unit pre-period values: index ``unit`` (ids as strings), column
    ``impressions`` (float, > 0 where given) and a float column per metric found.

    A column is matched to a metric by its name, case-insensitively, after the metric
    names' own canonical spelling (``click_rr@10``). Raises DataError naming the file and
    line for a missing unit column, a table without any metric column, a unit listed twice,
    and a value that is not a number.
    """
    from abrank.io import detect_format

    fmt = detect_format(path, format)
    if fmt not in TABLE_NAMES:
        raise DataError(f"{path}: expected a table ({', '.join(TABLE_NAMES)}), got format {fmt}")
    frame, first_line = read_table(
        path,
        fmt,
        sep=sep,
        decimal=decimal,
        first_rows=lambda rows, line: _covariates(rows, line, path, unit, metrics, decimal),
    )
    return _covariates(frame, first_line, path, unit, metrics, decimal)


def _covariates(
    frame: pd.DataFrame,
    first_line: int,
    path: str | Path,
    unit: str,
    metrics: Sequence[str],
    decimal: str | None,
) -> pd.DataFrame:
    """The pre-period values of a table's rows (``first_line``: the file's line of the first
    row), checked; :func:`read_covariates` runs it on the file's first lines, then on the
    whole file."""
    if unit not in frame.columns:
        raise DataError(
            f"{path}: analysis.covariates: expected a column {unit!r} (analysis.unit), "
            f"found columns: {listing(frame)}"
        )
    by_lower = {str(column).lower(): column for column in frame.columns}
    found = {metric: by_lower[metric.lower()] for metric in metrics if metric.lower() in by_lower}
    if not found:
        raise DataError(
            f"{path}: analysis.covariates: expected a column named as one of the metrics "
            f"({', '.join(metrics)}), found columns: {listing(frame)}"
        )
    ids = frame[unit]
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise DataError(f"{_where(path, first_line, row)}: {unit}: expected a unit id, got nothing")
    ids = ids.astype(str) if not pd.api.types.is_float_dtype(ids) else _float_ids(ids)
    repeated = ids.duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise DataError(
            f"{_where(path, first_line, row)}: {unit}: expected one row per unit, "
            f"got {ids.iat[row]!r} again"
        )

    def numbers(column: str, missing: bool) -> np.ndarray:
        return parse_numbers(
            frame[column],
            lambda row: f"{_where(path, first_line, row)}: {column}",
            allow_missing=missing,
            decimal=decimal,
        )

    out = pd.DataFrame(index=pd.Index(ids.to_numpy(dtype=object), name=unit))
    if WEIGHT_COLUMN in frame.columns and WEIGHT_COLUMN not in found:
        weight = numbers(WEIGHT_COLUMN, False)
        bad = weight < 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{_where(path, first_line, row)}: {WEIGHT_COLUMN}: expected a count >= 0, "
                f"got {weight[row]:g}"
            )
        out[WEIGHT_COLUMN] = weight
    else:
        out[WEIGHT_COLUMN] = 1.0
    for metric, column in found.items():
        out[metric] = numbers(column, True)
    return out


def _float_ids(ids: pd.Series) -> pd.Series:
    """Whole-number ids that a reader parsed as floats (a column with gaps): as integers."""
    values = ids.to_numpy(dtype=np.float64)
    whole = np.isfinite(values) & (values == np.round(values))
    if whole.all():
        return pd.Series(values.astype(np.int64), index=ids.index).astype(str)
    return ids.astype(str)


def _where(path: str | Path, first_line: int, row: int) -> str:
    """``file: line N`` of a text file, ``file: row N`` of a Parquet file (0-based ``row``)."""
    kind = "row" if Path(path).suffix.lower() in (".parquet", ".pq") else "line"
    return f"{path}: {kind} {first_line + row}"
