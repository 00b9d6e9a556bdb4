"""Generated click logs and the checks shared by the tests of the SQL engines: each
engine's per-unit sums and summaries are compared with the memory engine's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from abrank.engines.clicks import score_impressions, unit_sums
from abrank.engines.sql.clicks import ClickAggregates, ClickRequest, LogSource, click_aggregates
from abrank.io import read_impressions
from abrank.metrics import parse_metric

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["click_rr@3", "click_rr", "ctr@2", "clicks@3", "clicks", "abandonment", "sat_ctr@3"]


def make_log(seed: int = 5, impressions: int = 3000, string_ids: bool = False) -> pd.DataFrame:
    """Users with several impressions of 1..6 results; many impressions unclicked, dwell
    missing on some clicks, two devices, ids int or long text."""
    rng = np.random.default_rng(seed)
    depth = rng.integers(1, 7, size=impressions)
    user = rng.integers(0, impressions // 4, size=impressions)
    rows = int(depth.sum())
    impression = np.repeat(np.arange(impressions), depth)
    starts = np.repeat(np.cumsum(depth) - depth, depth)
    rank = np.arange(rows) - starts + 1
    clicked = (rng.random(rows) < 0.5 / rank) & np.repeat(rng.random(impressions) < 0.6, depth)
    dwell = np.where(clicked, rng.choice([5.0, 30.0, 45.0, np.nan], size=rows), np.nan)
    frame = pd.DataFrame(
        {
            "impression_id": impression * 7919 % 100_003,
            "user_id": np.repeat(user, depth),
            "rank": rank,
            "doc_id": rng.integers(0, 50, size=rows),
            "clicked": clicked.astype(np.int64),
            "dwell": dwell,
            "device": np.repeat(np.where(user % 3 == 0, "mobile", "desktop"), depth),
            "arm": np.repeat(np.where(user % 2 == 0, "a", "b"), depth),
        }
    )
    if string_ids:
        frame["impression_id"] = "imp-" + frame["impression_id"].astype(str) + "-" + "x" * 40
        frame["user_id"] = "user/é" + frame["user_id"].astype(str).str.zfill(5)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def memory_sums(path: Path, metrics, *, unit: str = "user_id", by: str | None = None):
    """Per arm, the memory engine's per-unit sums of the log file."""
    log = read_impressions(path)
    out = {}
    for arm in ("a", "b"):
        frame = log[log["arm"] == arm].drop(columns="arm").reset_index(drop=True)
        values = score_impressions(frame, metrics, sat_dwell=30)
        out[arm] = unit_sums(frame, values, unit=unit, by=by)
    return out


def sums_on(
    backend,
    path: Path,
    metrics,
    *,
    fmt: str = "parquet",
    segments=(),
    arms=("a", "b"),
    drop_mixed: bool = False,
    **options,
) -> ClickAggregates:
    """The per-unit sums of the log file (arms a and b unless told) on an SQL backend,
    then closed."""
    request = ClickRequest(
        metrics=tuple(parse_metric(m) for m in metrics),
        arms=tuple(arms),
        segments=segments,
        drop_mixed=drop_mixed,
    )
    source = LogSource(files=(str(path),), format=fmt, label=path.name, **options)
    try:
        return click_aggregates(backend, [source], request)
    finally:
        backend.close()


def assert_same_sums(memory: pd.DataFrame, sql: pd.DataFrame) -> None:
    assert list(sql.index) == list(memory.index)  # the same units, in the same order
    assert list(sql.columns) == list(memory.columns)
    assert sql["impressions"].tolist() == memory["impressions"].tolist()
    np.testing.assert_allclose(sql.to_numpy(float), memory.to_numpy(float), rtol=1e-12, atol=1e-9)


def bad_log(**change) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "impression_id": [1, 1, 2, 2],
            "user_id": ["u", "u", "v", "v"],
            "rank": [1, 2, 1, 2],
            "doc_id": ["d", "e", "d", "e"],
            "clicked": [0, 1, 0, 0],
            "dwell": [np.nan, 3.0, np.nan, np.nan],
            "device": ["m", "m", "d", "d"],
            "arm": ["a", "a", "b", "b"],
        }
    )
    for column, (row, value) in change.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


CONFIG = """\
name: engine-test
log: {path: LOG}
control: {name: a}
treatments: [{name: b}]
metrics: [click_rr@3, ctr@2, abandonment, sat_ctr@3, clicks@3]
analysis:
  design: independent
  unit: user_id
  resamples: 300
segments:
  columns: [device]
  min_queries: 10
"""


def write_experiment(tmp_path: Path, log: str = "log.parquet", extra: str = "") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(CONFIG.replace("LOG", log) + extra)
    return path
