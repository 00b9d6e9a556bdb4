"""Speed of the clustered comparisons (compare_clustered_metrics) at 20,000 and 400,000 units.

Run:  python benchmarks/bench_clustered.py                       (20,000 and 400,000 units)
      python benchmarks/bench_clustered.py --units 20000 --resamples 2000   (a quick look)
      python benchmarks/bench_clustered.py --against ca56561      (also time that commit)

Two arms of users split evenly, per-user sums simulated as in
benchmarks/bench_calibration_online.py (a geometric number of impressions, mean 6, and a
Beta(0.5, 1.2) click propensity per user), for three metrics on the same users:

* ``click_rr@10``-like: 1 / rank of the first click (geometric ranks, 0 beyond 10);
* ``ctr@3``-like: impressions with a click at rank <= 3 (an integer numerator);
* ``abandonment``-like: impressions without a click (an integer numerator).

For each size it times ``compare_clustered_metrics`` (delta method, unit permutation test,
unit bootstrap; 10,000 resamples by default) and prints the method each resampling test
used (the comparison's ``approximation``, or exact draws). ``--against REF`` exports the
package at git commit REF into a temporary folder and times the same calls with that
code in a child process (the figures "before").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
IMPRESSIONS_MEAN = 6.0
PROPENSITY = (0.5, 1.2)
RANK_P = (0.5, 0.55)  # control, treatment: P(first click at rank 1)


def simulate_arm(rng: np.random.Generator, n_users: int, rank_p: float) -> dict[str, tuple]:
    """One arm's per-user (numerator, denominator) sums of the three metrics."""
    d = rng.geometric(1.0 / IMPRESSIONS_MEAN, n_users)
    clicked = rng.binomial(d, rng.beta(*PROPENSITY, n_users))  # impressions with a click
    ranks = rng.geometric(rank_p, int(clicked.sum()))
    owner = np.repeat(np.arange(n_users), clicked)
    rr = np.bincount(owner, weights=np.where(ranks <= 10, 1.0 / ranks, 0.0), minlength=n_users)
    top3 = np.bincount(owner, weights=(ranks <= 3).astype(float), minlength=n_users)
    impressions = d.astype(np.float64)
    return {
        "click_rr@10": (rr, impressions),
        "ctr@3": (top3, impressions),
        "abandonment": ((d - clicked).astype(np.float64), impressions),
    }


def time_compare(units: int, resamples: int, seed: int) -> dict:
    """Seconds of one compare_clustered_metrics call on ``units`` users, and its methods."""
    from abrank.stats import UnitSums, compare_clustered_metrics

    rng = np.random.default_rng(seed)
    arms = [simulate_arm(rng, units // 2, p) for p in RANK_P]
    controls, treatments = ({m: UnitSums(*sums) for m, sums in arm.items()} for arm in arms)
    start = time.perf_counter()
    results = compare_clustered_metrics(controls, treatments, n_resamples=resamples, seed=seed)
    seconds = time.perf_counter() - start
    return {
        "units": units,
        "seconds": seconds,
        "methods": {r.metric: r.approximation or "exact unit resampling" for r in results},
        "p_values": {r.metric: r.p_values for r in results},
    }


def run_elsewhere(ref: str, units: int, resamples: int, seed: int) -> dict:
    """:func:`time_compare` with the package of git commit ``ref``, in a child process."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "abrank"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": folder}
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(units), str(resamples), str(seed)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, nargs="*", default=[20_000, 400_000])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", help="a git commit to time as well (the code before)")
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(time_compare(*args.child), default=str))
        return
    for units in args.units:
        now = time_compare(units, args.resamples, args.seed)
        print(f"{units:,} units, {args.resamples:,} resamples: {now['seconds']:.2f} s")
        for metric, method in now["methods"].items():
            print(f"  {metric}: {method}")
        if args.against:
            before = run_elsewhere(args.against, units, args.resamples, args.seed)
            ratio = before["seconds"] / now["seconds"]
            print(f"  at {args.against}: {before['seconds']:.2f} s ({ratio:.1f} x this)")
            for metric, p in now["p_values"].items():
                then = before["p_values"][metric]
                print(f"  {metric} p-values: {p}  (then {then})")


if __name__ == "__main__":
    main()
