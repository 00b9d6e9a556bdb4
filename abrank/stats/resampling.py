"""Fast resampling of sums: bootstrap, sign-flip and label-permutation draws, and BCa.

Every statistic abrank resamples is a function of column sums (a mean delta, a ratio of
means), so a resample only needs the sums of the drawn rows, never the rows themselves.
Three exact ways to draw them, chosen by cost:

* **distinct values** (``"exact"``): drawing n rows with replacement is, in distribution,
  drawing multinomial counts over the m distinct rows; sign-flipping the c rows that share
  one absolute value adds ``value * (2 * Binomial(c, 1/2) - c)``; relabelling a pooled
  sample is a multivariate hypergeometric draw over the distinct values. Cost O(m) per
  resample instead of O(n): MRR@10 deltas take at most 121 values.
* **index resampling** (``"index"``): plain draws of row indices, in chunks that never
  hold more than ``CHUNK_ELEMENTS`` numbers; used when nearly every value is distinct.
* **grid cells** (``"grid"``, an approximation): when both would exceed the work budget
  (very many queries *and* mostly distinct values), rows are pooled into grid cells of
  width h per column and each cell is represented by the mean of its rows. A resampled
  mean then differs from exact resampling only by the resampled mean of the within-cell
  residuals, which are bounded by h; by Hoeffding's inequality each resampled mean is
  within ``h * sqrt(2 ln(2 / FAILURE_PROB) / n)`` of its exact value with probability at
  least ``1 - FAILURE_PROB`` (:func:`grid_error_bound`). With 4,096 cells and a million
  queries this is below 1e-6 on a metric in [0, 1].

Several statistics on the same queries (the metrics of one comparison, the delta and the
relative lift) can share one set of index draws: :func:`shared_bootstrap_sums` and
:func:`shared_signflip_sums` resample many columns with the same draws, which costs
about as much as resampling one.

Values that differ only in their last bits count as one value, and a value on a grid edge
falls in the same cell whatever its last bits (:data:`SAME_VALUE`, :data:`EDGE_SLACK`):
another engine sums a query's metric in another order, and its resamples must still be
the memory engine's draws of the same atoms.

No function here allocates an n x B matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri, stdtr, stdtrit

FAILURE_PROB = 1e-8
"""Probability, per resample, that a grid-cell draw falls outside its stated error bound."""

CHUNK_ELEMENTS = 1 << 22
"""Most numbers held in one temporary block of draws (32 MiB of float64)."""

WORK_BUDGET_NS = 1e9
"""Estimated cost (ns) above which an exact resampling job switches to grid cells."""

GRID_SE_SHARE = 0.05
"""Grid cells are made just fine enough that the error bound of a resampled mean stays
below this share of its standard error (sd / sqrt(n)); the bound is then far inside the
interval's half-width (about 2 standard errors) and comparable to the Monte-Carlo error of
10,000 resamples. Fewer cells make each resample cheaper."""

SAME_VALUE = 1e-12
"""Gap, relative to a column's largest magnitude, within which two values count as one
distinct value: far above the last-bit noise of summing a metric in another order (1e-16
relative per term), far below any difference a metric of judged documents makes."""

EDGE_SLACK = 1e-9
"""How far below a grid edge (in cells) a value still falls in the cell above it: a value
that lies on an edge (a delta of 0.5 where the cells are 2^-11 wide) then stays in one cell
whichever way its last bits went."""

_MIN_GRID_BINS = 64

_NS_PER_ATOM_DRAW = 75.0  # one binomial / multinomial / hypergeometric component
_NS_PER_INDEX_DRAW = 15.0  # one random index (or sign) plus gather and add
_NS_PER_SHARED_DRAW = 9.0  # one random index counted for every column at once
_NS_PER_SHARED_SIGN = 2.5  # one random sign applied to every column at once
_HOEFFDING = math.sqrt(2.0 * math.log(2.0 / FAILURE_PROB))


@dataclass(frozen=True)
class Atoms:
    """Distinct rows of a sample (or grid cells) with how many rows each stands for.

    ``values`` is (m, k); ``counts`` is (m,) and sums to n. ``widths`` holds the grid
    width per column when the atoms are grid cells (values are then cell means), and is
    None when every atom is an exact distinct row.
    """

    values: np.ndarray
    counts: np.ndarray
    widths: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of rows represented."""
        return int(self.counts.sum())

    @property
    def m(self) -> int:
        """Number of atoms."""
        return int(self.counts.shape[0])


@dataclass(frozen=True)
class Prepared:
    """A sample ready for resampling: raw rows plus the atoms chosen to draw from.

    ``method`` is ``"exact"`` (distinct rows), ``"index"`` (raw rows) or ``"grid"``.
    """

    raw: np.ndarray
    atoms: Atoms
    method: str

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.raw.shape[0])

    @property
    def grid_widths(self) -> np.ndarray:
        """The grid width per column of a ``"grid"`` sample (what its error bounds read)."""
        if self.atoms.widths is None:
            raise ValueError(f"an {self.method!r} sample has no grid widths")
        return self.atoms.widths


def _as_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def exact_atoms(x: np.ndarray) -> Atoms:
    """Group the rows of ``x`` ((n,) or (n, k)) that are equal, column by column within
    :data:`SAME_VALUE`, into distinct values with counts (in lexicographic order)."""
    rows = _as_rows(x)
    n, k = rows.shape
    if n == 0:
        return Atoms(np.empty((0, k)), np.empty(0, dtype=np.int64))
    tolerance = SAME_VALUE * np.max(np.abs(rows), axis=0)
    new = np.empty(n, dtype=bool)
    new[0] = True
    if k == 1:
        ordered = np.sort(rows[:, 0])
        np.greater(np.diff(ordered), tolerance[0], out=new[1:])
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, n)).astype(np.int64)
        return Atoms(ordered[starts][:, None], counts)
    # each column's values numbered in order, a gap above its tolerance starting the next
    # number; a row's key is its numbers in lexicographic order
    key = np.zeros(n, dtype=np.int64)
    for j in range(k):
        order = np.argsort(rows[:, j])
        np.greater(np.diff(rows[order, j]), tolerance[j], out=new[1:])
        numbers = np.empty(n, dtype=np.int64)
        numbers[order] = np.cumsum(new) - 1
        size = int(numbers[order[-1]]) + 1
        if int(key.max()) >= (1 << 62) // size:  # renumbered densely before it overflows
            key = np.unique(key, return_inverse=True)[1].reshape(n).astype(np.int64)
        key = key * size + numbers
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    return Atoms(rows[first], counts.astype(np.int64))


def grid_atoms(x: np.ndarray, bins: Sequence[int]) -> Atoms:
    """Pool rows into a grid of ``bins[j]`` equal cells per column; atoms are cell means."""
    rows = _as_rows(x)
    n, k = rows.shape
    if n == 0:
        return Atoms(np.empty((0, k)), np.empty(0, dtype=np.int64), np.ones(k))
    low = rows.min(axis=0)
    span = rows.max(axis=0) - low
    widths = np.where(span > 0, span / np.asarray(bins, dtype=np.float64), 1.0)
    cells = np.minimum(
        np.floor((rows - low) / widths + EDGE_SLACK).astype(np.int64),
        np.asarray(bins, dtype=np.int64) - 1,
    )
    key = np.ravel_multi_index(cells.T, tuple(int(b) for b in bins))
    unique, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    sums = np.column_stack(
        [np.bincount(inverse, weights=rows[:, j], minlength=unique.size) for j in range(k)]
    )
    return Atoms(sums / counts[:, None], counts.astype(np.int64), widths)


def adaptive_bins(x: np.ndarray, most: Sequence[int]) -> tuple[int, ...]:
    """Cells per column (at most ``most[j]``) whose bound stays below GRID_SE_SHARE of the SE.

    With cells of width h the bound is ``h * H / sqrt(n)`` (:func:`grid_error_bound`), so
    ``h <= GRID_SE_SHARE * sd / H`` keeps it below that share of ``sd / sqrt(n)``.
    """
    rows = _as_rows(x)
    bins = []
    for j, cap in enumerate(most):
        column = rows[:, j]
        span, sd = float(np.ptp(column)), float(column.std())
        if span == 0 or sd == 0:
            bins.append(int(cap))
            continue
        needed = math.ceil(span * _HOEFFDING / (GRID_SE_SHARE * sd))
        bins.append(int(min(cap, max(min(_MIN_GRID_BINS, cap), needed))))
    return tuple(bins)


def grid_error_bound(width: float, n_draws: int) -> float:
    """Bound on |grid-cell resampled mean - exact resampled mean| for one column.

    Within-cell residuals lie in [-width, width]; Hoeffding's inequality bounds their
    resampled mean over ``n_draws`` rows by ``width * sqrt(2 ln(2/FAILURE_PROB) / n_draws)``
    with probability at least ``1 - FAILURE_PROB`` (sign flips and draws without
    replacement obey the same bound).
    """
    if n_draws <= 0:
        return 0.0
    return float(width) * _HOEFFDING / math.sqrt(n_draws)


def prepare(
    x: np.ndarray, n_resamples: int, grid_bins: Sequence[int], *, force: str | None = None
) -> Prepared:
    """Choose how to resample ``x`` (n rows): distinct values, raw indices or grid cells.

    The cheapest exact method is used while its estimated cost stays within
    ``WORK_BUDGET_NS``; beyond that, grid cells (``grid_bins`` per column) if they are
    fewer than the distinct rows. ``force`` ("exact", "index", "grid") overrides the
    choice (for tests and benchmarks).
    """
    raw = _as_rows(x)
    atoms = exact_atoms(raw)
    atom_cost, index_cost = _exact_costs(atoms.m, raw.size, n_resamples)
    if force is None:
        exact_cost = min(atom_cost, index_cost)
        if exact_cost > WORK_BUDGET_NS:
            grid = grid_atoms(raw, adaptive_bins(raw, grid_bins))
            if _NS_PER_ATOM_DRAW * grid.m * n_resamples < exact_cost and grid.m < atoms.m:
                return Prepared(raw, grid, "grid")
        method = "exact" if atom_cost <= index_cost else "index"
        return Prepared(raw, atoms, method)
    if force == "grid":
        return Prepared(raw, grid_atoms(raw, grid_bins), "grid")
    if force not in ("exact", "index"):
        raise ValueError(f"force: expected 'exact', 'index' or 'grid', got {force!r}")
    return Prepared(raw, atoms, force)


def _rows_per_chunk(width: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(width, 1))


def index_dtype(n: int) -> type:
    """The integer type that index draws over n rows are made in (the smallest is fastest)."""
    if n < 2**16:
        return np.uint16
    return np.int32 if n < 2**31 else np.int64


def exact_cost(x: np.ndarray, n_resamples: int) -> float:
    """Estimated cost (ns) of resampling ``x`` on its own by the cheaper exact method."""
    rows = _as_rows(x)
    return min(_exact_costs(exact_atoms(rows).m, rows.size, n_resamples))


def atoms_cost(atoms: Atoms, size: int, n_resamples: int) -> float:
    """:func:`exact_cost` of a sample of ``size`` numbers whose distinct rows are ``atoms``."""
    return min(_exact_costs(atoms.m, size, n_resamples))


def _exact_costs(atoms: int, size: int, n_resamples: int) -> tuple[float, float]:
    """Estimated costs (ns) of the two exact methods: distinct values, then row indices."""
    return _NS_PER_ATOM_DRAW * atoms * n_resamples, _NS_PER_INDEX_DRAW * size * n_resamples


def shared_bootstrap_cost(n: int, n_resamples: int) -> float:
    """Estimated cost (ns) of the draws of :func:`shared_bootstrap_sums` on n rows."""
    return _NS_PER_SHARED_DRAW * n * n_resamples


def shared_signflip_cost(n: int, n_resamples: int) -> float:
    """Estimated cost (ns) of the draws of :func:`shared_signflip_sums` on n rows."""
    return _NS_PER_SHARED_SIGN * n * n_resamples


def shared_bootstrap_sums(
    blocks: Sequence[np.ndarray], n_resamples: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Column sums of ``n_resamples`` bootstrap resamples of n rows, for every block at once.

    Each block is (n, k_j) (or (n,)); every block is resampled with the same draws: each
    resample's row counts (drawn as n row indices) are multiplied into each block, so many
    blocks cost about what one does. A block's sums depend only on the block, the draws
    and n, never on the other blocks. Exact resampling, like the ``"index"`` method.
    Returns one (B, k_j) array per block.
    """
    parts = [np.ascontiguousarray(_as_rows(b)) for b in blocks]
    if not parts:
        return []
    n = parts[0].shape[0]
    outs = [np.zeros((n_resamples, part.shape[1])) for part in parts]
    if n == 0:
        return outs
    chunk = _rows_per_chunk(n)
    counts = np.empty((min(chunk, n_resamples), n))  # one buffer for every chunk
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n), dtype=index_dtype(n))
        _count_rows(idx, counts[:b])
        for part, out in zip(parts, outs, strict=True):
            out[start : start + b] = counts[:b] @ part
    return outs


_COUNT_ELEMENTS = 1 << 17
"""Most draws counted at once (1 MiB of indices and as much of counts: stays in cache)."""


def _count_rows(idx: np.ndarray, out: np.ndarray) -> None:
    """``out[r, j]`` = how often ``j`` occurs in ``idx[r]``, for draws ``idx`` (b, n) < n.

    A few rows at a time, through reused buffers: counting a whole chunk at once made
    three fresh chunk-sized arrays (the indices widened, their counts, the counts as
    floats), whose pages the kernel had to map and zero again for every chunk, and which
    were read back from memory rather than from cache. The counts are the same integers.
    """
    b, n = idx.shape
    step = max(1, min(b, _COUNT_ELEMENTS // max(n, 1)))
    offsets = np.arange(step, dtype=np.intp)[:, None] * n
    flat = np.empty((step, n), dtype=np.intp)
    for start in range(0, b, step):
        rows = min(step, b - start)
        np.add(idx[start : start + rows], offsets[:rows], out=flat[:rows])
        counted = np.bincount(flat[:rows].ravel(), minlength=rows * n)
        out[start : start + rows] = counted.reshape(rows, n)


def shared_signflip_sums(
    columns: Sequence[np.ndarray], n_resamples: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Sums of ``±a`` under random sign flips of the n rows, for every column ``a`` at once.

    One sign per row and resample serves every column (each (n,)), so many columns cost
    about what one does; a column's sums depend only on that column, the draws and n.
    Exact, like the ``"index"`` method of :func:`signflip_sums`. Returns one (B,) array
    per column.
    """
    parts = [np.ascontiguousarray(np.asarray(a, dtype=np.float64)) for a in columns]
    if not parts:
        return []
    n = parts[0].shape[0]
    outs = [np.zeros(n_resamples) for _ in parts]
    if n == 0:
        return outs
    totals = [float(a.sum()) for a in parts]
    chunk = _rows_per_chunk(n)
    width = (n + 7) // 8
    positive = np.empty((min(chunk, n_resamples), n))  # one buffer for every chunk
    step = max(1, _COUNT_ELEMENTS // n)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        packed = rng.integers(0, 256, size=(b, width), dtype=np.uint8)
        for row in range(0, b, step):  # a cache-sized block of signs at a time, as floats
            stop = min(b, row + step)
            positive[row:stop] = np.unpackbits(packed[row:stop], axis=1, count=n)
        for a, total, out in zip(parts, totals, outs, strict=True):
            out[start : start + b] = 2.0 * (positive[:b] @ a) - total
    return outs


def bootstrap_sums(sample: Prepared, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Column sums of ``n_resamples`` bootstrap resamples (n rows with replacement): (B, k)."""
    n, k = sample.raw.shape
    out = np.zeros((n_resamples, k))
    if n == 0:
        return out
    if sample.method == "index":
        rows = _rows_per_chunk(n * k)
        raw = np.ascontiguousarray(sample.raw)
        for start in range(0, n_resamples, rows):
            b = min(rows, n_resamples - start)
            idx = rng.integers(0, n, size=(b, n), dtype=index_dtype(n))
            _index_sums(raw, idx, out[start : start + b])
        return out
    atoms = sample.atoms
    p = atoms.counts / n
    rows = _rows_per_chunk(atoms.m)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        draws = rng.multinomial(n, p, size=b)
        out[start : start + b] = draws @ atoms.values
    return out


_GATHER_ELEMENTS = 1 << 17
"""Most values gathered at once when summing index draws (1 MiB: stays in cache)."""


def _index_sums(raw: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = raw[idx].sum(axis=1)`` for C-contiguous ``raw`` (n, k), bit for bit.

    NumPy sums ``raw[idx]`` ((b, n, k)) pairwise along n when k == 1 (the reduced axis is
    then the contiguous one) and row after row when k > 1. Both orders are kept, so the
    draws give the same sums to the last digit, without the (b, n, k) gather and its
    strided reduction: a cache-sized block of draws at a time, and for k > 1 gathered
    through the transposed indices as (n, draws, k), so that summing over axis 0 runs
    row after row, vectorised over the draws and columns.
    """
    b, n = idx.shape
    step = max(1, _GATHER_ELEMENTS // max(n * raw.shape[1], 1))
    for start in range(0, b, step):
        block = idx[start : start + step]
        if raw.shape[1] == 1:
            out[start : start + step, 0] = raw[:, 0].take(block).sum(axis=1)
        else:
            order = np.ascontiguousarray(block.T)
            out[start : start + step] = raw.take(order, axis=0).sum(axis=0)


def signflip_sums(sample: Prepared, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sums of ``±|d|`` under random sign flips, for ``n_resamples`` draws: (B,).

    ``sample`` must be prepared from the absolute values |d| (one column).
    """
    n = sample.n
    out = np.zeros(n_resamples)
    if n == 0:
        return out
    if sample.method == "index":
        return shared_signflip_sums([sample.raw[:, 0]], n_resamples, rng)[0]
    atoms = sample.atoms
    values = atoms.values[:, 0]
    rows = _rows_per_chunk(atoms.m)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        heads = rng.binomial(atoms.counts, 0.5, size=(b, atoms.m))
        out[start : start + b] = (2 * heads - atoms.counts) @ values
    return out


def relabel_sums(
    sample: Prepared, n_first: int, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Sum of the ``n_first`` values given the first label in random relabellings: (B,).

    ``sample`` is the pooled sample (one column); relabelling draws ``n_first`` of its
    rows without replacement.
    """
    n = sample.n
    out = np.zeros(n_resamples)
    if n == 0 or n_first == 0:
        return out
    if sample.method == "index":
        x = sample.raw[:, 0]
        rows = _rows_per_chunk(n)
        for start in range(0, n_resamples, rows):
            b = min(rows, n_resamples - start)
            order = np.tile(np.arange(n), (b, 1))
            rng.permuted(order, axis=1, out=order)
            out[start : start + b] = x[order[:, :n_first]].sum(axis=1)
        return out
    atoms = sample.atoms
    values = atoms.values[:, 0]
    rows = _rows_per_chunk(atoms.m)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        draws = rng.multivariate_hypergeometric(atoms.counts, n_first, size=b)
        out[start : start + b] = draws @ values
    return out


@dataclass(frozen=True)
class BCa:
    """A bootstrap distribution with its BCa corrections (Efron and Tibshirani, 14.3).

    ``z0`` is the bias correction (None when every draw lies on one side of the estimate:
    the percentile rule is then used) and ``accel`` the acceleration. :meth:`interval`
    and :meth:`p_value` are two readings of the same corrected distribution, so an interval
    excludes a value exactly when the p-value for that value is below 1 - its level (up to
    the quantile interpolation): a readout never shows a bootstrap interval that disagrees
    with the bootstrap test.

    ``expand`` (a sample size n) widens the nominal quantile from z to
    sqrt(n / (n - 1)) * t_{n-1} before the BCa correction, Hesterberg's "expanded"
    bootstrap (The American Statistician 69(4), 2015): plain bootstrap intervals are too
    narrow by about sqrt((n - 1) / n) and use normal rather than t quantiles, which at
    small n makes them cover 85-93% instead of 95%.
    """

    theta: float
    boot: np.ndarray
    z0: float | None
    accel: float
    tol: float

    @property
    def constant(self) -> bool:
        return float(self.boot.max()) - float(self.boot.min()) <= self.tol

    def interval(self, confidence_level: float, expand: int | None = None) -> tuple[float, float]:
        """The two-sided interval at ``confidence_level``."""
        if self.constant:
            return float(self.boot.min()), float(self.boot.max())
        alpha = (1.0 - confidence_level) / 2.0
        z = _nominal_quantiles(np.array([alpha, 1.0 - alpha]), expand)
        levels = ndtr(z)
        if self.z0 is not None:
            corrected = ndtr(self.z0 + (self.z0 + z) / (1.0 - self.accel * (self.z0 + z)))
            if np.all(np.isfinite(corrected)):
                levels = corrected
        low, high = np.quantile(self.boot, levels)
        return float(low), float(high)

    def p_value(self, null: float = 0.0, expand: int | None = None) -> float:
        """Two-sided p-value for ``theta == null``: one minus the level of the widest
        interval (of :meth:`interval`) that still excludes ``null``."""
        if self.constant:
            return 1.0 if abs(self.theta - null) <= self.tol else 1.0 / (self.boot.size + 1)
        size = self.boot.size
        below = np.count_nonzero(self.boot < null - self.tol)
        at_or_below = np.count_nonzero(self.boot <= null + self.tol)
        share: float = (below + at_or_below) / (2.0 * size)
        share = min(max(share, 1.0 / (size + 1)), size / (size + 1.0))  # never p = 0
        w = float(ndtri(share))
        z = w
        if self.z0 is not None:
            w -= self.z0
            denominator = 1.0 + self.accel * w
            if denominator > 0:
                z = w / denominator - self.z0
        tail = float(_nominal_tail(z, expand))
        return float(min(1.0, 2.0 * min(tail, 1.0 - tail)))


def _nominal_quantiles(levels: np.ndarray, expand: int | None) -> np.ndarray:
    """z quantiles, or Hesterberg's expanded ones sqrt(n / (n - 1)) * t_{n-1}."""
    if expand is None or expand < 2:
        return ndtri(levels)
    return math.sqrt(expand / (expand - 1.0)) * stdtrit(expand - 1, levels)


def _nominal_tail(z: float, expand: int | None) -> float:
    """The inverse of :func:`_nominal_quantiles`: the level whose quantile is ``z``."""
    if expand is None or expand < 2:
        return float(ndtr(z))
    return float(stdtr(expand - 1, z / math.sqrt(expand / (expand - 1.0))))


def bca(
    theta_hat: float,
    boot: np.ndarray,
    jackknife: Sequence[tuple[np.ndarray, np.ndarray]],
    tol: float = 0.0,
) -> BCa:
    """The BCa corrections of a bootstrap distribution.

    ``jackknife`` holds, per sample, the leave-one-out statistics at each distinct row and
    how many rows share it (weights), so the acceleration costs O(distinct rows). The
    formulas follow ``scipy.stats.bootstrap(method="BCa")``, including its multi-sample
    acceleration. ``tol`` is the absolute tolerance under which a resampled statistic
    counts as equal to ``theta_hat``.
    """
    boot = np.asarray(boot, dtype=np.float64)
    below = np.count_nonzero(boot < theta_hat - tol)
    at_or_below = np.count_nonzero(boot <= theta_hat + tol)
    share = (below + at_or_below) / (2.0 * boot.size)
    if not 0.0 < share < 1.0:
        return BCa(float(theta_hat), boot, None, 0.0, tol)
    num = 0.0
    den = 0.0
    for values, weights in jackknife:
        weights = np.asarray(weights, dtype=np.float64)
        size = float(weights.sum())
        if size < 2:
            continue
        mean = float(weights @ values) / size
        u = (size - 1.0) * (mean - values)
        num += float(weights @ u**3) / size**3
        den += float(weights @ u**2) / size**2
    accel = num / (6.0 * den**1.5) if den > 0 else 0.0
    return BCa(float(theta_hat), boot, float(ndtri(share)), float(accel), tol)


def bca_interval(
    theta_hat: float,
    boot: np.ndarray,
    jackknife: Sequence[tuple[np.ndarray, np.ndarray]],
    confidence_level: float,
    tol: float = 0.0,
    *,
    expand: int | None = None,
) -> tuple[float, float]:
    """Bias-corrected and accelerated bootstrap interval (see :class:`BCa`).

    Degenerate cases fall back gracefully: a constant bootstrap distribution gives
    [value, value]; an infinite bias correction gives the percentile interval.
    """
    return bca(theta_hat, boot, jackknife, tol).interval(confidence_level, expand)
