"""Wall time of a 60-day backfill of the bundled demo (goal: under 60 s).

The demo's 2,000 queries are spread over 60 days (:mod:`abrank.demo.daily`, about 33
queries a day; the demo's metrics, segments and 10,000 resamples), and one process runs
``abrank run CONFIG --from START --to END``: every date in order, each readout written in
full (HTML, Markdown, JSON, CSV), recorded in the history and the index rebuilt. Two
windows: ``daily`` (each date reads its own logs) and ``cumulative`` (date d reads every
date so far: the last date is the whole demo). Prints the wall time, the time per date,
the ratio to the goal, and checks that every date was written.

    python benchmarks/bench_backfill.py
    python benchmarks/bench_backfill.py --days 30 --windows daily
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abrank.demo.daily import write_daily_demo  # noqa: E402

GOAL_S = 60.0


def backfill(days: int, cumulative: bool, folder: Path) -> tuple[float, int]:
    """Seconds of one backfill process, and the dated readouts it wrote."""
    start = dt.date(2026, 1, 1)
    config = write_daily_demo(folder, start=start, days=days, cumulative=cumulative)
    end = start + dt.timedelta(days=days - 1)
    command = [
        sys.executable, "-m", "abrank", "run", str(config),
        "--from", start.isoformat(), "--to", end.isoformat(), "-q",
    ]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seconds = time.perf_counter() - began
    if done.returncode not in (0, 3):
        raise SystemExit(f"backfill failed ({done.returncode}):\n{done.stderr[-3000:]}")
    written = sorted((folder / "reports" / "demo-daily").glob("20*/summary.json"))
    return seconds, len(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--windows", default="daily,cumulative")
    args = parser.parse_args()
    print(f"{args.days}-day backfill of the demo ({os.cpu_count()} cores)")
    for window in args.windows.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            seconds, written = backfill(args.days, window == "cumulative", Path(tmp))
        assert written == args.days, f"{written} readouts written of {args.days}"
        print(
            f"  window {window:10s} {seconds:6.1f} s  ({seconds / args.days:.2f} s per date; "
            f"{seconds / GOAL_S:.2f}x the {GOAL_S:.0f} s goal)"
        )


if __name__ == "__main__":
    main()
