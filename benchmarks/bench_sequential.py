"""Peeking: fixed-horizon tests against always-valid confidence sequences, 10 daily looks.

Run:  python benchmarks/bench_sequential.py --runs 500
      python benchmarks/bench_sequential.py --runs 100   (a quick look)

Each run is one simulated experiment whose data grow by equal daily batches; on each of
10 days the cumulative data are compared through the library (``abrank.compare`` for the
paired and independent designs, ``compare_clustered`` for users with several impressions
each), with the ``sequential`` test primary and the fixed-horizon ``t`` beside it. Printed:

* A/A: the share of runs with p < 0.05 at one look at least, fixed-horizon and sequential
  (the fixed-horizon figure is about 0.2: peeking inflates false positives; the
  sequential one stays below 0.05);
* coverage: with a true nonzero delta, the share of runs whose 95% interval covers it at
  every one of the 10 looks at once;
* the width ratio: how many times as wide as the fixed-horizon t-interval the sequence is
  at a few sample sizes, tuned at the sample size itself (the default), at GrowthBook's
  fixed N* = 5,000 and at the N* given by ``--tuning``.

Method: the asymptotic confidence sequences of Waudby-Smith et al. (GrowthBook's form),
abrank.stats.sequential. Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from abrank.stats import UnitSums, compare, compare_clustered
from abrank.stats.sequential import width_ratio

LOOKS = 10
FIXED_TUNING = 5000
"""GrowthBook's N*, for comparison with the default (N* = the sample size)."""
OPTIONS = dict(primary_test="sequential", tests=("t",), n_resamples=100)


def paired_run(rng: np.random.Generator, per_day: int, shift: float) -> tuple[list, float]:
    """One paired experiment: lumpy reciprocal-rank-like values per query, both arms alike
    but for ``shift`` added to the treatment's."""
    n = per_day * LOOKS
    c = np.where(rng.random(n) < 0.3, 0.0, 1.0 / rng.integers(1, 11, n))
    t = np.where(rng.random(n) < 0.3, 0.0, 1.0 / rng.integers(1, 11, n)) + shift
    return [compare(c[: per_day * k], t[: per_day * k], **OPTIONS) for k in range(1, 11)], shift


def independent_run(rng: np.random.Generator, per_day: int, shift: float) -> tuple[list, float]:
    """One independent experiment: skewed (lognormal) values, 2:3 arms, shifted treatment."""
    n_c, n_t = per_day * LOOKS, per_day * LOOKS * 3 // 2
    c = rng.lognormal(0.0, 0.8, n_c)
    t = rng.lognormal(0.0, 0.8, n_t) + shift
    results = [
        compare(c[: n_c * k // LOOKS], t[: n_t * k // LOOKS], design="independent", **OPTIONS)
        for k in range(1, 11)
    ]
    return results, shift


def users(rng: np.random.Generator, n: int, propensity: float) -> UnitSums:
    """Users with 1 to 30+ impressions (Poisson of a Gamma rate) and a Beta(propensity, 1.4)
    click propensity: per-user clicks and impressions."""
    d = 1.0 + rng.poisson(rng.gamma(1.5, 3.0, n))
    m = rng.binomial(d.astype(np.int64), rng.beta(propensity, 1.4, n)).astype(np.float64)
    return UnitSums(m, d)


def clustered_run(rng: np.random.Generator, per_day: int, shift: float) -> tuple[list, float]:
    """One clustered experiment: CTR over users; ``shift`` > 0 raises the treatment's
    propensity from Beta(0.6, 1.4) (CTR 0.3) to Beta(0.7, 1.4) (CTR 1/3)."""
    n = per_day * LOOKS
    c, t = users(rng, n, 0.6), users(rng, n, 0.7 if shift else 0.6)
    results = []
    for k in range(1, 11):
        cut = per_day * k
        results.append(
            compare_clustered(
                UnitSums(c.numerator[:cut], c.denominator[:cut]),
                UnitSums(t.numerator[:cut], t.denominator[:cut]),
                **OPTIONS,
            )
        )
    return results, (1 / 3 - 0.3) if shift else 0.0


DESIGNS = {
    "paired": (paired_run, 100, 0.05),
    "independent": (independent_run, 80, 0.15),
    "clustered": (clustered_run, 60, 1.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="simulated experiments per design")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--tuning", type=int, default=1000, help="a second N* for the widths")
    args = parser.parse_args()
    print(f"{args.runs} runs per design, {LOOKS} daily looks, N* = each look's sample size")
    print(f"{'design':<12} {'A/A ever p<.05: t':>18} {'sequential':>11} {'coverage':>9} {'s':>6}")
    for name, (run, per_day, shift) in DESIGNS.items():
        rng = np.random.default_rng([args.seed, len(name)])
        started = time.perf_counter()
        ever_t = ever_seq = covered = 0
        for _ in range(args.runs):
            null, _ = run(rng, per_day, 0.0)
            ever_t += any(r.p_values["t"] < 0.05 for r in null)
            ever_seq += any(r.p_value < 0.05 for r in null)
            real, truth = run(rng, per_day, shift)
            covered += all(r.ci[0] <= truth <= r.ci[1] for r in real)
        seconds = time.perf_counter() - started
        print(
            f"{name:<12} {ever_t / args.runs:>18.3f} {ever_seq / args.runs:>11.3f} "
            f"{covered / args.runs:>9.3f} {seconds:>6.1f}"
        )
    print("\nwidth of the 95% sequence / the fixed-horizon t-interval's (paired, df = n - 1)")
    print(
        f"{'n':>8} {'N* = n':>12} {'N* = ' + str(FIXED_TUNING):>12} "
        f"{'N* = ' + str(args.tuning):>12}"
    )
    for n in (100, 1_000, 2_000, 5_000, 20_000, 100_000, 1_000_000):
        own = width_ratio(n, 0.95, n, n - 1)
        fixed = width_ratio(n, 0.95, FIXED_TUNING, n - 1)
        other = width_ratio(n, 0.95, args.tuning, n - 1)
        print(f"{n:>8,} {own:>12.2f} {fixed:>12.2f} {other:>12.2f}")


if __name__ == "__main__":
    main()
