"""Engines at the speed of a hand-written query: whole processes, side by side (issue 31).

Online: the click log of ``bench_engines.py`` (user-randomized, 10 results per impression,
one Parquet file per day) through

- a hand-written DuckDB query of the per-user sums the delta method needs (click_rr@10 and
  ctr@3; ``bench_engines.HAND_SQL``), fetched as Arrow, in its own Python process;
- ``abrank run --engine duckdb --format json --verbose`` on the same files (all the input
  checks, the comparisons, summary.json), in its own process;

each round running both, one after the other (their order alternating), after one untimed
round that warms the file cache and the bytecode cache. Wall time and the peak resident
memory of the process tree (``bench_engines.tree_rss``) of each; the ratio abrank / hand
query of each round, and its median. The goal: within 1.5x of the hand query, peak under
3 GB. The last abrank run's ``--verbose`` breakdown says where its time went.

Offline: the 100k-query x 100-document experiment of ``bench_run.py`` (Parquet), through
``abrank run --format json`` on the memory engine, DuckDB and Spark (``local[*]``), each a
whole process; the ratios DuckDB / memory (goal: at most 1) and Spark / DuckDB (goal: at
most 3), and the largest difference between the engines' summary.json numbers.

The children import abrank from bytecode (a cache folder beside the data), as an installed
package does, whatever PYTHONDONTWRITEBYTECODE says here. On a machine shared with other
work, compare the ratios of one run of this script, not times across runs.
``--baseline DIR`` also times ``abrank run`` from another checkout (e.g. the main
branch's), in the same rounds, for a before/after.

    python benchmarks/bench_engine_speed.py                    # 100M rows; 100k x 100
    python benchmarks/bench_engine_speed.py --rows 20000000 --queries 20000 --no-spark
    python benchmarks/bench_engine_speed.py --skip-offline --baseline /path/to/main
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engines import HAND_SQL, config, tree_rss, write_log  # noqa: E402
from bench_offline_engines import largest_gap  # noqa: E402
from bench_run import ROOT, generate, write_configs  # noqa: E402

GOAL_HAND = 1.5  # abrank run / hand query, whole processes
GOAL_PEAK_MB = 3 * 1024
GOAL_DUCKDB_VS_MEMORY = 1.0
GOAL_SPARK_VS_DUCKDB = 3.0


def child_env(folder: Path, code: Path) -> dict[str, str]:
    """The children's environment: abrank from ``code``, bytecode cached in ``folder``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


def measure(command: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Wall seconds, peak RSS of the process tree (MB), exit code and stderr of a child run
    in ``cwd`` (the checkout it imports: ``python -m`` looks there before PYTHONPATH)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], tree_rss(child.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    errors = child.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"  {' '.join(command[:6])} ... failed ({code}):\n{errors[-2000:]}", file=sys.stderr)
    peak_mb = max(usage.ru_maxrss * 1024, peak[0]) / 2**20
    return {"wall": wall, "peak_mb": peak_mb, "code": code, "stderr": errors}


def breakdown(stderr: str) -> str:
    """The ``--verbose`` breakdown of a run's stderr (empty when there is none)."""
    marker = "where the time went"
    return stderr[stderr.index(marker) :].rstrip() if marker in stderr else ""


def online(args: argparse.Namespace) -> bool:
    folder = Path(args.folder or tempfile.mkdtemp(prefix="bench-engine-speed-"))
    stamp = folder / "stamp.json"
    wanted = {"rows": args.rows, "days": args.days}
    if not (stamp.exists() and json.loads(stamp.read_text()) == wanted):
        start = time.perf_counter()
        import shutil

        shutil.rmtree(folder / "logs", ignore_errors=True)
        write_log(folder, args.rows, args.days)
        stamp.write_text(json.dumps(wanted))
        print(f"wrote the log in {time.perf_counter() - start:.1f} s")
    size = sum(p.stat().st_size for p in (folder / "logs").rglob("*.parquet")) / 2**20
    print(
        f"\nonline: {args.rows:,} shown results, {args.rows // 10:,} impressions, "
        f"{args.rows // 50:,} users, {args.days} days, {size:,.0f} MB of Parquet in {folder}"
    )
    (folder / "glob.yaml").write_text(config("logs/date=*/part-*.parquet", "engine: duckdb\n"))
    glob = str(folder / "logs" / "date=*" / "part-*.parquet")
    hand = (
        "import duckdb\n"
        "con = duckdb.connect()\n"
        f"result = con.sql({HAND_SQL.format(glob=glob)!r})\n"
        "table = (getattr(result, 'to_arrow_table', None) or result.arrow)()\n"
        "print(table.num_rows)\n"
    )
    run = ["-m", "abrank", "run", str(folder / "glob.yaml"), "--format", "json", "--no-history"]
    run += ["--quiet", "--verbose"]
    cases = {"hand-written DuckDB query": ([sys.executable, "-c", hand], ROOT)}
    cases["abrank run --engine duckdb"] = (
        [sys.executable, *run, "--out", str(folder / "out")],
        ROOT,
    )
    if args.baseline:
        baseline = Path(args.baseline).resolve()
        command = [sys.executable, *[a for a in run if a != "--verbose"]]
        cases[f"abrank run, {baseline.name}"] = (
            [*command, "--out", str(folder / "base")],
            baseline,
        )
    results: dict[str, list[dict]] = {name: [] for name in cases}
    names = list(cases)
    for round_ in range(args.repeat + 1):  # round 0 warms the caches, untimed
        order = names if round_ % 2 else names[::-1]
        for name in order:
            command, code = cases[name]
            result = measure(command, child_env(folder, code), code)
            if result["code"] != 0:
                return False
            if round_:
                results[name].append(result)
    hand_walls = [r["wall"] for r in results[names[0]]]
    print(f"{'':34} {'wall s (min, median)':>22} {'peak MB':>9} {'x hand (median)':>16}")
    met = True
    for name in names:
        walls = [r["wall"] for r in results[name]]
        peak = max(r["peak_mb"] for r in results[name])
        ratios = [w / h for w, h in zip(walls, hand_walls)]
        ratio = statistics.median(ratios)
        print(
            f"{name:34} {min(walls):10.2f} {statistics.median(walls):10.2f} {peak:10,.0f} "
            f"{ratio:15.2f}x"
        )
        if name == "abrank run --engine duckdb":
            met = ratio <= GOAL_HAND and peak < GOAL_PEAK_MB
            print(
                f"{'':34} per round: {', '.join(f'{r:.2f}x' for r in ratios)}; goal "
                f"<= {GOAL_HAND}x and < {GOAL_PEAK_MB:,} MB: {'met' if met else 'NOT met'}"
            )
    last = breakdown(results["abrank run --engine duckdb"][-1]["stderr"])
    if last:
        print("\nthe last abrank run, --verbose:\n" + last)
    return met


def offline(args: argparse.Namespace) -> bool:
    workdir = Path(args.workdir).resolve()
    sizes = generate(workdir / "data", args.queries, args.docs, args.seed, False)
    configs = write_configs(workdir, args.queries)
    engines = [e for e in args.engines.split(",") if e]
    print(
        f"\noffline: {args.queries:,} queries x {args.docs} documents, 2 arms "
        f"({sizes['rows']['control']:,} + {sizes['rows']['treatment']:,} ranking rows, "
        f"{sizes['rows']['judgments']:,} judgments), Parquet; 3 metrics, 10,000 resamples; "
        f"--format {args.format}"
    )
    env = child_env(workdir, ROOT)
    walls: dict[str, list[float]] = {e: [] for e in engines}
    peaks: dict[str, float] = {}
    summaries: dict[str, dict] = {}
    stages: dict[str, str] = {}
    for round_ in range(args.offline_repeat):
        for engine in engines if round_ % 2 == 0 else engines[::-1]:
            out = workdir / "out" / f"speed-{engine}"
            command = [sys.executable, "-m", "abrank", "run", str(configs["parquet"])]
            command += ["--engine", engine, "--format", args.format, "--out", str(out)]
            command += ["--no-history", "--quiet", "--verbose"]
            result = measure(command, env, ROOT)
            if result["code"] != 0:
                return False
            walls[engine].append(result["wall"])
            peaks[engine] = max(peaks.get(engine, 0.0), result["peak_mb"])
            summaries[engine] = json.loads((out / "summary.json").read_text())
            stages[engine] = breakdown(result["stderr"])
    print(f"{'engine':10} {'wall s (min, median)':>22} {'peak MB':>9}")
    for engine in engines:
        print(
            f"{engine:10} {min(walls[engine]):10.2f} {statistics.median(walls[engine]):10.2f} "
            f"{peaks[engine]:10,.0f}"
        )
    met = True
    median = {e: statistics.median(w) for e, w in walls.items()}
    for slow, fast, goal in (
        ("duckdb", "memory", GOAL_DUCKDB_VS_MEMORY),
        ("spark", "duckdb", GOAL_SPARK_VS_DUCKDB),
    ):
        if slow in median and fast in median:
            ratio = median[slow] / median[fast]
            ok = ratio <= goal
            met &= ok
            print(f"{slow} / {fast}: {ratio:.2f}x (goal <= {goal}x: {'met' if ok else 'NOT met'})")
    ignore = {"config_path", "path", "output", "engine"}
    for engine in engines:
        if engine != "memory" and "memory" in summaries:
            gap, where = largest_gap(summaries["memory"], summaries[engine], ignore)
            print(f"summary.json, memory vs {engine}: largest difference {gap:.3g} at {where}")
    for engine, text in stages.items():
        if text:
            print(f"\n{engine}, --verbose:\n{text}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000, help="online: shown results")
    parser.add_argument("--days", type=int, default=7, help="online: days (files)")
    parser.add_argument("--repeat", type=int, default=3, help="online: timed rounds")
    parser.add_argument("--folder", help="online: where the log goes (kept, reused)")
    parser.add_argument("--baseline", help="online: also time abrank from this checkout")
    parser.add_argument("--queries", type=int, default=100_000, help="offline: queries")
    parser.add_argument("--docs", type=int, default=100, help="offline: documents per query")
    parser.add_argument("--seed", type=int, default=20261130, help="offline: generator seed")
    parser.add_argument("--engines", default="memory,duckdb,spark", help="offline engines")
    parser.add_argument("--no-spark", action="store_true", help="offline: leave out Spark")
    parser.add_argument("--offline-repeat", type=int, default=1, help="offline: rounds")
    parser.add_argument(
        "--format",
        default="json",
        help="offline: the readout's outputs (json: no explanation tables; json,csv: with them)",
    )
    parser.add_argument(
        "--workdir",
        default=str(ROOT / "benchmarks" / "scratch" / "run"),
        help="offline: data, configs and readouts (shared with bench_run.py)",
    )
    parser.add_argument("--skip-online", action="store_true")
    parser.add_argument("--skip-offline", action="store_true")
    args = parser.parse_args()
    if args.no_spark:
        args.engines = ",".join(e for e in args.engines.split(",") if e != "spark")
    met = True
    if not args.skip_online:
        met &= online(args)
    if not args.skip_offline:
        met &= offline(args)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
