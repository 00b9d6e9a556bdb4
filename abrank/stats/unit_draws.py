"""Resamples of units shared by the metrics of one clustered comparison.

The metrics of one online comparison are measured on the same users, so one set of unit
bootstrap draws per arm and one set of unit-label permutations can serve them all: each
metric's resampled (M, D) sums come out of one pass over the shared draws
(:func:`abrank.stats.resampling.shared_bootstrap_sums`, and :func:`permuted_row_sums` on
the metrics' columns side by side). As in :mod:`abrank.stats.draws`, whether a metric
joins depends on its own rows only (its own exact cost against the shared draws' cost,
with :data:`abrank.stats.draws.SHARE_FACTOR`), and the shared draws are seeded from (seed,
units per arm, treatment, segment) alone, so a metric's numbers never depend on which
other metrics are compared beside it: ``compare_clustered`` on one metric makes the same
choice and draws the same resamples. :func:`relabel_row_sums` is the unit-label
permutation of one metric drawing its own (over distinct rows, raw rows or grid cells).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.draws import SHARE_FACTOR
from abrank.stats.estimation import MIN_BOOTSTRAP
from abrank.stats.seeding import generator
from abrank.stats.unit_lattice import UNIT_BUDGET_NS


@dataclass(frozen=True)
class SharedUnitDraws:
    """Resampled (M, D) sums of one metric, drawn together with other metrics'.

    ``boot_c`` / ``boot_t``: (B, 2) bootstrap sums of each arm's units; ``relabel``: (B, 2)
    sums of the units labelled treatment in random permutations of the pooled rows
    (treatment's rows first, then the control's). None where the metric draws its own.
    """

    boot_c: np.ndarray | None = None
    boot_t: np.ndarray | None = None
    relabel: np.ndarray | None = None


def permuted_row_sums(
    raw: np.ndarray, n_first: int, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Column sums of the first ``n_first`` rows of ``raw`` (n, k) in random permutations:
    (B, k). Each column's sums depend only on that column and the draws (the rows are
    added one after another, whatever k >= 2 is)."""
    n, k = raw.shape
    out = np.zeros((n_resamples, k))
    if n == 0 or n_first == 0:
        return out
    raw = np.ascontiguousarray(raw)
    step = max(1, rs.CHUNK_ELEMENTS // max(n * k, 1))
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        order = np.tile(np.arange(n), (b, 1))
        rng.permuted(order, axis=1, out=order)
        out[start : start + b] = raw[order[:, :n_first]].sum(axis=1)
    return out


def plan_unit_draws(
    arms: Mapping[str, tuple[np.ndarray, np.ndarray]],
    runs: Mapping[str, tuple[str, ...]],
    n_resamples: int,
    seed: int | None,
    treatment_name: str,
    segment: str | None,
) -> dict[str, SharedUnitDraws]:
    """Unit resamples drawn once for the metrics of one clustered comparison.

    ``arms`` maps each metric to its (control, treatment) (M, D) rows ((n_c, 2) and
    (n_t, 2); the same units for every metric), ``runs`` to the tests it runs. A metric
    joins the shared bootstrap (or permutations) when each arm's shared draws (the pooled
    rows' permutations) stay within :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS` and
    drawing its own would cost at least
    1 / SHARE_FACTOR of the shared draws. Metrics that draw their own are left out.
    """
    if not arms:
        return {}
    rows_c, rows_t = next(iter(arms.values()))
    n_c, n_t = rows_c.shape[0], rows_t.shape[0]
    if n_c < 2 or n_t < 2:
        return {}
    boot_cost = (
        rs.shared_bootstrap_cost(n_c, n_resamples),
        rs.shared_bootstrap_cost(n_t, n_resamples),
    )
    perm_cost = rs.shared_bootstrap_cost(n_c + n_t, n_resamples)  # one index draw per row
    boots: list[str] = []
    perms: list[str] = []
    for metric, (c, t) in arms.items():
        run = runs[metric]
        fits = max(boot_cost) <= UNIT_BUDGET_NS
        if "bootstrap" in run and min(n_c, n_t) >= MIN_BOOTSTRAP and fits:
            own = rs.exact_cost(c, n_resamples) + rs.exact_cost(t, n_resamples)
            if SHARE_FACTOR * own >= sum(boot_cost):
                boots.append(metric)
        if "permutation" in run and perm_cost <= UNIT_BUDGET_NS:
            own = rs.exact_cost(np.concatenate([t, c]), n_resamples)
            if SHARE_FACTOR * own >= perm_cost:
                perms.append(metric)
    parts: dict[str, dict[str, np.ndarray]] = {m: {} for m in arms}
    key = ["units", int(n_c), int(n_t)]
    if boots:
        rng = generator(seed, key, treatment_name, segment, "bootstrap")
        for arm, index in (("boot_c", 0), ("boot_t", 1)):
            sums = rs.shared_bootstrap_sums([arms[m][index] for m in boots], n_resamples, rng)
            for m, block in zip(boots, sums, strict=True):
                parts[m][arm] = block
    if perms:
        rng = generator(seed, key, treatment_name, segment, "permutation")
        stacked = np.hstack([np.concatenate([arms[m][1], arms[m][0]]) for m in perms])
        relabelled = permuted_row_sums(stacked, n_t, n_resamples, rng)
        for j, m in enumerate(perms):
            parts[m]["relabel"] = relabelled[:, 2 * j : 2 * j + 2]
    return {m: SharedUnitDraws(**drawn) for m, drawn in parts.items() if drawn}


def relabel_row_sums(
    sample: rs.Prepared, n_first: int, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Column sums of the ``n_first`` rows given the first label in random relabellings of
    a pooled sample of rows (n, k): (B, k). Exact over distinct rows (a multivariate
    hypergeometric draw), over raw rows (a permutation), or over grid cells."""
    n, k = sample.raw.shape
    out = np.zeros((n_resamples, k))
    if n == 0 or n_first == 0:
        return out
    if sample.method == "index":
        return permuted_row_sums(sample.raw, n_first, n_resamples, rng)
    atoms = sample.atoms
    step = max(1, rs.CHUNK_ELEMENTS // max(atoms.m, 1))
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        draws = rng.multivariate_hypergeometric(atoms.counts, n_first, size=b)
        out[start : start + b] = draws @ atoms.values
    return out
