"""Grid cells for resampling (M_u, D_u) rows of many units, with a variance-based error bound.

When a clustered comparison has so many units and so many distinct (M_u, D_u) rows that
exact resampling exceeds :data:`abrank.stats.resampling.WORK_BUDGET_NS`, units are pooled
into cells that keep D_u exact (one cell row per count of impressions) and cut M_u into
equal-width cells; each cell stands for its units by their mean M. A resampled sum of M
then differs from the exact one by the sum of the drawn units' residuals r_u = M_u -
(cell mean), which have mean exactly 0 over the units. The residuals are bounded by the
cell width w and their variance v is known, so Bernstein's inequality bounds the mean of
n drawn residuals by

    sqrt(2 v ln(2 / FAILURE_PROB) / n) + 2 w ln(2 / FAILURE_PROB) / (3 n)

with probability at least 1 - FAILURE_PROB, for draws with replacement (the bootstrap) and
without (a relabelling; Hoeffding 1963, section 6). The variance of residuals is far below
the worst case w^2 that the Hoeffding bound of
:func:`abrank.stats.resampling.grid_error_bound` assumes, so the same stated accuracy
needs fewer cells, and each resample costs less. The M cells are the fewest of
:data:`M_BINS` whose bound stays below ``GRID_SE_SHARE`` of the standard error of the
resampled mean of the linearized values M_u - R D_u. :func:`prepared_units` makes the
choice for a clustered test: exact resampling while it fits the work budget, else the unit
grid, or :func:`abrank.stats.resampling.grid_atoms`' cells where those are fewer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from abrank.stats import resampling as rs

GRID_BINS_UNIT = (4096, 256)
"""Most equal-width grid cells per column of (M_u, D_u) rows for
:func:`abrank.stats.resampling.prepare`: D_u (a count of impressions) gets enough cells that,
up to 256 impressions per unit, every cell holds one value of D_u."""
M_BINS = (64, 128, 256, 512, 1024, 2048, 4096)
"""Candidate numbers of equal-width cells for M_u, tried from the fewest."""
MOST_D_VALUES = 512
"""Most distinct D_u values a unit grid keeps exact; beyond, no unit grid is made."""

_LOG_TERM = math.log(2.0 / rs.FAILURE_PROB)


@dataclass(frozen=True)
class UnitGrid:
    """Cells of (M_u, D_u) rows: ``sample`` (method ``"grid"``, its atoms the cells),
    the residuals' variance and bound (the M cell width)."""

    sample: rs.Prepared
    residual_var: float
    width: float

    def bound(self, n_draws: int) -> float:
        """Bernstein bound on |grid - exact| for the mean of M over ``n_draws`` drawn units."""
        return bernstein_bound(self.residual_var, self.width, n_draws)


def bernstein_bound(variance: float, width: float, n_draws: int) -> float:
    """sqrt(2 v L / n) + 2 w L / (3 n) with L = ln(2 / FAILURE_PROB): the mean of n draws
    of a zero-mean variable bounded by ``width`` with ``variance`` lies within it with
    probability at least 1 - FAILURE_PROB (Bernstein's inequality)."""
    if n_draws <= 0:
        return 0.0
    return math.sqrt(2.0 * variance * _LOG_TERM / n_draws) + 2.0 * width * _LOG_TERM / (
        3.0 * n_draws
    )


def unit_grid(rows: np.ndarray, n_draws: int) -> UnitGrid | None:
    """The coarsest unit grid of ``rows`` ((n, 2) of M_u, D_u) whose bound for means of
    ``n_draws`` units stays below GRID_SE_SHARE of their standard error; None when D_u
    takes more than MOST_D_VALUES values or no candidate is fine enough."""
    m, d = rows[:, 0], rows[:, 1]
    n = m.size
    d_values, d_index = np.unique(d, return_inverse=True)
    if n < 2 or d_values.size > MOST_D_VALUES:
        return None
    ratio = float(m.sum() / d.sum())
    target = rs.GRID_SE_SHARE * float(np.std(m - ratio * d)) / math.sqrt(n_draws)
    low, span = float(m.min()), float(np.ptp(m))
    for bins in M_BINS:
        width = span / bins if span > 0 else 1.0
        cells = np.minimum(np.floor((m - low) / width).astype(np.int64), bins - 1)
        key = cells * d_values.size + d_index
        unique, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        mean_m = np.bincount(inverse, weights=m, minlength=unique.size) / counts
        residual = m - mean_m[inverse]
        variance = float(residual @ residual) / n
        if bernstein_bound(variance, width, n_draws) <= target or bins == M_BINS[-1]:
            if bernstein_bound(variance, width, n_draws) > target:
                return None
            values = np.column_stack([mean_m, d_values[unique % d_values.size]])
            atoms = rs.Atoms(values, counts.astype(np.int64), np.array([width, 0.0]))
            return UnitGrid(rs.Prepared(rows, atoms, "grid"), variance, width)
    return None  # pragma: no cover - the loop returns at its last candidate


def ratio_bound(sample: rs.Prepared, n_draws: int, ratio: float, mean_d: float) -> float:
    """First-order bound on a grid-cell resampled ratio's error: the bounds of the
    resampled means of M and D (:func:`abrank.stats.resampling.grid_error_bound`)
    combined as (b_M + |R| b_D) / mean(D); b_D is 0 when no cell holds two values of D
    (counts of impressions usually get one cell each)."""
    widths = sample.grid_widths
    b_m = rs.grid_error_bound(widths[0], n_draws)
    b_d = 0.0
    if not column_exact_in_grid(sample.raw[:, 1], float(widths[1])):
        b_d = rs.grid_error_bound(widths[1], n_draws)
    return (b_m + abs(ratio) * b_d) / mean_d


RatioBound = Callable[[int, float, float], float]
"""(units drawn, ratio, mean D) -> bound on a grid-cell resampled ratio's error."""


def prepared_units(
    rows: np.ndarray, n_resamples: int, n_draws: int
) -> tuple[rs.Prepared, RatioBound | None]:
    """How to resample (M, D) rows: :func:`abrank.stats.resampling.prepare`'s choice, except
    that where it chooses grid cells, the unit grid of :mod:`abrank.stats.unit_grid`
    (D exact, a variance-based bound) is used when it has fewer cells. Returns the sample
    and its ratio error bound (None for exact resampling)."""
    sample = rs.prepare(rows, n_resamples, GRID_BINS_UNIT)
    if sample.method != "grid":
        return sample, None
    grid = unit_grid(rows, n_draws)
    if grid is not None and grid.sample.atoms.m < sample.atoms.m:

        def bound(n: int, ratio: float, mean_d: float) -> float:
            return grid.bound(n) / mean_d

        return grid.sample, bound

    def hoeffding(n: int, ratio: float, mean_d: float) -> float:
        return ratio_bound(sample, n, ratio, mean_d)

    return sample, hoeffding


def column_exact_in_grid(column: np.ndarray, width: float) -> bool:
    """No grid cell of ``width`` (cells from the column's minimum, as
    :func:`abrank.stats.resampling.grid_atoms` lays them) holds two distinct values."""
    values = np.unique(column)
    if values.size < 2:
        return True
    span = float(values[-1] - values[0])
    bins = max(1, int(round(span / width)))
    cells = np.minimum(np.floor((values - values[0]) / width), bins - 1)
    return bool(np.all(np.diff(cells) > 0))
