"""Counterfactual click metrics of rankings never shown, from the clicks of those that were.

Under the position-based model (:mod:`abrank.stats.pbm`) a logged row (impression i,
query q, document d at rank r, click c) has E[c] = p_r * alpha_qd. Each (query, document)
pair's attractiveness is estimated from every logged row that showed it:

- **SNIPS** (self-normalised, the default): alpha_qd = sum c / sum p_r, the clicks over the
  examination the pair received (the ratio of the importance-weighted clicks to the sum of
  the importance weights, which self-normalises them);
- **IPS**: alpha_qd = mean of c / p_r over the rows that showed it (unbiased, noisier);

and a ranking's expected metric of query q is the PBM's formula over its top k with
c_j = p_j * alpha (0 for a document never shown for q: no support). The logging arm is
scored by the same formula over its own logged lists, so that candidate and logger are
compared on one model (summary.json keeps the logger's observed mean beside it).

Both are means over the logging arm's impressions (the traffic whose queries the
candidates would serve). Their unit-clustered uncertainty comes from the delta method:
each estimate is a smooth function of per-pair sums, so each unit's share of it is its
impressions' plug-in values plus, for every row the unit logged in any arm, the metric's
gradient with respect to alpha_qd times that row's influence on alpha_qd. These per-unit
sums (M_u) over the unit's logging-arm impressions (D_u) add up exactly to the estimate;
their spread over units gives its variance, and the candidate's and the logger's sums of
the same unit give the paired difference's. The propensities are held fixed here; the
noise of harvested ones is added by the design from their bootstrap replicates
(:func:`attractiveness_by_propensities` and :func:`mean_estimate` recompute an estimate
for each replicate at the cost of one product per replicate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.stats.pbm import expected_metric, metric_gradient
from abrank.stats.results import json_safe

__all__ = [
    "CLIPS",
    "ESTIMATORS",
    "ClickRows",
    "Lists",
    "attractiveness",
    "attractiveness_by_propensities",
    "distinct_lists",
    "list_sums",
    "mean_estimate",
    "weight_diagnostics",
]

ESTIMATORS: tuple[str, ...] = ("snips", "ips")

#: The weight caps (on 1 / p_r) of the clipping table; None: no cap.
CLIPS: tuple[float | None, ...] = (None, 10.0, 5.0, 2.0)


@dataclass(frozen=True)
class ClickRows:
    """Logged rows of every arm, coded: ``impression`` (0..N-1), ``pair`` (the (query,
    document) code, 0..P-1), ``rank`` (1-based), ``clicked`` (0/1), ``unit`` (0..U-1) per
    row; per impression its ``query`` code and whether the logging arm served it
    (``logger``)."""

    impression: np.ndarray
    pair: np.ndarray
    rank: np.ndarray
    clicked: np.ndarray
    unit: np.ndarray
    query: np.ndarray
    logger: np.ndarray
    n_pairs: int
    n_units: int

    @property
    def row_logger(self) -> np.ndarray:
        return self.logger[self.impression]


@dataclass(frozen=True)
class Lists:
    """Ranked lists as pair codes: ``pairs`` (lists x k; -1 where the slot is empty or the
    document was never logged for the query), ``unsupported`` (a document is there that
    no log ever showed for the query). A candidate has one list per query code, the logging
    arm one per impression of its own."""

    pairs: np.ndarray
    unsupported: np.ndarray


def attractiveness(
    rows: ClickRows, propensity: np.ndarray, estimator: str, clip: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(alpha per pair, the normaliser of each pair's influence): SNIPS sum c / sum p
    (normaliser sum p), IPS mean c / p with 1 / p capped at ``clip`` (normaliser the
    pair's rows)."""
    p = propensity[rows.rank - 1]
    n = rows.n_pairs
    if estimator == "snips":
        exposure = np.bincount(rows.pair, p, n)
        clicks = np.bincount(rows.pair, rows.clicked, n)
        alpha = np.divide(clicks, exposure, out=np.zeros(n), where=exposure > 0)
        return alpha, exposure
    weight = 1.0 / p if clip is None else np.minimum(1.0 / p, clip)
    shown = np.bincount(rows.pair, minlength=n).astype(np.float64)
    total = np.bincount(rows.pair, rows.clicked * weight, n)
    return np.divide(total, shown, out=np.zeros(n), where=shown > 0), shown


def attractiveness_by_propensities(
    rows: ClickRows, propensities: np.ndarray, estimator: str
) -> np.ndarray:
    """:func:`attractiveness` (pairs x replicates) for each row of ``propensities``
    (replicates x ranks) at once: the rows are summed per (pair, rank) once, and each
    replicate is a product of those sums with its propensities."""
    from scipy import sparse

    depth = propensities.shape[1]
    n = rows.n_pairs
    shape = (n, depth)
    cells = (rows.pair, rows.rank - 1)
    shows = sparse.csr_matrix((np.ones(rows.pair.size), cells), shape=shape)
    if estimator == "snips":
        clicks = np.bincount(rows.pair, rows.clicked, n)
        exposure = np.asarray(shows @ propensities.T)
        safe = np.where(exposure > 0, exposure, 1.0)
        return np.where(exposure > 0, clicks[:, None] / safe, 0.0)
    clicked = sparse.csr_matrix((rows.clicked, cells), shape=shape)
    shown = np.bincount(rows.pair, minlength=n).astype(np.float64)
    total = np.asarray(clicked @ (1.0 / propensities).T)
    return np.where(shown[:, None] > 0, total / np.maximum(shown, 1.0)[:, None], 0.0)


def _clicks(lists: Lists, alpha: np.ndarray, propensity: np.ndarray, family: str) -> np.ndarray:
    """p_j * alpha of each slot (0 where empty or unsupported); a probability, so at most 1,
    for the metrics of the first click (an estimate of alpha may exceed 1 / p_j on few rows);
    clicks@k is an expectation and takes the estimate as it is."""
    k = lists.pairs.shape[1]
    found = lists.pairs >= 0
    values = np.where(found, alpha[np.where(found, lists.pairs, 0)], 0.0) * propensity[None, :k]
    return values if family == "clicks" else np.clip(values, 0.0, 1.0)


@dataclass(frozen=True)
class ListSums:
    """One ranking's estimate of one metric as per-unit sums over the logging arm's
    impressions: ``numerator`` M_u, ``denominator`` D_u (one per unit of every arm), and
    ``per_list`` the plug-in value of each list."""

    numerator: np.ndarray
    denominator: np.ndarray
    per_list: np.ndarray

    @property
    def estimate(self) -> float:
        total = float(self.denominator.sum())
        return float(self.numerator.sum()) / total if total > 0 else float("nan")


def list_sums(
    rows: ClickRows,
    lists: Lists,
    impressions_per_list: np.ndarray,
    list_of_impression: np.ndarray,
    propensity: np.ndarray,
    family: str,
    k: int,
    estimator: str = "snips",
) -> ListSums:
    """Per-unit sums of ``family@k`` of ``lists`` over the logging arm's impressions.

    ``impressions_per_list`` counts the logging arm's impressions each list serves (a
    candidate's list of a query: that query's impressions; the logger's own lists: 1);
    ``list_of_impression`` gives, for each logging-arm impression (in impression order,
    -1 for the other arms'), the list it is scored with."""
    alpha, normaliser = attractiveness(rows, propensity, estimator)
    top = Lists(lists.pairs[:, :k], lists.unsupported[:, :k])
    c = _clicks(top, alpha, propensity, family)
    value = expected_metric(family, c)
    gradient = metric_gradient(family, c) * propensity[None, :k]  # d value / d alpha
    found = top.pairs >= 0
    weight = (gradient * impressions_per_list[:, None])[found]
    g = np.bincount(top.pairs[found], weight, rows.n_pairs)  # sum over impressions of dh/dalpha
    p_row = propensity[rows.rank - 1]
    a_row = alpha[rows.pair]
    if estimator == "snips":
        residual = rows.clicked - a_row * p_row
    else:
        residual = rows.clicked / p_row - a_row
    scale = np.divide(g, normaliser, out=np.zeros_like(g), where=normaliser > 0)
    influence = scale[rows.pair] * residual
    served = list_of_impression >= 0
    plug_in = np.zeros(rows.logger.size)
    plug_in[served] = value[list_of_impression[served]]
    unit_of_impression = np.zeros(rows.logger.size, dtype=np.int64)
    unit_of_impression[rows.impression] = rows.unit
    numerator = np.bincount(unit_of_impression, plug_in, rows.n_units)
    numerator += np.bincount(rows.unit, influence, rows.n_units)
    denominator = np.bincount(unit_of_impression, served.astype(np.float64), rows.n_units)
    return ListSums(numerator, denominator, value)


def weight_diagnostics(
    rows: ClickRows, lists: Lists, impressions_per_list: np.ndarray, propensity: np.ndarray, k: int
) -> dict[str, Any]:
    """The importance weights p_(candidate rank) / p_(logged rank) of the logged rows that a
    ranking's top k reuses: effective sample size (sum w)^2 / sum w^2, the largest weight
    and the share of the total it holds, and the share of the top-k slots (weighted by the
    logging arm's impressions) whose document was never logged for the query."""
    top = lists.pairs[:, :k]
    position = np.zeros(rows.n_pairs, dtype=np.int64)
    found = top >= 0
    position[top[found]] = np.broadcast_to(np.arange(1, k + 1), top.shape)[found]
    used = position[rows.pair] > 0
    w = propensity[position[rows.pair][used] - 1] / propensity[rows.rank[used] - 1]
    total = float(w.sum())
    largest = float(w.max()) if w.size else float("nan")
    slots = float(impressions_per_list.sum()) * k
    unsupported = float((lists.unsupported[:, :k].sum(axis=1) * impressions_per_list).sum())
    return {
        "rows": int(w.size),
        "ess": round(total**2 / float((w**2).sum()), 1) if w.size else None,
        "max_weight": json_safe(largest),
        "max_weight_share": json_safe(largest / total) if total > 0 else None,
        "unsupported": json_safe(unsupported / slots) if slots > 0 else None,
    }


def distinct_lists(lists: Lists) -> tuple[Lists, np.ndarray]:
    """The distinct rows of ``lists`` and how many times each occurs (a logging arm serves
    the same list to many impressions of a query: scoring each once is enough for means)."""
    if lists.pairs.shape[0] == 0:
        return lists, np.zeros(0)
    mix = np.random.default_rng(0x11575).integers(1, 2**62, lists.pairs.shape[1], dtype=np.int64)
    with np.errstate(over="ignore"):
        keys = (lists.pairs.astype(np.int64) + 2) * mix
    _, first, counts = np.unique(keys.sum(axis=1), return_index=True, return_counts=True)
    return Lists(lists.pairs[first], lists.unsupported[first]), counts.astype(np.float64)


def mean_estimate(
    lists: Lists,
    weights: np.ndarray,
    alpha: np.ndarray,
    propensity: np.ndarray,
    family: str,
    k: int,
) -> float:
    """The plug-in mean of ``family@k`` over ``lists`` weighted by ``weights`` (impressions
    each serves) with attractiveness ``alpha`` (:func:`attractiveness`): the estimate of
    :func:`list_sums` without its per-unit sums."""
    top = Lists(lists.pairs[:, :k], lists.unsupported[:, :k])
    value = expected_metric(family, _clicks(top, alpha, propensity, family))
    return float(value @ weights) / float(weights.sum())


def clipped_estimates(
    rows: ClickRows,
    lists: Lists,
    impressions_per_list: np.ndarray,
    propensity: np.ndarray,
    family: str,
    k: int,
    clips: Sequence[float | None] = CLIPS,
) -> list[tuple[float | None, float]]:
    """The IPS estimate of ``family@k`` with 1 / p capped at each of ``clips`` (a cap trades
    bias for variance: a large change between caps says a few heavy weights drive it)."""
    out = []
    for clip in clips:
        alpha, _ = attractiveness(rows, propensity, "ips", clip)
        top = Lists(lists.pairs[:, :k], lists.unsupported[:, :k])
        c = _clicks(top, alpha, propensity, family)
        value = expected_metric(family, c)
        total = float(impressions_per_list.sum())
        out.append((clip, float(value @ impressions_per_list) / total if total else float("nan")))
    return out
