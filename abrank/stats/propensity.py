"""Examination propensities by rank, harvested from the clicks of several rankers.

When two rankers (an A/B test's arms, an interleaving experiment's teams, or one ranker
whose lists vary) show the same document for the same query at different ranks, the ratio
of its click rates at those ranks measures how much more one rank is examined than the
other: intervention harvesting (Agarwal, Zaitsev, Wang, Li, Najork & Joachims, WSDM 2019;
Fang, Agarwal & Joachims, SIGIR 2019). abrank uses every pair of ranks at once: the
position-based model says that the clicks C of a (query, document) pair at rank r, over S
showings there, have mean S * p_r * alpha_pair; the propensities p and the pairs'
attractiveness alpha are fitted jointly by the Poisson (quasi-)likelihood of those counts
over the pairs shown at two ranks or more, by alternating the two closed-form updates
(iterative proportional fitting of a rank-one table, which converges to the maximum).
Its score equations are unbiased whatever the variance of the clicks, so the fit is
consistent under the model; pairs shown at one rank only carry no information about p and
are left out. Estimates are relative to rank 1 (p_1 = 1): examination is identified only up
to scale.

Adjacent ranks are also checked on their own: the Mantel-Haenszel common ratio of the
click rates of the pairs shown at both r and r + 1 estimates p_{r+1} / p_r from those swaps
alone; where the all-pairs fit's ratio falls outside the adjacent estimate's bootstrap
interval, the two disagree (the model fits some ranks badly, or few pairs cross them).

Intervals come from a unit bootstrap: each unit (user) gets a Poisson(1) weight per
replicate (seeded), the counts are re-summed with those weights (a block of replicates at
once: a sparse product of the per-unit counts with the weights) and the fit rerun (warm
started from the full-sample fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.stats.results import json_safe

__all__ = ["AdjacentCheck", "PropensityEstimate", "given_propensities", "harvest_propensities"]

#: Iterations and tolerance of the fit (the largest change of any propensity).
MAX_ITERATIONS = 2000
TOLERANCE = 1e-9


@dataclass(frozen=True)
class AdjacentCheck:
    """p_{rank+1} / p_rank from the all-pairs fit and from the swaps of adjacent ranks alone
    (Mantel-Haenszel), with the adjacent estimate's bootstrap interval; ``agrees`` when the
    fit's ratio lies inside it (None when either is not estimable)."""

    rank: int
    fitted: float
    adjacent: float
    ci: tuple[float, float]
    pairs: int
    agrees: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ranks": [self.rank, self.rank + 1],
            "fitted": json_safe(self.fitted),
            "adjacent": json_safe(self.adjacent),
            "ci": [json_safe(v) for v in self.ci],
            "pairs": self.pairs,
            "agrees": self.agrees,
        }


@dataclass(frozen=True)
class PropensityEstimate:
    """Examination propensities of ranks 1..R relative to rank 1, with intervals.

    ``source`` is ``harvest`` (estimated here), ``given`` (the config's ``propensities:``)
    or ``column`` (the log's ``propensity`` column; then ``estimate`` is the mean logged
    propensity at each rank). ``pairs`` counts the (query, document) pairs shown at two
    ranks or more that the fit used, ``rows`` their logged rows; ``ci`` bounds are NaN
    where no interval was computed."""

    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    source: str
    pairs: int = 0
    rows: int = 0
    resamples: int = 0
    iterations: int = 0
    converged: bool = True
    adjacent: tuple[AdjacentCheck, ...] = ()
    #: the bootstrap replicates (resamples x ranks; None without a bootstrap), which the
    #: estimators read to carry the propensities' noise into their intervals
    draws: np.ndarray | None = None

    @property
    def ranks(self) -> np.ndarray:
        return np.arange(1, self.estimate.size + 1)

    def by_rank(self) -> list[dict[str, Any]]:
        """summary.json's ``diagnostics.propensities``: [{rank, estimate, ci}]."""
        return [
            {
                "rank": int(rank),
                "estimate": json_safe(float(value)),
                "ci": [json_safe(float(low)), json_safe(float(high))],
            }
            for rank, value, low, high in zip(
                self.ranks, self.estimate, self.ci_low, self.ci_high, strict=True
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """The fit: its source, the ranks' estimates, the pairs and rows it used, the
        bootstrap, the iterations and the adjacent-rank checks."""
        return {
            "source": self.source,
            "ranks": self.by_rank(),
            "pairs": self.pairs,
            "rows": self.rows,
            "resamples": self.resamples,
            "iterations": self.iterations,
            "converged": self.converged,
            "adjacent": [check.to_dict() for check in self.adjacent],
        }


def given_propensities(values: np.ndarray, source: str = "given") -> PropensityEstimate:
    """Propensities stated by the user (rank 1 first), rescaled so that p_1 = 1."""
    estimate = np.asarray(values, dtype=np.float64)
    estimate = estimate / estimate[0]
    nan = np.full(estimate.shape, np.nan)
    return PropensityEstimate(estimate, nan, nan.copy(), source)


def _fit(
    clicks: np.ndarray, shows: np.ndarray, start: np.ndarray, max_iterations: int
) -> tuple[np.ndarray, int, bool]:
    """The Poisson fit of a pairs x ranks table: (p with p_1 = 1, NaN at ranks without
    data; iterations; converged)."""
    p = start.copy()
    seen = shows.sum(axis=0) > 0
    p[~seen] = 0.0
    pair_clicks = clicks.sum(axis=1)
    rank_clicks = clicks.sum(axis=0)
    for iteration in range(1, max_iterations + 1):
        exposure = shows @ p
        alpha = np.divide(pair_clicks, exposure, out=np.zeros_like(exposure), where=exposure > 0)
        weight = shows.T @ alpha
        new = np.divide(rank_clicks, weight, out=np.zeros_like(weight), where=weight > 0)
        if new[0] <= 0:
            return np.full(p.shape, np.nan), iteration, False
        new /= new[0]
        change = float(np.max(np.abs(new - p)))
        p = new
        if change < TOLERANCE:
            break
    else:
        return np.where(seen, p, np.nan), max_iterations, False
    return np.where(seen, p, np.nan), iteration, True


def _adjacent(clicks: np.ndarray, shows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mantel-Haenszel p_{r+1} / p_r from the pairs shown at both ranks, and their count."""
    s0, s1 = shows[:, :-1], shows[:, 1:]
    both = (s0 > 0) & (s1 > 0)
    total = np.where(both, s0 + s1, 1.0)
    num = np.where(both, clicks[:, 1:] * s0 / total, 0.0).sum(axis=0)
    den = np.where(both, clicks[:, :-1] * s1 / total, 0.0).sum(axis=0)
    ratio = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    return ratio, both.sum(axis=0)


def _cells_by_units(
    cell: np.ndarray, unit: np.ndarray, values: np.ndarray, n_cells: int, n_units: int
) -> Any:
    """The sum of ``values`` per (cell, unit), a sparse cells x units matrix."""
    from scipy import sparse

    return sparse.csr_matrix((values, (cell, unit)), shape=(n_cells, n_units))


def harvest_propensities(
    pair: np.ndarray,
    rank: np.ndarray,
    clicked: np.ndarray,
    unit: np.ndarray,
    *,
    max_rank: int,
    resamples: int = 200,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> PropensityEstimate:
    """Propensities of ranks 1..``max_rank`` from logged rows: ``pair`` codes the (query,
    document) of each row (0..P-1), ``rank`` its rank (1-based), ``clicked`` 0/1 and ``unit``
    the code of its unit (0..U-1) for the bootstrap. Rows beyond ``max_rank`` are ignored.
    A rank that no pair crosses gets NaN (not identified)."""
    pair = np.asarray(pair, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    clicked = np.asarray(clicked, dtype=np.float64)
    unit = np.asarray(unit, dtype=np.int64)
    keep = (rank >= 1) & (rank <= max_rank)
    pair, rank, clicked, unit = pair[keep], rank[keep], clicked[keep], unit[keep]
    # the pairs shown at two ranks or more, renumbered
    cell = pair * max_rank + (rank - 1)
    cells = np.unique(cell)
    ranks_of_pair = np.bincount(cells // max_rank, minlength=int(pair.max(initial=-1)) + 1)
    moved = ranks_of_pair[pair] >= 2
    pair, rank, clicked, unit, cell = (
        pair[moved],
        rank[moved],
        clicked[moved],
        unit[moved],
        cell[moved],
    )
    codes, row_pair = np.unique(pair, return_inverse=True)
    n_pairs = int(codes.size)
    row_cell = row_pair * max_rank + (rank - 1)
    size = n_pairs * max_rank

    def table(weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        w = np.ones(row_cell.size) if weights is None else weights
        c = np.bincount(row_cell, clicked * w, size).reshape(n_pairs, max_rank)
        s = np.bincount(row_cell, w, size).reshape(n_pairs, max_rank)
        return c, s

    nan = np.full(max_rank, np.nan)
    if n_pairs == 0:
        return PropensityEstimate(nan, nan.copy(), nan.copy(), "harvest", converged=False)
    clicks, shows = table(None)
    start = 1.0 / np.arange(1, max_rank + 1, dtype=np.float64)
    estimate, iterations, converged = _fit(clicks, shows, start, MAX_ITERATIONS)
    adjacent, crossing = _adjacent(clicks, shows)
    low, high = nan.copy(), nan.copy()
    adj_low, adj_high = nan[:-1].copy(), nan[:-1].copy()
    draws: np.ndarray | None = None
    if resamples > 0 and np.isfinite(estimate).any():
        rng = np.random.default_rng([seed, 0x70B5])
        n_units = int(unit.max()) + 1
        draws = np.empty((resamples, max_rank))
        adjacent_draws = np.empty((resamples, max_rank - 1))
        warm = np.nan_to_num(estimate, nan=0.0)
        # each cell's shows and clicks per unit, as sparse cells x units matrices: a block of
        # replicates' tables is one product with the block's Poisson weights
        occupied, row_occupied = np.unique(row_cell, return_inverse=True)
        by_unit_shows = _cells_by_units(
            row_occupied, unit, np.ones(row_cell.size), occupied.size, n_units
        )
        by_unit_clicks = _cells_by_units(row_occupied, unit, clicked, occupied.size, n_units)
        block = int(max(1, min(50, 20_000_000 // max(occupied.size, 1))))
        for first in range(0, resamples, block):  # blocks of replicates, each one product
            count = min(block, resamples - first)
            weights = rng.poisson(1.0, (n_units, count)).astype(np.float64)
            shows_block = np.asarray(by_unit_shows @ weights)
            clicks_block = np.asarray(by_unit_clicks @ weights)
            for j in range(count):
                flat_c, flat_s = np.zeros(size), np.zeros(size)
                flat_c[occupied], flat_s[occupied] = clicks_block[:, j], shows_block[:, j]
                c, s = flat_c.reshape(n_pairs, max_rank), flat_s.reshape(n_pairs, max_rank)
                draws[first + j], _, _ = _fit(c, s, warm, MAX_ITERATIONS)
                adjacent_draws[first + j], _ = _adjacent(c, s)
        tail = (1.0 - confidence_level) / 2
        with np.errstate(all="ignore"):
            low, high = np.nanquantile(draws, [tail, 1 - tail], axis=0)
            adj_low, adj_high = np.nanquantile(adjacent_draws, [tail, 1 - tail], axis=0)
    fitted = estimate[1:] / estimate[:-1]
    checks = []
    for r in range(max_rank - 1):
        ci = (float(adj_low[r]), float(adj_high[r]))
        known = all(math.isfinite(v) for v in (fitted[r], adjacent[r], *ci))
        checks.append(
            AdjacentCheck(
                rank=r + 1,
                fitted=float(fitted[r]),
                adjacent=float(adjacent[r]),
                ci=ci,
                pairs=int(crossing[r]),
                agrees=bool(ci[0] <= fitted[r] <= ci[1]) if known else None,
            )
        )
    return PropensityEstimate(
        estimate,
        np.asarray(low, dtype=np.float64),
        np.asarray(high, dtype=np.float64),
        "harvest",
        pairs=n_pairs,
        rows=int(row_cell.size),
        resamples=resamples,
        iterations=iterations,
        converged=converged,
        adjacent=tuple(checks),
        draws=draws,
    )
