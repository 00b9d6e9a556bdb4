"""Engines on an interleaved log: time, peak memory and agreement of memory and duckdb.

The synthetic team-draft log of ``bench_interleaving.py`` (10 results per impression, one
user per five impressions; 1,000,000 impressions = 10,000,000 shown results by default) is
written to Parquet with a config beside it. Then, each in its own child process, measured
by wall time and peak RSS (``os.wait4``):

- a hand-written DuckDB query of the same per-user win / loss counts (the floor);
- ``abrank run --engine duckdb``;
- ``abrank run`` on the memory engine (``--no-memory`` skips it).

The config compares the preference by clicks clustered on users with the delta-method
t-test only (``tests: [t]``, ``--tests`` to change), so that the figures are the engines'
and not the resampling's. Last, the two summary.json files are compared: every number to
1e-9.

    python benchmarks/bench_engines_interleaved.py
    python benchmarks/bench_engines_interleaved.py --impressions 100000 --tests t,bootstrap
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_engines import measure  # noqa: E402
from bench_interleaving import TEAMS, write_timed  # noqa: E402

HAND_SQL = """
SELECT user_id, COUNT(*) AS impressions, SUM(CASE WHEN t > c THEN 1 ELSE 0 END) AS wins,
       SUM(CASE WHEN t < c THEN 1 ELSE 0 END) AS losses
FROM (
    SELECT impression_id, MIN(user_id) AS user_id,
           SUM(CASE WHEN team = 'treatment' AND clicked THEN 1 ELSE 0 END) AS t,
           SUM(CASE WHEN team = 'control' AND clicked THEN 1 ELSE 0 END) AS c
    FROM read_parquet('{path}')
    GROUP BY impression_id
)
GROUP BY user_id
"""


def differences(memory: object, sql: object, path: str = "") -> list[str]:
    """Where two summaries differ (numbers beyond 1e-9), ignoring the engine's own fields."""
    if isinstance(memory, dict) and isinstance(sql, dict):
        keys = (set(memory) | set(sql)) - {"config_path", "engine"}
        return [
            d for k in sorted(keys) for d in differences(memory.get(k), sql.get(k), f"{path}.{k}")
        ]
    if isinstance(memory, list) and isinstance(sql, list):
        if len(memory) != len(sql):
            return [f"{path}: {len(memory)} vs {len(sql)} items"]
        return [
            d
            for i, (a, b) in enumerate(zip(memory, sql))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    if isinstance(memory, float) and isinstance(sql, (int, float)):
        both_nan = math.isnan(memory) and math.isnan(sql)
        close = both_nan or abs(memory - sql) <= 1e-9 * max(1.0, abs(memory))
        return [] if close else [f"{path}: {memory!r} vs {sql!r}"]
    return [] if memory == sql else [f"{path}: {memory!r} vs {sql!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=None, help="default: impressions / 5")
    parser.add_argument("--tests", default="t", help="comma-separated: t,bootstrap")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory engine")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    users = args.users or max(1, args.impressions // 5)
    tests = ", ".join(t.strip() for t in args.tests.split(",") if t.strip())
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path = folder / "interleaved.parquet"
        write_timed(path, args.impressions, users, args.seed)
        config = folder / "bench.yaml"
        config.write_text(
            f"name: bench-engines-interleaved\nlog: {{path: {path.name}}}\n"
            f"control: {{name: {TEAMS[0]}}}\ntreatments: [{{name: {TEAMS[1]}}}]\n"
            "metrics: [clicks]\n"
            f"analysis: {{design: interleaved, unit: user_id, tests: [{tests}], "
            f"primary_test: {tests.split(',')[0]}, seed: {args.seed}}}\n"
        )
        run = [sys.executable, "-m", "abrank", "run", str(config), "--quiet", "--no-history"]
        run += ["--format", "json"]
        hand = (
            "import duckdb; con = duckdb.connect(); "
            f"print(con.sql({HAND_SQL.format(path=path)!r}).fetchall()[:1])"
        )
        cases = [
            ("hand-written DuckDB SQL (per-user W/L)", [sys.executable, "-c", hand], None),
            ("abrank run --engine duckdb", [*run, "--engine", "duckdb", "--out"], "out-duckdb"),
        ]
        if not args.no_memory:
            cases.append(("abrank run --engine memory", [*run, "--out"], "out-memory"))
        for label, command, out in cases:
            full = command + ([str(folder / out)] if out else [])
            seconds, peak, code = measure(full)
            status = "" if code == 0 else f"  (exit {code})"
            print(f"{label:40s} {seconds:7.1f} s   peak RSS {peak:7,.0f} MB{status}")
        if not args.no_memory:
            memory = json.loads((folder / "out-memory" / "summary.json").read_text())
            sql = json.loads((folder / "out-duckdb" / "summary.json").read_text())
            found = differences(memory, sql)
            print("summary.json: memory and duckdb agree to 1e-9" if not found else "differ:")
            for line in found[:20]:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
