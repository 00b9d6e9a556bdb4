"""Calibration of clustered inference on simulated user-randomized click logs.

Run:  python benchmarks/bench_calibration_online.py --runs 2000
      python benchmarks/bench_calibration_online.py --runs 200 --users 500   (a quick look)

Each run simulates two arms of users: a user has a geometric number of impressions (mean
6) and a click propensity drawn from a Beta(0.5, 1.2) (heterogeneous users: the source of
the within-user correlation); an impression is clicked with the user's propensity, at a
geometric rank, and scores click_rr@10 = 1 / rank (0 beyond rank 10, or without a click).
The per-user sums (M_u, D_u and the sum of squares for the per-impression test) are drawn
directly, with no per-impression Python loop. Printed:

* A/A false-positive rate at alpha 0.05 of the clustered delta-method test
  (``compare_clustered``, goal [0.035, 0.065]) beside a per-impression Welch test that
  treats impressions as independent (far above 0.05);
* coverage of the 95% intervals of the delta and of the relative lift under a real
  effect (first-click rank geometric with p = 0.6 instead of 0.5; goal 93-97%), against
  the true values worked out from the simulation's distributions;
* sample ratio mismatch: the share of runs alarming (p < 0.001) when one arm loses 3% of
  its users, at 20,000 and at 100,000 users per arm, and with balanced arms (~0.001).

Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats as sps

from abrank.stats import UnitSums, compare_clustered, sample_ratio_mismatch

IMPRESSIONS_MEAN = 6.0
PROPENSITY = (0.5, 1.2)
RANK_P = (0.5, 0.6)  # control, treatment: P(first click at rank 1), geometric ranks
K = 10


def simulate_arm(
    rng: np.random.Generator, n_users: int, rank_p: float
) -> tuple[UnitSums, np.ndarray]:
    """One arm's per-user sums of click_rr@10 (and the per-user sums of squares)."""
    d = rng.geometric(1.0 / IMPRESSIONS_MEAN, n_users)
    propensity = rng.beta(*PROPENSITY, n_users)
    clicked = rng.binomial(d, propensity)  # impressions with a click, per user
    ranks = rng.geometric(rank_p, int(clicked.sum()))
    values = np.where(ranks <= K, 1.0 / ranks, 0.0)
    owner = np.repeat(np.arange(n_users), clicked)
    m = np.bincount(owner, weights=values, minlength=n_users)
    q = np.bincount(owner, weights=values**2, minlength=n_users)
    return UnitSums(m, d.astype(np.float64)), q


def true_mean(rank_p: float) -> float:
    """E[M] / E[D] of an arm: E[propensity] * E[click_rr@10 of a clicked impression]
    (the number of impressions is independent of the propensity)."""
    a, b = PROPENSITY
    ranks = np.arange(1, K + 1)
    per_click = float(np.sum(rank_p * (1 - rank_p) ** (ranks - 1) / ranks))
    return a / (a + b) * per_click


def per_impression_welch_p(c: UnitSums, q_c: np.ndarray, t: UnitSums, q_t: np.ndarray) -> float:
    """Welch's t-test on impressions as if they were independent (from per-user sums)."""
    stats = []
    for sums, q in ((c, q_c), (t, q_t)):
        n = float(sums.denominator.sum())
        mean = float(sums.numerator.sum()) / n
        var = (float(q.sum()) - n * mean**2) / (n - 1)
        stats.append((mean, var, n))
    (m_c, v_c, n_c), (m_t, v_t, n_t) = stats
    result = sps.ttest_ind_from_stats(m_t, math.sqrt(v_t), n_t, m_c, math.sqrt(v_c), n_c, False)
    return float(result.pvalue)


def calibration(runs: int, n_users: int, seed: int = 0, alpha: float = 0.05) -> dict[str, float]:
    """A/A false-positive rates (clustered, per-impression) and coverage under an effect."""
    rng = np.random.default_rng(seed)
    clustered = naive = covered = covered_relative = 0
    truth = true_mean(RANK_P[1]) - true_mean(RANK_P[0])
    truth_relative = true_mean(RANK_P[1]) / true_mean(RANK_P[0]) - 1
    for _ in range(runs):
        c, q_c = simulate_arm(rng, n_users, RANK_P[0])
        t, q_t = simulate_arm(rng, n_users, RANK_P[0])
        result = compare_clustered(c, t, tests=("t",), alpha=alpha, metric="click_rr@10")
        clustered += result.p_value < alpha
        naive += per_impression_welch_p(c, q_c, t, q_t) < alpha
        c, _ = simulate_arm(rng, n_users, RANK_P[0])
        t, _ = simulate_arm(rng, n_users, RANK_P[1])
        result = compare_clustered(c, t, tests=("t",), metric="click_rr@10")
        covered += result.ci[0] <= truth <= result.ci[1]
        low, high = result.relative_ci
        covered_relative += low <= truth_relative <= high
    return {
        "false_positive_rate": clustered / runs,
        "per_impression_false_positive_rate": naive / runs,
        "coverage": covered / runs,
        "relative_coverage": covered_relative / runs,
        "true_delta": truth,
    }


def srm_alarm_rate(
    runs: int, n_per_arm: int, loss: float, seed: int = 0, alpha: float = 0.001
) -> float:
    """Share of runs whose sample ratio check alarms: 2 * n_per_arm users split 50/50 at
    random, then a share ``loss`` of the treatment's users lost."""
    rng = np.random.default_rng(seed)
    control = rng.binomial(2 * n_per_arm, 0.5, runs)
    treatment = rng.binomial(2 * n_per_arm - control, 1.0 - loss)
    alarms = 0
    for n_c, n_t in zip(control.tolist(), treatment.tolist(), strict=True):
        check = sample_ratio_mismatch({"control": n_c, "treatment": n_t}, alpha=alpha)
        alarms += check.alarm
    return alarms / runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated experiments (2000)")
    parser.add_argument("--users", type=int, default=2000, help="users per arm (2000)")
    parser.add_argument("--srm-runs", type=int, default=None, help="SRM runs (20 x --runs)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    figures = calibration(args.runs, args.users, args.seed)
    took = time.perf_counter() - start
    srm_runs = args.srm_runs or 20 * args.runs
    print(f"{args.runs} runs of {args.users:,} users per arm (~6 impressions each), {took:.1f} s")
    print(
        f"A/A false-positive rate at 0.05, clustered delta method: "
        f"{figures['false_positive_rate']:.4f}  (goal 0.035-0.065)"
    )
    print(
        f"A/A false-positive rate at 0.05, per-impression Welch:   "
        f"{figures['per_impression_false_positive_rate']:.4f}  (impressions treated as independent)"
    )
    print(
        f"95% CI coverage under an effect (delta {figures['true_delta']:+.4f}): "
        f"{figures['coverage']:.4f}; relative lift: {figures['relative_coverage']:.4f}  (goal 0.93-0.97)"
    )
    for n_per_arm in (20_000, 100_000):
        rate = srm_alarm_rate(srm_runs, n_per_arm, 0.03, args.seed)
        print(
            f"SRM alarms (p < 0.001), 3% of one arm's users lost, {n_per_arm:,} per arm: "
            f"{rate:.4f}  ({srm_runs:,} runs)"
        )
    rate = srm_alarm_rate(srm_runs, 20_000, 0.0, args.seed)
    print(f"SRM alarms (p < 0.001), balanced arms, 20,000 per arm: {rate:.4f}  ({srm_runs:,} runs)")


if __name__ == "__main__":
    main()
