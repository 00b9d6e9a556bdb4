"""What moved a readout's metrics: the numbers of the report's "What moved" section.

Per treatment: the primary metric's mean change split by what the documents did
(:func:`abrank.explain.readout.explain_change`), the same for every metric that lost, the
primary metric's split per segment, the query that lost most and the one that won most with
their two lists, the relevant documents that left the top k of a metric that lost, and how
alike the arms' lists are (RBO, and the share of queries whose top k did not change at all).

Every number comes from the readout's explanation tables (``queries``, ``rankings``); a
readout without them (an online design, an SQL engine) has no such section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.explain.contributions import SPLIT_FAMILIES
from abrank.explain.readout import (
    DocumentSplit,
    document_split,
    is_click,
    move_table,
    query_lists,
    readout_arms,
)
from abrank.metrics import parse_metric

SHOWN_QUERIES = 10
"""The queries listed with the relevant documents that left a metric's top k."""


@dataclass(frozen=True)
class MetricSplit:
    """One metric's mean change for one treatment, split by move: ``parts`` has one row per
    move (``change``, ``documents``, ``queries``; :func:`explain_change`)."""

    metric: str
    treatment: str
    change: float
    queries: int
    parts: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The split as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "change": self.change,
            "queries": self.queries,
            "parts": {
                move: {key: _plain(value) for key, value in row.items()}
                for move, row in self.parts.to_dict(orient="index").items()
            },
        }


@dataclass(frozen=True)
class SegmentSplit:
    """The primary metric's split within each value of one segment column: ``parts`` has
    one row per value, a column per move and ``change`` (their sum) and ``queries``."""

    column: str
    parts: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The split as JSON-safe builtins."""
        return {
            "column": self.column,
            "parts": {
                str(value): {key: _plain(v) for key, v in row.items()}
                for value, row in self.parts.to_dict(orient="index").items()
            },
        }


@dataclass(frozen=True)
class QuerySides:
    """One query's two lists side by side (:func:`query_lists`, cut at the metric's k):
    its values of the metric per arm, the change, the arms whose log lacked it."""

    query_id: str
    metric: str
    control_value: float
    treatment_value: float
    delta: float
    missing_in: str
    lists: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The query and its lists as JSON-safe builtins."""
        return {
            "query_id": self.query_id,
            "metric": self.metric,
            "control_value": self.control_value,
            "treatment_value": self.treatment_value,
            "delta": self.delta,
            "missing_in": self.missing_in,
            "lists": [
                {key: _plain(value) for key, value in row.items()}
                for row in self.lists.to_dict(orient="records")
            ],
        }


@dataclass(frozen=True)
class DroppedDocuments:
    """The relevant documents that left a metric's top k: ``documents`` (``query_id``,
    ``doc_id``, ``grade``, ``rank_control``, ``contribution``, ``missing_in``) of the
    :data:`SHOWN_QUERIES` queries both logs hold that lost most by them; the totals over
    every query, and how many of them were in queries an arm's log lacked."""

    metric: str
    count: int
    queries: int
    in_missing_log: int
    documents: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The documents as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "count": self.count,
            "queries": self.queries,
            "in_missing_log": self.in_missing_log,
            "documents": [
                {key: _plain(value) for key, value in row.items()}
                for row in self.documents.to_dict(orient="records")
            ],
        }


@dataclass(frozen=True)
class ListSimilarity:
    """How alike the arms' lists are: RBO (p = 0.9) per query over the explanation's depth,
    and how many queries' top ``k`` (the primary metric's cutoff) is the same list."""

    k: int
    rbo: np.ndarray
    identical: int
    queries: int

    @property
    def share_identical(self) -> float:
        """The share of queries whose top k did not change at all."""
        return self.identical / self.queries if self.queries else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """The similarity's summary as JSON-safe builtins."""
        values = self.rbo[~np.isnan(self.rbo)]
        quartiles = np.quantile(values, [0.25, 0.5, 0.75]).tolist() if len(values) else []
        return {
            "k": self.k,
            "rbo_quartiles": quartiles,
            "identical": self.identical,
            "queries": self.queries,
        }


@dataclass(frozen=True)
class WhatMoved:
    """What moved one treatment's metrics against the control (module text)."""

    treatment: str
    primary: MetricSplit
    losses: tuple[MetricSplit, ...]
    segments: tuple[SegmentSplit, ...]
    worst: QuerySides | None
    best: QuerySides | None
    dropped: tuple[DroppedDocuments, ...]
    similarity: ListSimilarity

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-safe builtins."""
        return {
            "treatment": self.treatment,
            "primary": self.primary.to_dict(),
            "losses": [split.to_dict() for split in self.losses],
            "segments": [split.to_dict() for split in self.segments],
            "worst": self.worst.to_dict() if self.worst is not None else None,
            "best": self.best.to_dict() if self.best is not None else None,
            "dropped": [d.to_dict() for d in self.dropped],
            "similarity": self.similarity.to_dict(),
        }


def what_moved(readout: Any) -> list[WhatMoved]:
    """Per treatment, what moved its metrics (module text); empty for a readout without
    explanation tables of judged rankings (a click readout has none such) or whose primary
    metric does not split over documents."""
    if readout.queries is None or readout.rankings is None or is_click(readout.rankings):
        return []
    summary = readout.summary
    primary = summary.get("primary_metric")
    if primary is None or parse_metric(primary).family not in SPLIT_FAMILIES:
        return []
    control = readout.model.control
    arms = readout_arms(readout)
    segments = list((summary.get("segments") or {}).get("columns", []))
    out = []
    for treatment in (arm for arm in arms if arm != control):
        out.append(_what_moved(readout, str(primary), str(treatment), segments))
    return out


def _what_moved(readout: Any, primary: str, treatment: str, segments: list[str]) -> WhatMoved:
    splits = {
        metric: document_split(readout, metric, treatment)
        for metric in [primary, *_lost(readout, primary, treatment)]
    }
    queries = readout.queries
    by_segment = tuple(
        SegmentSplit(column, _segment_table(splits[primary], queries, column))
        for column in segments
        if column in queries.columns
    )
    worst, best = _extremes(readout, primary, treatment)
    return WhatMoved(
        treatment,
        _metric_split(splits[primary]),
        tuple(_metric_split(split) for metric, split in splits.items() if metric != primary),
        by_segment,
        worst,
        best,
        tuple(_dropped(split, queries) for metric, split in splits.items() if metric != primary),
        _similarity(readout, primary, treatment),
    )


def _metric_split(split: DocumentSplit) -> MetricSplit:
    parts = move_table(split, pd.DataFrame())
    return MetricSplit(
        split.metric, split.treatment, float(parts["change"].sum()), len(split.defined), parts
    )


def _lost(readout: Any, primary: str, treatment: str) -> list[str]:
    """The metrics other than the primary whose overall comparison for ``treatment`` is
    a loss, in the readout's order, if they split over documents."""
    lost = []
    for comparison in readout.summary.get("comparisons", []):
        metric = comparison.get("metric")
        if (
            comparison.get("segment") is None
            and comparison.get("treatment") == treatment
            and comparison.get("verdict") == "loss"
            and metric != primary
            and parse_metric(metric).family in SPLIT_FAMILIES
            and metric not in lost
        ):
            lost.append(metric)
    return lost


def _segment_table(split: DocumentSplit, queries: pd.DataFrame, column: str) -> pd.DataFrame:
    table = move_table(split, queries, by=column)
    wide = table["change"].unstack("move")
    wide = wide[list(table.index.get_level_values("move").unique())]
    defined = queries["query_id"].astype(str).isin(set(split.defined))
    counts = defined.groupby(queries[column]).sum()
    wide["change"] = wide.sum(axis=1)
    wide["queries"] = counts.reindex(wide.index).fillna(0).astype(int)
    wide.index.name = column
    return wide


def _extremes(
    readout: Any, metric: str, treatment: str
) -> tuple[QuerySides | None, QuerySides | None]:
    """The query that lost most and the one that won most, among those both logs hold
    (ties: the first query id)."""
    queries = readout.queries
    delta = queries[f"delta:{treatment}:{metric}"]
    present = queries["missing_in"].astype(str) == ""
    ranked = queries.loc[present & delta.notna()].assign(_d=delta)
    ranked = ranked.assign(_q=ranked["query_id"].astype(str)).sort_values(
        ["_d", "_q"], kind="stable"
    )
    worst = ranked.iloc[0] if len(ranked) and ranked["_d"].iloc[0] < 0 else None
    by_gain = ranked.sort_values(["_d", "_q"], ascending=[False, True], kind="stable")
    best = by_gain.iloc[0] if len(by_gain) and by_gain["_d"].iloc[0] > 0 else None
    return (
        _sides(readout, worst, metric, treatment) if worst is not None else None,
        _sides(readout, best, metric, treatment) if best is not None else None,
    )


def _sides(readout: Any, row: pd.Series, metric: str, treatment: str) -> QuerySides:
    control = readout.model.control
    lists = query_lists(readout, row["query_id"], metric, treatment)
    k = parse_metric(metric).k or len(lists)
    shown = (lists[f"rank_{control}"] <= k) | (lists[f"rank_{treatment}"] <= k)
    return QuerySides(
        str(row["query_id"]),
        metric,
        float(row[f"{control}:{metric}"]),
        float(row[f"{treatment}:{metric}"]),
        float(row["_d"]),
        str(row["missing_in"]),
        lists[shown].reset_index(drop=True),
    )


def _dropped(split: DocumentSplit, queries: pd.DataFrame) -> DroppedDocuments:
    left = split.documents[split.documents["move"] == "relevant_dropped"]
    missing = queries.set_index(queries["query_id"].astype(str))["missing_in"]
    left = left.assign(missing_in=left["query_id"].astype(str).map(missing).fillna("").astype(str))
    held = left[left["missing_in"] == ""]  # a logging gap explains the others
    loss = held.groupby("query_id", sort=False)["contribution"].sum()
    worst = loss.reset_index().assign(_q=lambda f: f["query_id"].astype(str))
    worst = worst.sort_values(["contribution", "_q"], kind="stable").head(SHOWN_QUERIES)
    shown = held[held["query_id"].isin(worst["query_id"])]
    order = pd.Series(range(len(worst)), index=worst["query_id"].to_numpy())
    shown = shown.assign(_o=shown["query_id"].map(order)).sort_values(
        ["_o", "rank_control"], kind="stable"
    )
    columns = ["query_id", "doc_id", "grade", "rank_control", "contribution", "missing_in"]
    return DroppedDocuments(
        split.metric,
        len(left),
        int(left["query_id"].nunique()),
        int((left["missing_in"] != "").sum()),
        shown[columns].reset_index(drop=True),
    )


def _similarity(readout: Any, metric: str, treatment: str) -> ListSimilarity:
    """RBO per query, and the queries whose top k holds the same documents in the same
    order in both arms (k: ``metric``'s cutoff, else the explanation's depth)."""
    queries = readout.queries
    rankings = readout.rankings
    control = readout.model.control
    k = parse_metric(metric).k or int(rankings["rank"].max())
    top = rankings[rankings["rank"] <= k]
    before = top[top["arm"] == control]
    after = top[top["arm"] == treatment]
    pairs = before.merge(after, on=["query_id", "rank"], suffixes=("_c", "_t"))
    same = (pairs["doc_id_c"] == pairs["doc_id_t"]).groupby(pairs["query_id"]).sum()
    lengths_c = before.groupby("query_id").size()
    lengths_t = after.groupby("query_id").size()
    ids = queries["query_id"]
    n_same = ids.map(same).fillna(0).to_numpy()
    n_c = ids.map(lengths_c).fillna(0).to_numpy()
    n_t = ids.map(lengths_t).fillna(0).to_numpy()
    identical = (n_c == n_t) & (n_same == n_c) & (n_c > 0)
    return ListSimilarity(
        k,
        queries[f"rbo:{treatment}"].to_numpy(dtype=np.float64),
        int(identical.sum()),
        len(queries),
    )


def _plain(value: Any) -> Any:
    """A table value as a JSON-safe builtin (NaN: None)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    return value


def readout_what_moved(readout: Any) -> list[WhatMoved]:
    """:func:`what_moved` of ``readout``, computed once per readout (its report section
    and its charts read the same numbers)."""
    held = vars(readout)
    if "_what_moved" not in held:
        held["_what_moved"] = what_moved(readout)
    moved: list[WhatMoved] = held["_what_moved"]
    return moved
