"""A dated version of the bundled offline demo, for trying scheduled runs and backfills.

The demo's 2,000 queries are spread over consecutive days (query ``i`` on day ``i mod
days``), and each day's rows of both rankers are written to ``logs/<date>/``, so that a
config with ``{date}`` paths reads one day per run (``window: daily``) or every day so far
(``window: {cumulative: START}``). The judgments stay one file. The scheduling examples, tests
and benchmarks use it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from abrank.config.dates import date_range
from abrank.demo.offline import DEFAULT_SEED, generate_demo

DAILY_NAME = "demo-daily"


def write_daily_demo(
    folder: str | Path,
    *,
    start: dt.date = dt.date(2026, 1, 1),
    days: int = 30,
    cumulative: bool = False,
    resamples: int = 10_000,
    n_queries: int = 2000,
    seed: int = DEFAULT_SEED,
    name: str = DAILY_NAME,
) -> Path:
    """Write the daily demo into ``folder``; return its config's path (``<name>.yaml``)."""
    if days < 1:
        raise ValueError(f"days: expected at least 1, got {days}")
    folder = Path(folder)
    demo = generate_demo(seed=seed, n_queries=n_queries)
    queries = pd.Index(demo.control["query_id"].unique())
    dates = date_range(start, start + dt.timedelta(days=days - 1), "days")
    day_of = pd.Series(pd.RangeIndex(queries.size) % days, index=queries)
    for index, day in enumerate(dates):
        out = folder / "logs" / day.isoformat()
        out.mkdir(parents=True, exist_ok=True)
        for arm, frame in (("control", demo.control), ("treatment", demo.treatment)):
            _day_rows(frame, day_of, index).to_csv(out / f"{arm}.csv", index=False)
    demo.judgments.to_csv(folder / "judgments.tsv", index=False, sep="\t")
    window = f"{{cumulative: {start.isoformat()}}}" if cumulative else "daily"
    config = folder / f"{name}.yaml"
    config.write_text(
        f"""# The bundled demo spread over {days} days from {start}: one folder of logs per day.
name: {name}
title: Cross-encoder reranker vs BM25, daily
control: {{name: bm25, label: BM25 (production), path: "logs/{{date}}/control.csv"}}
treatments:
  - name: reranker
    label: Cross-encoder reranker
    path: "logs/{{date}}/treatment.csv"
judgments: {{path: judgments.tsv}}
metrics: [mrr@10, ndcg@10, recall@20]
primary_metric: mrr@10
window: {window}
analysis: {{design: paired, resamples: {resamples}, seed: 7}}
segments: {{columns: [device], min_queries: 30}}
""",
        encoding="utf-8",
    )
    return config


def _day_rows(frame: pd.DataFrame, day_of: pd.Series, index: int) -> pd.DataFrame:
    return frame[day_of.reindex(frame["query_id"].to_numpy()).to_numpy() == index]


ONLINE_DAILY_NAME = "reranker-daily"


def write_online_daily_demo(
    folder: str | Path,
    *,
    start: dt.date = dt.date(2026, 1, 1),
    users: int = 20_000,
    seed: int | None = None,
    name: str = ONLINE_DAILY_NAME,
) -> Path:
    """The bundled online demo's two weeks of impressions, one Parquet file per day under
    ``logs/date=<date>/impressions.parquet`` (its timestamps moved to start on ``start``),
    and a cumulative, sequential config reading them (``<name>.yaml``, the README's
    scheduling example); return the config's path."""
    from abrank.demo.online import (
        DEFAULT_ONLINE_SEED,
        EXPERIMENT_DAYS,
        EXPERIMENT_START,
        make_online_demo,
        write_log_parquet,
    )

    folder = Path(folder)
    demo = make_online_demo(users, DEFAULT_ONLINE_SEED if seed is None else seed, pre_period=False)
    log = demo.log
    day = (log["timestamp"].to_numpy() - EXPERIMENT_START) // 86_400
    epoch = dt.datetime(start.year, start.month, start.day, tzinfo=dt.timezone.utc)
    log = log.assign(timestamp=log["timestamp"] + (int(epoch.timestamp()) - EXPERIMENT_START))
    for index, date in enumerate(date_range(start, start + dt.timedelta(days=EXPERIMENT_DAYS - 1))):
        out = folder / "logs" / f"date={date.isoformat()}"
        out.mkdir(parents=True, exist_ok=True)
        write_log_parquet(out / "impressions.parquet", log[day == index].reset_index(drop=True))
    config = folder / f"{name}.yaml"
    config.write_text(
        f"""# The bundled online demo over {EXPERIMENT_DAYS} days from {start}: one log file per day.
name: {name}
log: {{path: "logs/date={{date}}/impressions.parquet"}}
control: {{name: bm25}}
treatments: [{{name: reranker}}]
metrics: [click_rr@10, ctr@3]
window: {{cumulative: {start.isoformat()}}}   # or daily (the default): the run's date only
analysis: {{design: independent, unit: user_id, sequential: true}}
""",
        encoding="utf-8",
    )
    return config
