"""Calibration of the interleaving, SRM and CUPED statistics: A/A false positives and more.

Prints:

1. A/A interleaving (the same ranking on both teams): the clustered test's false-positive
   rate at alpha 0.05, with its Monte-Carlo SE, when every query shows one fixed merged list
   (``abrank.interleave`` without impressions, reused for every visit) and when every
   impression is merged afresh (``impressions=``);
2. balanced interleaving: the share of clicked impressions whose win / tie / loss differs
   between crediting each click to its row's team and the rule of Joachims (2003) as stated
   by Chapelle et al. (TOIS 2012, section 2.2);
3. the SRM check's false-alarm rate at alpha 0.001 with about 20 expected units per arm
   (totals 30..50), chi-square against the exact binomial test (exact sums, no simulation);
4. CUPED on a constant covariate: theta, delta and p against the unadjusted comparison.

    python benchmarks/bench_calibration_interleaving.py --runs 1000
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's abrank

import abrank  # noqa: E402
from abrank.interleaving import PositionBased, impression_outcomes, simulate_clicks  # noqa: E402
from abrank.stats import (  # noqa: E402
    UnitSums,
    compare_clustered,
    compare_interleaved,
    sample_ratio_mismatch,
)


def rankings(n_queries: int, depth: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One ranking per query (documents d0..d{depth-1} in a random order) and random
    grades 0..3 for its documents."""
    rng = np.random.default_rng(seed)
    queries = np.repeat([f"q{i}" for i in range(n_queries)], depth)
    docs = np.tile([f"d{j}" for j in range(depth)], n_queries)
    ranks = np.tile(np.arange(1, depth + 1), n_queries)
    ranking = pd.DataFrame({"query_id": queries, "doc_id": docs, "rank": ranks})
    grades = rng.choice(4, size=len(docs), p=[0.5, 0.25, 0.15, 0.10])
    judgments = pd.DataFrame({"query_id": queries, "doc_id": docs, "relevance": grades})
    return ranking, judgments


def aa_run(ranking, judgments, users: int, visits: int, seed: int, fresh: bool) -> float:
    """The clustered p-value of one A/A interleaving test: every query visited ``visits``
    times by users drawn at random from ``users``."""
    rng = np.random.default_rng(seed)
    queries = pd.unique(ranking["query_id"])
    query = np.repeat(queries, visits)
    frame = pd.DataFrame(
        {
            "impression_id": [f"i{k}" for k in range(len(query))],
            "query_id": query,
            "user_id": rng.integers(0, users, len(query)),
        }
    )
    if fresh:
        log = abrank.interleave(ranking, ranking, seed=seed, depth=10, impressions=frame)
    else:  # one list per query, reused by every visit
        shown = abrank.interleave(ranking, ranking, seed=seed, depth=10)
        log = frame.merge(shown, on="query_id", how="inner")
    log["clicked"] = simulate_clicks(log, judgments, PositionBased(), seed=rng)[0]
    outcomes = impression_outcomes(log, control="control", treatment="treatment")
    return compare_interleaved(outcomes, unit="user_id", tests=("t",)).p_value


def aa_rates(runs: int, n_queries: int = 100, users: int = 200, visits: int = 5, seed: int = 0):
    """{"fixed lists": (rate, se), "per impression": (rate, se)} at alpha 0.05."""
    ranking, judgments = rankings(n_queries, 10, seed)
    out = {}
    for name, fresh in (("fixed lists", False), ("per impression", True)):
        p = np.array([aa_run(ranking, judgments, users, visits, seed + r, fresh) for r in range(runs)])
        rate = float(np.mean(p < 0.05))
        out[name] = (rate, math.sqrt(rate * (1 - rate) / runs))
    return out


def balanced_disagreement(n_queries: int = 2000, seed: int = 3) -> dict[str, float]:
    """Balanced lists of two different random rankings per query, clicks by the
    position-based model: the share of clicked impressions whose outcome differs between
    the row's team (the old credit) and the balanced rule."""
    rng = np.random.default_rng(seed)
    ranking, judgments = rankings(n_queries, 10, seed)
    other = ranking.assign(rank=ranking.groupby("query_id")["rank"].transform(rng.permutation))
    shown = abrank.interleave(ranking, other, method="balanced", seed=seed, depth=10)
    log = shown.assign(impression_id=shown["query_id"], user_id=shown["query_id"])
    log["clicked"] = simulate_clicks(log, judgments, PositionBased(), seed=rng)[0]
    team = impression_outcomes(log, control="control", treatment="treatment")
    rule = impression_outcomes(log, control="control", treatment="treatment", method="balanced")
    clicked = team["clicked"].to_numpy()
    differ = team["outcome"].to_numpy() != rule["outcome"].to_numpy()
    return {"clicked": int(clicked.sum()), "disagree": float(differ[clicked].mean())}


def srm_rates(alpha: float = 0.001, totals=range(30, 51)) -> dict[str, tuple[float, float]]:
    """The false-alarm rate of an equal split (mean over the totals, and the largest), for
    the chi-square p-value and the check's (exact below 1,000 expected per arm)."""
    chi, exact = [], []
    for total in totals:
        k = np.arange(total + 1)
        pmf = sps.binom.pmf(k, total, 0.5)
        chi_p = sps.chi2.sf((k - total / 2) ** 2 / (total / 2) * 2, 1)
        check = np.array(
            [sample_ratio_mismatch({"c": int(x), "t": total - int(x)}, alpha=alpha).alarm for x in k]
        )
        chi.append(float(pmf[chi_p < alpha].sum()))
        exact.append(float(pmf[check].sum()))
    return {"chi2": (float(np.mean(chi)), max(chi)), "exact": (float(np.mean(exact)), max(exact))}


def cuped_constant(seed: int = 11) -> dict[str, float]:
    """CUPED with a pre-period mean of 0.1 for every unit, against the unadjusted test."""
    rng = np.random.default_rng(seed)
    n = 400
    d_c, d_t = rng.integers(1, 9, n).astype(float), rng.integers(1, 9, n).astype(float)
    y_c = UnitSums(rng.binomial(d_c.astype(int), 0.30).astype(float), d_c)
    y_t = UnitSums(rng.binomial(d_t.astype(int), 0.33).astype(float), d_t)
    p_c, p_t = rng.integers(1, 7, n).astype(float), rng.integers(1, 7, n).astype(float)
    plain = compare_clustered(y_c, y_t, tests=("t",))
    adjusted = compare_clustered(
        y_c, y_t, tests=("t",), covariate=(UnitSums(0.1 * p_c, p_c), UnitSums(0.1 * p_t, p_t))
    )
    return {
        "theta": adjusted.cuped["theta"],
        "variance_reduction": adjusted.cuped["variance_reduction"],
        "delta": adjusted.delta,
        "delta_unadjusted": plain.delta,
        "p": adjusted.p_value,
        "p_unadjusted": plain.p_value,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    print(f"A/A interleaving, clustered t at alpha 0.05 ({args.runs} runs, 100 queries x 5 visits, 200 users)")
    for name, (rate, se) in aa_rates(args.runs).items():
        print(f"  {name:<16} false positives {rate:.3f} ± {se:.3f}")
    figures = balanced_disagreement()
    print(
        f"Balanced credit: {figures['disagree']:.1%} of {figures['clicked']:,} clicked impressions "
        "change outcome between the row's team and the rule of Chapelle et al. 2012"
    )
    print("SRM false alarms at alpha 0.001, equal split, 30..50 units (about 20 per arm)")
    for name, (mean, worst) in srm_rates().items():
        print(f"  {name:<6} mean {mean:.5f}  largest {worst:.5f}  ({worst / 0.001:.2f} x alpha)")
    print("CUPED on a constant covariate (pre-period mean 0.1 for every unit)")
    for name, value in cuped_constant().items():
        print(f"  {name:<20} {value:.6g}")


if __name__ == "__main__":
    main()
