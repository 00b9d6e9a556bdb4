"""The exact per-document decomposition of each query's change of DCG@k and NDCG@k.

DCG@k = sum over the top k of gain_d / log2(rank_d + 1), so the treatment-minus-control
change of a query splits over the documents either arm shows in its top k:

    contribution_d = gain_d * (discount at the treatment's rank - discount at the control's)

with discount 0 where the document is not in that arm's top k (or the arm did not rank the
query). The contributions sum to the query's change of DCG@k, and divided by the query's
ideal DCG@k to its change of NDCG@k: nothing is left over. Gains are those of the metric
engine (grades above 0; ``exp`` gain 2^grade - 1); an unjudged document has gain 0 and so
contributes nothing, however far it moved.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from abrank.io.arrow import as_arrow, positions, query_codes
from abrank.metrics.names import GAINS


def gains(grades: np.ndarray, kind: str = "linear") -> np.ndarray:
    """The gain of each grade, as the metric engine counts it (0 for grades <= 0 and for
    unjudged documents, NaN)."""
    if kind not in GAINS:
        raise ValueError(f"gain: expected one of {', '.join(GAINS)}, got {kind!r}")
    grade = np.nan_to_num(np.asarray(grades, dtype=np.float64), nan=0.0)
    positive = np.where(grade > 0, grade, 0.0)
    return np.where(grade > 0, np.exp2(positive) - 1.0, 0.0) if kind == "exp" else positive


def dcg_contributions(
    control: pd.DataFrame,
    treatment: pd.DataFrame,
    judgments: pd.DataFrame,
    k: int,
    gain: str = "linear",
) -> pd.DataFrame:
    """One row per (query, document) in either arm's top ``k``: ``query_id``, ``doc_id``,
    ``grade`` (NaN: unjudged), ``rank_control``, ``rank_treatment`` (NaN: not in that top
    k), ``contribution`` to the query's change of DCG@k, and ``ideal`` (the query's ideal
    DCG@k, NaN without any gain). Lists are ``query_id``, ``doc_id``, ``rank`` (1-based:
    :func:`abrank.explain.lists.ranked_lists`); judgments ``query_id``, ``doc_id``,
    ``relevance``."""
    if k < 1:
        raise ValueError(f"k: expected a cutoff of 1 or more, got {k!r}")
    cut_c = control.loc[control["rank"] <= k, ["query_id", "doc_id", "rank"]]
    cut_t = treatment.loc[treatment["rank"] <= k, ["query_id", "doc_id", "rank"]]
    rows = cut_c.merge(cut_t, on=["query_id", "doc_id"], how="outer", suffixes=("_c", "_t"))
    rows = rows.rename(columns={"rank_c": "rank_control", "rank_t": "rank_treatment"})
    graded = judgments[["query_id", "doc_id", "relevance"]].rename(columns={"relevance": "grade"})
    rows = rows.merge(graded, on=["query_id", "doc_id"], how="left")
    gain_kind = gain
    weights = gains(rows["grade"].to_numpy(), gain_kind)
    before = _discount(rows["rank_control"].to_numpy(dtype=np.float64))
    after = _discount(rows["rank_treatment"].to_numpy(dtype=np.float64))
    rows["contribution"] = weights * (after - before)
    ideal = ideal_dcg(judgments, k, gain_kind)
    rows["ideal"] = rows["query_id"].map(ideal).to_numpy(dtype=np.float64)
    columns = ["query_id", "doc_id", "grade", "rank_control", "rank_treatment"]
    return rows[[*columns, "contribution", "ideal"]].sort_values(
        ["query_id", "doc_id"], ignore_index=True
    )


def query_changes(contributions: pd.DataFrame) -> pd.DataFrame:
    """Per query, the change of DCG@k (the contributions' sum) and of NDCG@k (that over the
    ideal DCG@k; NaN where the query has no gain to be had)."""
    grouped = contributions.groupby("query_id", sort=True)
    delta = grouped["contribution"].sum()
    ideal = grouped["ideal"].first()
    return pd.DataFrame({"delta_dcg": delta, "delta_ndcg": delta / ideal.where(ideal > 0)})


def ideal_dcg(judgments: pd.DataFrame, k: int, gain: str = "linear") -> pd.Series:
    """Each judged query's ideal DCG@k: its gains in decreasing order over the first k
    ranks (NaN where no judgment has a gain)."""
    codes, ids = query_codes(as_arrow(judgments["query_id"], "judgments: query_id"))
    relevance = judgments["relevance"].to_numpy(dtype=np.float64)
    ideal = ideal_dcg_codes(codes, len(ids), relevance, k, gain)
    index = pd.Index(ids.to_numpy(zero_copy_only=False), name="query_id")
    return pd.Series(ideal, index=index, name="value")


def ideal_dcg_codes(
    codes: np.ndarray, n: int, relevance: np.ndarray, k: int, gain: str = "linear"
) -> np.ndarray:
    """:func:`ideal_dcg` per query code ``0..n-1`` from each judgment's query code and
    grade (NaN where no judgment has a gain, or the query has none)."""
    weight = gains(relevance, gain)
    order = np.lexsort((-weight, codes))  # stable: by query, gains decreasing
    code, weight = codes[order], weight[order]
    rank = positions(code).astype(np.int64) + 1
    value = np.where(rank <= k, weight / np.log2(rank + 1.0), 0.0)
    sums = pd.Series(value).groupby(code, sort=True).sum()  # pandas' compensated sums
    out = np.full(n, np.nan)
    out[sums.index.to_numpy()] = sums.to_numpy()
    return np.where(out > 0, out, np.nan)


def _discount(rank: np.ndarray) -> np.ndarray:
    """1 / log2(rank + 1) where ranked, 0 where not (NaN rank)."""
    out = np.zeros(rank.size)
    ranked = ~np.isnan(rank)
    out[ranked] = 1.0 / np.log2(rank[ranked] + 1.0)
    return out
