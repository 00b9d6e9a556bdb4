"""The offline readout's explanation tables (queries.parquet, rankings.parquet): time, memory, size.

For each size (queries x depth: 10k and 100k queries, 10 and 100 documents per query and
arm, two arms) a child process generates the demo experiment in memory
(:func:`abrank.demo.generate_demo`: graded judgments, unjudged documents, 1% of queries
missing from the treatment), scores both arms with the memory engine, and then times
:func:`abrank.explain.tables.offline_explanation` alone, sampling its resident memory: the
peak while the tables are built, and how much that is above what the process held before
(the rankings, the judgments and the scores). It then writes the tables as a readout writes
them (Parquet, zstd) beside per_query.csv (the readout's writer) and prints the ratio of
their sizes.

``--old PATH`` also times the same call with the abrank package found under PATH (for
example the previous commit: ``git archive HEAD~N abrank | tar -x -C /tmp/old``), the
anchor of the figures; ``--old-limit`` skips it above that many ranking rows, since the
string joins take about a second per 100,000 rows.

Columns: wall seconds of the call with the previous implementation (string merges, the
commit before the integer codes; ``--old``) and with this one, the speed-up, this one's
CPU and system seconds, the process's peak resident memory while the tables are built,
how much of it the tables took (peak minus what the process held before; ``old extra``:
the same for the string merges), and the size of queries.parquet + rankings.parquet over
per_query.csv. Metrics mrr@10, ndcg@10, recall@100 (so the lists are the logs' whole top
10 or 100). Recorded 2026-12-04 on the shared 2-core, 24 GB machine while other jobs ran
(load average 5 to 7: wall times are noisy, CPU seconds less so):

    size         rows      old s  new s  speed-up  cpu s  sys s  peak MB  extra  old extra  files/csv
    10k x 10       199,000   0.66   0.10      6.5x   0.07   0.03      200     25          -       1.04
    10k x 100    1,990,000   8.47   0.49     17.2x   0.35   0.17      529    186        472       7.09
    100k x 10    1,990,000  17.16   1.74      9.8x   1.01   0.50      677    200        529       0.89
    100k x 100  19,900,000 129.01   6.44     20.0x   5.48   3.74     3828   1971          -       7.04

(extra and old extra in MB. The 100k x 10 row and the old extra column come from a second
run; the string merges took 129 s at 100k x 100 in one run and 289 s in another, more
loaded one.) About half of the new CPU time at 100k x 100 is the kernel's (``sys s``): first touches
of the large arrays' fresh pages. The tables take about 100 bytes per ranking row beyond
the rankings themselves. The Parquet files are about the size of per_query.csv at depth
10 and seven times it at depth 100 (rankings.parquet: one row per result).

On DuckDB, where the engine selects the top lists (``abrank run`` of bench_run.py's 100k x
100 Parquet experiment, 200 resamples, same machine): the selection took 10 s, the whole
run 60 s instead of 50 s without the tables, at a peak of 5.4 GB instead of 3.9 GB; on the
memory engine the same run took 36 s at a peak of 4.4 GB.

    python benchmarks/bench_explain.py
    python benchmarks/bench_explain.py --sizes 10000x10,100000x100 --old /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["mrr@10", "ndcg@10", "recall@100"]
SIZES = ("10000x10", "10000x100", "100000x10", "100000x100")

_CHILD = textwrap.dedent(
    """\
    import json, os, resource, sys, threading, time
    from pathlib import Path

    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import pandas as pd

    import abrank
    from abrank import evaluate
    from abrank.demo import generate_demo
    from abrank.explain.tables import offline_explanation

    queries, depth, seed, out = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    metrics = json.loads(sys.argv[6])
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    demo = generate_demo(n_queries=queries, depth=depth, seed=seed)
    judgments = demo.judgments.rename(columns={"grade": "relevance"})
    rankings = {"control": demo.control, "treatment": demo.treatment}
    values = {arm: evaluate(frame, judgments, metrics) for arm, frame in rankings.items()}
    universe = values["control"].index
    values = {arm: frame.reindex(universe) for arm, frame in values.items()}
    present = values["treatment"].index.isin(demo.treatment["query_id"].unique())
    missing = pd.Series(np.where(present, "", "treatment"), index=universe)
    segments = demo.control.drop_duplicates("query_id").set_index("query_id")
    segments = segments[["locale", "device"]]
    before = rss()
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    explanation = offline_explanation(
        rankings, judgments, values, segments, missing,
        control="control", metrics=metrics, threshold=1.0,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
    system = after.ru_stime - usage.ru_stime
    done.set()
    sampler.join()
    peak[0] = max(peak[0], rss())
    sizes = {}
    if out:
        folder = Path(out)
        for name, frame in (("queries", explanation.queries), ("rankings", explanation.rankings)):
            frame.to_parquet(folder / f"{name}.parquet", index=False, compression="zstd")
            sizes[name] = (folder / f"{name}.parquet").stat().st_size
        from abrank.analysis.write import _write_csv

        per_query = []
        for arm, frame in values.items():
            table = frame.join(missing.rename("missing_in")).join(segments)
            per_query.append(table.reset_index().assign(arm=arm))
        frame = pd.concat(per_query, ignore_index=True)
        _write_csv(frame[["arm", *frame.columns.drop("arm")]], folder / "per_query.csv")
        sizes["per_query"] = (folder / "per_query.csv").stat().st_size
    rows = sum(len(frame) for frame in rankings.values())
    print(json.dumps({"seconds": seconds, "cpu": cpu, "system": system, "before": before, "peak": peak[0], "rows": rows,
                      "judgments": len(judgments), "sizes": sizes}))
    """
)


def run(package: Path, queries: int, depth: int, seed: int, out: str) -> dict | None:
    """One child process's figures (None when it failed)."""
    command = [
        sys.executable,
        "-c",
        _CHILD,
        str(package),
        str(queries),
        str(depth),
        str(seed),
        out,
        json.dumps(METRICS),
    ]
    env = {**os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(textwrap.indent(done.stderr.strip()[-3000:], "    "), file=sys.stderr)
        return None
    figures: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(SIZES), help="QUERIESxDEPTH, comma-separated")
    parser.add_argument("--old", type=Path, help="a folder holding a previous abrank package")
    parser.add_argument(
        "--old-limit",
        type=int,
        default=2_000_000,
        help="time the previous package only up to this many ranking rows (default 2000000)",
    )
    parser.add_argument("--seed", type=int, default=20261204, help="generator seed")
    args = parser.parse_args()
    header = (
        f"{'size':<12} {'rows':>11} {'old s':>8} {'new s':>8} {'speed-up':>9} "
        f"{'cpu s':>7} {'sys s':>7} {'peak MB':>8} {'extra MB':>9} {'old extra':>10} "
        f"{'files/csv':>10}"
    )
    print(header)
    print("-" * len(header))
    for size in args.sizes.split(","):
        queries, depth = (int(part) for part in size.split("x"))
        with tempfile.TemporaryDirectory() as scratch:
            new = run(ROOT, queries, depth, args.seed, scratch)
        if new is None:
            print(f"{size:<12} failed")
            continue
        old = None
        if args.old is not None and new["rows"] <= args.old_limit:
            old = run(args.old.resolve(), queries, depth, args.seed, "")
        sizes = new["sizes"]
        ratio = (sizes["queries"] + sizes["rankings"]) / sizes["per_query"]
        old_s = f"{old['seconds']:8.2f}" if old else f"{'-':>8}"
        speed = f"{old['seconds'] / new['seconds']:8.1f}x" if old else f"{'-':>9}"
        old_mb = f"{(old['peak'] - old['before']) / 2**20:10.0f}" if old else f"{'-':>10}"
        print(
            f"{size:<12} {new['rows']:>11,} {old_s} {new['seconds']:8.2f} {speed} "
            f"{new['cpu']:7.2f} {new['system']:7.2f} {new['peak'] / 2**20:8.0f} "
            f"{(new['peak'] - new['before']) / 2**20:9.0f} {old_mb} {ratio:10.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n({time.perf_counter() - started:.0f} s in all; {threading.active_count()} thread)")
    sys.exit(code)
