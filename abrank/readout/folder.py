"""A readout folder read back: summary.json, per_query.csv and the data behind the charts.

summary.json and per_query.csv hold every number of the report but not everything its
charts are drawn from: the metric@k curves, where each arm's first relevant document lands,
the bootstrap draws of each overall delta, and the config text shown in the report. A folder
holding a report keeps those in :data:`CHART_DATA` (NumPy's ``.npz``, no pickled objects),
beside the charts, so that :func:`load_readout` gives back a readout that renders the same
report. A folder written without a report (``--format json,csv``) loads without them, and
renders without those charts. A dated readout also keeps its rows of the history store,
which its trend charts are drawn from, in :data:`HISTORY_DATA` (Parquet, the store's own
schema), so the trends render again the same too.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

from abrank.errors import DataError
from abrank.readout.core import Readout
from abrank.readout.model import Summary

#: The chart data file of a readout folder, relative to the folder.
CHART_DATA = "charts/data.npz"
#: The history rows behind a dated readout's trend charts, relative to the folder.
HISTORY_DATA = "charts/history.parquet"


def write_chart_data(readout: Readout, folder: str | Path) -> Path:
    """Save what the charts are drawn from, beyond summary.json and per_query.csv, into
    ``folder`` / :data:`CHART_DATA` (and a dated readout's history rows into
    :data:`HISTORY_DATA`); returns the path of :data:`CHART_DATA`."""
    path = Path(folder) / CHART_DATA
    path.parent.mkdir(parents=True, exist_ok=True)
    curves = readout.curves if readout.curves is not None else pd.DataFrame()
    first = readout.first_relevant if readout.first_relevant is not None else pd.DataFrame()
    keys = list(readout.resampled_deltas)
    draws = [np.asarray(readout.resampled_deltas[key], dtype=np.float64) for key in keys]
    arrays = {
        "curves_arm": _strings(curves, "arm"),
        "curves_metric": _strings(curves, "metric"),
        "curves_k": _numbers(curves, "k"),
        "curves_value": _numbers(curves, "value"),
        "first_arm": _strings(first, "arm"),
        "first_query_id": _strings(first, "query_id"),
        "first_rank": _numbers(first, "rank"),
        "deltas_metric": np.array([m for m, _ in keys], dtype=str),
        "deltas_treatment": np.array([t for _, t in keys], dtype=str),
        "deltas_sizes": np.array([d.size for d in draws], dtype=np.int64),
        "deltas_values": np.concatenate(draws) if draws else np.zeros(0),
        "config_text": np.array(readout.config_text, dtype=str),
    }
    if readout.ctr_by_rank is not None:
        ranks = readout.ctr_by_rank
        arrays.update(
            {f"rank_{column}": _strings(ranks, column) for column in ("arm",)}
            | {f"rank_{c}": _numbers(ranks, c) for c in ("rank", "impressions", "clicks", "ctr")}
        )
    if readout.unit_values is not None:
        arrays["units_arm"] = _strings(readout.unit_values, "arm")
        arrays["units_value"] = _numbers(readout.unit_values, "value")
    with open(path, "wb") as handle:
        # numpy's stub matches a ** mapping against allow_pickle: bool as well
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]
    if readout.history is not None:
        _write_history(readout.history, Path(folder) / HISTORY_DATA)
    return path


def _write_history(history: pd.DataFrame, path: Path) -> None:
    """The history rows as Parquet: column types as they are (the store's schema) and the
    frame's index, so that reading them back gives the same frame."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(history), path)


def _read_history(path: Path) -> pd.DataFrame | None:
    """The history rows saved beside the charts, or None when the readout had none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        return pq.read_table(path).to_pandas()
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: expected the history rows abrank wrote, got {exc}") from None


def load_readout(folder: str | Path) -> Readout:
    """The readout written into ``folder``, ready to render again.

    Reads summary.json (checked against the typed model: a missing or malformed key is a
    DataError naming it), per_query.csv (ids and segment values as text, metrics as
    numbers) and, when present, :data:`CHART_DATA`, :data:`HISTORY_DATA` and the
    explanation tables (queries.parquet, rankings.parquet).
    """
    folder = Path(folder)
    summary_path = folder / "summary.json"
    try:
        text = summary_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"{summary_path}: expected a readout's summary.json, got no such file"
        ) from None
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise DataError(f"{summary_path}: expected JSON, got {exc}") from None
    try:
        summary = Summary.from_dict(raw)
    except DataError as exc:
        raise DataError(f"{summary_path}: {exc}") from None
    per_query = _read_per_query(folder / "per_query.csv", summary)
    curves, first, deltas, config_text, online = _read_chart_data(folder / CHART_DATA)
    history = _read_history(folder / HISTORY_DATA)
    queries, rankings = _read_explanation(folder)
    return Readout.from_summary(
        summary,
        per_query,
        curves,
        first,
        deltas,
        config_text,
        **online,
        history=history,
        queries=queries,
        rankings=rankings,
    )


def _read_explanation(folder: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """queries.parquet and rankings.parquet (abrank.explain.tables), when the folder has
    both; DataError naming a file that is not a readable table."""
    paths = [folder / "queries.parquet", folder / "rankings.parquet"]
    if not all(path.is_file() for path in paths):
        return None, None
    frames = []
    for path in paths:
        try:
            frames.append(pd.read_parquet(path))
        except Exception as exc:  # pyarrow's errors for a damaged file vary by version
            raise DataError(f"{path}: expected a Parquet table, got {exc}") from None
    return frames[0], frames[1]


def _read_per_query(path: Path, summary: Summary) -> pd.DataFrame:
    """per_query.csv as written: metric columns as float64, every other column as text
    (the quote that kept a formula-like text a text removed again)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from abrank.readout.csv_cells import unescape_text_columns

    if not path.is_file():
        return pd.DataFrame(columns=["arm", "query_id", *summary.metrics])
    with open(path, encoding="utf-8", newline="") as handle:
        columns = next(csv.reader(handle), [])
    metrics = set(summary.metrics)
    types = {c: (pa.float64() if c in metrics else pa.string()) for c in columns}
    convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=False)
    try:
        table = pcsv.read_csv(path, convert_options=convert)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: expected the per-query table abrank wrote, got {exc}") from None
    return unescape_text_columns(table.to_pandas())


def _read_chart_data(
    path: Path,
) -> tuple[
    pd.DataFrame,
    pd.DataFrame,
    dict[tuple[str, str], np.ndarray],
    str,
    dict[str, pd.DataFrame],
]:
    """(curves, first_relevant, resampled_deltas, config_text, online chart frames by
    keyword); empty when not saved."""
    curves = pd.DataFrame(columns=["arm", "metric", "k", "value"])
    first = pd.DataFrame(columns=["arm", "query_id", "rank"])
    if not path.is_file():
        return curves, first, {}, "", {}
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: expected the chart data abrank wrote, got {exc}") from None
    curves = pd.DataFrame(
        {
            "arm": arrays["curves_arm"].astype(object),
            "metric": arrays["curves_metric"].astype(object),
            "k": arrays["curves_k"].astype(np.int64),
            "value": arrays["curves_value"],
        }
    )
    first = pd.DataFrame(
        {
            "arm": arrays["first_arm"].astype(object),
            "query_id": arrays["first_query_id"].astype(object),
            "rank": arrays["first_rank"],
        }
    )
    ends = np.cumsum(arrays["deltas_sizes"])
    values = np.split(arrays["deltas_values"], ends[:-1]) if ends.size else []
    deltas = {
        (str(metric), str(treatment)): draws
        for metric, treatment, draws in zip(
            arrays["deltas_metric"], arrays["deltas_treatment"], values, strict=True
        )
    }
    online: dict[str, pd.DataFrame] = {}
    if "rank_arm" in arrays:
        online["ctr_by_rank"] = pd.DataFrame(
            {
                "arm": arrays["rank_arm"].astype(object),
                "rank": arrays["rank_rank"].astype(np.int64),
                "impressions": arrays["rank_impressions"].astype(np.int64),
                "clicks": arrays["rank_clicks"].astype(np.int64),
                "ctr": arrays["rank_ctr"],
            }
        )
    if "units_arm" in arrays:
        online["unit_values"] = pd.DataFrame(
            {"arm": arrays["units_arm"].astype(object), "value": arrays["units_value"]}
        )
    return curves, first, deltas, str(arrays["config_text"]), online


def _strings(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.array([], dtype=str)
    return np.array([str(v) for v in frame[column]], dtype=str)


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.zeros(0)
    return frame[column].to_numpy(dtype=np.float64)
