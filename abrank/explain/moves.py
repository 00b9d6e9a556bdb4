"""What each document did between the arms' top k, and the tags of each query.

A document of a query's decomposition (:func:`abrank.explain.dcg.dcg_contributions`) moved
in one of these ways, judged against the control:

- ``relevant_promoted`` / ``relevant_demoted``: a relevant document (grade at or above the
  threshold) both arms show in their top k, ranked higher / lower by the treatment;
- ``relevant_entered`` / ``relevant_dropped``: a relevant document only the treatment / only
  the control shows in its top k;
- ``unjudged_entered``: an unjudged document only the treatment shows in its top k (it
  scores nothing, but pushes judged documents down);
- ``unchanged``: at the same rank in both, and ``other`` for the rest (judged not relevant,
  or unjudged and not entering).

A query is tagged with every move one of its documents made (and ``missing_log`` where an
arm's log lacked it); :func:`by_move` sums the contributions per move, which split each
query's ΔDCG@k, and over queries the mean change, exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MOVES: tuple[str, ...] = (
    "relevant_promoted",
    "relevant_demoted",
    "relevant_entered",
    "relevant_dropped",
    "unjudged_entered",
)
"""The moves that tag a query, in the order a report lists them."""

MISSING_LOG = "missing_log"
"""The tag of a query an arm's log lacked (scored 0 or dropped, per the config)."""


def document_moves(contributions: pd.DataFrame, threshold: float = 1.0) -> pd.Series:
    """The move of each row of a decomposition (module text), aligned with its rows."""
    grade = contributions["grade"].to_numpy(dtype=np.float64)
    before = contributions["rank_control"].to_numpy(dtype=np.float64)
    after = contributions["rank_treatment"].to_numpy(dtype=np.float64)
    shown_before, shown_after = ~np.isnan(before), ~np.isnan(after)
    relevant = grade >= threshold  # NaN (unjudged) compares False
    unjudged = np.isnan(grade)
    both = shown_before & shown_after
    conditions = [
        relevant & both & (after < before),
        relevant & both & (after > before),
        relevant & shown_after & ~shown_before,
        relevant & shown_before & ~shown_after,
        unjudged & shown_after & ~shown_before,
        both & (after == before),
    ]
    choices = [*MOVES, "unchanged"]
    moves = np.select(conditions, choices, default="other")
    return pd.Series(moves, index=contributions.index, name="move")


def query_tags(
    contributions: pd.DataFrame, threshold: float = 1.0, missing: pd.Series | None = None
) -> pd.Series:
    """Per query, its tags: the moves of :data:`MOVES` its documents made, in that order,
    then ``missing_log`` where ``missing`` (per query id: the arms whose log lacked it,
    empty when none) says so."""
    moves = document_moves(contributions, threshold).to_numpy()
    queries = pd.Index(contributions["query_id"].unique()).sort_values()
    if missing is not None:
        queries = queries.union(pd.Index(missing.index))
    code = queries.get_indexer(contributions["query_id"])
    mask = np.zeros(len(queries), dtype=np.int64)
    for bit, move in enumerate(MOVES):  # one bit per move a query's documents made
        hit = np.bincount(code[moves == move], minlength=len(queries)) > 0
        mask |= hit.astype(np.int64) << bit
    if missing is not None:
        lacked = missing.reindex(queries).fillna("").astype(str).to_numpy() != ""
        mask |= lacked.astype(np.int64) << len(MOVES)
    names = [*MOVES, MISSING_LOG]
    lists = {
        value: [name for bit, name in enumerate(names) if value >> bit & 1]
        for value in np.unique(mask).tolist()
    }
    tags = pd.Series([lists[value] for value in mask.tolist()], index=queries, dtype=object)
    tags.index.name = "query_id"
    return tags.rename("tags")


def by_move(
    contributions: pd.DataFrame, threshold: float = 1.0, normalise: bool = False
) -> pd.Series:
    """The contributions summed per move over every query (``normalise``: each over its
    query's ideal DCG, for NDCG), divided by the number of queries: the parts of the mean
    change, which they sum to exactly."""
    moves = document_moves(contributions, threshold)
    values = contributions["contribution"].to_numpy(dtype=np.float64)
    if normalise:
        ideal = contributions["ideal"].to_numpy(dtype=np.float64)
        values = np.where(ideal > 0, values / np.where(ideal > 0, ideal, 1.0), 0.0)
    counted = contributions["ideal"] > 0 if normalise else contributions["query_id"].notna()
    queries = contributions.loc[counted, "query_id"].nunique()
    sums = pd.Series(values).groupby(moves.to_numpy()).sum()
    order = [*MOVES, "unchanged", "other"]
    return (sums.reindex(order, fill_value=0.0) / max(queries, 1)).rename("change")
