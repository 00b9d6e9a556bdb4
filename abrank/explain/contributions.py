"""Each document's part in a query's change of a metric, for the metrics that split exactly.

For every family below the treatment-minus-control change of a query is a sum over the
documents either arm shows in its top k, with nothing left over:

- ``dcg`` / ``ndcg``: gain times the change of discount (:mod:`abrank.explain.dcg`), over
  the ideal DCG@k for NDCG;
- ``mrr``: +1/rank for the treatment's first relevant document in its top k, -1/rank for
  the control's (the same document, when both put it first, nets its change of rank);
- ``hit``: +1 for the treatment's first relevant document in its top k, -1 for the
  control's;
- ``recall``: +1/R for a relevant document only the treatment shows in its top k, -1/R for
  one only the control shows (R: the query's relevant judgments);
- ``precision``: the same over k.

Relevant means a grade at or above the metric's threshold (``rel``, else the experiment's
``relevance_threshold``). Other families (MAP, bpref, ...) do not split over documents so
simply: :data:`SPLIT_FAMILIES` says which do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from abrank.explain.dcg import dcg_contributions, ideal_dcg
from abrank.metrics.names import Metric, parse_metric

SPLIT_FAMILIES: tuple[str, ...] = ("dcg", "ndcg", "mrr", "hit", "recall", "precision")
"""The metric families whose per-query change splits exactly over documents."""


def metric_contributions(
    metric: str | Metric,
    control: pd.DataFrame,
    treatment: pd.DataFrame,
    judgments: pd.DataFrame,
    *,
    threshold: float = 1.0,
    gain: str = "linear",
    normaliser: pd.Series | None = None,
) -> pd.DataFrame:
    """One row per (query, document) in either arm's top k: ``query_id``, ``doc_id``,
    ``grade``, ``rank_control``, ``rank_treatment`` and ``contribution`` to the query's
    change of ``metric`` (module text), plus ``ideal`` (the ideal DCG@k, for the moves of
    :mod:`abrank.explain.moves`). ``normaliser`` (per query id) stands in for what the
    judgments would give, where they are not all at hand: NDCG's ideal DCG@k, recall's
    number of relevant judgments (:func:`normaliser`). ValueError for a metric that does
    not split."""
    spec = metric if isinstance(metric, Metric) else parse_metric(metric)
    if spec.family not in SPLIT_FAMILIES or spec.k is None:
        raise ValueError(
            f"metric {spec.name}: expected a metric that splits over documents "
            f"({', '.join(f'{f}@k' for f in SPLIT_FAMILIES)}), got {spec.family}"
        )
    k = spec.k
    rows = dcg_contributions(control, treatment, judgments, k, spec.gain or gain)
    if spec.family == "dcg":
        return rows
    if spec.family == "ndcg":
        if normaliser is not None:
            rows["ideal"] = rows["query_id"].map(normaliser).to_numpy(dtype=np.float64)
        ideal = rows["ideal"].to_numpy(dtype=np.float64)
        rows["contribution"] = np.where(ideal > 0, rows["contribution"] / ideal, 0.0)
        return rows
    level = float(spec.rel) if spec.rel is not None else threshold
    grade = rows["grade"].to_numpy(dtype=np.float64)
    relevant = grade >= level
    before = rows["rank_control"].to_numpy(dtype=np.float64)
    after = rows["rank_treatment"].to_numpy(dtype=np.float64)
    shown_before = relevant & ~np.isnan(before)
    shown_after = relevant & ~np.isnan(after)
    if spec.family in ("mrr", "hit"):
        first_before = _first(rows, shown_before, before)
        first_after = _first(rows, shown_after, after)
        if spec.family == "mrr":
            gained = np.where(first_after, 1.0 / np.where(first_after, after, 1.0), 0.0)
            lost = np.where(first_before, 1.0 / np.where(first_before, before, 1.0), 0.0)
        else:
            gained, lost = first_after.astype(float), first_before.astype(float)
        rows["contribution"] = gained - lost
        return rows
    moved = shown_after.astype(float) - shown_before.astype(float)
    if spec.family == "precision":
        rows["contribution"] = moved / k
        return rows
    total = normaliser if normaliser is not None else _relevant(judgments, level)
    count = rows["query_id"].map(total).to_numpy(dtype=np.float64)
    rows["contribution"] = np.where(count > 0, moved / np.where(count > 0, count, 1.0), 0.0)
    return rows


def _first(rows: pd.DataFrame, shown: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Which rows are their query's best-ranked shown (relevant) document."""
    keyed = pd.Series(np.where(shown, rank, np.inf), index=rows.index)
    best = keyed.groupby(rows["query_id"]).transform("min").to_numpy()
    return shown & (keyed.to_numpy() == best)


def normaliser(
    metric: str | Metric, judgments: pd.DataFrame, *, threshold: float = 1.0, gain: str = "linear"
) -> pd.Series | None:
    """Per judged query, what ``metric``'s change is divided by and only the whole
    judgments know: NDCG's ideal DCG@k, recall's number of relevant judgments (None for the
    other families)."""
    spec = metric if isinstance(metric, Metric) else parse_metric(metric)
    if spec.family == "ndcg" and spec.k is not None:
        return ideal_dcg(judgments, spec.k, spec.gain or gain)
    if spec.family == "recall":
        return _relevant(judgments, float(spec.rel) if spec.rel is not None else threshold)
    return None


def _relevant(judgments: pd.DataFrame, level: float) -> pd.Series:
    return (judgments["relevance"] >= level).groupby(judgments["query_id"]).sum().astype(float)
