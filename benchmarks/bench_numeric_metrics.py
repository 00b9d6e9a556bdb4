"""Speed of numeric and quantile metrics on the memory engine: three quantiles of one log
column (p50, p95, p99 of latency) over 20 million impressions, through the online design's
comparison loop.

Run:  PYTHONPATH=. python benchmarks/bench_numeric_metrics.py [--rows 20000000] [--resamples 0]

The log's numeric column per impression (what :func:`abrank.designs.online.numeric.memory_columns`
or an SQL engine's :func:`abrank.engines.column_sums.column_impressions` hands the design:
each impression's unit and value) is simulated for two arms, about 10 impressions per user,
log-normal latencies with a per-user effect. Timed: the comparison loop
(:func:`abrank.analysis.comparisons.compare_all` over
:class:`~abrank.designs.online.numeric_samples.OnlineSamples`) making the three quantile comparisons,
each a full :class:`~abrank.stats.Comparison`: the point (numpy's linear rule), the clustered
delta-method interval through the order statistics, the relative lift, the MDE. Each arm is
sorted once for the three quantiles. ``--resamples`` adds the unit bootstrap (the readout
draws at most 2,000, for the overall comparisons only). Also timed: the per-impression
values of a log with a row per shown result (10 rows an impression), from rows to one value
per impression with the check that an impression's rows agree
(:func:`~abrank.designs.online.numeric.impression_values`).

Measured on the 2-core machine of this repository (shared with other work), 20,000,000
impressions (2,000,000 users), no bootstrap: the three quantiles in 1.9 s (5.8 s while the
machine's load average stood at 60); one value per impression from 20,000,000 rows in
2.3 s. The goal is under 10 s for the three quantiles. The unit bootstrap costs about one
pass over an arm's impressions per resample (2,000 resamples of the online demo's 60,000
impressions per arm: about 1.5 s).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

CONFIG = """\
name: bench-numeric
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
analysis: {design: independent, unit: user_id, resamples: %d, tests: [t, bootstrap]}
metrics:
  - {name: latency_p50, column: latency_ms, stat: quantile, q: 0.5, direction: lower}
  - {name: latency_p95, column: latency_ms, stat: quantile, q: 0.95, direction: lower}
  - {name: latency_p99, column: latency_ms, stat: quantile, q: 0.99, direction: lower}
"""


def arm_columns(rng: np.random.Generator, impressions: int, slower: float):
    """One arm's latency per impression and its users (about 10 impressions each)."""
    from abrank.designs.online.numeric import ArmColumns

    users = max(impressions // 10, 2)
    unit = np.sort(rng.integers(0, users, size=impressions))
    level = rng.normal(0.0, 0.35, size=users)
    latency = np.exp(np.log(180.0) + level[unit] + rng.normal(0.0, 0.45, size=impressions))
    labels = pd.Index(np.arange(users).astype(str), name="user_id")
    return ArmColumns(unit, labels, {}, {"latency_ms": latency * slower})


def main(argv: Sequence[str] | None = None) -> None:
    from abrank.analysis.comparisons import compare_all
    from abrank.config import load_experiment
    from abrank.designs.online.numeric import impression_values
    from abrank.designs.online.numeric_samples import OnlineSamples
    from abrank.evidence import Evidence

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="impressions, both arms")
    parser.add_argument("--resamples", type=int, default=0, help="unit bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    half = args.rows // 2
    arms = {"a": arm_columns(rng, half, 1.0), "b": arm_columns(rng, args.rows - half, 1.03)}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "log.csv").write_text("impression_id,user_id,rank,clicked,arm\n")
        (Path(folder) / "exp.yaml").write_text(CONFIG % max(args.resamples, 100))
        experiment = load_experiment(Path(folder) / "exp.yaml")
    if args.resamples == 0:
        analysis = experiment.analysis.model_copy(update={"tests": ["t"]})
        experiment = experiment.model_copy(update={"analysis": analysis})
    sums = {
        name: pd.DataFrame({"impressions": np.bincount(arm.unit)}, index=arm.unit_labels)
        for name, arm in arms.items()
    }
    evidence = Evidence("user_id", sums, extras={"numeric_columns": arms})

    start = time.perf_counter()
    comparisons, _ = compare_all(experiment, OnlineSamples(experiment, evidence))
    elapsed = time.perf_counter() - start
    print(
        f"three quantile metrics over {args.rows:,} impressions "
        f"({sum(len(a.unit_labels) for a in arms.values()):,} users), "
        f"{args.resamples:,} bootstrap resamples: {elapsed:.2f} s"
    )
    for c in comparisons:
        print(
            f"  {c.metric}: {c.control_mean:.1f} -> {c.treatment_mean:.1f}  "
            f"{c.delta:+.2f} ({c.relative_lift:+.2%})  CI [{c.ci[0]:+.2f}, {c.ci[1]:+.2f}]  "
            f"p = {c.p_value:.3g}"
        )

    rows_per_impression = 10
    impressions = min(args.rows // rows_per_impression, 2_000_000)
    codes = np.repeat(np.arange(impressions), rows_per_impression)
    values = np.repeat(rng.lognormal(5.0, 0.5, size=impressions), rows_per_impression)
    ids = np.arange(impressions)
    start = time.perf_counter()
    impression_values(values, codes, impressions, column="latency_ms", path="log", ids=ids)
    elapsed = time.perf_counter() - start
    print(
        f"one value per impression from {codes.size:,} rows ({rows_per_impression} an "
        f"impression): {elapsed:.2f} s"
    )


if __name__ == "__main__":
    main()
