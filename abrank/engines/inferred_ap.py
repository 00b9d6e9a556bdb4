"""infAP (Yilmaz & Aslam, CIKM 2006), the inferred average precision of a ranking judged
from a sample of the pool, as trec_eval's ``m_infap.c`` estimates it: a metric family of
the registry (``infap``) and a trec_eval measure (``infAP``), computed once here for both."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.io.arrow import positions, sum_above

if TYPE_CHECKING:
    from abrank.engines.prepared import Prepared

#: The smoothing constant of infAP's precision estimate (``trec_eval.h``).
INFAP_EPSILON = 0.00001


def inferred_ap(
    prep: Prepared,
    rel_level: float,
    relevant_rows: tuple | None = None,
    num_relevant: np.ndarray | None = None,
) -> np.ndarray:
    """infAP (Yilmaz & Aslam, CIKM 2006) per query code, as ``m_infap.c`` estimates it.

    For the relevant document at 0-based position j (j > 0), with r relevant, n judged
    nonrelevant and u unjudged-in-pool documents above it, the term is
    1/(j+1) + j/(j+1) x (r+n+u)/j x (r+e)/(r+n+2e) (e = 1e-5): the documents above that
    were in the pool are assumed relevant in the judged share; those outside the pool
    count as nonrelevant. A relevant document at the top scores 1. Their sum is divided by
    the number of relevant judgments. With a fully judged pool it equals AP.

    ``relevant_rows`` is the relevant rows' (query code, position, 1-based rank among the
    relevant rows) and ``num_relevant`` the relevant judgments per query code, when the
    caller has them (the memory engine shares both among metrics).
    """
    q, g = prep.row_code, prep.row_grade
    relevant = g >= rel_level
    if relevant_rows is None:
        rq = q[relevant]
        rp = prep.row_pos[relevant]
        r = positions(rq).astype(np.float64)  # relevant rows above each relevant one
    else:
        rq, rp, rank = relevant_rows
        r = rank - 1.0
    unjudged = g < 0
    pooled = bool(unjudged.any())  # pools with documents left unjudged (sampled pools)
    u = sum_above(q, unjudged.astype(np.int64))[relevant].astype(np.float64) if pooled else 0.0
    if rel_level >= 0:  # relevant, nonrelevant and unjudged part the judged rows above
        n = positions(q)[relevant] - r - u
    else:  # a negative threshold makes some unjudged rows relevant too
        nonrel = (g >= 0) & ~relevant
        n = sum_above(q, nonrel.astype(np.int64))[relevant].astype(np.float64)
    j = rp.astype(np.float64)
    eps = INFAP_EPSILON
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((r + n + u) / j) * (
            (r + eps) / (r + n + 2 * eps)
        )
    terms = np.where(j == 0, 1.0, later)
    sums = np.bincount(rq, weights=terms, minlength=len(prep.ids))
    big_r = num_relevant
    if big_r is None:
        codes = prep.judged_code[prep.judged_grade >= rel_level]
        big_r = np.bincount(codes, minlength=len(prep.ids)).astype(np.float64)
    return np.where(big_r > 0, sums / np.where(big_r > 0, big_r, 1.0), 0.0)
