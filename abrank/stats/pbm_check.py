"""A goodness-of-fit check of the position-based model against logged clicks.

Under the PBM a result's click probability is p_r * alpha_d whatever is shown above it.
Under a cascade (users stop after a click, or scan on only past unattractive results) the
results below attractive ones are clicked less than the PBM predicts. The check groups the
logged rows of each rank r >= 2 by how many clicks the model expects above them in their
list (sum over s < r of p_s * alpha; thirds of each rank's rows: ``low``, ``mid``,
``high``) and compares the observed clicks O with the model's E per (rank, group). Each
rank's overall level rho_r = sum O / sum E is free (the propensities may be off by a
factor without the model being wrong), so the statistic is

    X^2 = sum_{r, g} (O_rg - rho_r E_rg)^2 / V_rg,   df = sum_r (groups_r - 1),

with V_rg the unit-clustered variance of O_rg - rho_r E_rg (the sum over units of the
squared per-unit residual), so that users who click more than others do not fail the
model. A p-value below ``alpha`` (0.01) fails the check: the PBM's predictions of any
ranking that moves results past attractive ones are then not to be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from abrank.stats.results import json_safe

__all__ = ["PbmCheck", "pbm_check"]

GROUPS: tuple[str, ...] = ("low", "mid", "high")
CHECK_ALPHA = 0.01


@dataclass(frozen=True)
class PbmCheck:
    """The check's statistic, degrees of freedom, p-value, verdict and its table of
    (rank, group, rows, observed, expected, ratio = observed / (rho_r * expected))."""

    chi2: float
    df: int
    p_value: float
    alpha: float
    table: tuple[dict[str, Any], ...]

    @property
    def fails(self) -> bool:
        return bool(self.p_value < self.alpha)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chi2": json_safe(self.chi2),
            "df": self.df,
            "p_value": json_safe(self.p_value),
            "alpha": self.alpha,
            "fails": self.fails,
            "table": [dict(row) for row in self.table],
        }


def pbm_check(
    impression: np.ndarray,
    rank: np.ndarray,
    clicked: np.ndarray,
    expected: np.ndarray,
    unit: np.ndarray,
    *,
    alpha: float = CHECK_ALPHA,
) -> PbmCheck:
    """The check over logged rows: each row's impression, rank, click, the model's click
    probability ``expected`` (p_r * alpha of its pair) and unit code."""
    order = np.lexsort((rank, impression))
    imp, rk = impression[order], rank[order]
    c, e, u = clicked[order].astype(np.float64), expected[order], unit[order]
    max_rank = int(rk.max(initial=0))
    # the clicks expected above each row, summed within its impression alone (a list per
    # row of a matrix): the same bits wherever the impression lies in the arrays, so that
    # equal lists fall in the same third whatever order the logs were read in
    row_of = np.cumsum(np.r_[False, np.diff(imp) != 0])[: imp.size]
    lists = np.zeros((int(row_of[-1]) + 1 if imp.size else 0, max_rank))
    lists[row_of, rk - 1] = e
    exclusive = np.zeros_like(lists)
    np.cumsum(lists[:, :-1], axis=1, out=exclusive[:, 1:])
    above = exclusive[row_of, rk - 1]
    group = np.full(imp.size, -1, dtype=np.int64)
    for r in range(2, max_rank + 1):  # over ranks (at most the lists' depth)
        mine = rk == r
        if mine.sum() < len(GROUPS):
            continue
        cuts = np.quantile(above[mine], [1 / 3, 2 / 3])
        group[mine] = np.searchsorted(cuts, above[mine], side="right")
    keep = group >= 0
    cell = (rk[keep] - 2) * len(GROUPS) + group[keep]
    n_cells = max(max_rank - 1, 0) * len(GROUPS)
    observed = np.bincount(cell, c[keep], n_cells)
    model = np.bincount(cell, e[keep], n_cells)
    rows = np.bincount(cell, minlength=n_cells)
    by_rank_o = observed.reshape(-1, len(GROUPS)).sum(axis=1)
    by_rank_e = model.reshape(-1, len(GROUPS)).sum(axis=1)
    rho = np.divide(by_rank_o, by_rank_e, out=np.ones_like(by_rank_o), where=by_rank_e > 0)
    level = np.repeat(rho, len(GROUPS))
    residual = c[keep] - level[cell] * e[keep]
    key = pd.factorize(u[keep].astype(np.int64) * max(n_cells, 1) + cell)[0]
    per_unit = np.bincount(key, residual)
    cell_of_key = np.zeros(per_unit.size, dtype=np.int64)
    cell_of_key[key] = cell
    variance = np.bincount(cell_of_key, per_unit**2, n_cells)
    used = (rows > 0) & (variance > 0)
    chi2 = float(((observed - level * model)[used] ** 2 / variance[used]).sum())
    groups_per_rank = used.reshape(-1, len(GROUPS)).sum(axis=1)
    df = int(np.maximum(groups_per_rank - 1, 0).sum())
    p_value = float(sps.chi2.sf(chi2, df)) if df > 0 else float("nan")
    table = tuple(
        {
            "rank": int(index // len(GROUPS) + 2),
            "group": GROUPS[index % len(GROUPS)],
            "rows": int(rows[index]),
            "observed": json_safe(float(observed[index])),
            "expected": json_safe(float(level[index] * model[index])),
            "ratio": json_safe(float(observed[index] / (level[index] * model[index])))
            if model[index] > 0
            else None,
        }
        for index in range(n_cells)
        if rows[index] > 0
    )
    return PbmCheck(chi2, df, p_value, alpha, table)
