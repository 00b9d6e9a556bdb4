"""The resampling tests of a clustered comparison: unit permutation and unit bootstrap.

A unit moves with all its impressions: the permutation test relabels units, the bootstrap
resamples units within each arm (BCa). While exact resampling costs at most
:data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, each resample is a pair of column sums of
the (M, D) rows (or comes from draws shared with the other metrics,
:mod:`abrank.stats.unit_draws`); above it, both work on the ratio's delta-method
linearization (:mod:`abrank.stats.unit_lattice`) or on grid cells
(:mod:`abrank.stats.unit_grid`), and say so, with their error bound, in the comparison's
``approximation``.
"""

from __future__ import annotations

import math

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.clustered_sample import ClusteredSample
from abrank.stats.estimation import MIN_BOOTSTRAP, TestOutcome, count_extreme
from abrank.stats.unit_draws import relabel_row_sums
from abrank.stats.unit_grid import prepared_units
from abrank.stats.unit_lattice import UNIT_BUDGET_NS, LinearCells, lattice_bootstrap, linear_cells
from abrank.stats.unit_sums import UnitSums, linearized

NOTE_SMALL_UNITS = (
    f"fewer than {MIN_BOOTSTRAP} units in an arm: the unit bootstrap is left out "
    "(it is too narrow at this size)"
)


def unit_permutation_test(s: ClusteredSample) -> TestOutcome:
    """Unit-label permutation test of R_t - R_c: a unit moves with all its impressions.

    The relabelled sums come from the shared draws, from the pooled (M, D) rows' own draws
    while they cost at most :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, else from
    relabelling cells of the pooled ratio's linearization where they are fewer than its
    distinct rows (:func:`linear_permutation_test`), else from the rows' own draws or
    grid cells.
    """
    n_c, n_t = s.control.n, s.treatment.n
    if n_c == 0 or n_t == 0:
        return TestOutcome(math.nan)
    pooled = np.concatenate([s.rows_t, s.rows_c])
    total = pooled.sum(axis=0)
    if s.draws.relabel is None and rs.exact_cost(pooled, s.n_resamples) > UNIT_BUDGET_NS:
        values = linearized(UnitSums(pooled[:, 0], pooled[:, 1])).deviations
        cells = linear_cells(values, min(n_c, n_t))
        if cells.sample.method == "grid":
            return linear_permutation_test(s, values, cells)
    bound = None
    if s.draws.relabel is not None:
        first = s.draws.relabel
    else:
        sample, bound = prepared_units(pooled, s.n_resamples, min(n_c, n_t))
        first = relabel_row_sums(sample, n_t, s.n_resamples, s.generator("permutation"))
    rest = total - first
    null = first[:, 0] / first[:, 1] - rest[:, 0] / rest[:, 1]
    b = count_extreme(null, s.obs, s.tol)
    approx: tuple[str, ...] = ()
    if bound is not None:
        ratio = float(total[0] / total[1])
        mean_d = float(total[1]) / (n_c + n_t)
        within = bound(n_t, ratio, mean_d) + bound(n_c, ratio, mean_d)
        approx = (f"the unit permutation test ({sample.atoms.m} cells, within ±{within:.2g})",)
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


def linear_permutation_test(
    s: ClusteredSample, values: np.ndarray, cells: LinearCells
) -> TestOutcome:
    """The unit-label permutation test on the pooled linearization ``values``, L_u =
    (M_u - R D_u) / d (R and d pooled; treatment's units first), relabelled through
    ``cells``: a relabelled R_first - R_rest is S / n_t - (sum(L) - S) / n_c to O(1/n),
    with S the sum of L over the units labelled treatment."""
    n_c, n_t = s.control.n, s.treatment.n
    first = relabel_row_sums(cells.sample, n_t, s.n_resamples, s.generator("permutation"))[:, 0]
    null = first / n_t - (float(values.sum()) - first) / n_c
    b = count_extreme(null, s.obs, s.tol)
    within = cells.bound(n_t) * (1.0 + n_t / n_c)
    approx = (
        f"the unit permutation test (the pooled ratio's delta-method linearization, "
        f"{cells.sample.atoms.m} cells, within ±{within:.2g}, plus the linearization's "
        "O(1/n))",
    )
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


def unit_bootstrap(s: ClusteredSample) -> TestOutcome:
    """BCa bootstrap of R_t - R_c resampling units within each arm (its p-value and
    interval); left out below MIN_BOOTSTRAP units per arm.

    Each arm's resampled ratios come from the shared draws, from its own exact draws
    while they cost at most :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, else from
    the exact bootstrap distribution of its linearization on a lattice
    (:mod:`abrank.stats.unit_lattice`), else from grid cells.
    """
    if s.smallest < MIN_BOOTSTRAP:
        return TestOutcome(math.nan, notes=(NOTE_SMALL_UNITS,) if s.enough else ())
    rng = s.generator("bootstrap")
    ratios, jacks, bounds, linear = [], [], [], False
    shared = (s.draws.boot_c, s.draws.boot_t)
    arms = (s.control, s.treatment)
    for rows, drawn, arm in zip((s.rows_c, s.rows_t), shared, arms, strict=True):
        total = rows.sum(axis=0)
        n = rows.shape[0]
        ratio = float(total[0] / total[1])
        atoms = rs.exact_atoms(rows)
        lattice = None
        if drawn is None and rs.atoms_cost(atoms, rows.size, s.n_resamples) > UNIT_BUDGET_NS:
            lattice = lattice_bootstrap(arm.deviations)
        if drawn is not None:
            ratios.append(drawn[:, 0] / drawn[:, 1])
            bounds.append(0.0)
        elif lattice is not None:
            ratios.append(ratio + lattice.draw(s.n_resamples, rng))
            bounds.append(lattice.bound)
            linear = True
        else:
            sample, bound = prepared_units(rows, s.n_resamples, n)
            sums = rs.bootstrap_sums(sample, s.n_resamples, rng)
            ratios.append(sums[:, 0] / sums[:, 1])
            if bound is not None:
                atoms = rs.Atoms(rows, np.ones(n, dtype=np.int64))
                bounds.append(bound(n, ratio, float(total[1]) / n))
            else:
                atoms = sample.atoms
                bounds.append(0.0)
        # leave-one-unit-out ratios, at each distinct row
        values = atoms.values
        jacks.append(((total[0] - values[:, 0]) / (total[1] - values[:, 1]), atoms.counts))
    boot_c, boot_t = ratios
    resampled = boot_t - boot_c
    (jack_c, wc), (jack_t, wt) = jacks
    rc, rt = s.control.estimate, s.treatment.estimate
    corrected = rs.bca(s.obs, resampled, [(rt - jack_c, wc), (jack_t - rc, wt)], s.tol)
    smallest = s.smallest
    approx: tuple[str, ...] = ()
    if linear:
        approx = (
            f"the unit bootstrap (each arm's ratio by its delta-method linearization, "
            f"resampled exactly on a lattice: within ±{sum(bounds):.2g}, plus the "
            f"linearization's O(1/n))",
        )
    elif any(bounds):
        approx = (f"the unit bootstrap (ratios within ±{sum(bounds):.2g})",)
    return TestOutcome(
        corrected.p_value(0.0, expand=smallest),
        lambda level: corrected.interval(level, expand=smallest),
        "bca",
        resampled=resampled,
        approximations=approx,
    )
