"""Calibration of the interleaving verdict when a few heavy users hold most impressions.

Run:  PYTHONPATH=. python benchmarks/bench_calibration_interleaving_heavy.py --runs 4000
      PYTHONPATH=. python benchmarks/bench_calibration_interleaving_heavy.py --runs 500  (a look)

Each user sees a geometric number of impressions (mean 6) and clicks on each with its own
propensity (Beta(0.5, 1.2)); an impression without a click is a tie, a clicked one a win
for the treatment with the user's probability q_u, else a loss. A/A: q_u = 1/2 for everyone
(a fresh interleaving per impression makes a win and a loss equally likely whatever the
user). Real effect: q_u ~ Beta(6, 4) (users prefer the treatment to different degrees,
0.6 on average), so that Δ_AB = E[click] (E[q] - 1/2) = 0.5 / 1.7 * 0.1. A fixed number of
heavy users have 100 times the impressions (geometric, mean 600). Three populations: 500
users with 5 heavy (1%), 100 users with 2 heavy, and ordinary traffic (500 users, none
heavy). For each it prints, before (the delta-method t-test, what every interleaving
verdict was) and after (the verdict abrank gives: the jackknife where the log's impressions
are concentrated in few users, else the delta method):

* the A/A false-positive rate at alpha 0.05 (goal [0.03, 0.07]);
* the coverage of the 95% interval of Δ_AB under the real effect (goal about 0.95);
* the power under that effect, and the share of comparisons whose verdict came from the
  jackknife (ordinary traffic: none, and the same numbers as before);

each rate with its Monte-Carlo standard error. Every figure is deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.special import stdtr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's abrank

from abrank.stats import PreferenceCounts, compare_interleaved  # noqa: E402
from abrank.stats.estimation import t_interval  # noqa: E402
from abrank.stats.interleaved import preference_variance  # noqa: E402

IMPRESSIONS_MEAN = 6.0
HEAVY_FACTOR = 100.0
"""Heavy users have this many times the mean impressions of the others."""
PROPENSITY = (0.5, 1.2)
"""Beta parameters of each user's click propensity."""
PREFERENCE = (6.0, 4.0)
"""Beta parameters of each user's probability that a clicked impression is a win, under the
real effect (1/2 for everyone under A/A)."""
TRUTH = PROPENSITY[0] / sum(PROPENSITY) * (PREFERENCE[0] / sum(PREFERENCE) - 0.5)
"""Δ_AB under the real effect: the share of clicked impressions times E[q] - 1/2."""


class Population(NamedTuple):
    """Users and how many of them are heavy."""

    name: str
    users: int
    heavy: int


POPULATIONS = (
    Population("1% heavy users", 500, 5),
    Population("2 heavy users in 100", 100, 2),
    Population("ordinary traffic", 500, 0),
)


def simulate_log(
    rng: np.random.Generator, users: int, heavy: int, effect: bool
) -> PreferenceCounts:
    """One interleaving log's per-user wins, ties and losses: ``heavy`` of its ``users``
    have 100 times the mean impressions (whole-array NumPy: no loop over users)."""
    d = rng.geometric(1.0 / IMPRESSIONS_MEAN, users)
    if heavy:
        d[:heavy] = rng.geometric(1.0 / (IMPRESSIONS_MEAN * HEAVY_FACTOR), heavy)
    clicked = rng.binomial(d, rng.beta(*PROPENSITY, users))
    q = rng.beta(*PREFERENCE, users) if effect else np.full(users, 0.5)
    wins = rng.binomial(clicked, q)
    return PreferenceCounts(wins=wins, ties=d - clicked, losses=clicked - wins, clicked=clicked)


def delta_method(counts: PreferenceCounts) -> tuple[float, tuple[float, float]]:
    """The delta-method t-test's p-value and 95% interval (what the verdict was before)."""
    g = counts.n_units
    delta = float(counts.numerator.sum() / counts.denominator.sum()) - 0.5
    se = math.sqrt(preference_variance(counts))
    return float(2.0 * stdtr(g - 1, -abs(delta) / se)), t_interval(delta, se, g - 1, 0.95)


def rate(hits: int, runs: int) -> tuple[float, float]:
    """A share and its Monte-Carlo standard error."""
    share = hits / runs
    return share, math.sqrt(max(share * (1.0 - share), 1e-12) / runs)


def calibration(population: Population, runs: int, seed: int = 0) -> dict[str, tuple[float, float]]:
    """A/A false-positive rates, coverage and power before and after, with their
    Monte-Carlo standard errors, and the share of verdicts the jackknife gave."""
    rng = np.random.default_rng([seed, population.users, population.heavy, 7])
    names = ("fpr", "coverage", "power")
    counts = {f"{n}_{when}": 0 for n in names for when in ("before", "after")}
    counts["jackknife"] = 0
    users, heavy = population.users, population.heavy
    for _ in range(runs):
        log = simulate_log(rng, users, heavy, effect=False)
        p_before, _ = delta_method(log)
        after = compare_interleaved(log, tests=("t",))
        counts["fpr_before"] += p_before < 0.05
        counts["fpr_after"] += after.p_value < 0.05
        counts["jackknife"] += after.primary_test == "jackknife"
        log = simulate_log(rng, users, heavy, effect=True)
        p_before, (low, high) = delta_method(log)
        after = compare_interleaved(log, tests=("t",))
        counts["coverage_before"] += low <= TRUTH <= high
        counts["coverage_after"] += after.ci[0] <= TRUTH <= after.ci[1]
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
        f"{args.runs} A/A and {args.runs} real-effect interleaving logs per population; heavy "
        f"users have {HEAVY_FACTOR:g}x the impressions; rates ± Monte-Carlo SE"
    )
    print(
        f"{'population':<22} {'users':>5} {'heavy':>5}  {'jackknife':>9}  "
        f"{'A/A FPR before':>15} {'after':>15}  {'coverage before':>15} {'after':>15}  "
        f"{'power before':>15} {'after':>15}"
    )
    for population in POPULATIONS:
        start = time.perf_counter()
        f = calibration(population, args.runs, args.seed)
        took = time.perf_counter() - start
        print(
            f"{population.name:<22} {population.users:>5} {population.heavy:>5}  "
            f"{f['jackknife'][0]:>9.3f}  {shown(f['fpr_before']):>15} "
            f"{shown(f['fpr_after']):>15}  {shown(f['coverage_before']):>15} "
            f"{shown(f['coverage_after']):>15}  {shown(f['power_before']):>15} "
            f"{shown(f['power_after']):>15}  ({took:.0f} s)"
        )
    print(
        "goal: A/A FPR after within [0.03, 0.07], coverage about 0.95; ordinary traffic unchanged"
    )


if __name__ == "__main__":
    main()
