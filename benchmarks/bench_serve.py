"""Speed of ``abrank serve`` on a large readout, and the size of its explanation tables.

Builds a readout of a two-arm experiment (default 100,000 queries x 20 documents per arm,
the demo generator's model at a larger size, segmented by locale and device) by the real
pipeline, ``abrank.run_experiment`` and ``write_readout``: the offline design makes
explanation tables up to a million ranking rows (abrank/designs/offline/explain.py), so
this process lifts that cap for its own run to get queries.parquet and rankings.parquet at
this size. Then it starts ``abrank serve`` on the reports root (its own process) and times, each as
a whole HTTP request from a client in this process:

* 200 ``GET /api/experiments/NAME/queries`` filtered by a segment (locale and device
  values in turn) and sorted by delta (ascending and descending in turn, pages at
  different offsets): p50 and p95; anchor p95 < 300 ms;
* 200 query pages ``GET /e/NAME/q/QID`` of random queries: p50 and p95; anchor p95 <
  100 ms;

after one warm-up request of each kind (the first loads the tables into DuckDB: timed
apart). Last, the explanation tables' size (queries.parquet + rankings.parquet) against
per_query.csv's; anchor < 2x.

    python benchmarks/bench_serve.py                      # 100k queries, about 2 minutes
    python benchmarks/bench_serve.py --queries 20000 --requests 100
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
NAME = "bench-serve"
TABLE_P95_MS, PAGE_P95_MS, SIZE_RATIO = 300.0, 100.0, 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=20, help="documents per query and arm")
    parser.add_argument("--requests", type=int, default=200, help="timed requests of each kind")
    parser.add_argument("--workdir", default="/tmp/abrank-bench-serve")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--reuse", action="store_true", help="time the readout already in --workdir (same sizes)"
    )
    args = parser.parse_args()
    workdir = Path(args.workdir)
    root = workdir / "reports"
    folder = root / NAME
    if not (args.reuse and (folder / "rankings.parquet").is_file()):
        build(workdir, args)
    else:
        print(f"reusing the readout in {folder}")
    queries = __import__("pandas").read_parquet(folder / "queries.parquet")
    rng = np.random.default_rng(args.seed)
    ids = queries["query_id"].to_numpy()[rng.integers(0, len(queries), args.requests)]
    segments = [f"locale:{v}" for v in sorted(queries["locale"].unique())] + [
        f"device:{v}" for v in sorted(queries["device"].unique())
    ]
    n_rows = len(queries)
    del queries

    # the explorer as a user starts it: its own process, port 0 (any free one)
    log = workdir / "serve.log"  # its request lines: a file, so that no pipe fills up
    with open(log, "w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "abrank", "serve", str(root), "--port", "0"], stderr=sink
        )
    try:
        deadline = time.monotonic() + 60
        while "http://" not in log.read_text():
            assert time.monotonic() < deadline and server.poll() is None, log.read_text()
            time.sleep(0.1)
        host = log.read_text().split("http://", 1)[1].split("/", 1)[0]
        first_table = _get(
            host, f"/api/experiments/{NAME}/queries?segment={segments[0]}&sort=delta"
        )
        first_page = _get(host, f"/e/{NAME}/q/{ids[0]}")
        tables = [
            _get(
                host,
                f"/api/experiments/{NAME}/queries?segment={segments[i % len(segments)]}"
                f"&sort=delta&order={'asc' if i % 2 == 0 else 'desc'}&limit=50&offset={(i % 10) * 50}",
            )
            for i in range(args.requests)
        ]
        pages = [_get(host, f"/e/{NAME}/q/{qid}") for qid in ids]
    finally:
        server.terminate()
        server.wait(60)

    extra = sum((folder / name).stat().st_size for name in ("queries.parquet", "rankings.parquet"))
    per_query = (folder / "per_query.csv").stat().st_size
    table_p50, table_p95 = np.percentile(tables, [50, 95])
    page_p50, page_p95 = np.percentile(pages, [50, 95])
    ratio = extra / per_query
    print()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} (1, 5, 15 min) at the end")
    print(
        f"readout: {n_rows:,} queries; first table request {first_table:.0f} ms, first query page "
        f"{first_page:.0f} ms (each loads its table into DuckDB once)"
    )
    print(f"{'measure':<46}{'value':>12}{'anchor':>12}{'ratio':>9}")
    rows = [
        ("queries API, segment + sort by delta, p50 (ms)", table_p50, None),
        ("queries API, segment + sort by delta, p95 (ms)", table_p95, TABLE_P95_MS),
        ("query page, p50 (ms)", page_p50, None),
        ("query page, p95 (ms)", page_p95, PAGE_P95_MS),
        ("queries+rankings.parquet / per_query.csv", ratio, SIZE_RATIO),
    ]
    for label, value, anchor in rows:
        shown = f"< {anchor:g}" if anchor else ""
        against = f"{value / anchor:.2f}x" if anchor else ""
        print(f"{label:<46}{value:>12.2f}{shown:>12}{against:>9}")
    print(
        f"sizes: queries.parquet + rankings.parquet {extra / 2**20:.1f} MiB, "
        f"per_query.csv {per_query / 2**20:.1f} MiB"
    )
    met = table_p95 < TABLE_P95_MS and page_p95 < PAGE_P95_MS and ratio < SIZE_RATIO
    print("all anchors met" if met else "an anchor was missed")
    return 0 if met else 1


def build(workdir: Path, args: argparse.Namespace) -> None:
    """Generate the experiment's data and write its readout by the pipeline."""
    shutil.rmtree(workdir, ignore_errors=True)
    root = workdir / "reports"
    folder = root / NAME
    (workdir / "data").mkdir(parents=True)

    start = time.perf_counter()
    code = (
        "import sys; from abrank.demo import write_demo; "
        "write_demo(sys.argv[1], seed=int(sys.argv[2]), n_queries=int(sys.argv[3]), "
        "depth=int(sys.argv[4]), formats=('parquet',))"
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(workdir / "data"),
            str(args.seed),
            str(args.queries),
            str(args.docs),
        ],
        check=True,
    )
    print(
        f"generated {args.queries:,} queries x {args.docs} documents in {time.perf_counter() - start:.1f} s"
    )

    config = workdir / f"{NAME}.yaml"
    config.write_text(
        textwrap.dedent(f"""\
            name: {NAME}
            title: "Benchmark: {args.queries:,} queries"
            control: {{name: control, path: data/control.parquet}}
            treatments:
              - {{name: treatment, path: data/treatment.parquet}}
            judgments: {{path: data/judgments.parquet}}
            metrics: [mrr@10, ndcg@10, recall@{args.docs}]
            analysis: {{design: paired, seed: 7, resamples: 1000}}
            segments: {{columns: [locale, device]}}
            output: reports/{NAME}
            """)
    )
    # the pipeline in a child process, as `abrank run` would be; this one stays small
    build = (
        "import sys; import abrank; import abrank.designs.offline.explain as explain; "
        "from abrank.analysis import write_readout; "
        "explain.MAX_ROWS = 10**9; "  # this run keeps its explanation tables at any size
        "write_readout(abrank.run_experiment(sys.argv[1]), sys.argv[2], formats=('json', 'csv'))"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", build, str(config), str(folder)], check=True)
    print(f"readout written by the pipeline in {time.perf_counter() - start:.1f} s: {folder}")


def _get(host: str, path: str) -> float:
    """Milliseconds of one whole GET (connect, request, read the body); 200 expected."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, timeout=120)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, (path, response.status)
    finally:
        connection.close()
    return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    sys.exit(main())
