"""Speed of ``abrank history`` on a store of 100,000 rows, against the 1 s goal.

Builds a history in a temporary folder with :func:`abrank.history.write_history`: one
experiment x ``--dates`` dates (default 500) x ``--rows`` rows a date (default 200: the
demo's 32 comparisons repeated, every date's means, deltas, intervals and p-values
made distinct with random noise), so 100,000 rows by default. Then
times, best of ``--repeat`` (default 3):

* ``abrank history NAME``, ``--json`` and ``--csv`` as subprocesses (interpreter start-up,
  imports, reading, formatting and writing to a pipe included; output discarded);
* :func:`abrank.history.read_history` (to a DataFrame) and
  :func:`abrank.history.store.history_table` (Arrow only) in this process, and the
  latter once more without the experiment's consolidated copy (``_rows.parquet``: every
  date file read, and the copy rebuilt), as the first read of a store written without it.

It prints each figure beside the goal (wall seconds, and the CPU seconds of the command's
process: on a busy machine the wall time waits for the CPU, the CPU time does not), the
start-up of a bare interpreter for comparison, and the time to write the store (one
``write_history`` per date). The machine is shared: the load average is printed too.

    python benchmarks/bench_history.py
    python benchmarks/bench_history.py --dates 50 --repeat 1   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.0  # seconds, for `abrank history` on 100,000 rows
NAME = "demo-reranker"


def build(root: Path, dates: int, rows: int) -> float:
    """Write the store; return the seconds it took."""
    import datetime as dt

    import numpy as np

    from abrank.history import history_rows, write_history

    summary = json.loads((ROOT / "tests" / "golden" / "demo-summary.json").read_text())
    comparisons = summary["comparisons"]
    summary["comparisons"] = [dict(comparisons[i % len(comparisons)]) for i in range(rows)]
    base = history_rows(summary, date="2025-01-01", config_sha256="c" * 64)
    rng = np.random.default_rng(7)
    first = dt.date(2025, 1, 1)
    start = time.perf_counter()
    for day in range(dates):
        date = (first + dt.timedelta(days=day)).isoformat()
        noise = rng.normal(0, 0.01, (3, rows))  # every date's values are its own
        frame = base.assign(
            date=date,
            control_mean=base["control_mean"] + noise[0],
            treatment_mean=base["treatment_mean"] + noise[1],
            delta=base["delta"] + noise[2],
            ci_low=base["ci_low"] + noise[2],
            ci_high=base["ci_high"] + noise[2],
            relative_lift=base["relative_lift"] + noise[0],
            p_value=rng.uniform(0, 1, rows),
            p_adjusted=rng.uniform(0, 1, rows),
        )
        frame["ci"] = list(np.column_stack([frame["ci_low"], frame["ci_high"]]))
        write_history(root, NAME, date, frame)
    return time.perf_counter() - start


def best(function, repeat: int) -> tuple[float, float]:
    """The shortest of ``repeat`` timings of ``function()``: wall seconds, and the CPU
    seconds (user + system) of the child processes it ran, of that same run."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        function()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        times.append((wall, cpu))
    return min(times)


def command(root: Path, *options: str):
    """A function that runs ``abrank history NAME OPTIONS`` and checks it succeeded."""
    argv = [sys.executable, "-m", "abrank", "history", NAME, "--root", str(root), *options]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run() -> None:
        done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if done.returncode:
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.decode()}")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dates", type=int, default=500)
    parser.add_argument("--rows", type=int, default=200, help="rows a date")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from abrank.history import read_history
    from abrank.history.store import history_table

    with tempfile.TemporaryDirectory(prefix="abrank-history-") as folder:
        root = Path(folder)
        written = build(root, args.dates, args.rows)
        total = args.dates * args.rows
        print(f"history of {total:,} rows ({args.dates} dates x {args.rows} rows)")
        print(f"  write_history, one call per date: {written:.2f} s")
        print(f"  load average: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        checks = [
            (f"abrank history {NAME}", command(root)),
            (f"abrank history {NAME} --json", command(root, "--json")),
            (f"abrank history {NAME} --csv", command(root, "--csv")),
        ]
        for label, run in checks:
            seconds, cpu = best(run, args.repeat)
            verdict = "ok" if seconds < GOAL else "over"
            print(
                f"  {label:40s} {seconds:6.3f} s wall, {cpu:5.3f} s CPU "
                f"(goal < {GOAL:.1f} s wall: {verdict})"
            )
        seconds, _ = best(lambda: history_table(root, NAME), args.repeat)
        print(f"  {'history_table (Arrow, in process)':40s} {seconds:6.3f} s wall")
        seconds, _ = best(lambda: read_history(root, NAME), args.repeat)
        print(f"  {'read_history (DataFrame, in process)':40s} {seconds:6.3f} s wall")
        copy = root / "history" / NAME / "_rows.parquet"

        def first_read() -> None:  # a store without its copy: every file read, copy rebuilt
            copy.unlink(missing_ok=True)
            history_table(root, NAME)

        seconds, _ = best(first_read, args.repeat)
        print(f"  {'history_table without the copy (rebuilt)':40s} {seconds:6.3f} s wall")
        print(f"  load average after: {os.getloadavg()[0]:.2f}")
        baseline, cpu = best(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.repeat
        )
        print(f"  {'python -c pass (start-up alone)':40s} {baseline:6.3f} s wall, {cpu:5.3f} s CPU")


if __name__ == "__main__":
    main()
