"""Rank-biased overlap (Webber, Moffat & Zobel, TOIS 2010) between two arms' lists, per query.

RBO weighs the overlap of two rankings at every depth d by p^(d-1): with p = 0.9 the top 10
carry about 86% of the weight, so it reads as "how alike are the first pages". For finite
lists it is the extrapolated RBO_ext of the paper's equation 32, which assumes that the
agreement seen at the end of the lists continues below them, and which handles lists of
unequal lengths s <= l (the shorter list's overlap X_s carried on to depth l):

    RBO_ext = (1 - p) / p * ( sum_{d=1..l} X_d / d * p^d
                              + sum_{d=s+1..l} X_s * (d - s) / (s * d) * p^d )
              + ( (X_l - X_s) / l + X_s / s ) * p^l

where X_d is the number of documents both lists hold within depth d (the whole shorter list
beyond its end). Two identical lists score 1, disjoint ones 0. A query one arm did not rank
at all scores 0 against a list, and is undefined (NaN) when neither arm ranked it.

Computed for every query at once: a document both lists hold counts in X_d from depth
max(rank in one, rank in the other) on, so each sum is a difference of prefix sums of
p^d / d and p^d, gathered per query with ``bincount``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DEFAULT_P = 0.9
"""The persistence of :func:`rbo`: the top 10 hold about 86% of the weight."""


def rbo(control: pd.DataFrame, treatment: pd.DataFrame, p: float = DEFAULT_P) -> pd.Series:
    """RBO_ext (module text) per query between two ranked lists (``query_id``, ``doc_id``,
    ``rank`` 1-based, as :func:`abrank.explain.lists.ranked_lists` gives them), indexed by
    every query either list holds, in id order."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected a persistence strictly between 0 and 1, got {p!r}")
    queries = pd.Index(
        pd.concat([control["query_id"], treatment["query_id"]]).astype(str).unique()
    ).sort_values()
    n = len(queries)
    length_c = _lengths(control, queries)
    length_t = _lengths(treatment, queries)
    short = np.minimum(length_c, length_t)
    long = np.maximum(length_c, length_t)
    both = control[["query_id", "doc_id", "rank"]].merge(
        treatment[["query_id", "doc_id", "rank"]],
        on=["query_id", "doc_id"],
        suffixes=("_c", "_t"),
    )
    code = queries.get_indexer(both["query_id"].astype(str))
    depth = np.maximum(both["rank_c"].to_numpy(), both["rank_t"].to_numpy()).astype(np.int64)
    top = int(long.max()) if n else 0
    d = np.arange(1, top + 1, dtype=np.float64)
    power = p**d
    harmonic = np.concatenate(([0.0], np.cumsum(power / d)))  # H(n) = sum_{d<=n} p^d / d
    geometric = np.concatenate(([0.0], np.cumsum(power)))  # G(n) = sum_{d<=n} p^d
    # sum_{d=1..l} X_d p^d / d: each shared document adds H(l) - H(m - 1) from its depth m
    weights = harmonic[long[code]] - harmonic[depth - 1]
    agreement = np.bincount(code, weights=weights, minlength=n)
    x_short = np.bincount(code[depth <= short[code]], minlength=n).astype(np.float64)
    x_long = np.bincount(code, minlength=n).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = (x_short / short) * (
            (geometric[long] - geometric[short]) - short * (harmonic[long] - harmonic[short])
        )
        extrapolated = ((x_long - x_short) / long + x_short / short) * p ** long.astype(float)
        value = (1.0 - p) / p * (agreement + tail) + extrapolated
    value = np.where(short > 0, value, np.where(long > 0, 0.0, np.nan))
    return pd.Series(value, index=pd.Index(queries, name="query_id"), name="rbo")


def _lengths(lists: pd.DataFrame, queries: pd.Index) -> np.ndarray:
    """Each query's list length (0 where the list does not hold the query)."""
    counts = lists["query_id"].astype(str).value_counts()
    return counts.reindex(queries, fill_value=0).to_numpy(dtype=np.int64)
