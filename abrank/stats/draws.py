"""Resamples shared by the metrics of one paired comparison.

When several metrics are compared on the same n queries, one set of sign flips and one
set of bootstrap resamples of those queries can serve them all: each metric's resampled
sums come out of one pass over the shared draws. Whether a metric joins depends on its
own values only (the cost of drawing alone, against :data:`SHARE_FACTOR`), and the shared
draws are seeded from (seed, n, treatment, segment) alone, so a metric's numbers never
depend on which other metrics are compared beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.estimation import MIN_BOOTSTRAP, lift
from abrank.stats.seeding import generator
from abrank.stats.validation import OWN_INTERVAL

SHARE_FACTOR = 2.0
"""A metric draws from the shared resamples of its queries when drawing its own would
cost at least 1 / SHARE_FACTOR of what the shared draws cost: at worst it then pays
SHARE_FACTOR times its own cost, and every other metric that joins divides the cost."""


@dataclass(frozen=True)
class SharedDraws:
    """Resampled sums for one paired comparison, drawn together with other metrics'.

    ``flip``: (B,) sign-flip sums of |d|; ``delta``: (B,) bootstrap sums of d;
    ``ratio``: (B, 2) bootstrap sums of :func:`ratio_columns`. None where the
    comparison draws its own.
    """

    flip: np.ndarray | None = None
    delta: np.ndarray | None = None
    ratio: np.ndarray | None = None


def ratio_columns(c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(u, c) with u = t - ratio * c, so that mean(t*) / mean(c*) = ratio + mean(u*) / mean(c*)."""
    ratio = float(t.sum()) / float(c.sum())
    return np.column_stack([t - ratio * c, c])


def plan_shared_draws(
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    runs: Mapping[str, tuple[str, ...]],
    n_resamples: int,
    seed: int | None,
    treatment_name: str,
    segment: str | None,
) -> dict[str, SharedDraws]:
    """Resampled sums drawn once for the metrics of one comparison on n queries each.

    ``pairs`` maps each metric to its (control, treatment) values on the same n queries,
    ``runs`` to the tests it runs (primary first). Metrics that draw their own are left
    out of the result.
    """
    n = next(iter(pairs.values()))[0].size
    if n < 2:
        return {}
    flip_cost = rs.shared_signflip_cost(n, n_resamples)
    boot_cost = rs.shared_bootstrap_cost(n, n_resamples)
    flips: dict[str, np.ndarray] = {}
    boots: dict[str, np.ndarray] = {}
    for m, (c, t) in pairs.items():
        run = runs[m]
        d = t - c
        if "permutation" in run and flip_cost <= rs.WORK_BUDGET_NS:
            a = np.abs(d)
            if SHARE_FACTOR * rs.exact_cost(a, n_resamples) >= flip_cost:
                flips[m] = a
        # the bootstrap's interval stands in for a primary test without one of its own
        wants_boot = "bootstrap" in run or run[0] not in OWN_INTERVAL
        if wants_boot and n >= MIN_BOOTSTRAP and boot_cost <= rs.WORK_BUDGET_NS:
            # one block of three columns per metric: d, then the relative lift's (u, c)
            block = np.zeros((n, 3))
            block[:, 0] = d
            own = rs.exact_cost(d, n_resamples)
            if lift(float(c.mean()), float(t.mean()), True) is not None:
                block[:, 1:] = ratio_columns(c, t)
                own += rs.exact_cost(block[:, 1:], n_resamples)
            if SHARE_FACTOR * own >= boot_cost:
                boots[m] = block
    shared: dict[str, dict[str, np.ndarray]] = {m: {} for m in pairs}
    key = ["shared", int(n)]
    if flips:
        rng = generator(seed, key, treatment_name, segment, "permutation")
        sums = rs.shared_signflip_sums(list(flips.values()), n_resamples, rng)
        for m, column in zip(flips, sums, strict=True):
            shared[m]["flip"] = column
    if boots:
        rng = generator(seed, key, treatment_name, segment, "bootstrap")
        sums = rs.shared_bootstrap_sums(list(boots.values()), n_resamples, rng)
        for m, block in zip(boots, sums, strict=True):
            shared[m]["delta"] = block[:, 0]
            if np.any(boots[m][:, 2]):
                shared[m]["ratio"] = block[:, 1:]
    return {m: SharedDraws(**parts) for m, parts in shared.items() if parts}
