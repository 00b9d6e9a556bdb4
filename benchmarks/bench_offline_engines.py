"""The 100k-query offline experiment of ``bench_run.py`` on each engine: time, memory, agreement.

Uses the data and configs of :mod:`bench_run` (default 100,000 queries x 100 documents per
arm, Parquet and TREC files) and times ``abrank run --engine NAME`` for each engine and
format as a whole child process with its peak resident memory. The SQL engine reads the
files in the engine and returns per-query values only; the memory engine loads them whole.
Agreement: every number of the two summary.json files of one format, compared leaf by leaf
(the largest absolute difference is printed; 1e-9 is the bar).

    python benchmarks/bench_offline_engines.py                      # 100k x 100
    python benchmarks/bench_offline_engines.py --queries 20000 --docs 50
    python benchmarks/bench_offline_engines.py --engines memory,spark --formats parquet
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_run import ROOT, generate, measure, stage_lines, write_configs  # noqa: E402

ENGINES = ("memory", "duckdb", "spark")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000, help="queries (default 100000)")
    parser.add_argument("--docs", type=int, default=100, help="documents per query and arm")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=ROOT / "benchmarks" / "scratch" / "run",
        help="where data, configs and readouts go (default benchmarks/scratch/run, shared "
        "with bench_run.py)",
    )
    parser.add_argument("--seed", type=int, default=20261130, help="generator seed")
    parser.add_argument("--formats", default="parquet,trec", help="parquet, trec or both")
    parser.add_argument("--regenerate", action="store_true", help="rebuild data even if cached")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="memory, duckdb, spark (comma-separated)"
    )
    args = parser.parse_args()
    engines = args.engines.split(",")

    workdir = args.workdir.resolve()
    sizes = generate(workdir / "data", args.queries, args.docs, args.seed, args.regenerate)
    configs = write_configs(workdir, args.queries)
    rows = []
    summaries: dict[tuple[str, str], dict] = {}
    stages: dict[tuple[str, str], list[str]] = {}
    for kind in args.formats.split(","):
        config = configs[kind]
        for engine in engines:
            out = workdir / "out" / f"{config.stem}-{engine}"
            command = [sys.executable, "-m", "abrank", "run", str(config), "--engine", engine]
            result = measure([*command, "--out", str(out), "--format", "json"])
            stages[(kind, engine)] = stage_lines(result["stderr"])
            if result["returncode"] != 0:
                print(f"abrank run ({kind}, {engine}) failed ({result['returncode']}):")
                print(textwrap.indent(result["stderr"].strip()[-3000:], "    "))
                continue
            rows.append((kind, engine, result["wall"], result["peak_mb"]))
            summaries[(kind, engine)] = json.loads((out / "summary.json").read_text())

    print()
    print(
        f"experiment: {args.queries:,} queries x {args.docs} documents, 2 arms "
        f"({sizes['rows']['control']:,} + {sizes['rows']['treatment']:,} ranking rows, "
        f"{sizes['rows']['judgments']:,} judgments); 3 metrics, 10,000 resamples"
    )
    header = f"{'format':<8} {'engine':<8} {'wall s':>8} {'peak MB':>9}"
    print(header)
    print("-" * len(header))
    for kind, engine, wall, peak in rows:
        print(f"{kind:<8} {engine:<8} {wall:8.2f} {peak:9,.0f}")
    for (kind, engine), lines in stages.items():
        if lines:
            print(f"\n{kind} on {engine}, its own progress (time since start):")
            print(textwrap.indent("\n".join(lines), "  "))
    print()
    agree = True
    for kind in args.formats.split(","):
        memory = summaries.get((kind, "memory"))
        for engine in [e for e in engines if e != "memory"]:
            other = summaries.get((kind, engine))
            if memory is None or other is None:
                continue
            gap, where = largest_gap(memory, other, ignore={"config_path", "path", "output"})
            agree &= gap <= 1e-9
            print(
                f"{kind}: summary.json memory vs {engine}: largest difference {gap:.3g} at {where}"
            )
    return 0 if rows and agree else 1


def largest_gap(a, b, ignore: set[str], path: str = "") -> tuple[float, str]:
    """The largest absolute difference between two JSON trees' numbers (inf where the
    trees differ in shape or in any other value), and where it is."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return math.inf, f"{path} (keys differ)"
        found = [largest_gap(a[k], b[k], ignore, f"{path}.{k}") for k in a if k not in ignore]
        return max(found, default=(0.0, path))
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf, f"{path} (lengths differ)"
        found = [largest_gap(x, y, ignore, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b))]
        return max(found, default=(0.0, path))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        if math.isnan(a) and math.isnan(b):
            return 0.0, path
        return abs(float(a) - float(b)), path
    return (0.0, path) if a == b else (math.inf, f"{path} ({a!r} vs {b!r})")


if __name__ == "__main__":
    raise SystemExit(main())
