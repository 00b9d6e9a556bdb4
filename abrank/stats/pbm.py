"""Click metrics of a ranked list under the position-based model (PBM), and their gradients.

Under the PBM a user examines rank r with probability p_r and clicks an examined document d
with probability alpha_d, independently across ranks, so the result at rank r is clicked
with probability c_r = p_r * alpha_d and clicks at different ranks are independent. The
expected value of abrank's click metrics of one list (DESIGN.md "Online logs") follows:

- ``clicks@k`` = sum_{r<=k} c_r;
- ``ctr@k`` = 1 - prod_{r<=k} (1 - c_r);
- ``click_rr@k`` = sum_{r<=k} (1/r) c_r prod_{s<r} (1 - c_s) (the first click at rank r).

:func:`expected_metric` computes them for many lists at once (one row per list, one column
per rank) and :func:`metric_gradient` their partial derivatives with respect to each c_r,
which the counterfactual estimators' delta-method influence reads. Only the products
p_r * alpha_d enter, so the propensities' scale (p_1 = 1) does not matter.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PBM_FAMILIES", "expected_metric", "metric_gradient"]

#: The click metrics the position-based model gives an expected value of.
PBM_FAMILIES: tuple[str, ...] = ("click_rr", "ctr", "clicks")


def _checked(family: str, clicks: np.ndarray) -> np.ndarray:
    if family not in PBM_FAMILIES:
        raise ValueError(f"family: expected one of {', '.join(PBM_FAMILIES)}, got {family!r}")
    values = np.asarray(clicks, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"clicks: expected a 2-d array (lists x ranks), got {values.ndim} dims")
    return values


def expected_metric(family: str, clicks: np.ndarray) -> np.ndarray:
    """The expected ``family@k`` of each row of ``clicks`` (rows: lists; columns: ranks
    1..k; values: the click probability c_r of the result at that rank, 0 where none)."""
    c = _checked(family, clicks)
    if family == "clicks":
        return c.sum(axis=1)
    miss = 1.0 - c
    if family == "ctr":
        return 1.0 - miss.prod(axis=1)
    # click_rr: the probability that rank r holds the first click, over r
    above = np.cumprod(np.hstack([np.ones((c.shape[0], 1)), miss[:, :-1]]), axis=1)
    ranks = np.arange(1, c.shape[1] + 1, dtype=np.float64)
    return (c * above / ranks).sum(axis=1)


def metric_gradient(family: str, clicks: np.ndarray) -> np.ndarray:
    """d expected_metric / d c_r for each row and rank (same shape as ``clicks``), without
    dividing by 1 - c_r (exact where a click probability is 1)."""
    c = _checked(family, clicks)
    n, k = c.shape
    if family == "clicks":
        return np.ones_like(c)
    miss = 1.0 - c
    ones = np.ones((n, 1))
    above = np.cumprod(np.hstack([ones, miss[:, :-1]]), axis=1)  # prod_{s<r}
    if family == "ctr":
        below = np.cumprod(np.hstack([ones, miss[:, :0:-1]]), axis=1)[:, ::-1]  # prod_{s>r}
        return above * below
    # click_rr: d/dc_r = prod_{s<r}(1-c_s) * (1/r - T_r), T_r = the rr of the ranks below r
    # (their own positions) given no click down to r: T_k = 0, T_r = c_{r+1}/(r+1) + (1-c_{r+1}) T_{r+1}
    tail = np.zeros((n, k))
    for r in range(k - 2, -1, -1):  # over ranks (at most the cut-off), never over lists
        tail[:, r] = c[:, r + 1] / (r + 2) + miss[:, r + 1] * tail[:, r + 1]
    ranks = np.arange(1, k + 1, dtype=np.float64)
    return above * (1.0 / ranks - tail)
