"""A readout's explanations in Python: one query's lists side by side, and the change of a
metric split by what the documents did. Both read the readout's ``rankings`` table
(:mod:`abrank.explain.tables`) and its judgments' grades as that table holds them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError
from abrank.explain.contributions import SPLIT_FAMILIES, metric_contributions
from abrank.explain.moves import by_move
from abrank.metrics import parse_metric


def query_lists(
    readout: Any, query_id: Any, metric: str | None = None, treatment: str | None = None
) -> pd.DataFrame:
    """One row per document any arm shows for ``query_id``: ``doc_id``, ``grade``,
    ``rank_<arm>`` per arm (NaN where not shown), and ``contribution`` to the treatment -
    control change of ``metric`` (default: the primary; NaN for a metric that does not
    split over documents), rows by the control's rank, then the treatment's."""
    rankings = _rankings(readout)
    query = str(query_id)
    rows = rankings[rankings["query_id"].astype(str) == query]
    if rows.empty:
        raise ConfigError(f"query {query_id!r}: expected a query of the readout, got none such")
    arms = list(dict.fromkeys(rankings["arm"]))
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
    return table.sort_values(order, na_position="last", kind="stable", ignore_index=True)


def explain_change(
    readout: Any, metric: str | None = None, treatment: str | None = None
) -> pd.Series:
    """The mean change of ``metric`` over the queries where it is defined, split by move
    (:func:`abrank.explain.moves.by_move`): the parts sum to that mean change exactly."""
    rankings = _rankings(readout)
    arms = list(dict.fromkeys(rankings["arm"]))
    control, other = _pair(readout, arms, treatment)
    name = _metric(readout, metric)
    if parse_metric(name).family not in SPLIT_FAMILIES:
        raise ConfigError(
            f"metric {name}: expected a metric that splits over documents "
            f"({', '.join(f'{f}@k' for f in SPLIT_FAMILIES)})"
        )
    queries = readout.queries
    defined = queries.loc[queries[f"delta:{other}:{name}"].notna(), "query_id"].astype(str)
    kept = rankings[rankings["query_id"].astype(str).isin(set(defined))]
    split = _contributions(readout, kept, name, control, other)
    # every compared query counts, those whose top k holds nothing relevant with a 0
    parts = by_move(split.assign(ideal=1.0))
    return parts * split["query_id"].nunique() / max(len(defined), 1)


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
        threshold=float(summary.get("relevance_threshold", 1.0)),
        gain=str(summary.get("gain", "linear")),
        normaliser=divisor,
    )


def _rankings(readout: Any) -> pd.DataFrame:
    if readout.rankings is None or readout.queries is None:
        raise ConfigError(
            "readout: expected its explanation tables (rankings, queries), got none: they "
            "are made by offline readouts"
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
