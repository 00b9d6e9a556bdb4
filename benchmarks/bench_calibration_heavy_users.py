"""Calibration of the clustered verdict when a few heavy users hold most impressions.

Run:  PYTHONPATH=. python benchmarks/bench_calibration_heavy_users.py --runs 4000
      PYTHONPATH=. python benchmarks/bench_calibration_heavy_users.py --runs 500   (a quick look)

Users as in benchmarks/bench_calibration_online.py (geometric impressions, mean 6; a
Beta(0.5, 1.2) click propensity; click_rr@10 = 1 / rank of a geometric first click), except
that a fixed number of heavy users per arm have 100 times the impressions (geometric, mean
600). Three populations: 500 users per arm with 5 heavy (1%), 100 per arm with 2 heavy, and
ordinary traffic (500 per arm, none heavy). For each it prints, before (the delta-method
t-test, what every clustered verdict was) and after (the verdict abrank gives: the jackknife
where an arm's impressions are concentrated, else the delta method):

* the A/A false-positive rate at alpha 0.05 (goal [0.03, 0.07]);
* the coverage of the 95% interval of the delta and (after) of the relative lift under a
  real effect (first-click rank geometric with p = 0.6 instead of 0.5), against the true
  values of the simulation's distributions (goal about 0.95); the jackknife's lift
  interval is Fieller's, unbounded (and so covering) when the control's ratio is not
  clearly away from 0 at the test's few degrees of freedom, in a share printed beside it;
* the power under that effect, and the share of comparisons whose verdict came from the
  jackknife (ordinary traffic: none, and the same numbers as before);

each rate with its Monte-Carlo standard error. Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.special import stdtr

from abrank.stats import UnitSums, compare_clustered
from abrank.stats.clustered_delta import welch_df
from abrank.stats.estimation import t_interval
from abrank.stats.unit_sums import linearized

_SPEC = importlib.util.spec_from_file_location(
    "bench_calibration_online", Path(__file__).with_name("bench_calibration_online.py")
)
online = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(online)

HEAVY_FACTOR = 100.0
"""Heavy users have this many times the mean impressions of the others."""


class Population(NamedTuple):
    """Users per arm and how many of them are heavy."""

    name: str
    users: int
    heavy: int


POPULATIONS = (
    Population("1% heavy users", 500, 5),
    Population("2 heavy users in 100", 100, 2),
    Population("ordinary traffic", 500, 0),
)


def simulate_arm(rng: np.random.Generator, users: int, heavy: int, rank_p: float) -> UnitSums:
    """One arm's per-user sums of click_rr@10: ``heavy`` of its ``users`` have 100 times the
    mean impressions (whole-array NumPy: no loop over users or impressions)."""
    d = rng.geometric(1.0 / online.IMPRESSIONS_MEAN, users)
    if heavy:
        d[:heavy] = rng.geometric(1.0 / (online.IMPRESSIONS_MEAN * HEAVY_FACTOR), heavy)
    propensity = rng.beta(*online.PROPENSITY, users)
    clicked = rng.binomial(d, propensity)
    ranks = rng.geometric(rank_p, int(clicked.sum()))
    values = np.where(ranks <= online.K, 1.0 / ranks, 0.0)
    owner = np.repeat(np.arange(users), clicked)
    m = np.bincount(owner, weights=values, minlength=users)
    return UnitSums(m, d.astype(np.float64))


def delta_method(control: UnitSums, treatment: UnitSums) -> tuple[float, tuple[float, float]]:
    """The delta-method t-test's p-value and 95% interval (what the verdict was before)."""
    c, t = linearized(control), linearized(treatment)
    se = math.sqrt(c.variance + t.variance)
    df = welch_df(c.variance, t.variance, c.n, t.n)
    obs = t.estimate - c.estimate
    return float(2.0 * stdtr(df, -abs(obs) / se)), t_interval(obs, se, df, 0.95)


def rate(hits: int, runs: int) -> tuple[float, float]:
    """A share and its Monte-Carlo standard error."""
    share = hits / runs
    return share, math.sqrt(max(share * (1.0 - share), 1e-12) / runs)


def calibration(population: Population, runs: int, seed: int = 0) -> dict[str, tuple[float, float]]:
    """A/A false-positive rates, coverage and power before and after, with their
    Monte-Carlo standard errors, and the share of verdicts the jackknife gave."""
    rng = np.random.default_rng([seed, population.users, population.heavy])
    truth = online.true_mean(online.RANK_P[1]) - online.true_mean(online.RANK_P[0])
    truth_relative = online.true_mean(online.RANK_P[1]) / online.true_mean(online.RANK_P[0]) - 1
    counts = dict.fromkeys(
        (
            "fpr_before",
            "fpr_after",
            "coverage_before",
            "coverage_after",
            "relative_coverage_after",
            "relative_unbounded",
            "power_before",
            "power_after",
            "jackknife",
        ),
        0,
    )
    options = dict(tests=("t",), metric="click_rr@10")
    users, heavy = population.users, population.heavy
    for _ in range(runs):
        c = simulate_arm(rng, users, heavy, online.RANK_P[0])
        t = simulate_arm(rng, users, heavy, online.RANK_P[0])
        p_before, _ = delta_method(c, t)
        after = compare_clustered(c, t, **options)
        counts["fpr_before"] += p_before < 0.05
        counts["fpr_after"] += after.p_value < 0.05
        counts["jackknife"] += after.primary_test == "jackknife"
        c = simulate_arm(rng, users, heavy, online.RANK_P[0])
        t = simulate_arm(rng, users, heavy, online.RANK_P[1])
        p_before, (low, high) = delta_method(c, t)
        after = compare_clustered(c, t, **options)
        counts["coverage_before"] += low <= truth <= high
        counts["coverage_after"] += after.ci[0] <= truth <= after.ci[1]
        relative = after.relative_ci  # None: Fieller's set is unbounded, which covers
        counts["relative_coverage_after"] += (
            relative is None or relative[0] <= truth_relative <= relative[1]
        )
        counts["relative_unbounded"] += relative is None
        counts["power_before"] += p_before < 0.05
        counts["power_after"] += after.p_value < 0.05
        counts["jackknife"] += after.primary_test == "jackknife"
    figures = {name: rate(hits, runs) for name, hits in counts.items()}
    figures["jackknife"] = rate(counts["jackknife"], 2 * runs)
    return figures


def shown(figure: tuple[float, float]) -> str:
    """``0.143 ± 0.006``."""
    return f"{figure[0]:.3f} ± {figure[1]:.3f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000, help="simulated experiments (4000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(
        f"{args.runs} A/A and {args.runs} real-effect experiments per population; heavy users "
        f"have {HEAVY_FACTOR:g}x the impressions; rates ± Monte-Carlo SE"
    )
    header = (
        f"{'population':<22} {'users/arm':>9} {'heavy':>5}  {'jackknife':>9}  "
        f"{'A/A FPR before':>15} {'after':>15}  {'coverage before':>15} {'after':>15}  "
        f"{'lift cov. after':>15} {'unbounded':>9}  {'power before':>15} {'after':>15}"
    )
    print(header)
    for population in POPULATIONS:
        start = time.perf_counter()
        f = calibration(population, args.runs, args.seed)
        took = time.perf_counter() - start
        print(
            f"{population.name:<22} {population.users:>9} {population.heavy:>5}  "
            f"{f['jackknife'][0]:>9.3f}  {shown(f['fpr_before']):>15} {shown(f['fpr_after']):>15}  "
            f"{shown(f['coverage_before']):>15} {shown(f['coverage_after']):>15}  "
            f"{shown(f['relative_coverage_after']):>15} {f['relative_unbounded'][0]:>9.3f}  "
            f"{shown(f['power_before']):>15} "
            f"{shown(f['power_after']):>15}  ({took:.0f} s)"
        )
    print(
        "goal: A/A FPR after within [0.03, 0.07], coverage about 0.95; ordinary traffic unchanged"
    )


if __name__ == "__main__":
    main()
