"""A readout's explanation tables: ``queries.parquet`` and ``rankings.parquet``.

``rankings``: each arm's top ``depth`` results per analysed query (the deepest cutoff of the
experiment's metrics, at most :data:`MAX_DEPTH`; 100 where a metric has none), with their
grades: columns ``arm``, ``query_id``, ``doc_id``, ``rank`` (1-based), ``grade`` (NaN:
unjudged).

``queries``: one row per analysed query: its segment values, every metric per arm
(``<arm>:<metric>``), the change per treatment (``delta:<treatment>:<metric>``),
``missing_in`` (the arms whose log lacked it), ``undefined`` (the metrics undefined on it,
``;``-joined), ``normaliser:<metric>`` for NDCG and recall (the ideal DCG@k, the number of
relevant judgments: what the change is divided by), and per treatment the RBO (p = 0.9) of its list against the control's
(``rbo:<treatment>``) and the tags of what moved in the top ``depth``
(``tags:<treatment>``, :mod:`abrank.explain.moves`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from abrank.explain.contributions import normaliser
from abrank.explain.dcg import dcg_contributions
from abrank.explain.lists import ranked_lists
from abrank.explain.moves import query_tags
from abrank.explain.rbo import rbo
from abrank.metrics import parse_metric

MAX_DEPTH = 100
"""The deepest results an explanation keeps per query and arm."""


@dataclass(frozen=True)
class Explanation:
    """The two tables of the module text, and the depth of the lists."""

    queries: pd.DataFrame
    rankings: pd.DataFrame
    depth: int


def explanation_depth(metrics: list[str]) -> int:
    """The deepest cutoff of the metrics, at most :data:`MAX_DEPTH` (that where one has none)."""
    cutoffs = [parse_metric(m).k for m in metrics]
    if any(k is None for k in cutoffs):
        return MAX_DEPTH
    return min(MAX_DEPTH, max(k for k in cutoffs if k is not None))


def offline_explanation(
    rankings: dict[str, pd.DataFrame],
    judgments: pd.DataFrame,
    values: dict[str, pd.DataFrame],
    segments: pd.DataFrame,
    missing_in: pd.Series,
    *,
    control: str,
    metrics: list[str],
    threshold: float,
    gain: str = "linear",
) -> Explanation:
    """The tables of the module text for an offline readout: ``rankings`` and ``values``
    per arm (control first; the per-query metric values over the analysed queries),
    ``missing_in`` per analysed query."""
    depth = explanation_depth(metrics)
    universe = values[control].index
    lists = {}
    for arm, frame in rankings.items():
        ranked = ranked_lists(frame, depth)
        lists[arm] = ranked[ranked["query_id"].isin(universe)].reset_index(drop=True)
    graded = judgments[["query_id", "doc_id", "relevance"]].rename(columns={"relevance": "grade"})
    table = pd.concat([lists[arm].assign(arm=arm) for arm in rankings], ignore_index=True).merge(
        graded, on=["query_id", "doc_id"], how="left"
    )
    table = table[["arm", "query_id", "doc_id", "rank", "grade"]].astype({"rank": "int32"})
    columns: dict[str, pd.Series] = {}
    for arm, frame in values.items():
        for metric in metrics:
            columns[f"{arm}:{metric}"] = frame[metric]
    for arm in values:
        if arm == control:
            continue
        for metric in metrics:
            columns[f"delta:{arm}:{metric}"] = values[arm][metric] - values[control][metric]
    for metric in metrics:  # what a metric's change is divided by, from every judgment
        divisor = normaliser(metric, judgments, threshold=threshold, gain=gain)
        if divisor is not None:
            columns[f"normaliser:{metric}"] = divisor.reindex(universe)
    queries = pd.DataFrame(columns, index=universe)
    queries["missing_in"] = missing_in.reindex(universe).fillna("").astype(str)
    undefined = values[control][metrics].isna()
    queries["undefined"] = [
        ";".join(m for m, flag in zip(metrics, row, strict=True) if flag)
        for row in undefined.to_numpy()
    ]
    for arm in values:
        if arm == control:
            continue
        similarity = rbo(lists[control], lists[arm])
        queries[f"rbo:{arm}"] = similarity.reindex(universe.astype(str)).to_numpy()
        moved = dcg_contributions(lists[control], lists[arm], judgments, depth)
        tags = query_tags(moved, threshold, missing=queries["missing_in"])
        queries[f"tags:{arm}"] = tags.reindex(universe).apply(
            lambda value: value if isinstance(value, list) else []
        )
    if len(segments.columns):
        queries = queries.join(segments, how="left")
    queries.index.name = "query_id"
    return Explanation(queries.reset_index(), table, depth)
