"""The rest of trec_eval 10's ``all_trec`` set, per query, over whole columns.

Each function reads the engine's prepared join (:class:`abrank.engines.prepared.Prepared`:
the judged rows of every ranking, in rank order, and all judgments) and returns one value
per query code, computed as trec_eval 10 computes it (``m_infap.c``, ``m_Rprec_mult.c``,
``m_utility.c``, ``m_binG.c``, ``m_G.c``, ``m_ndcg.c``, ``m_ndcg_rel.c``, ``m_Rndcg.c``,
``m_rel_P.c``, ``m_set_rel_P.c``, ``m_set_map.c``, ``m_set_F.c``, ``m_rbp.c``,
``m_rbp_resid.c``, ``m_unjudged.c``, ``m_relstring.c`` and ``gain_init.c`` of
usnistgov/trec_eval). There is no Python loop over queries.

trec_eval sorts a retrieved document into one of three kinds, which these measures tell
apart: *judged* (a qrels line with a grade >= 0; relevant when the grade reaches ``-l``),
*in the pool but unjudged* (a qrels line with a negative grade, as infAP's sampled pools
write them) and *not in the pool* (no qrels line). The prepared join holds the first two
(``row_grade`` < 0 for the second); a position missing from it is of the third kind.

Gains (G, ndcg, ndcg_rel, Rndcg, rbp) follow ``gain_init.c``: a judged document's gain is
its grade unless a ``level=gain`` parameter names its grade; every other document has
none. The ideal ordering of a query is the positive gains of all its judged documents,
largest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from abrank._lazy import pandas as pd
from abrank.engines.inferred_ap import INFAP_EPSILON, inferred_ap
from abrank.io.arrow import positions

if TYPE_CHECKING:
    from abrank.engines.prepared import Prepared

__all__ = [
    "INFAP_EPSILON",
    "RBP_PERSISTENCE",
    "binary_gain",
    "eleven_point_average_at",
    "gain_ratio",
    "inferred_ap",
    "ndcg_gains",
    "ndcg_rel",
    "rbp",
    "rbp_residual",
    "relative_precision",
    "relstrings",
    "rprec_mult",
    "rndcg",
    "set_measures",
    "unjudged_at",
    "utility",
]

#: rbp's default persistence p (``m_rbp.c``).
RBP_PERSISTENCE = 0.9


def _grouped_cumsum(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sums within each query, added one row at a time as trec_eval adds them."""
    if not codes.size:
        return np.zeros(0)
    return pd.Series(values).groupby(codes, sort=False).cumsum().to_numpy(dtype=np.float64)


def _num_rel(prep: Prepared, rel_level: float) -> np.ndarray:
    codes = prep.judged_code[prep.judged_grade >= rel_level]
    return np.bincount(codes, minlength=len(prep.ids)).astype(np.float64)


def _count(prep: Prepared, rows: np.ndarray) -> np.ndarray:
    return np.bincount(prep.row_code[rows], minlength=len(prep.ids)).astype(np.float64)


def rprec_mult(
    prep: Prepared, rel_level: float, fractions: Sequence[float]
) -> dict[float, np.ndarray]:
    """Rprec_mult per query code for each fraction f: the precision at c = floor(f x R +
    0.9) documents (R relevant judgments; ``m_Rprec_mult.c`` still rounds this way in
    trec_eval 10), 0 when c is 0. Beyond the ranking's end the missing documents count as
    nonrelevant, so the value is the relevant retrieved over c."""
    q, p = prep.row_code, prep.row_pos
    relevant = prep.row_grade >= rel_level
    rq, rp = q[relevant], p[relevant]
    big_r = _num_rel(prep, rel_level)
    out = {}
    for f in fractions:
        cut = np.floor(f * big_r + 0.9)
        found = np.bincount(rq[rp < cut[rq]], minlength=len(prep.ids)).astype(np.float64)
        out[f] = np.where(cut > 0, found / np.where(cut > 0, cut, 1.0), 0.0)
    return out


def _set_counts(prep: Prepared, rel_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(retrieved, relevant judgments, relevant retrieved) per query code, as floats."""
    ret = prep.retrieved.astype(np.float64)
    found = _count(prep, prep.row_grade >= rel_level)
    return ret, _num_rel(prep, rel_level), found


def utility(prep: Prepared, rel_level: float, weights: Sequence[float]) -> np.ndarray:
    """utility per query code: w1 x a + w2 x b + w3 x c + w4 x d over the contingency table
    (a relevant retrieved, b nonrelevant retrieved, c relevant not retrieved, d the rest of
    a collection of size 0, as trec_eval has without -N), added in that order."""
    w1, w2, w3, w4 = (float(w) for w in weights)
    ret, big_r, a = _set_counts(prep, rel_level)
    return w1 * a + w2 * (ret - a) + w3 * (big_r - a) + w4 * (0.0 + a - ret - big_r)


def set_measures(prep: Prepared, rel_level: float, beta: float = 1.0) -> dict[str, np.ndarray]:
    """set_relative_P (a / min(retrieved, R)), set_map (a^2 / (retrieved x R)) and set_F
    ((beta+1) P R / (beta P + R), with P and R the set precision and recall) per query code;
    each 0 where it would divide by 0 (``m_set_rel_P.c``, ``m_set_map.c``, ``m_set_F.c``)."""
    ret, big_r, a = _set_counts(prep, rel_level)
    both = (ret > 0) & (big_r > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(both, a / np.minimum(ret, big_r), 0.0)
        set_map = np.where(both, (a * a) / (ret * big_r), 0.0)
        precision, recall = a / ret, a / big_r
        f = np.where(a > 0, (beta + 1.0) * precision * recall / (beta * precision + recall), 0.0)
    return {"set_relative_P": relative, "set_map": set_map, "set_F": f}


def relative_precision(
    prep: Prepared, rel_level: float, cutoffs: Sequence[int]
) -> dict[int, np.ndarray]:
    """relative_P per query code at each cutoff k: the relevant documents in the top k over
    min(k, R), the most that could be there (0 when R is 0)."""
    relevant = prep.row_grade >= rel_level
    rq, rp = prep.row_code[relevant], prep.row_pos[relevant]
    big_r = _num_rel(prep, rel_level)
    out = {}
    for k in cutoffs:
        found = np.bincount(rq[rp < k], minlength=len(prep.ids)).astype(np.float64)
        best = np.minimum(float(k), big_r)
        out[k] = np.where(big_r > 0, found / np.where(best > 0, best, 1.0), 0.0)
    return out


def unjudged_at(prep: Prepared, cutoffs: Sequence[int]) -> dict[int, np.ndarray]:
    """unj per query code at each cutoff k: the retrieved documents in the top k without a
    judgment of grade >= 0 (outside the pool, or in it unjudged), over k; the places below
    the ranking's end count as judged (``m_unjudged.c``)."""
    judged = prep.row_grade >= 0
    jq, jp = prep.row_code[judged], prep.row_pos[judged]
    ret = prep.retrieved.astype(np.float64)
    out = {}
    for k in cutoffs:
        seen = np.bincount(jq[jp < k], minlength=len(prep.ids)).astype(np.float64)
        out[k] = (np.minimum(ret, float(k)) - seen) / float(k)
    return out


def binary_gain(prep: Prepared, rel_level: float) -> np.ndarray:
    """binG per query code: each relevant retrieved document adds 1 / log2(2 + the
    documents ranked above it that are not relevant); the sum is divided by R."""
    relevant = prep.row_grade >= rel_level
    rq = prep.row_code[relevant]
    above_not_relevant = prep.row_pos[relevant] - positions(rq)
    terms = 1.0 / np.log2(2.0 + above_not_relevant)
    sums = np.bincount(rq, weights=terms, minlength=len(prep.ids))
    big_r = _num_rel(prep, rel_level)
    return np.where(sums > 0, sums / np.where(big_r > 0, big_r, 1.0), 0.0)


# --------------------------------------------------------------------------- gains


def _gains_of(grades: np.ndarray, levels: Mapping[int, float]) -> np.ndarray:
    """trec_eval's gain of each judged grade (>= 0): the grade, or the gain its level was
    given; a negative grade (in the pool, unjudged) has none."""
    gains = np.where(grades >= 0, grades, 0.0).astype(np.float64)
    for level, gain in levels.items():
        gains[grades == level] = gain
    return gains


class _Ideal:
    """The ideal ordering of each query: the positive gains of its judged documents,
    largest first, flattened (queries in code order) with running sums."""

    def __init__(self, prep: Prepared, levels: Mapping[int, float]):
        nq = len(prep.ids)
        grades = prep.judged_grade
        gains = _gains_of(grades, levels)
        keep = (grades >= 0) & (gains > 0)
        codes, gains = prep.judged_code[keep], gains[keep]
        order = np.lexsort((-gains, codes))
        self.codes, self.gains = codes[order], gains[order]
        self.pos = positions(self.codes)
        self.length = np.bincount(self.codes, minlength=nq)
        self.start = np.concatenate(([0], np.cumsum(self.length)[:-1])).astype(np.int64)
        self.dcg = _grouped_cumsum(self.codes, self.gains / np.log2(self.pos + 2.0))
        self.total_gain = np.bincount(self.codes, weights=self.gains, minlength=nq)

    def dcg_through(self, codes: np.ndarray, last: np.ndarray) -> np.ndarray:
        """The ideal DCG of positions 0..last (last clipped to the ideal list) per item."""
        at = np.minimum(last, self.length[codes] - 1)
        out = np.zeros(codes.size)
        ok = at >= 0
        out[ok] = self.dcg[self.start[codes[ok]] + at[ok]]
        return out

    def full_dcg(self) -> np.ndarray:
        nq = self.length.size
        return np.bincount(self.codes, weights=self.gains / np.log2(self.pos + 2.0), minlength=nq)


def _row_gains(prep: Prepared, levels: Mapping[int, float]) -> np.ndarray:
    return _gains_of(prep.row_grade, levels)


def ndcg_gains(prep: Prepared, levels: Mapping[int, float]) -> np.ndarray:
    """ndcg per query code with gains given per level (``ndcg.1=3,2=9``): the DCG of every
    retrieved document with a nonzero gain (negative gains included) over the DCG of the
    ideal ordering; 0 when that is 0."""
    gains = _row_gains(prep, levels)
    nz = gains != 0
    dcg = np.bincount(
        prep.row_code[nz],
        weights=gains[nz] / np.log2(prep.row_pos[nz] + 2.0),
        minlength=len(prep.ids),
    )
    ideal = _Ideal(prep, levels).full_dcg()
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def gain_ratio(prep: Prepared, levels: Mapping[int, float]) -> np.ndarray:
    """G per query code (``m_G.c``): each retrieved document of gain g at position i adds
    g / log2(2 + cost_i - gained_i), where gained_i is the gain of the documents down to i
    and cost_i the sum down to i of max(1, the ideal ordering's gain there); the sum is
    divided by the ideal ordering's total gain (0 when that is 0)."""
    ideal = _Ideal(prep, levels)
    q, p = prep.row_code, prep.row_pos
    gains = _row_gains(prep, levels)
    gained = _grouped_cumsum(q, gains)
    cost_steps = np.maximum(ideal.gains, 1.0)
    cost = _grouped_cumsum(ideal.codes, cost_steps)
    nz = gains != 0
    qn, pn = q[nz], p[nz].astype(np.int64)
    within = np.minimum(pn, ideal.length[qn] - 1)
    spent = np.zeros(qn.size)
    ok = within >= 0
    spent[ok] = cost[ideal.start[qn[ok]] + within[ok]]
    spent += np.maximum(pn + 1 - ideal.length[qn], 0)  # 1 per place past the ideal list
    terms = gains[nz] / np.log2(2.0 + spent - gained[nz])
    sums = np.bincount(qn, weights=terms, minlength=len(prep.ids))
    total = ideal.total_gain
    return np.where(total > 0, sums / np.where(total > 0, total, 1.0), 0.0)


def ndcg_rel(prep: Prepared, levels: Mapping[int, float]) -> np.ndarray:
    """ndcg_rel per query code (``m_ndcg_rel.c``): ndcg averaged over the L documents of
    the ideal ordering. Each retrieved document with a positive gain at position i adds
    DCG_i / IDCG_i (its own ndcg there); each of the L it leaves unmatched adds the
    ranking's final DCG over the final IDCG. The sum is divided by L (0 unless positive)."""
    nq = len(prep.ids)
    ideal = _Ideal(prep, levels)
    q, p = prep.row_code, prep.row_pos
    gains = _row_gains(prep, levels)
    nz = gains != 0
    dcg = np.zeros(q.size)
    dcg[nz] = _grouped_cumsum(q[nz], gains[nz] / np.log2(p[nz] + 2.0))
    good = gains > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        at = dcg[good] / ideal.dcg_through(q[good], p[good].astype(np.int64))
    sums = np.bincount(q[good], weights=at, minlength=nq)
    matched = np.bincount(q[good], minlength=nq).astype(np.float64)
    final = np.bincount(q[nz], weights=gains[nz] / np.log2(p[nz] + 2.0), minlength=nq)
    big_l = ideal.length.astype(np.float64)
    full = ideal.full_dcg()
    with np.errstate(divide="ignore", invalid="ignore"):
        sums = sums + (big_l - matched) * final / full
        return np.where(sums > 0, sums / big_l, 0.0)


def rndcg(prep: Prepared, rel_level: float, levels: Mapping[int, float]) -> np.ndarray:
    """Rndcg per query code (``m_Rndcg.c``): ndcg averaged at the R levels, the places where
    the ideal ordering's gain changes (after the last document of each gain, the last
    positive one included); when the ranking runs on past the ideal list's end by more
    than one place, its final ndcg counts once more. 0 without relevant judgments."""
    nq = len(prep.ids)
    ideal = _Ideal(prep, levels)
    ret = prep.retrieved.astype(np.int64)
    q, p = prep.row_code, prep.row_pos.astype(np.int64)
    gains = _row_gains(prep, levels)
    nz = gains != 0
    qn, pn = q[nz], p[nz]
    # rows by (query, position) for the lookups of a ranking's DCG down to a position
    # (any position a lookup asks for is below ``span``)
    span = int(max(ret.max(initial=0), p.max(initial=0) + 1, ideal.length.max(initial=0))) + 2
    key = qn.astype(np.int64) * span + pn
    order = np.argsort(key, kind="stable")
    key, qs = key[order], qn[order]
    dcg = _grouped_cumsum(qs, (gains[nz] / np.log2(pn + 2.0))[order])

    def dcg_through(codes: np.ndarray, last: np.ndarray) -> np.ndarray:
        wanted = codes.astype(np.int64) * span + last
        at = np.searchsorted(key, wanted, side="right") - 1
        out = np.zeros(codes.size)
        ok = (at >= 0) & (last >= 0)
        ok[ok] &= qs[at[ok]] == codes[ok]
        out[ok] = dcg[at[ok]]
        return out

    # boundaries: ideal positions i >= 1 whose gain differs from the one above, and the
    # place just past each ideal list (L_q)
    change = np.zeros(ideal.codes.size, dtype=bool)
    change[1:] = (ideal.codes[1:] == ideal.codes[:-1]) & (ideal.gains[1:] != ideal.gains[:-1])
    bq = np.concatenate([ideal.codes[change], np.flatnonzero(ideal.length > 0)])
    bi = np.concatenate([ideal.pos[change].astype(np.int64), ideal.length[ideal.length > 0]])
    ours = dcg_through(bq, np.minimum(bi - 1, ret[bq] - 1))
    theirs = ideal.dcg_through(bq, bi - 1)
    sums = np.bincount(bq, weights=ours / theirs, minlength=nq)
    count = np.bincount(bq, minlength=nq).astype(np.float64)
    # the ranking runs past the ideal list's end by more than one place
    extra = (ideal.length + 1 < ret) & (ideal.length > 0)
    codes = np.flatnonzero(extra)
    full = ideal.full_dcg()
    sums[codes] += dcg_through(codes, ret[codes] - 1) / full[codes]
    count[codes] += 1
    big_r = _num_rel(prep, rel_level)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((big_r > 0) & (count > 0), sums / count, 0.0)


def _powers(p: float, size: int) -> np.ndarray:
    """p^0 .. p^size, each the previous times p (as trec_eval multiplies them)."""
    steps = np.full(size + 1, p)
    steps[0] = 1.0
    return np.cumprod(steps)


def rbp(prep: Prepared, levels: Mapping[int, float], p: float = RBP_PERSISTENCE) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel, TOIS 2008) per query code: (1 - p) x the sum
    of gain x p^i over the retrieved documents (i from 0). Gains are trec_eval's; when a
    query's gains (its levels 0 to its highest judged grade, and those named) leave
    [0, 1], they are rescaled as (g - min) / (max - min) (``m_rbp.c``)."""
    nq = len(prep.ids)
    grades = prep.judged_grade
    judged = grades >= 0
    top = np.full(nq, -1.0)  # the highest judged level (trec_eval reads grades as integers)
    np.maximum.at(top, prep.judged_code[judged], np.floor(grades[judged]))
    named = sorted(levels)
    # the levels 0 .. top that keep their grade as gain: the lowest and the highest
    lowest = 0
    while lowest in levels:
        lowest += 1
    highest = top.copy()
    for level in reversed(named):
        highest = np.where(highest == level, highest - 1, highest)
    low = np.where(lowest <= top, float(lowest), np.inf)
    high = np.where(highest >= 0, highest, -np.inf)
    for gain in levels.values():
        low, high = np.minimum(low, gain), np.maximum(high, gain)
    gains = _row_gains(prep, levels)
    q = prep.row_code
    # a document in the pool but unjudged has no gain, rescaled or not
    rescale = ((low[q] < 0) | (high[q] > 1)) & (prep.row_grade >= 0)
    span = high[q] - low[q]
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = np.where(rescale, (gains - low[q]) / span, gains)
    powers = _powers(p, int(prep.row_pos.max(initial=0)) + 1)
    nz = gains != 0
    sums = np.bincount(q[nz], weights=gains[nz] * powers[prep.row_pos[nz]], minlength=nq)
    return (1.0 - p) * sums


def rbp_residual(prep: Prepared, p: float = RBP_PERSISTENCE) -> np.ndarray:
    """rbp_resid per query code: how much rbp could still rise if every retrieved document
    without a judgment of grade >= 0 had gain 1, plus the weight p^n of the places past
    the n retrieved: p^n + (1 - p) x the sum of p^i over those documents; 0 when every
    retrieved document is judged (``m_rbp_resid.c``)."""
    nq = len(prep.ids)
    ret = prep.retrieved.astype(np.int64)
    powers = _powers(p, int(ret.max(initial=0)) + 1)
    everything = np.concatenate(([0.0], np.cumsum(powers)))[ret]  # sum of p^i, i < n
    judged = prep.row_grade >= 0
    seen = np.bincount(prep.row_code[judged], weights=powers[prep.row_pos[judged]], minlength=nq)
    count = np.bincount(prep.row_code[judged], minlength=nq)
    return np.where(count < ret, powers[ret] + (1.0 - p) * (everything - seen), 0.0)


def relstrings(prep: Prepared, length: int) -> list[str]:
    """relstring per query code: the first ``length`` retrieved documents as one character
    each, the grade (0-9), ``>`` above 9, ``-`` outside the pool and ``.`` in the pool
    but unjudged (``m_relstring.c``)."""
    nq = len(prep.ids)
    shown = np.minimum(prep.retrieved.astype(np.int64), max(int(length), 0))
    start = np.concatenate(([0], np.cumsum(shown)))
    chars = np.full(int(start[-1]), ord("-"), dtype=np.uint8)
    q, p, g = prep.row_code, prep.row_pos.astype(np.int64), prep.row_grade
    keep = p < shown[q]
    q, p, g = q[keep], p[keep], g[keep]
    digit = np.clip(np.floor(np.where(g >= 0, g, 0)), 0, 9).astype(np.uint8) + ord("0")
    chars[start[q] + p] = np.where(g < 0, ord("."), np.where(g > 9, ord(">"), digit))
    text = chars.tobytes().decode("ascii")
    return [text[start[i] : start[i + 1]] for i in range(nq)]


def eleven_point_average_at(
    levels: Mapping[float, np.ndarray], given: Sequence[float]
) -> np.ndarray:
    """11pt_avg with its recall levels given (``11pt_avg.0.2,0.5,0.8``): the mean of the
    interpolated precision at each, added from the last level to the first."""
    total = np.zeros_like(next(iter(levels.values())))
    for level in reversed(list(given)):
        total = total + levels[level]
    return total / len(given)
