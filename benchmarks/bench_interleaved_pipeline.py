"""Wall time of ``abrank.run_experiment`` on an interleaved log of 10,000,000 shown results.

The whole pipeline of ``analysis.design: interleaved`` (goal: under 10 s for the analysis):
reading the log (with the team, unit and ranks checks), crediting clicks per impression,
the clustered t test and the unit bootstrap, the first-team check and the summary. The log
is the synthetic team-draft log of ``bench_interleaving.py`` (1,000,000 impressions of 10
results, one user per five impressions), written to Parquet in a temporary folder with a
config beside it. Prints the pipeline's own progress lines (seconds since the start), the
total and its ratio to the goal.

    python benchmarks/bench_interleaved_pipeline.py
    python benchmarks/bench_interleaved_pipeline.py --impressions 100000 --credits clicks
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_interleaving import TEAMS, write_timed  # noqa: E402

import abrank  # noqa: E402

GOAL_S = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=None, help="default: impressions / 5")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--credits", default="clicks", help="comma-separated: clicks,sat_clicks")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    users = args.users or max(1, args.impressions // 5)
    credits = [c.strip() for c in args.credits.split(",") if c.strip()]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "interleaved.parquet"
        write_timed(path, args.impressions, users, args.seed)
        config = Path(folder) / "bench.yaml"
        config.write_text(
            f"name: bench-interleaved\nlog: {{path: {path.name}}}\n"
            f"control: {{name: {TEAMS[0]}}}\ntreatments: [{{name: {TEAMS[1]}}}]\n"
            f"metrics: [{', '.join(credits)}]\n"
            f"analysis: {{design: interleaved, unit: user_id, resamples: {args.resamples}, "
            f"seed: {args.seed}}}\n"
        )
        start = time.perf_counter()
        readout = abrank.run_experiment(config, progress=lambda line: print(f"  {line}"))
        total = time.perf_counter() - start
    print(f"  run_experiment total {total:7.2f} s  ({total / GOAL_S:.2f} x the {GOAL_S:g} s goal)")
    for c in readout.summary["comparisons"]:
        low, high = c["ci"]
        print(
            f"{c['metric']}: delta {c['delta']:+.5f} [{low:+.5f}, {high:+.5f}], "
            f"p {c['p_values']['t']:.3g} (t), {c['p_values']['bootstrap']:.3g} (bootstrap); "
            f"W/T/L {c['wins']:,}/{c['ties']:,}/{c['losses']:,}; units {c['n_units']['all']:,}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
