"""trec_eval's measures that are not metric families of their own: R-precision,
interpolated precision at recall levels (and their 11-point average), and the geometric
mean that gm_map and gm_bpref take.

They complete trec_eval's default ("official") set, which ``abrank metrics QRELS RUN``
prints when no ``-m`` is given. Each is computed as trec_eval 10 computes it (``m_Rprec.c``,
``m_iprec_at_recall.c``, ``m_11pt_avg.c``, ``m_gm_map.c`` of usnistgov/trec_eval), over whole columns of the
engine's prepared join, with no loop over queries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.io.arrow import max_at_or_below, positions

if TYPE_CHECKING:
    from abrank.engines.prepared import Prepared

__all__ = [
    "MIN_GEO_MEAN",
    "RECALL_LEVELS",
    "eleven_point_average",
    "geometric_mean",
    "interpolated_precision",
    "r_precision",
]

#: trec_eval's recall levels for iprec_at_recall (printed as 0.00 ... 1.00).
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: The floor trec_eval puts under a value before taking its logarithm (trec_eval.h).
MIN_GEO_MEAN = 0.00001


def _relevant_rows(prep: Prepared, rel_level: float) -> tuple[np.ndarray, np.ndarray]:
    hit = prep.row_grade >= rel_level
    return prep.row_code[hit], prep.row_pos[hit]


def _num_rel(prep: Prepared, rel_level: float) -> np.ndarray:
    codes = prep.judged_code[prep.judged_grade >= rel_level]
    return np.bincount(codes, minlength=len(prep.ids))


def r_precision(prep: Prepared, rel_level: float) -> np.ndarray:
    """Rprec per query code: the relevant share of the first R retrieved documents, R being
    the query's number of relevant judgments (0 when R is 0)."""
    nq = len(prep.ids)
    rq, rp = _relevant_rows(prep, rel_level)
    big_r = _num_rel(prep, rel_level)
    within = rp < big_r[rq]
    found = np.bincount(rq[within], minlength=nq).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(big_r > 0, found / big_r, 0.0)


def _lround(values: np.ndarray) -> np.ndarray:
    """C's lround for values >= 0: the nearest whole number, halves away from zero."""
    floor = np.floor(values)
    return (floor + (values - floor >= 0.5)).astype(np.int64)


def interpolated_precision(
    prep: Prepared, rel_level: float, levels: tuple[float, ...] = RECALL_LEVELS
) -> dict[float, np.ndarray]:
    """iprec_at_recall per query code at each recall level.

    A level c stands for the first round(c x R) relevant documents; its interpolated
    precision is the highest precision at or below the rank where that many relevant
    documents have been retrieved (the j-th relevant document at rank r_j has precision
    j / r_j; the highest at or below the n-th is the max over j >= n). A level that needs
    more relevant documents than were retrieved scores 0, and level 0 reads as level 1.
    """
    nq = len(prep.ids)
    rq, rp = _relevant_rows(prep, rel_level)
    big_r = _num_rel(prep, rel_level)
    found = np.bincount(rq, minlength=nq)
    # where each query's relevant rows begin (queries are contiguous, in no set order)
    start = np.zeros(nq, dtype=np.int64)
    if rq.size:
        begins = np.flatnonzero(np.concatenate(([True], rq[1:] != rq[:-1])))
        start[rq[begins]] = begins
    nth = positions(rq) + 1.0
    precision = nth / (rp + 1.0)
    # the best precision at or below each relevant row of its query: a suffix maximum
    best_below = max_at_or_below(rq, precision)
    out = {}
    for level in levels:
        needed = _lround(level * big_r.astype(np.float64))
        reached = (needed <= found) & (found > 0)
        row = start + np.maximum(needed, 1) - 1
        values = np.zeros(nq)
        values[reached] = best_below[row[reached]]
        out[level] = values
    return out


def eleven_point_average(prep: Prepared, rel_level: float) -> np.ndarray:
    """11pt_avg per query code: the mean of iprec_at_recall over its 11 levels, added from
    the level 1.0 down, in trec_eval's order (``m_11pt_avg.c``)."""
    levels = interpolated_precision(prep, rel_level)
    total = np.zeros(len(prep.ids))
    for level in reversed(RECALL_LEVELS):
        total += levels[level]
    return total / len(RECALL_LEVELS)


def geometric_mean(values: np.ndarray) -> float:
    """trec_eval's geometric mean (gm_map): exp of the mean of log(max(v, 1e-5)), the logs
    added one query at a time in query order, as trec_eval adds them (0 for no query)."""
    if values.size == 0:
        return 0.0
    logs = np.log(np.maximum(values, MIN_GEO_MEAN))
    return float(np.exp(float(np.cumsum(logs)[-1]) / logs.size))
