"""Calibration of the clustered quantile intervals of abrank.stats.quantile, and their speed.

Run:  PYTHONPATH=. python benchmarks/bench_quantile_calibration.py --experiments 2000
      PYTHONPATH=. python benchmarks/bench_quantile_calibration.py --experiments 200 \
          --speed-rows 2000000   (a quick look)

Users per arm with heavy-tailed numbers of impressions (1 + floor(LogNormal(1, 1.1)), mean
about 5.5, a few users with hundreds; ``--counts pareto``: 1 + floor(3 Lomax(1.5)), mean
about 6.5, infinite variance, at most 10,000) and log-normal latencies with a per-user random
effect: log latency = 4 + b_u + e_i, b_u ~ N(0, 0.6^2), e_i ~ N(0, 0.5^2). Since the counts
do not depend on b_u, the pooled impressions' latency is LogNormal(4, sqrt(0.61)) and its
true quantiles are known exactly (:func:`true_quantile`).

It prints:

* A/A coverage of the 95% interval of the p50, p95 and p99 differences (truth 0), for the
  clustered delta-method interval (goal [0.94, 0.96]) and for the per-impression (iid)
  interval, which ignores that impressions cluster in users and under-covers; each with
  its Monte-Carlo standard error sqrt(c (1 - c) / R);
* the same for the unit bootstrap's percentile interval, on the first
  ``--bootstrap-experiments`` experiments (``--resamples`` each);
* a planted 3% p95 regression (every treatment latency x 1.03): the empirical power of the
  clustered test at alpha 0.05 against the power predicted from the clustered SE, the mean
  over experiments of Phi(|delta| / SE - z_0.975) + Phi(-|delta| / SE - z_0.975), and the
  coverage of the true delta (0.03 Q_95);
* the time of three quantiles (point + clustered interval) over ``--speed-rows`` rows
  (two arms, 10 impressions per user on average).

Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import numpy as np
from scipy import stats

from abrank.stats.quantile_bootstrap import compare_quantiles

QS = (0.5, 0.95, 0.99)
MU, SD_USER, SD_IMPRESSION = 4.0, 0.6, 0.5
Z = float(stats.norm.ppf(0.975))


def true_quantile(q: float, scale: float = 1.0) -> float:
    """The pooled impressions' latency quantile: LogNormal(MU, sqrt(SD_USER^2 + SD_IMP^2))."""
    sd = math.hypot(SD_USER, SD_IMPRESSION)
    return scale * math.exp(MU + sd * float(stats.norm.ppf(q)))


def simulate_arm(
    rng: np.random.Generator, n_users: int, scale: float = 1.0, counts: str = "lognormal"
) -> tuple[np.ndarray, np.ndarray]:
    """(latencies, unit codes) of one arm: heavy-tailed impressions per user (``counts``:
    1 + floor(LogNormal(1, 1.1)), or ``pareto``: 1 + floor(3 Lomax(1.5)), infinite variance,
    at most 10,000), a per-user random effect on the log scale; ``scale`` multiplies every
    latency."""
    if counts == "pareto":
        drawn = np.minimum(1 + np.floor(3.0 * rng.pareto(1.5, size=n_users)), 10_000)
    else:
        drawn = 1 + np.floor(rng.lognormal(1.0, 1.1, size=n_users))
    units = np.repeat(np.arange(n_users), drawn.astype(np.int64))
    effect = rng.normal(0.0, SD_USER, size=n_users)[units]
    latency = np.exp(MU + effect + rng.normal(0.0, SD_IMPRESSION, size=units.size))
    return scale * latency, units


def experiments(
    runs: int,
    n_users: int,
    scale: float,
    seed: int,
    qs: Sequence[float] = QS,
    counts: str = "lognormal",
) -> dict[str, np.ndarray]:
    """Per experiment and quantile: delta, clustered se and p, per-impression se and p."""
    keys = ("delta", "se", "p", "naive_se", "naive_p")
    out = {k: np.empty((runs, len(qs))) for k in keys}
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(runs)):
        rng = np.random.default_rng(child)
        xc, uc = simulate_arm(rng, n_users, counts=counts)
        xt, ut = simulate_arm(rng, n_users, scale, counts=counts)
        for j, d in enumerate(compare_quantiles(xc, uc, xt, ut, list(qs))):
            out["delta"][r, j], out["se"][r, j], out["p"][r, j] = d.delta, d.se, d.p_value
            out["naive_se"][r, j], out["naive_p"][r, j] = d.naive_se, d.naive_p_value
    return out


def coverage(delta: np.ndarray, se: np.ndarray, truth: float | np.ndarray) -> np.ndarray:
    """Share of experiments whose delta -+ z se holds the truth, per column."""
    return np.mean(np.abs(delta - truth) <= Z * se, axis=0)


def mc_se(rate: float, runs: int) -> float:
    """The Monte-Carlo standard error of a share over ``runs`` experiments."""
    return math.sqrt(max(rate * (1.0 - rate), 1e-12) / runs)


def aa_calibration(
    runs: int, n_users: int, seed: int, counts: str = "lognormal"
) -> dict[str, dict[float, float]]:
    """A/A coverage per quantile of the clustered and per-impression intervals."""
    sims = experiments(runs, n_users, 1.0, seed, counts=counts)
    clustered = coverage(sims["delta"], sims["se"], 0.0)
    naive = coverage(sims["delta"], sims["naive_se"], 0.0)
    return {
        "clustered": dict(zip(QS, map(float, clustered), strict=True)),
        "per_impression": dict(zip(QS, map(float, naive), strict=True)),
    }


def bootstrap_coverage(
    runs: int, n_users: int, seed: int, n_resamples: int, counts: str = "lognormal"
) -> dict[float, float]:
    """A/A coverage per quantile of the unit bootstrap's 95% percentile interval (the
    experiments are the first ``runs`` of :func:`aa_calibration`'s at the same seed)."""
    inside = np.zeros(len(QS))
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(runs)):
        rng = np.random.default_rng(child)
        xc, uc = simulate_arm(rng, n_users, counts=counts)
        xt, ut = simulate_arm(rng, n_users, counts=counts)
        results = compare_quantiles(xc, uc, xt, ut, list(QS), n_resamples=n_resamples, seed=r)
        for j, d in enumerate(results):
            assert d.bootstrap_ci is not None
            inside[j] += d.bootstrap_ci[0] <= 0.0 <= d.bootstrap_ci[1]
    return dict(zip(QS, map(float, inside / max(runs, 1)), strict=True))


def planted_power(
    runs: int,
    n_users: int,
    seed: int,
    lift: float = 0.03,
    q: float = 0.95,
    counts: str = "lognormal",
) -> dict[str, float]:
    """Empirical power at alpha 0.05 of a planted ``lift`` on the q-th quantile against the
    power predicted from each experiment's clustered SE, and the interval's coverage."""
    sims = experiments(runs, n_users, 1.0 + lift, seed + 1, qs=(q,), counts=counts)
    truth = lift * true_quantile(q)
    se = sims["se"][:, 0]
    shift = abs(truth) / se
    predicted = np.mean(stats.norm.cdf(shift - Z) + stats.norm.cdf(-shift - Z))
    return {
        "true_delta": truth,
        "power": float(np.mean(sims["p"][:, 0] < 0.05)),
        "predicted": float(predicted),
        "coverage": float(coverage(sims["delta"], sims["se"], truth)[0]),
        "naive_power": float(np.mean(sims["naive_p"][:, 0] < 0.05)),
    }


def speed(rows: int, seed: int = 0, repeats: int = 1) -> float:
    """Seconds (best of ``repeats``) for p50, p95 and p99 (point + clustered interval) of
    two arms of rows / 2 impressions each, 10 per user on average."""
    rng = np.random.default_rng(seed)
    half = rows // 2
    arms = [
        (rng.lognormal(MU, 0.8, size=half), rng.integers(0, max(half // 10, 1), size=half))
        for _ in range(2)
    ]
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        compare_quantiles(*arms[0], *arms[1], list(QS))
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiments", type=int, default=2000)
    parser.add_argument("--users", type=int, default=4000, help="users per arm (A/A)")
    parser.add_argument("--power-users", type=int, default=20000, help="users per arm (power)")
    parser.add_argument("--bootstrap-experiments", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=500, help="bootstrap resamples")
    parser.add_argument("--speed-rows", type=int, default=20_000_000)
    parser.add_argument("--counts", choices=("lognormal", "pareto"), default="lognormal")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    runs = args.experiments

    start = time.perf_counter()
    aa = aa_calibration(runs, args.users, args.seed, args.counts)
    print(
        f"A/A coverage of the 95% interval of the quantile difference: {runs} experiments, "
        f"{args.users} users per arm, {args.counts} impressions per user "
        f"({time.perf_counter() - start:.1f} s)"
    )
    print(f"{'interval':<16}" + "".join(f"{f'p{round(100 * q)}':>18}" for q in QS))
    for name, label in (("clustered", "clustered delta"), ("per_impression", "per-impression")):
        cells = "".join(
            f"{f'{c:.3f} +- {mc_se(c, runs):.3f}':>18}" for c in (aa[name][q] for q in QS)
        )
        print(f"{label:<16}{cells}")
    if args.bootstrap_experiments > 0:
        start = time.perf_counter()
        b_runs = args.bootstrap_experiments
        boot = bootstrap_coverage(b_runs, args.users, args.seed, args.resamples, args.counts)
        cells = "".join(f"{f'{c:.3f} +- {mc_se(c, b_runs):.3f}':>18}" for c in boot.values())
        print(f"{'unit bootstrap':<16}{cells}")
        print(
            f"(the bootstrap: the first {b_runs} experiments, {args.resamples} resamples "
            f"each, percentile interval; {time.perf_counter() - start:.1f} s)"
        )
    print("goal: clustered within [0.94, 0.96]; per-impression ignores the clustering")

    start = time.perf_counter()
    power = planted_power(runs, args.power_users, args.seed, counts=args.counts)
    sd = mc_se(power["power"], runs)
    print(
        f"\nplanted 3% p95 regression (true delta {power['true_delta']:.2f}): {runs} "
        f"experiments, {args.power_users} users per arm ({time.perf_counter() - start:.1f} s)"
    )
    print(f"power (clustered, alpha 0.05)   {power['power']:.3f} +- {sd:.3f}")
    print(f"predicted from the clustered SE {power['predicted']:.3f}")
    gap = abs(power["power"] - power["predicted"]) / sd
    print(f"gap                             {gap:.2f} MC SE (goal <= 3)")
    print(f"coverage of the true delta      {power['coverage']:.3f}")
    print(f"power (per-impression)          {power['naive_power']:.3f}")

    if args.speed_rows > 0:
        seconds = speed(args.speed_rows)
        print(
            f"\nspeed: p50, p95, p99 (point + clustered interval) over "
            f"{args.speed_rows:,} rows: {seconds:.2f} s"
        )


if __name__ == "__main__":
    main()
