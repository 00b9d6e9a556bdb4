"""A readout's explanations in Python: one query's lists side by side, and the change of a
metric split by what the documents did. Both read the readout's ``rankings`` table
(:mod:`abrank.explain.tables`) and its judgments' grades as that table holds them.

A click readout (online and interleaving designs, :mod:`abrank.explain.online_tables`)
has per-document impressions and clicks instead: its ``query`` lays them side by side
(:func:`click_lists`); ``explain`` is a ConfigError there (clicks do not split a metric's
change over documents)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError
from abrank.explain.contributions import SPLIT_FAMILIES, metric_contributions
from abrank.explain.moves import MOVES, document_moves
from abrank.explain.views import change_view, query_view
from abrank.metrics import parse_metric


def query_lists(
    readout: Any, query_id: Any, metric: str | None = None, treatment: str | None = None
) -> pd.DataFrame:
    """One row per document any arm shows for ``query_id``: ``doc_id``, ``grade``,
    ``rank_<arm>`` per arm (NaN where not shown), and ``contribution`` to the treatment -
    control change of ``metric`` (default: the primary; NaN for a metric that does not
    split over documents), rows by the control's rank, then the treatment's.

    On a click readout (its rankings have ``clicks``): :func:`click_lists`, and a
    ``metric`` is a ConfigError (no per-document contribution)."""
    rankings = _rankings(readout)
    if is_click(rankings):
        if metric is not None:
            raise ConfigError(
                f"metric {metric!r}: expected none: the query view of a click readout shows "
                "each document's impressions and clicks per arm, no per-document "
                "contribution to a metric (call query(query_id) without a metric)"
            )
        return click_lists(readout, query_id, treatment)
    query = str(query_id)
    rows = rankings[rankings["query_id"].astype(str) == query]
    if rows.empty:
        raise ConfigError(f"query {query_id!r}: expected a query of the readout, got none such")
    arms = readout_arms(readout)
    grades = rows.drop_duplicates("doc_id").set_index("doc_id")["grade"]
    table = pd.DataFrame({"doc_id": grades.index, "grade": grades.to_numpy()})
    for arm in arms:
        ranks = rows[rows["arm"] == arm].set_index("doc_id")["rank"]
        table[f"rank_{arm}"] = table["doc_id"].map(ranks).astype(np.float64)
    control, other = _pair(readout, arms, treatment)
    name = _metric(readout, metric)
    contribution = pd.Series(np.nan, index=table["doc_id"])
    if parse_metric(name).family in SPLIT_FAMILIES:
        split = _contributions(readout, rows, name, control, other)
        contribution = split.set_index("doc_id")["contribution"]
    table["contribution"] = table["doc_id"].map(contribution).fillna(0.0)
    if parse_metric(name).family not in SPLIT_FAMILIES:
        table["contribution"] = np.nan
    order = [f"rank_{control}", f"rank_{other}"]
    table = table.sort_values(order, na_position="last", kind="stable", ignore_index=True)
    caption = f"query {query}: {name}, {control} → {other}"
    column = f"delta:{other}:{name}"
    queries = readout.queries
    change = queries.loc[queries["query_id"].astype(str) == query, column]
    if len(change) and pd.notna(change.iloc[0]):
        caption += f", change {float(change.iloc[0]):+.4f}"
    return query_view(table, caption)


def explain_change(
    readout: Any, metric: str | None = None, treatment: str | None = None, by: str | None = None
) -> pd.DataFrame:
    """The mean change of ``metric`` over the queries where it is defined, split by move
    (:mod:`abrank.explain.moves`): one row per move with ``change`` (its part of the mean
    change: the parts sum to it exactly), ``documents`` (how many documents made that move)
    and ``queries`` (in how many queries). ``by`` names a segment column: then one row per
    (segment value, move), each segment's parts summing to its own mean change."""
    split = document_split(readout, metric, treatment)
    table = move_table(split, readout.queries, by)
    pair = f"{split.metric}, {split.control} → {split.treatment}"
    if by is None:
        caption = (
            f"{pair}: mean change {table['change'].sum():+.4f} over {len(split.defined):,} "
            "queries, by what the documents did"
        )
    else:
        caption = f"{pair}: each {by}'s mean change, by what the documents did"
    return change_view(table, caption)


def move_table(split: DocumentSplit, queries: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """:func:`explain_change`'s table from a :class:`DocumentSplit` (``queries``: the
    readout's queries table, for the segment column ``by``)."""
    order = [*MOVES, "unchanged", "other"]
    keys: list[Any] = ["move"]
    rows = split.documents
    counted: pd.Series = split.defined
    if by is not None:
        if by not in queries.columns or by.startswith(("delta:", "tags:", "rbo:")):
            raise ConfigError(f"by: expected a segment column of the readout, got {by!r}")
        values = queries.set_index(queries["query_id"].astype(str))[by]
        rows = rows.assign(**{by: rows["query_id"].astype(str).map(values)})
        counted = split.defined.groupby(split.defined.map(values)).size()
        keys = [by, "move"]
    grouped = rows.groupby(keys, observed=True, sort=False)
    table = pd.DataFrame(
        {
            "change": grouped["contribution"].sum(),
            "documents": grouped.size(),
            "queries": grouped["query_id"].nunique(),
        }
    )
    if by is None:
        table = table.reindex(order, fill_value=0)
        table["change"] = table["change"].astype(np.float64) / max(len(counted), 1)
        table.index.name = "move"
        return table
    full = pd.MultiIndex.from_product([counted.index, order], names=[by, "move"])
    table = table.reindex(full, fill_value=0)
    size = table.index.get_level_values(by).map(counted.to_dict()).to_numpy(dtype=np.float64)
    table["change"] = table["change"].astype(np.float64) / size
    return table


@dataclasses.dataclass(frozen=True)
class DocumentSplit:
    """The per-document split of one metric's change between two arms: ``documents`` has
    one row per (query, document) either arm shows in the metric's top k, with ``grade``,
    ``rank_control``, ``rank_treatment``, ``contribution`` and ``move``; ``defined`` the ids
    of the queries the mean change is taken over."""

    metric: str
    control: str
    treatment: str
    documents: pd.DataFrame
    defined: pd.Series


def document_split(
    readout: Any, metric: str | None = None, treatment: str | None = None
) -> DocumentSplit:
    """Every document's part in ``metric``'s change (treatment - control) and its move,
    over the queries where the metric is defined."""
    rankings = _rankings(readout)
    if is_click(rankings):
        design = readout.summary.get("design", "online")
        raise ConfigError(
            f"explain: expected an offline readout of judged metrics, got a click readout "
            f"(design {design}): clicks do not split a metric's change over documents; "
            "readout.queries holds each query's change and tags, readout.query(query_id) "
            "its documents' clicks per arm"
        )
    arms = readout_arms(readout)
    control, other = _pair(readout, arms, treatment)
    name = _metric(readout, metric)
    spec = parse_metric(name)
    if spec.family not in SPLIT_FAMILIES:
        raise ConfigError(
            f"metric {name}: expected a metric that splits over documents "
            f"({', '.join(f'{f}@k' for f in SPLIT_FAMILIES)})"
        )
    queries = readout.queries
    defined = queries.loc[queries[f"delta:{other}:{name}"].notna(), "query_id"].astype(str)
    kept = rankings[rankings["query_id"].astype(str).isin(set(defined))]
    split = _contributions(readout, kept, name, control, other)
    threshold = float(spec.rel) if spec.rel is not None else _threshold(readout)
    split["move"] = document_moves(split, threshold).to_numpy()
    columns = ["query_id", "doc_id", "grade", "rank_control", "rank_treatment"]
    documents = split[[*columns, "contribution", "move"]].reset_index(drop=True)
    return DocumentSplit(name, control, other, documents, defined.reset_index(drop=True))


def _threshold(readout: Any) -> float:
    return float(readout.summary.get("relevance_threshold", 1.0))


def click_lists(readout: Any, key: Any, treatment: str | None = None) -> pd.DataFrame:
    """A click readout's documents of one query (or unit, where the rankings are per
    unit): one row per document any arm (team) showed for it, columns ``doc_id``,
    ``grade``, then per arm ``rank_<arm>`` (its mean rank there, NaN where not shown),
    ``impressions_<arm>``, ``clicks_<arm>`` (0 where not shown) and ``ctr_<arm>`` (NaN
    where not shown); rows by the control's rank, then the treatment's (the first one by
    default)."""
    rankings: pd.DataFrame = readout.rankings
    column = str(rankings.columns[1])  # the key: query_id, or the unit
    rows = rankings[rankings[column].astype(str) == str(key)]
    what = "query" if column == "query_id" else f"unit ({column})"
    if rows.empty:
        raise ConfigError(f"{what} {key!r}: expected a {what} of the readout, got none such")
    arms = readout_arms(readout)
    control, other = _pair(readout, arms, treatment)
    grades = rows.groupby("doc_id", sort=False)["grade"].first()
    table = pd.DataFrame({"doc_id": grades.index.astype(str), "grade": grades.to_numpy()})
    for arm in arms:
        mine = rows[rows["arm"] == arm].set_index("doc_id")
        table[f"rank_{arm}"] = table["doc_id"].map(mine["rank"]).astype(np.float64)
        for name in ("impressions", "clicks"):
            table[f"{name}_{arm}"] = table["doc_id"].map(mine[name]).fillna(0).astype(np.int64)
        table[f"ctr_{arm}"] = table["doc_id"].map(mine["ctr"]).astype(np.float64)
    order = [f"rank_{control}", f"rank_{other}"]
    return table.sort_values(order, na_position="last", kind="stable", ignore_index=True)


def readout_arms(readout: Any) -> list[str]:
    """The readout's arms in the config's order (control first), from its summary: every
    arm has its ``rank_<arm>`` column in a query's view, even one that did not rank the
    query; from the rankings table where the summary names none."""
    names = [str(arm.name) for arm in (readout.model.arms or ())]
    return names or [str(arm) for arm in pd.unique(readout.rankings["arm"])]


def is_click(rankings: pd.DataFrame) -> bool:
    """Whether ``rankings`` is a click readout's (:mod:`abrank.explain.online_tables`)."""
    return "clicks" in rankings.columns


def _contributions(
    readout: Any, rows: pd.DataFrame, metric: str, control: str, other: str
) -> pd.DataFrame:
    lists = {
        arm: rows.loc[rows["arm"] == arm, ["query_id", "doc_id", "rank"]]
        for arm in (control, other)
    }
    judged = rows.dropna(subset=["grade"]).drop_duplicates(["query_id", "doc_id"])
    judgments = judged[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
    summary = readout.summary
    column = f"normaliser:{metric}"
    queries = readout.queries
    divisor = (
        queries.set_index(queries["query_id"].astype(str))[column]
        if column in queries.columns
        else None
    )
    return metric_contributions(
        metric,
        lists[control],
        lists[other],
        judgments,
        threshold=_threshold(readout),
        gain=str(summary.get("gain", "linear")),
        normaliser=divisor,
    )


def _rankings(readout: Any) -> pd.DataFrame:
    if readout.rankings is None or readout.queries is None:
        raise ConfigError(
            "readout: expected its explanation tables (rankings, queries), got none: they "
            "are made by offline readouts on every engine and by online and interleaving "
            "readouts on the memory engine, up to a size limit"
        )
    rankings: pd.DataFrame = readout.rankings
    return rankings


def _pair(readout: Any, arms: list[str], treatment: str | None) -> tuple[str, str]:
    control = readout.model.control or arms[0]
    others = [arm for arm in arms if arm != control]
    if treatment is None:
        return control, others[0]
    if treatment not in others:
        raise ConfigError(f"treatment: expected one of {others}, got {treatment!r}")
    return control, treatment


def _metric(readout: Any, metric: str | None) -> str:
    names = list(readout.summary.get("metrics", []))
    if metric is None:
        return str(readout.summary.get("primary_metric") or names[0])
    name = parse_metric(metric).name
    if name not in names:
        raise ConfigError(f"metric: expected one of {names}, got {metric!r}")
    return name
