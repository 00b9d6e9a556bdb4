"""Engines on a click log partitioned by day: time and peak memory of each.

A user-randomized log (10 results per impression, 5 impressions per user on average) is
written as Parquet, one folder per day (``logs/date=YYYY-MM-DD/part-0.parquet``). Then,
each in its own child process, measured by wall time and peak RSS (``os.wait4``):

- ``abrank run --engine duckdb`` on a config whose log is the glob ``logs/date=*/...``;
- the same on a dated config with a cumulative window (one file per date);
- a hand-written DuckDB query of the same per-user sums (click_rr@10 and ctr@3);
- ``abrank run --engine spark`` on the glob config, Spark in local mode (``local[*]``;
  ``--no-spark`` skips it, ``--spark-memory 4GB`` sets its driver memory), and the same
  hand-written per-user sums on Spark (session start included in both);
- ``abrank run`` on the memory engine (the dated config; ``--no-memory`` skips it).

Peak memory is the largest resident size of the child's process tree, summed over its
processes (sampled every 0.1 s, and at least the child's own peak from ``os.wait4``), so
that Spark's JVM, a grandchild of the run, is counted. Then the agreement: the largest
absolute difference between the engines' comparisons (every number of summary.json's
``comparisons``), and between the per-user sums of DuckDB and Spark over the same files.

The configs compare click_rr@10 and ctr@3 clustered on users with the delta-method t-test
only (``tests: [t]``), so that the figures are the engines' and not the resampling's.

    python benchmarks/bench_engines.py                 # 10M shown results
    python benchmarks/bench_engines.py --rows 100000000 --no-memory
    python benchmarks/bench_engines.py --no-spark          # without pyspark / Java
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DEPTH = 10

HAND_SQL = """
SELECT arm, user_id, COUNT(*) AS impressions,
       SUM(CASE WHEN first_click <= 10 THEN 1.0 / first_click ELSE 0 END) AS click_rr,
       SUM(CASE WHEN first_click <= 3 THEN 1 ELSE 0 END) AS ctr
FROM (
    SELECT impression_id, MIN(arm) AS arm, MIN(user_id) AS user_id,
           MIN(CASE WHEN clicked = 1 THEN rank END) AS first_click
    FROM read_parquet('{glob}')
    GROUP BY impression_id
)
GROUP BY arm, user_id
"""


def write_log(folder: Path, rows: int, days: int, seed: int = 0) -> None:
    """The log, one Parquet file per day; impressions of a user spread over the days."""
    impressions = rows // DEPTH
    users = max(impressions // 5, 2)
    rng = np.random.default_rng(seed)
    per_day = np.diff(np.linspace(0, impressions, days + 1).astype(np.int64))
    arm_of = np.where(rng.random(users) < 0.5, "control", "treatment")
    start = 0
    for day, count in enumerate(per_day):
        user = rng.integers(0, users, size=count)
        lift = np.where(arm_of[user] == "treatment", 1.03, 1.0)
        propensity = rng.beta(2, 5, size=count) * lift
        rank = np.tile(np.arange(1, DEPTH + 1, dtype=np.int32), count)
        clicked = rng.random(count * DEPTH) < np.repeat(propensity, DEPTH) / rank
        table = pa.table(
            {
                "impression_id": np.repeat(np.arange(start, start + count), DEPTH),
                "user_id": np.repeat(user.astype(np.int64), DEPTH),
                "rank": rank,
                "doc_id": rng.integers(0, 1_000_000, size=count * DEPTH),
                "clicked": clicked.astype(np.int8),
                "arm": pa.array(np.repeat(arm_of[user], DEPTH)).dictionary_encode(),
            }
        )
        date = dt.date(2024, 5, 1) + dt.timedelta(days=day)
        part = folder / "logs" / f"date={date.isoformat()}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, part / "part-0.parquet")
        start += count


def config(log: str, extra: str = "") -> str:
    return f"""\
name: bench-engines
log: {{path: "{log}"}}
control: {{name: control}}
treatments: [{{name: treatment}}]
metrics: [click_rr@10, ctr@3]
analysis:
  design: independent
  unit: user_id
  primary_test: t
  tests: [t]
{extra}"""


def tree_rss(root: int) -> int:
    """Resident bytes of process ``root`` and all its descendants now (Linux /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = int(fields[21]) * page
    members, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        members.update(children)
        frontier.extend(children)
    return sum(rss.get(pid, 0) for pid in members)


def measure(command: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS of the process tree in MB, exit code) of a child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], tree_rss(child.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    errors = child.stderr.read()  # until the child closes it (a full pipe would block it)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(errors.decode()[-2000:], file=sys.stderr)
    return seconds, max(usage.ru_maxrss * 1024, peak[0]) / 2**20, code


def numbers(tree: Any, path: str = "") -> dict[str, float]:
    """Every number of a JSON tree by its path (``comparisons[0].delta``)."""
    if isinstance(tree, dict):
        out: dict[str, float] = {}
        for key, value in tree.items():
            out.update(numbers(value, f"{path}.{key}" if path else key))
        return out
    if isinstance(tree, list):
        out = {}
        for i, value in enumerate(tree):
            out.update(numbers(value, f"{path}[{i}]"))
        return out
    if isinstance(tree, (int, float)) and not isinstance(tree, bool):
        return {path: float(tree)}
    return {}


def summary_difference(first: Path, second: Path) -> float:
    """The largest absolute difference between the comparisons of two summary.json files
    (NaN in both counts as equal; a number in one only is infinitely different)."""
    a = numbers(json.loads(first.read_text())["comparisons"])
    b = numbers(json.loads(second.read_text())["comparisons"])
    worst = 0.0
    for key in a.keys() | b.keys():
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            return float("inf")
        if not (np.isnan(x) and np.isnan(y)):
            worst = max(worst, abs(x - y))
    return worst


def sums_difference(glob: str) -> tuple[float, int]:
    """(largest absolute difference, units) between DuckDB's and Spark's per-user sums of
    click_rr@10 and ctr@3 over the files of ``glob`` (the same units, in the same order)."""
    import glob as globbing

    from abrank.engines.sql import open_backend
    from abrank.engines.sql.clicks import ClickRequest, LogSource, click_aggregates
    from abrank.metrics import parse_metric

    request = ClickRequest(
        metrics=(parse_metric("click_rr@10"), parse_metric("ctr@3")),
        arms=("control", "treatment"),
    )
    source = LogSource(tuple(sorted(globbing.glob(glob))), "parquet", "logs")
    sums = {}
    for engine in ("duckdb", "spark"):
        backend = open_backend(engine, {})
        try:
            sums[engine] = click_aggregates(backend, [source], request).sums
        finally:
            backend.close()
    worst, units = 0.0, 0
    for arm, duck in sums["duckdb"].items():
        spark = sums["spark"][arm]
        if not duck.index.equals(spark.index):
            return float("inf"), units
        worst = max(worst, float(np.abs(duck.to_numpy(float) - spark.to_numpy(float)).max()))
        units += len(duck)
    return worst, units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="shown results")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--no-memory", action="store_true", help="skip the memory engine")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark engine")
    parser.add_argument("--spark-memory", help="the Spark driver's memory_limit, e.g. 4GB")
    parser.add_argument("--folder", help="where to write the log (default: a temporary one)")
    args = parser.parse_args()
    folder = Path(args.folder or tempfile.mkdtemp(prefix="bench-engines-"))
    start = time.perf_counter()
    if not (folder / "logs").exists():
        write_log(folder, args.rows, args.days)
    size = sum(p.stat().st_size for p in (folder / "logs").rglob("*.parquet")) / 2**20
    print(
        f"log: {args.rows:,} shown results, {args.rows // DEPTH:,} impressions, "
        f"{args.rows // DEPTH // 5:,} users, {args.days} days, {size:,.0f} MB Parquet "
        f"(written in {time.perf_counter() - start:.1f} s)"
    )
    last = (dt.date(2024, 5, 1) + dt.timedelta(days=args.days - 1)).isoformat()
    (folder / "glob.yaml").write_text(config("logs/date=*/part-*.parquet", "engine: duckdb\n"))
    spark_memory = f", memory_limit: {args.spark_memory}" if args.spark_memory else ""
    (folder / "spark.yaml").write_text(
        config(
            "logs/date=*/part-*.parquet",
            f'engine: {{name: spark, master: "local[*]"{spark_memory}}}\n',
        )
    )
    (folder / "dated.yaml").write_text(
        config("logs/date={date}/part-0.parquet", "window: {cumulative: 2024-05-01}\n")
    )
    run = [sys.executable, "-m", "abrank", "run", "--quiet", "--no-history", "--format", "json"]
    glob = str(folder / "logs" / "date=*" / "part-*.parquet")
    hand = (
        "import duckdb; con = duckdb.connect(); "
        f"print(con.sql({HAND_SQL.format(glob=glob)!r}).fetchall()[:1])"
    )
    cases = [
        ("hand-written DuckDB SQL (per-user sums)", [sys.executable, "-c", hand]),
        (
            "abrank run --engine duckdb (glob)",
            [*run, str(folder / "glob.yaml"), "--out", str(folder / "out-glob")],
        ),
        (
            "abrank run --engine duckdb (dated window)",
            [*run, str(folder / "dated.yaml"), "--date", last, "--engine", "duckdb",
             "--out", str(folder / "out-duckdb")],
        ),
    ]  # fmt: skip
    if not args.no_spark:
        spark_sql = HAND_SQL.replace("read_parquet('{glob}')", "logs")
        spark_hand = (
            "from pyspark.sql import SparkSession; "
            "spark = SparkSession.builder.master('local[*]')"
            ".config('spark.ui.enabled', 'false').getOrCreate(); "
            f"spark.read.parquet({str(folder / 'logs')!r}).createOrReplaceTempView('logs'); "
            f"print(spark.sql({spark_sql!r}).toArrow().num_rows); spark.stop()"
        )
        cases += [
            (
                "hand-written Spark SQL (per-user sums)",
                [sys.executable, "-c", spark_hand],
            ),
            (
                "abrank run --engine spark (glob, local[*])",
                [*run, str(folder / "spark.yaml"), "--out", str(folder / "out-spark")],
            ),
        ]
    if not args.no_memory:
        cases.append(
            (
                "abrank run --engine memory (dated window)",
                [
                    *run,
                    str(folder / "dated.yaml"),
                    "--date",
                    last,
                    "--out",
                    str(folder / "out-mem"),
                ],
            )
        )
    for label, command in cases:
        seconds, peak, code = measure(command)
        status = "" if code == 0 else f"  (exit {code})"
        print(f"{label:45s} {seconds:7.1f} s   peak RSS {peak:7,.0f} MB{status}")
    outputs = {"duckdb": folder / "out-glob", "spark": folder / "out-spark"}
    outputs["memory"] = folder / "out-mem"
    found = {key: sorted(out.rglob("summary.json")) for key, out in outputs.items()}
    written = {key: paths[0] for key, paths in found.items() if paths}  # dated: out/DATE/
    for other in ("memory", "spark"):
        if "duckdb" in written and other in written:
            worst = summary_difference(written["duckdb"], written[other])
            print(f"comparisons, duckdb vs {other}: largest absolute difference {worst:.3g}")
    if not args.no_spark:
        worst, units = sums_difference(glob)
        print(
            f"per-user sums, duckdb vs spark ({units:,} units): largest absolute difference {worst:.3g}"
        )
    print(f"(files in {folder})")


if __name__ == "__main__":
    main()
