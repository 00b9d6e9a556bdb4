"""Sequential inference on clustered click logs: the width of the confidence sequence at its
horizon and the power at its minimum detectable effect.

Run:  PYTHONPATH=. python benchmarks/bench_calibration_clustered.py --runs 1000   (from the root)
      PYTHONPATH=. python benchmarks/bench_calibration_clustered.py --runs 200   (a quick look)

Users as in benchmarks/bench_calibration_online.py (geometric impressions, mean 6; a
Beta(0.5, 1.2) click propensity; click_rr@10). For 100, 200 and 500 users per arm it
prints the width of the 95% confidence sequence over the fixed-horizon delta-method
t-interval, tuned at the sample size (the default) and at the old fixed N* = 5,000; and
the share of runs whose sequential test rejects at the reported MDE (sequential: the
delta its sequence excludes 0 at with 80% probability; fixed: the t-test's MDE), with
its Monte-Carlo standard error. Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path

import numpy as np

from abrank.stats import UnitSums, compare_clustered

_SPEC = importlib.util.spec_from_file_location(
    "bench_calibration_online", Path(__file__).with_name("bench_calibration_online.py")
)
online = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(online)


def shifted(sums: UnitSums, delta: float) -> UnitSums:
    """The arm with its ratio raised by exactly ``delta`` (M_u + delta D_u)."""
    return UnitSums(sums.numerator + delta * sums.denominator, sums.denominator)


def sequential_figures(runs: int, n_users: int, seed: int = 0) -> dict[str, float]:
    """Width ratios (tuned at n, at 5,000) and the sequential test's power at each MDE."""
    rng = np.random.default_rng([seed, n_users])
    c, _ = online.simulate_arm(rng, n_users, online.RANK_P[0])
    t, _ = online.simulate_arm(rng, n_users, online.RANK_P[0])
    options = dict(tests=("t", "sequential"), metric="click_rr@10")
    own = compare_clustered(c, t, primary_test="sequential", **options)
    old = compare_clustered(c, t, primary_test="sequential", sequential_tuning=5000, **options)
    fixed = compare_clustered(c, t, primary_test="t", **options)
    width = fixed.ci[1] - fixed.ci[0]
    hits = {"sequential": 0, "fixed": 0}
    for name, delta in (("sequential", own.mde), ("fixed", fixed.mde)):
        for _ in range(runs):
            x, _ = online.simulate_arm(rng, n_users, online.RANK_P[0])
            y, _ = online.simulate_arm(rng, n_users, online.RANK_P[0])
            got = compare_clustered(
                x, shifted(y, delta), primary_test="sequential", tests=("sequential",)
            )
            hits[name] += got.p_value < 0.05
    return {
        "width_ratio": (own.ci[1] - own.ci[0]) / width,
        "width_ratio_5000": (old.ci[1] - old.ci[0]) / width,
        "power_at_sequential_mde": hits["sequential"] / runs,
        "power_at_fixed_mde": hits["fixed"] / runs,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    se = math.sqrt(0.8 * 0.2 / args.runs)
    print(
        f"{'users/arm':>9} {'width N*=n':>11} {'N*=5000':>8} {'power@seq MDE':>14} {'power@t MDE':>12}"
    )
    for n in (100, 200, 500):
        f = sequential_figures(args.runs, n, args.seed)
        print(
            f"{n:>9} {f['width_ratio']:>11.2f} {f['width_ratio_5000']:>8.2f} "
            f"{f['power_at_sequential_mde']:>14.3f} {f['power_at_fixed_mde']:>12.3f}"
        )
    print(f"(Monte-Carlo SE of a power of 0.8: {se:.3f})")


if __name__ == "__main__":
    main()
