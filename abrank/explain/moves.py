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


KINDS: tuple[str, ...] = (*MOVES, "unchanged", "other")
"""Every move of :func:`move_kinds`, by its number."""


def document_moves(contributions: pd.DataFrame, threshold: float = 1.0) -> pd.Series:
    """The move of each row of a decomposition (module text), aligned with its rows."""
    kinds = move_kinds(
        contributions["grade"].to_numpy(dtype=np.float64),
        contributions["rank_control"].to_numpy(dtype=np.float64),
        contributions["rank_treatment"].to_numpy(dtype=np.float64),
        threshold,
    )
    moves = np.array(KINDS)[kinds]
    return pd.Series(moves, index=contributions.index, name="move")


def move_kinds(
    grade: np.ndarray, before: np.ndarray, after: np.ndarray, threshold: float = 1.0
) -> np.ndarray:
    """The move of each document (module text) as its number in :data:`KINDS`, from its
    grade (NaN: unjudged) and its ranks in the control's and the treatment's top k (NaN:
    not there)."""
    shown_before, shown_after = ~np.isnan(before), ~np.isnan(after)
    relevant = grade >= threshold  # NaN (unjudged) compares False
    unjudged = np.isnan(grade)
    both = shown_before & shown_after
    conditions = [
        lambda: relevant & both & (after < before),
        lambda: relevant & both & (after > before),
        lambda: relevant & shown_after & ~shown_before,
        lambda: relevant & shown_before & ~shown_after,
        lambda: unjudged & shown_after & ~shown_before,
        lambda: both & (after == before),
    ]
    # the first condition that holds gives the move: set from the last to the first
    kinds = np.full(grade.size, len(conditions), dtype=np.int8)
    for kind in range(len(conditions) - 1, -1, -1):
        kinds[conditions[kind]()] = kind
    return kinds


def tag_masks(code: np.ndarray, kinds: np.ndarray, n: int) -> np.ndarray:
    """Per query code ``0..n-1``, one bit per move of :data:`MOVES` its documents made
    (bit i: ``MOVES[i]``), from each document's query code and move number."""
    mask = np.zeros(n, dtype=np.int64)
    for bit in range(len(MOVES)):
        hit = np.bincount(code[kinds == bit], minlength=n) > 0
        mask |= hit.astype(np.int64) << bit
    return mask


def tag_lists(mask: np.ndarray) -> np.ndarray:
    """The tags of each bit mask (bit i: ``MOVES[i]``, then ``missing_log``) as an object
    array of lists; equal masks share one list."""
    names = [*MOVES, MISSING_LOG]
    values = np.unique(mask)
    lists = np.empty(values.size, dtype=object)
    for i, value in enumerate(values.tolist()):  # one per distinct mask: at most 64
        lists[i] = [name for bit, name in enumerate(names) if value >> bit & 1]
    out: np.ndarray = lists[np.searchsorted(values, mask)]
    return out


def query_tags(
    contributions: pd.DataFrame, threshold: float = 1.0, missing: pd.Series | None = None
) -> pd.Series:
    """Per query, its tags: the moves of :data:`MOVES` its documents made, in that order,
    then ``missing_log`` where ``missing`` (per query id: the arms whose log lacked it,
    empty when none) says so."""
    kinds = move_kinds(
        contributions["grade"].to_numpy(dtype=np.float64),
        contributions["rank_control"].to_numpy(dtype=np.float64),
        contributions["rank_treatment"].to_numpy(dtype=np.float64),
        threshold,
    )
    queries = pd.Index(contributions["query_id"].unique()).sort_values()
    if missing is not None:
        queries = queries.union(pd.Index(missing.index))
    code = queries.get_indexer(contributions["query_id"])
    mask = tag_masks(code, kinds, len(queries))
    if missing is not None:
        lacked = missing.reindex(queries).fillna("").astype(str).to_numpy() != ""
        mask |= lacked.astype(np.int64) << len(MOVES)
    tags = pd.Series(tag_lists(mask), index=queries, dtype=object)
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
    return (sums.reindex(list(KINDS), fill_value=0.0) / max(queries, 1)).rename("change")
