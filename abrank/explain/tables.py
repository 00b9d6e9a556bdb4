"""A readout's explanation tables: ``queries.parquet`` and ``rankings.parquet``.

``rankings``: each arm's top ``depth`` results per analysed query (the deepest cutoff of the
experiment's metrics, at most :data:`MAX_DEPTH`; 100 where a metric has none), with their
grades: columns ``arm``, ``query_id``, ``doc_id``, ``rank`` (1-based), ``grade`` (NaN:
unjudged); the arms one after the other, each with its queries in id order (byte order,
whatever order its log held them in) and each query's results in rank order, so that
every engine gives the same table.

``queries``: one row per analysed query: its segment values, every metric per arm
(``<arm>:<metric>``), the change per treatment (``delta:<treatment>:<metric>``),
``missing_in`` (the arms whose log lacked it), ``undefined`` (the metrics undefined on it,
``;``-joined), ``normaliser:<metric>`` for NDCG and recall (the ideal DCG@k, the number of
relevant judgments: what the change is divided by), and per treatment the RBO (p = 0.9) of its list against the control's
(``rbo:<treatment>``) and the tags of what moved in the top ``depth``
(``tags:<treatment>``, :mod:`abrank.explain.moves`).

The ids are encoded once: query codes shared by every arm, the judgments and the analysed
queries (:func:`abrank.io.arrow.query_codes`), document keys from the ids' bytes
(:mod:`abrank.explain.pairs`); the arms' lists are joined to each other and to the
judgments on those integer keys, and every per-query figure is a segmented reduction over
the codes. No Python code runs per row or per query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.errors import ConfigError
from abrank.explain.dcg import ideal_dcg_codes
from abrank.explain.lists import ranked_rows
from abrank.explain.moves import MOVES, move_kinds, tag_lists, tag_masks
from abrank.explain.pairs import PairIndex, Side, lookup, sides
from abrank.explain.rbo import rbo_codes
from abrank.io.arrow import as_arrow, query_codes, take_rows
from abrank.metrics import parse_metric

MAX_DEPTH = 100
"""The deepest results an explanation keeps per query and arm."""


@dataclass(frozen=True)
class Explanation:
    """The two tables of the module text, and the depth of the lists."""

    queries: pd.DataFrame
    rankings: pd.DataFrame
    depth: int


def explanation_depth(metrics: Sequence[str]) -> int:
    """The deepest cutoff of the metrics, at most :data:`MAX_DEPTH` (that where one has
    none; a name that is no metric of the registry, such as an interleaving credit, has
    none)."""
    cutoffs = []
    for name in metrics:
        try:
            cutoffs.append(parse_metric(name).k)
        except ConfigError:  # a credit (sat_clicks): the whole list
            cutoffs.append(None)
    if not cutoffs or any(k is None for k in cutoffs):
        return MAX_DEPTH
    return min(MAX_DEPTH, max(int(k) for k in cutoffs if k is not None))


def experiment_depth(experiment: Any) -> int:
    """The depth of an experiment's explanation tables: its ``explain.depth``, else
    :func:`explanation_depth` of its metrics."""
    configured = experiment.explain.depth
    return int(configured) if configured is not None else explanation_depth(experiment.metrics)


@dataclass(frozen=True)
class _List:
    """An arm's list over the analysed queries, as a join side, with ranks and grades."""

    side: Side
    rank: np.ndarray
    grade: np.ndarray  # NaN: unjudged
    queries: pa.ChunkedArray  # the arm's query ids, every row of its frame


def offline_explanation(
    rankings: dict[str, pd.DataFrame],
    judgments: pd.DataFrame | None,
    values: dict[str, pd.DataFrame],
    segments: pd.DataFrame,
    missing_in: pd.Series,
    *,
    control: str,
    metrics: list[str],
    threshold: float,
    gain: str = "linear",
    normalisers: dict[str, pd.Series] | None = None,
    depth: int | None = None,
) -> Explanation:
    """The tables of the module text for an offline readout: ``rankings`` and ``values``
    per arm (control first; the per-query metric values over the analysed queries),
    ``missing_in`` per analysed query. ``judgments`` None: each rankings frame carries its
    rows' grades (a ``grade`` column, NaN: unjudged), and ``normalisers`` (per metric, per
    query id) give the ``normaliser:<metric>`` columns that the judgments would give (what
    an SQL engine sends back)."""
    if judgments is None and normalisers is None:
        raise ValueError("normalisers: expected them where the judgments are not given, got none")
    depth = explanation_depth(metrics) if depth is None else depth
    universe = values[control].index
    arms = list(rankings)
    arm_queries = [as_arrow(rankings[arm]["query_id"], "rankings: query_id") for arm in arms]
    judged_queries = [] if judgments is None else [judgments["query_id"]]
    codes, ids = query_codes(
        *arm_queries,
        *(as_arrow(column, "judgments: query_id") for column in judged_queries),
        as_arrow(pd.Series(universe, dtype=object), "queries: query_id"),
    )
    *arm_codes, analysed = codes
    judged_codes = arm_codes.pop() if judgments is not None else np.zeros(0, dtype=np.int32)
    n = len(ids)
    wanted = np.zeros(n, dtype=bool)
    wanted[analysed] = True

    # each arm's list, cut at the depth and kept to the analysed queries, and its grades
    parts = []
    ranks = []
    carried = []  # the grades the frames carry, at the kept rows
    for arm, arm_code in zip(arms, arm_codes, strict=True):
        ranked = ranked_rows(rankings[arm], depth, arm_code)
        keep = wanted[ranked.codes]
        if bool(keep.all()):
            rows = None if ranked.whole else ranked.rows  # None: every row, in order
            parts.append((ranked.codes, ranked.docs, rows))
            ranks.append(ranked.rank)
            kept = ranked.rows
        else:
            kept = ranked.rows[keep]
            parts.append((ranked.codes[keep], ranked.docs, kept))
            ranks.append(ranked.rank[keep])
        if judgments is None:
            carried.append(rankings[arm]["grade"].to_numpy(dtype=np.float64)[kept])
    if judgments is not None:
        judged_docs = as_arrow(judgments["doc_id"], "judgments: doc_id")
        parts.append((judged_codes, judged_docs, None))
    arm_sides = sides(parts)
    judged = arm_sides.pop() if judgments is not None else None
    relevance = (
        np.zeros(0) if judgments is None else judgments["relevance"].to_numpy(dtype=np.float64)
    )
    lists = {}
    judged_pairs = PairIndex(judged) if judged is not None else None
    for i, (arm, side, rank, queries) in enumerate(
        zip(arms, arm_sides, ranks, arm_queries, strict=True)
    ):
        if judged_pairs is None:
            grade = carried[i]
        else:
            at = judged_pairs.find(side)
            grade = np.where(at >= 0, relevance[np.maximum(at, 0)], np.nan)
        lists[arm] = _List(side, rank, grade, queries)
    table = _rankings_table(lists)

    columns: dict[str, pd.Series | np.ndarray] = {}
    for arm, frame in values.items():
        for metric in metrics:
            columns[f"{arm}:{metric}"] = frame[metric]
    for arm in values:
        if arm == control:
            continue
        for metric in metrics:
            columns[f"delta:{arm}:{metric}"] = values[arm][metric] - values[control][metric]
    for metric in metrics:  # what a metric's change is divided by, from every judgment
        if normalisers is not None:
            if metric in normalisers:
                columns[f"normaliser:{metric}"] = normalisers[metric].reindex(universe)
            continue
        divisor = _normaliser(metric, judged_codes, n, relevance, threshold, gain)
        if divisor is not None:
            columns[f"normaliser:{metric}"] = divisor[analysed]
    queries = pd.DataFrame(columns, index=universe)
    queries["missing_in"] = missing_in.reindex(universe).fillna("").astype(str)
    queries["undefined"] = _undefined(values[control][metrics].isna().to_numpy(), metrics)
    lacked = (queries["missing_in"].to_numpy() != "").astype(np.int64) << len(MOVES)
    for arm in values:
        if arm == control:
            continue
        base, other = lists[control], lists[arm]
        at = lookup(base.side, other.side)
        similarity = rbo_codes(base.side, base.rank, other.side, other.rank, n, matched=at)
        queries[f"rbo:{arm}"] = similarity[analysed]
        mask = _moves(base, other, at, n, threshold)
        queries[f"tags:{arm}"] = tag_lists(mask[analysed] | lacked)
    if len(segments.columns):
        queries = queries.join(segments, how="left")
    queries.index.name = "query_id"
    return Explanation(queries.reset_index(), table, depth)


def _rankings_table(lists: dict[str, _List]) -> pd.DataFrame:
    """``arm``, ``query_id``, ``doc_id``, ``rank`` (int32), ``grade`` of every arm's list,
    the arms one after the other; built as Arrow columns, the ids read from the arms'
    columns at the kept rows."""
    arms = list(lists)
    table = pa.table(
        {
            "arm": pa.chunked_array(
                [_repeated(arm, len(lists[arm].side)) for arm in arms],
                type=pa.large_string(),
            ),
            "query_id": pa.chunked_array(
                [chunk for arm in arms for chunk in _at_rows(lists[arm].queries, lists[arm].side)],
                type=pa.large_string(),
            ),
            "doc_id": pa.chunked_array(
                [
                    chunk
                    for arm in arms
                    for chunk in _at_rows(lists[arm].side.docs, lists[arm].side)
                ],
                type=pa.large_string(),
            ),
            "rank": np.concatenate([lists[arm].rank for arm in arms]).astype(np.int32),
            "grade": np.concatenate([lists[arm].grade for arm in arms]),
        }
    )
    frame: pd.DataFrame = table.to_pandas(split_blocks=True)  # a block per column: no copy
    return frame


def _repeated(text: str, n: int) -> pa.Array:
    """``text`` ``n`` times, as a large_string array built from its buffers."""
    raw = text.encode("utf-8")
    width = len(raw)
    offsets = (
        np.arange(0, (n + 1) * width, width, dtype=np.int64)
        if width
        else np.zeros(n + 1, dtype=np.int64)
    )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))


def _at_rows(column: pa.ChunkedArray, side: Side) -> list[pa.Array]:
    """``column`` (an arm's) at the rows of ``side``, as chunks: slices of it (no copy)
    where the rows are a few runs of consecutive rows (a log as ranked, less some queries),
    else taken."""
    if side.whole:
        return list(column.chunks)
    rows = side.rows
    if rows.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if breaks.size >= RUNS:
        return [take_rows(column, rows)]
    starts = np.concatenate(([0], breaks)).tolist()
    stops = [*breaks.tolist(), rows.size]
    return [
        chunk
        for start, stop in zip(starts, stops, strict=True)
        for chunk in column.slice(int(rows[start]), stop - start).chunks
    ]


RUNS = 4096
"""The most runs of consecutive rows :func:`_at_rows` reads as slices."""


def _normaliser(
    metric: str, codes: np.ndarray, n: int, relevance: np.ndarray, threshold: float, gain: str
) -> np.ndarray | None:
    """Per query code, what ``metric``'s change is divided by, from every judgment
    (:func:`abrank.explain.contributions.normaliser`): NDCG's ideal DCG@k, recall's number
    of relevant judgments (NaN for a query without judgments); None for other families."""
    spec = parse_metric(metric)
    if spec.family == "ndcg" and spec.k is not None:
        return ideal_dcg_codes(codes, n, relevance, spec.k, spec.gain or gain)
    if spec.family == "recall":
        level = float(spec.rel) if spec.rel is not None else threshold
        count = np.bincount(codes[relevance >= level], minlength=n).astype(np.float64)
        judged = np.bincount(codes, minlength=n) > 0
        return np.where(judged, count, np.nan)
    return None


def _undefined(flags: np.ndarray, metrics: list[str]) -> np.ndarray:
    """Per row of ``flags`` (queries x metrics), the flagged metrics ``;``-joined."""
    if flags.shape[0] == 0:
        return np.empty(0, dtype=object)
    if flags.shape[1] < 63:  # each row's flags as the bits of one number
        bits = np.left_shift(1, np.arange(flags.shape[1], dtype=np.int64))
        _, first, which = np.unique(flags @ bits, return_index=True, return_inverse=True)
        patterns = flags[first]
    else:
        patterns, which = np.unique(flags, axis=0, return_inverse=True)
    text = np.array(
        [";".join(m for m, flag in zip(metrics, row, strict=True) if flag) for row in patterns],
        dtype=object,
    )  # one per distinct pattern
    out: np.ndarray = text[which.reshape(-1)]
    return out


def _moves(base: _List, other: _List, at: np.ndarray, n: int, threshold: float) -> np.ndarray:
    """Per query code, the bit mask of the moves (:data:`abrank.explain.moves.MOVES`) its
    documents made between the two lists; ``at``: the ``other`` row of each ``base`` row."""
    matched = at >= 0
    seen = np.zeros(len(other.side), dtype=bool)
    seen[at[matched]] = True
    entered = np.flatnonzero(~seen)  # only in the other list
    after = np.full(at.size, np.nan)
    after[matched] = other.rank[at[matched]]
    shown = move_kinds(base.grade, base.rank.astype(np.float64), after, threshold)
    new = move_kinds(
        other.grade[entered],
        np.full(entered.size, np.nan),
        other.rank[entered].astype(np.float64),
        threshold,
    )
    code = np.concatenate([base.side.codes, other.side.codes[entered]])
    return tag_masks(code, np.concatenate([shown, new]), n)
