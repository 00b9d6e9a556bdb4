"""The unit bootstrap of a ratio at scale: its linearization on a lattice, resampled exactly.

Resampling n units with replacement B times costs O(n B) by index draws or O(m B) by
multinomial counts over m distinct (M_u, D_u) rows; at tens of thousands of units with
thousands of distinct rows both take seconds per arm. The ratio's first-order term is
1-D: R* - R = mean(L*) d / mean(D*) with L_u = (M_u - R D_u) / d (d = mean(D)), so
R* - R = mean(L*) + O(1/n) (mean(L*) is O(1/sqrt(n)) and so is d / mean(D*) - 1). The
bootstrap distribution of mean(L*) is that of the sum of n independent draws from the
units' values, an n-fold convolution of their distribution. With every L_u moved to a
point of a lattice of step h (plus one common offset, so that the values still sum to
exactly sum(L)), that convolution is exact on the lattice and costs one FFT of a few
hundred thousand points, whatever n and B are; the B resamples are then drawn from it by
inverse CDF with the comparison's generator (reproducible from the seed, exactly
distributed as resampling the lattice values of the units).

The lattice moves each unit by a residual r_u (mean 0, |r_u| <= h, variance v known), so a
resampled mean differs from resampling the exact L_u of the same drawn units by the mean
of n drawn residuals: within Bernstein's bound sqrt(2 v ln(2/p) / n) + 2 h ln(2/p) / (3 n)
with probability 1 - p (p = :data:`abrank.stats.resampling.FAILURE_PROB`), the bound of
:func:`abrank.stats.unit_grid.bernstein_bound`. h is chosen so that this bound stays below
:data:`LATTICE_SE_SHARE` of the standard error of mean(L) (the FFT's size grows like
sqrt(n) / h, not with B). Used where exact resampling of an arm would cost more than
:data:`UNIT_BUDGET_NS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.unit_grid import bernstein_bound

UNIT_BUDGET_NS = 5e7
"""Estimated cost (ns) of exact unit resampling (one arm's bootstrap) above which the
lattice is used: a twentieth of :data:`abrank.stats.resampling.WORK_BUDGET_NS`, since one
online readout runs a bootstrap per arm for every metric and segment."""

LATTICE_SE_SHARE = rs.GRID_SE_SHARE
"""The lattice's bound stays below this share of the standard error of the mean, as the
grid cells' does (a bound that holds with probability 1 - FAILURE_PROB; the typical
error is about a sixth of it, far inside the Monte-Carlo error of 10,000 resamples)."""

MOST_FFT_POINTS = 1 << 22
"""Most points of the FFT of the sum's distribution (64 MiB of complex128); a lattice
that would need more is made coarser, down to GRID_SE_SHARE, or not made."""

TAIL_PROB = 1e-18
"""Probability mass of the sum's distribution allowed outside the FFT's period (it would
wrap around): far below anything 10,000 (or 10^9) resamples can see."""

_LOG_TERM = math.log(2.0 / rs.FAILURE_PROB)
_TAIL_LOG = math.log(2.0 / TAIL_PROB)


@dataclass(frozen=True)
class LatticeBootstrap:
    """The exact bootstrap distribution of the mean of n draws from a lattice.

    ``means`` (ascending) are the distinct values the resampled mean takes with non-zero
    probability and ``cdf`` their cumulative probabilities; ``step`` is the lattice step h,
    ``bound`` the Bernstein bound on |lattice - exact| for one resampled mean and
    ``points`` the FFT's size.
    """

    means: np.ndarray
    cdf: np.ndarray
    step: float
    bound: float
    points: int

    def draw(self, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        """``n_resamples`` resampled means (inverse CDF of ``rng``'s uniforms): (B,)."""
        u = rng.random(n_resamples)
        index = np.searchsorted(self.cdf, u * self.cdf[-1], side="right")
        return self.means[np.minimum(index, self.means.size - 1)]


def lattice_step(sd: float, n: int, share: float) -> float:
    """The largest step h whose worst-case bound stays below ``share`` * sd / sqrt(n):
    rounding to the nearest point leaves residuals within h / 2 (within h once centred)
    and of variance at most h^2 / 4."""
    target = share * sd / math.sqrt(n)
    return target / (math.sqrt(_LOG_TERM / (2.0 * n)) + 2.0 * _LOG_TERM / (3.0 * n))


def fft_points(n: int, var_k: float, span_k: float) -> int:
    """The power of two that holds all but TAIL_PROB of the distribution of the sum of n
    draws of a lattice variable (in steps) with variance ``var_k`` and range ``span_k``:
    Bernstein's tail bound 2 exp(-t^2 / (2 (n var + span t / 3))) solved for t."""
    a = _TAIL_LOG
    half = a * span_k / 3.0 + math.sqrt((a * span_k / 3.0) ** 2 + 2.0 * a * n * var_k)
    return 1 << max(4, math.ceil(math.log2(2.0 * half + 2.0)))


def lattice_bootstrap(values: np.ndarray) -> LatticeBootstrap | None:
    """The bootstrap distribution of the mean of n draws with replacement from ``values``
    (n,) moved to a lattice (see the module's text); None when the values are constant or
    no lattice within GRID_SE_SHARE fits MOST_FFT_POINTS."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    sd = float(x.std())
    if n < 2 or not sd > 0:
        return None
    low = float(x.min())
    share = LATTICE_SE_SHARE
    while share <= rs.GRID_SE_SHARE * (1 + 1e-12):
        step = lattice_step(sd, n, share)
        k = np.rint((x - low) / step)
        span_k = float(k.max())
        points = fft_points(n, float(k.var()), span_k)
        if points <= MOST_FFT_POINTS and span_k < 2**53:
            return convolved(x, k.astype(np.int64), low, step, points)
        share *= 2.0
    return None


def convolved(
    x: np.ndarray, k: np.ndarray, low: float, step: float, points: int
) -> LatticeBootstrap:
    """The n-fold convolution of the lattice values ``low + step * k`` (shifted by their
    mean residual), modulo ``points`` and unwrapped around its centre."""
    n = x.size
    residual = x - (low + step * k)
    offset = float(residual.mean())
    centred = residual - offset
    bound = bernstein_bound(float(centred @ centred) / n, float(np.abs(centred).max()), n)
    pmf = np.bincount(k % points, minlength=points) / n
    density = np.fft.irfft(np.fft.rfft(pmf) ** n, points)
    np.maximum(density, 0.0, out=density)
    # residue r stands for the sum r + j * points nearest the centre, E[sum] = sum(k):
    # in ascending order, the sums first, first + 1, ... from residue first % points on
    first = int(k.sum()) - points // 2
    density = np.roll(density, -(first % points))
    means = low + offset + step * (first + np.arange(points, dtype=np.float64)) / n
    return LatticeBootstrap(means, np.cumsum(density), step, bound, points)


CELL_BINS = tuple(int(round(16 * 2 ** (i / 4))) for i in range(41))
"""Candidate numbers of cells for :func:`linear_cells` (16 to 16,384, each about 19% more
than the last), searched by bisection for the fewest within the bound."""


@dataclass(frozen=True)
class LinearCells:
    """1-D linearized values ready for relabelling: ``sample`` (method ``"exact"``: distinct
    values, or ``"grid"``: cells standing for their units by their mean), with the cells'
    residual variance and largest residual (0 for exact values)."""

    sample: rs.Prepared
    residual_var: float
    width: float

    def bound(self, n_draws: int) -> float:
        """Bernstein bound on |cells - exact| for the mean of ``n_draws`` drawn values."""
        if self.sample.method == "exact":
            return 0.0
        return bernstein_bound(self.residual_var, self.width, n_draws)


def linear_cells(values: np.ndarray, n_draws: int) -> LinearCells:
    """The fewest cells of ``values`` (n,) whose bound for means of ``n_draws`` drawn values
    stays below GRID_SE_SHARE of their standard error, or the distinct values when those
    are fewer (or no candidate is fine enough).

    Cells are equal-width on y = asinh((x - median) / sd): about sd / bins wide near the
    centre, where the units are, and wider in the tails, where few units add little to
    the residuals' variance (Bernstein's bound takes the largest residual as well).
    """
    x = np.asarray(values, dtype=np.float64)
    exact = LinearCells(rs.Prepared(x[:, None], rs.exact_atoms(x), "exact"), 0.0, 0.0)
    n = x.size
    sd = float(x.std()) if n else 0.0
    if n < 2 or not sd > 0 or n_draws < 1:
        return exact
    target = rs.GRID_SE_SHARE * sd / math.sqrt(n_draws)
    y = np.arcsinh((x - float(np.median(x))) / sd)
    low, span = float(y.min()), float(np.ptp(y))

    def cells_of(bins: int) -> tuple[LinearCells, bool]:
        index = np.minimum(np.floor((y - low) * (bins / span)).astype(np.int64), bins - 1)
        counts = np.bincount(index, minlength=bins)
        sums = np.bincount(index, weights=x, minlength=bins)
        occupied = counts > 0
        means = np.divide(sums, counts, out=np.zeros(bins), where=occupied)
        residual = x - means[index]
        variance = float(residual @ residual) / n
        width = float(np.abs(residual).max())
        atoms = rs.Atoms(
            means[occupied][:, None], counts[occupied].astype(np.int64), np.array([width])
        )
        cells = LinearCells(rs.Prepared(x[:, None], atoms, "grid"), variance, width)
        return cells, cells.bound(n_draws) <= target

    lo, hi = 0, len(CELL_BINS) - 1
    best, fine = cells_of(CELL_BINS[hi])
    if not fine:
        return exact
    while lo < hi:  # the fewest candidate bins within the bound (the bound falls with bins)
        mid = (lo + hi) // 2
        cells, fine = cells_of(CELL_BINS[mid])
        if fine:
            best, hi = cells, mid
        else:
            lo = mid + 1
    return best if best.sample.atoms.m < exact.sample.atoms.m else exact
