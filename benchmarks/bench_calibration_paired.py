"""Calibration of the paired verdict and of the lift interval shown on a headline line.

Run (from the checkout, so that its abrank is imported):
      PYTHONPATH=. python benchmarks/bench_calibration_paired.py --runs 2000
      PYTHONPATH=. python benchmarks/bench_calibration_paired.py --runs 200   (a quick look)

Populations (per-query deltas d = treatment - control, control ~ U(0.3, 0.9)):

* **sparse A/A** (the null holds exactly): 82% of the deltas are 0, 15% small (uniform
  0.02-0.1) and 3% large (uniform 0.5-1), each with a fair random sign, so the deltas are
  symmetric around 0, as in an A/A test where either arm could have produced either value.
  At n = 30 and n = 60.
* **rare large losses** (mean 0, not symmetric): 82% zeros, 15% small wins of +0.1, 2.4%
  large losses of -0.625 (mean exactly 0). Half of the samples of 30 hold no large loss;
  no test of the mean can hold its level on them. Printed for what it shows, not as a goal.
* **real effects** (lift disagreement and coverage): MRR-like lumpy deltas on 40-200
  queries, treatment = control * (1 + L) + noise with L ~ N(0, 0.05), 40% of the noise
  zeroed (tied queries); the true lift is L and the true delta L * E[control].
* **8 real effects, Holm** (familywise coverage): 8 comparisons, each with a real lift,
  corrected together; the share of families whose 8 intervals all cover their true deltas,
  for the Holm-widened intervals and for Bonferroni-level ones (level 1 - 0.05 / 8).

"before" is the previous behaviour, read from the same comparisons: the verdict of the
t-test's or the bootstrap's own p-value, and the bootstrap interval of the lift
(``relative_ci_bootstrap``). "after" is the comparison's verdict (the exact sign-flip test
on sparse or skewed deltas) and the lift interval it shows (``relative_ci``: Fieller's;
none in the sign-flip regime, counted as covering). Monte-Carlo SE beside every rate.

Goal: the verdict's A/A rate in [0.03, 0.07] on the sparse A/A deltas. At n = 30 (about 5
moved queries) it cannot be reached by any exact test: with m <= 5 moved queries the
smallest two-sided sign-flip p is 2 / 2^m >= 1/16, and with m = 6 only the two one-sign
patterns (2/64) reject, so the attainable rate is near 0.02; at n = 60 the band holds.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from abrank.stats import adjust, compare
from abrank.stats.results import excludes_zero


def sparse_aa(rng: np.random.Generator, n: int) -> np.ndarray:
    u = rng.random(n)
    magnitude = np.where(
        u < 0.82, 0.0, np.where(u < 0.97, rng.uniform(0.02, 0.1, n), rng.uniform(0.5, 1.0, n))
    )
    return magnitude * rng.choice([-1.0, 1.0], n)


def rare_losses(rng: np.random.Generator, n: int) -> np.ndarray:
    u = rng.random(n)
    return np.where(u < 1 - 0.15 - 0.024, 0.0, np.where(u < 1 - 0.024, 0.1, -0.625))


def effect_sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    n = int(rng.integers(40, 200))
    c = rng.beta(2, 2, n) + 0.1
    lift = float(rng.normal(0, 0.05))
    noise = rng.normal(0, 0.12, n)
    noise[rng.random(n) < 0.4] = 0.0
    return c, c * (1 + lift) + noise, lift


def rate(count: float, runs: int) -> str:
    p = count / runs
    return f"{p:.3f} ± {math.sqrt(max(p * (1 - p), 1e-12) / runs):.3f}"


def null_case(name: str, draw, n: int, runs: int, resamples: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(
        ("t", "bootstrap", "after", "boot_cover", "after_cover", "shown", "regime"), 0
    )
    for i in range(runs):
        c = rng.uniform(0.3, 0.9, n)
        r = compare(c, c + draw(rng, n), tests=("t", "bootstrap"), n_resamples=resamples, seed=i)
        counts["t"] += r.p_values["t"] < 0.05
        counts["bootstrap"] += r.p_values["bootstrap"] < 0.05
        counts["after"] += r.verdict != "inconclusive"
        counts["regime"] += r.regime is not None
        boot = r.relative_ci_bootstrap
        counts["boot_cover"] += boot is None or boot[0] <= 0 <= boot[1]
        shown = r.relative_ci
        counts["shown"] += shown is not None
        counts["after_cover"] += shown is None or shown[0] <= 0 <= shown[1]
    print(f"{name}, n = {n} ({runs} runs; sign-flip regime in {rate(counts['regime'], runs)})")
    print(
        f"  false-positive rate  before: t {rate(counts['t'], runs)}, "
        f"bootstrap {rate(counts['bootstrap'], runs)}   after: {rate(counts['after'], runs)}"
    )
    print(
        f"  lift interval covers 0  before (bootstrap): {rate(counts['boot_cover'], runs)}   "
        f"after (shown): {rate(counts['after_cover'], runs)} "
        f"(an interval shown in {rate(counts['shown'], runs)})"
    )


def effect_case(runs: int, resamples: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    before_dis = after_dis = boot_cover = after_cover = decided = regime = 0
    for i in range(runs):
        c, t, lift = effect_sample(rng)
        r = compare(c, t, tests=("t", "bootstrap"), n_resamples=resamples, seed=i)
        verdict_decides = r.verdict != "inconclusive"
        decided += verdict_decides
        t_decides = r.p_values["t"] < 0.05
        boot = r.relative_ci_bootstrap
        before_dis += boot is not None and excludes_zero(boot) != t_decides
        boot_cover += boot is None or boot[0] <= lift <= boot[1]
        shown = r.relative_ci
        if r.regime is not None:
            regime += 1
            after_cover += 1
            continue
        after_dis += excludes_zero(shown) != verdict_decides
        after_cover += shown is None or shown[0] <= lift <= shown[1]
    print(
        f"real effects, n = 40-200 ({runs} runs; verdict win/loss in {rate(decided, runs)}, "
        f"sign-flip regime in {rate(regime, runs)})"
    )
    print(
        f"  lift interval disagrees with the verdict  before (bootstrap vs t): "
        f"{rate(before_dis, runs)}   after (shown): {rate(after_dis, runs)}"
    )
    print(
        f"  lift interval covers the true lift  before: {rate(boot_cover, runs)}   "
        f"after: {rate(after_cover, runs)}"
    )


def family_case(runs: int, resamples: int, seed: int, size: int = 8) -> None:
    rng = np.random.default_rng(seed)
    holm_miss = bonf_miss = 0
    for f in range(runs):
        results, truths = [], []
        for j in range(size):
            n = 100
            c = rng.beta(2, 2, n) + 0.1
            lift = float(rng.uniform(0.02, 0.08))
            t = c * (1 + lift) + rng.normal(0, 0.12, n)
            results.append(compare(c, t, tests=("t",), n_resamples=resamples, seed=f * 10 + j))
            truths.append(lift * 0.6)  # E[c] = 0.5 + 0.1
        held = adjust(results, "holm")
        holm_miss += not all(r.ci[0] <= d <= r.ci[1] for r, d in zip(held, truths, strict=True))
        level = 1 - 0.05 / size
        bonf = [r.levels.primary(level) for r in results]
        bonf_miss += not all(lo <= d <= hi for (lo, hi), d in zip(bonf, truths, strict=True))
    print(f"{size} real effects, Holm family ({runs} families of n = 100)")
    print(
        f"  familywise non-coverage  Holm-widened intervals: {rate(holm_miss, runs)}   "
        f"Bonferroni-level (1 - 0.05/{size}): {rate(bonf_miss, runs)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    start = time.perf_counter()
    for n in (30, 60):
        null_case("sparse A/A", sparse_aa, n, args.runs, args.resamples, args.seed + n)
    null_case(
        "rare large losses (mean 0, skewed)",
        rare_losses,
        30,
        args.runs,
        args.resamples,
        args.seed + 1,
    )
    effect_case(args.runs, args.resamples, args.seed + 2)
    family_case(args.runs, args.resamples, args.seed + 3)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
