"""Per-query metric values from rankings and judgments frames, on the in-memory engine."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank._lazy import pandas as pd
from abrank.engines.memory import (
    check_options,
    compute,
    first_per_query,
    prepare,
    query_index,
    scored_queries,
)
from abrank.engines.prepared import Prepared
from abrank.io.columns import alias_renames
from abrank.metrics.names import Metric, as_judged_only, judged_metrics


def canonical_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its columns named canonically, by the spellings the file readers
    accept (``qid``, ``docid``, ``doc``, ``pos``, ``rel``...: :data:`abrank.io.ALIASES`).

    A column already named canonically wins over its other spellings; the frame is returned
    as it is (no copy) when nothing needs renaming, and anything but a DataFrame is passed
    through for the engine to reject.
    """
    if not isinstance(frame, pd.DataFrame):
        return frame
    renames = {
        column: canon for column, canon in alias_renames(frame.columns).items() if column != canon
    }
    return frame.rename(columns=renames) if renames else frame


def evaluate(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame | None,
    metrics: Sequence[str | Metric],
    *,
    rel_level: float = 1,
    gain: str = "linear",
    depth: int | None = 1000,
    complete: bool = False,
    judged_only: bool = False,
) -> pd.DataFrame:
    """Per-query values of every metric, for a whole rankings frame at once.

    ``rankings`` holds ``query_id``, ``doc_id`` and ``rank`` (only its order within a
    query matters; equal ranks are broken by doc id descending) or, without ``rank``,
    ``score`` (ordered as trec_eval orders it). ``judgments`` holds ``query_id``,
    ``doc_id`` and ``relevance``. Columns may be spelt as the file readers accept them
    (``qid``, ``docid``, ``doc``, ``pos``, ``rel``, ``grade``...; :func:`canonical_frame`); when it is None the rankings' own ``relevance`` column
    supplies the labels (missing = unjudged). Only the first ``depth`` documents of each
    query count (None: all; trec_eval's ``-M``, which trec_eval itself leaves unlimited).

    Returns a float64 frame indexed by ``query_id`` (sorted), one column per metric named
    by its canonical name, in the order given. Queries scored are those both ranked and
    judged; with ``complete`` also judged queries missing from the rankings (scored as an
    empty ranking, like trec_eval ``-c``). A value is NaN where the metric is undefined,
    decided per metric: mrr, recall, precision, hit, map and ap when no judgment of the
    query reaches the metric's relevance threshold; ndcg and dcg when no judgment has a
    gain above 0 (so at a threshold of 2 a query judged only with grade 1 has an NDCG but no
    MRR). judged@k, a diagnostic, is always defined. trec_eval scores undefined values 0.

    ``judged_only`` makes every metric but judged@k judged-only (``ndcg@10`` is computed,
    and named, as ``ndcg@10(judged)``): each ranking loses its unjudged documents before it
    is scored, as with trec_eval ``-J``.

    A (query, doc) pair ranked twice, or judged twice, is a DataError; only the rows that
    some requested metric reads (down to its deepest cutoff) are checked, as those are the
    rows joined to the judgments.
    """
    parsed = judged_metrics(metrics)
    check_options(rel_level, gain, depth)
    # rows below every requested cutoff cannot change a value: they are not joined
    if judged_only:
        parsed = as_judged_only(parsed)
    # a judged-only metric may read any judged row down to depth: those are joined too
    cutoffs = [m.k for m in parsed if m.k is not None and not m.judged_only]
    reach = max(cutoffs) if len(cutoffs) == len(parsed) else None
    prep = prepare(canonical_frame(rankings), _judgments(judgments), depth, reach)
    return _values_frame(prep, parsed, float(rel_level), gain, complete)


def _values_frame(
    prep: Prepared, metrics: Sequence[Metric], rel_level: float, gain: str, complete: bool
) -> pd.DataFrame:
    """The metrics' per-query values over the scored queries, indexed by query_id."""
    values = compute(prep, metrics, rel_level, gain)
    scored = scored_queries(prep, complete)
    index = query_index(prep, scored)
    return pd.DataFrame({name: column[scored] for name, column in values.items()}, index=index)


def _first_relevant(prep: Prepared, rel_level: float) -> pd.Series:
    """Rank of each ranked-and-judged query's first relevant document (NaN: none)."""
    hit = prep.row_grade >= rel_level
    first = first_per_query(prep.row_code[hit], prep.row_pos[hit] + 1.0, len(prep.ids))
    scored = scored_queries(prep, False)
    return pd.Series(
        first[scored], index=query_index(prep, scored), name="first_relevant_rank", dtype=np.float64
    )


def _judged_share(prep: Prepared, rel_level: float, k: int) -> np.ndarray:
    """judged@k of each ranked-and-judged query."""
    judged = Metric("judged", k)
    scored = scored_queries(prep, False)
    return compute(prep, [judged], rel_level, "linear")[judged.name][scored]


@dataclass(frozen=True)
class ArmScores:
    """One arm's per-query values with its coverage diagnostics, from one preparation.

    ``values`` is :func:`evaluate`'s frame; ``judged_at_k`` is :func:`diagnose`'s mean
    judged@k and ``first_relevant`` :func:`first_relevant_rank`'s series, computed from
    the same ordering and join instead of three.
    """

    values: pd.DataFrame
    judged_at_k: float
    first_relevant: pd.Series

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: values per metric by query id, judged@k, first relevant ranks."""
        return {
            "values": {
                column: {str(q): _safe(v) for q, v in self.values[column].items()}
                for column in self.values.columns
            },
            "judged_at_k": _safe(self.judged_at_k),
            "first_relevant": {str(q): _safe(v) for q, v in self.first_relevant.items()},
        }


def _safe(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def score_arm(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame | None,
    metrics: Sequence[str | Metric],
    *,
    rel_level: float = 1,
    gain: str = "linear",
    depth: int | None = 1000,
    complete: bool = False,
    judged_k: int = 10,
    judged_only: bool = False,
) -> ArmScores:
    """:func:`evaluate`, :func:`diagnose`'s judged@k and :func:`first_relevant_rank` at once.

    The same numbers as the three calls (``complete`` and ``judged_only`` apply to the values
    only, as in :func:`evaluate`), for a third of the ordering and joining. Every ranked row
    down to ``depth`` is joined, as :func:`first_relevant_rank` joins them.
    """
    parsed = judged_metrics(metrics)
    if judged_only:
        parsed = as_judged_only(parsed)
    check_options(rel_level, gain, depth)
    prep = prepare(canonical_frame(rankings), _judgments(judgments), depth)
    share = _judged_share(prep, float(rel_level), judged_k)
    return ArmScores(
        values=_values_frame(prep, parsed, float(rel_level), gain, complete),
        judged_at_k=float(share.mean()) if share.size else math.nan,
        first_relevant=_first_relevant(prep, float(rel_level)),
    )


def _judgments(judgments: pd.DataFrame | None) -> pd.DataFrame | None:
    return None if judgments is None else canonical_frame(judgments)


def first_relevant_rank(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame | None,
    *,
    rel_level: float = 1,
    depth: int | None = 1000,
) -> pd.Series:
    """Rank (1 = top) of the first relevant document of each query, NaN when none is ranked.

    Queries are those both ranked and judged (index ``query_id``, sorted); "relevant" means
    a grade >= ``rel_level`` within the first ``depth`` documents.
    """
    check_options(rel_level, "linear", depth)
    prep = prepare(canonical_frame(rankings), _judgments(judgments), depth)
    return _first_relevant(prep, float(rel_level))


@dataclass(frozen=True)
class Diagnostics:
    """What an arm's rankings and the judgments cover, beside the metric values."""

    queries: int  # queries in the rankings
    judged_queries: int  # of those, queries with at least one judgment (the scored ones)
    without_relevant: int  # scored queries whose judgments hold no grade >= rel_level
    judged_at_k: float  # mean share of the top k documents that carry a judgment
    k: int
    rel_level: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins (judged_at_k is None when no query is scored)."""
        judged = None if math.isnan(self.judged_at_k) else float(self.judged_at_k)
        return {
            "queries": int(self.queries),
            "judged_queries": int(self.judged_queries),
            "without_relevant": int(self.without_relevant),
            "judged_at_k": judged,
            "k": int(self.k),
            "rel_level": float(self.rel_level),
        }


def diagnose(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame | None,
    *,
    rel_level: float = 1,
    k: int = 10,
    depth: int | None = 1000,
) -> Diagnostics:
    """Coverage of one arm: queries ranked, judged, without any relevant judgment, judged@k.

    A low judged@k warns that unjudged documents (counted as not relevant) may bias a
    comparison against the arm that retrieves them; queries without a relevant judgment
    leave mrr, ndcg, recall and map undefined and drop out of comparisons.
    """
    check_options(rel_level, "linear", depth)
    Metric("judged", k)  # checks the cutoff (ConfigError for one that is not a whole number >= 1)
    cutoff = int(k)
    prep = prepare(canonical_frame(rankings), _judgments(judgments), depth, reach=cutoff)
    scored = scored_queries(prep, False)
    judged_share = _judged_share(prep, float(rel_level), cutoff)
    relevant = np.bincount(
        prep.judged_code[prep.judged_grade >= float(rel_level)], minlength=len(prep.ids)
    )
    return Diagnostics(
        queries=int(prep.in_run.sum()),
        judged_queries=int(scored.sum()),
        without_relevant=int((scored & (relevant == 0)).sum()),
        judged_at_k=float(judged_share.mean()) if judged_share.size else math.nan,
        k=cutoff,
        rel_level=float(rel_level),
    )
