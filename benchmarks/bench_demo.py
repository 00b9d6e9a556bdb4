"""Wall time of the bundled demo readout (``abrank run experiments/demo-reranker.yaml``).

Three figures, each measured in fresh child processes:

* **whole process**: ``python -m abrank run experiments/demo-reranker.yaml --out DIR``
  (2,000 queries, 4 metrics, locale x device segments, 10,000 permutation and bootstrap
  resamples per comparison, every output), run ``--runs`` times (default 5). Prints the
  median, the fastest and the slowest wall time, the ratios of the median to the 2 s goal
  and to the 10 s the demo took before this benchmark existed, and the median time of
  each stage from the run's own progress lines (start-up and imports, loading, scoring,
  comparing, writing the readout).
* **own work**: the same number of fresh processes that only import what the run imports
  from other packages (pandas, scipy.stats, matplotlib, pyarrow), measured side by side
  with the whole runs (alternating); the run's own work is the whole process's median
  minus theirs. Prints it against the 1 s goal and the 2.6 s it took before.
* **batch**: ``--batch`` readouts (default 10) in one process through the Python API
  (``abrank.run_experiment`` + ``abrank.analysis.write_readout``, with chart workers
  started first and ``OPENBLAS_NUM_THREADS=1``, as ``abrank run`` has them), with the
  time per readout.

It checks that every run wrote the same summary.json (the numbers are seeded).

    python benchmarks/bench_demo.py
    python benchmarks/bench_demo.py --runs 9 --batch 20
    python benchmarks/bench_demo.py --checkout ../other-copy   # time another copy of abrank
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "experiments/demo-reranker.yaml"
GOAL_SECONDS = 2.0
START_SECONDS = 10.0  # the demo's whole-process time before this work
OWN_GOAL_SECONDS = 1.0  # the run's own work (whole process minus the other packages' imports)
OWN_BEFORE_SECONDS = 2.6  # the run's own work before the spine (5.1 s whole, 2.5 s imports)
IMPORTS = "import pandas, scipy.stats, matplotlib, pyarrow"

STAGES = ("loading", "scoring queries", "comparing arms", "summarising")

_BATCH = textwrap.dedent("""\
    import json, sys, time
    start = time.perf_counter()
    try:
        from abrank.workers import start_chart_workers
        start_chart_workers()
    except ImportError:  # a copy of abrank without chart workers
        pass
    import abrank
    try:
        from abrank.analysis import write_readout
    except ImportError:  # a copy of abrank from before its packages per stage
        from abrank.pipeline import write_readout
    imported = time.perf_counter() - start
    config, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    times = []
    for i in range(count):
        tick = time.perf_counter()
        readout = abrank.run_experiment(config)
        write_readout(readout, f"{out}/readout-{i}")
        times.append(time.perf_counter() - tick)
    print(json.dumps({"imports": imported, "times": times}))
""")


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _use_checkout(path: str) -> None:
    """Time the copy of abrank in ``path`` (its experiments/ and abrank/), not this one."""
    global ROOT
    ROOT = Path(path).resolve()
    if not (ROOT / "abrank" / "__init__.py").is_file() or not (ROOT / CONFIG).is_file():
        raise SystemExit(f"{ROOT}: expected a copy of abrank with {CONFIG}")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def whole_process(
    runs: int,
) -> tuple[list[float], list[dict[str, float]], set[str], list[float]]:
    """Wall time and stage times of ``runs`` demo runs, the summaries' digests, and the wall
    time of as many processes that only import the other packages (run alternately)."""
    walls, stages, digests, imports = [], [], set(), []
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, env=_environment(), check=True)
            imports.append(time.perf_counter() - start)
            out = Path(scratch) / f"run-{i}"
            command = [sys.executable, "-m", "abrank", "run", CONFIG, "--out", str(out)]
            start = time.perf_counter()
            done = subprocess.run(
                command, cwd=ROOT, env=_environment(), capture_output=True, text=True
            )
            wall = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"abrank run failed ({done.returncode}):\n{done.stderr}")
            walls.append(wall)
            stages.append(_stages(done.stderr, wall))
            digests.add(_digest(out / "summary.json"))
    return walls, stages, digests, imports


def _stages(progress: str, wall: float) -> dict[str, float]:
    """Stage times from the progress lines (``[  0.4s] comparing arms``), which count from
    the start of run_experiment: what comes before is start-up and imports."""
    marks: dict[str, float] = {}
    for line in progress.splitlines():
        found = re.match(r"\[\s*([0-9.]+)s\] (.*)", line)
        if found:
            text = found.group(2)
            key = "loading" if text.startswith("loading") else text
            marks.setdefault(key, float(found.group(1)))
    if not all(stage in marks for stage in STAGES):
        return {}
    run = marks["summarising"]  # run_experiment until the readout is built (~0.01 s more)
    # the progress clock has a 0.1 s resolution; the rest of the process is start-up,
    # imports and writing the readout (charts, reports), which are told apart below
    return {
        "load": marks["scoring queries"] - marks["loading"],
        "score": marks["comparing arms"] - marks["scoring queries"],
        "compare": marks["summarising"] - marks["comparing arms"],
        "outside run_experiment": wall - run,
    }


def batch(count: int) -> dict:
    env = _environment()
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # as abrank run sets it (see abrank.runtime)
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-c", _BATCH, CONFIG, scratch, str(count)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise SystemExit(f"batch run failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="whole-process runs (default 5)")
    parser.add_argument("--batch", type=int, default=10, help="readouts in one process (10)")
    parser.add_argument("--checkout", help="time the abrank copy in this folder instead")
    args = parser.parse_args()
    if args.checkout:
        _use_checkout(args.checkout)

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; abrank from {ROOT}")
    walls, stages, digests, imports = whole_process(args.runs)
    median = statistics.median(walls)
    print(f"\nabrank run {CONFIG}, {args.runs} runs, each a fresh process")
    print(
        f"  wall time   median {median:.2f} s   fastest {min(walls):.2f} s   slowest {max(walls):.2f} s"
    )
    print(f"  goal        {GOAL_SECONDS:.1f} s: median is {median / GOAL_SECONDS:.2f} x the goal")
    print(f"  start       {START_SECONDS:.1f} s: median is {START_SECONDS / median:.1f} x faster")
    if all(stages):
        print("  stages (median; progress clock, 0.1 s resolution)")
        for key in stages[0]:
            print(f"    {key:24s} {statistics.median(s[key] for s in stages):5.2f} s")
    imported = statistics.median(imports)
    own = median - imported
    print(f"  imports     median {imported:.2f} s ({IMPORTS}, fresh processes, side by side)")
    print(
        f"  own work    {own:.2f} s (whole minus imports): {own / OWN_GOAL_SECONDS:.2f} x the "
        f"{OWN_GOAL_SECONDS:.0f} s goal, {OWN_BEFORE_SECONDS / own:.2f} x faster than the "
        f"{OWN_BEFORE_SECONDS} s before"
    )
    same = "the same" if len(digests) == 1 else f"{len(digests)} different"
    print(f"  summary.json: {same} in every run")

    if args.batch > 0:
        result = batch(args.batch)
        times = result["times"]
        rest = times[1:] or times
        print(f"\n{args.batch} readouts in one process (run_experiment + write_readout)")
        print(f"  imports and chart workers   {result['imports']:.2f} s")
        print(f"  first readout               {times[0]:.2f} s")
        print(f"  each further readout        median {statistics.median(rest):.2f} s")
        print(f"  total                       {result['imports'] + sum(times):.2f} s")


if __name__ == "__main__":
    main()
