"""The counterfactual design's inputs as codes: every logged row, the logging arm's lists,
and each candidate's top k per query as (query, document) pair codes.

The logs are read as an online experiment's (:func:`abrank.designs.online.logs.load_online`:
the same reader, column mapping and checks); the ids of every arm are coded once, across
arms (equal ids are equal whatever their file's type), so that a document shown by two
rankers for one query is one pair. A candidate's document that no log ever showed for the
query has no pair: it is unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import DataError
from abrank.stats.ips import ClickRows, Lists

__all__ = ["CodedLogs", "candidate_lists", "code_logs"]


@dataclass(frozen=True)
class CodedLogs:
    """Every arm's rows coded (:class:`~abrank.stats.ips.ClickRows`), the logging arm's
    own lists (one per logging-arm impression, impressions 0..N_c-1), the query and unit
    labels, the pair lookup, the arm of each impression and the logged ``propensity`` of
    each row when the log has that column."""

    rows: ClickRows
    logger_lists: Lists
    queries: pd.Index
    units: pd.Index
    docs: pd.Index
    pairs: pd.Index  # int64 keys query_code * n_docs + doc_code, position = pair code
    arm_of_impression: np.ndarray
    arms: tuple[str, ...]
    max_rank: int
    propensity: np.ndarray | None

    @property
    def n_logger(self) -> int:
        return int(self.rows.logger.sum())

    def logger_impressions_per_query(self) -> np.ndarray:
        """The logging arm's impressions of each query code."""
        logger = self.rows.logger
        return np.bincount(self.rows.query[logger], minlength=len(self.queries)).astype(float)

    def observed(self, family: str, k: int) -> float:
        """The logging arm's observed ``family@k`` per impression (click_rr, ctr, clicks)."""
        rows = self.rows
        mine = rows.row_logger & (rows.rank <= k) & (rows.clicked > 0)
        n = self.n_logger
        impression = rows.impression[mine]
        if family == "clicks":
            return float(mine.sum()) / n
        if family == "ctr":
            return float(np.unique(impression).size) / n
        first = np.full(n, np.inf)
        np.minimum.at(first, impression, rows.rank[mine].astype(np.float64))
        return float((1.0 / first).sum()) / n


def _global_codes(columns: list[pd.Series]) -> tuple[list[np.ndarray], pd.Index]:
    """Codes of several columns' values in one index of their text (categoricals coded by
    their categories: fast on big logs)."""
    parts = []
    labels: list[pd.Index] = []
    for column in columns:
        values = column.astype("category") if column.dtype != "category" else column
        categories = values.cat.categories.astype(str)
        parts.append((values.cat.codes.to_numpy(), categories))
        labels.append(pd.Index(categories))
    index = pd.Index(pd.concat([i.to_series() for i in labels], ignore_index=True).unique())
    codes = []
    for local, categories in parts:
        mapping = index.get_indexer(categories)
        codes.append(np.where(local >= 0, mapping[np.maximum(local, 0)], -1))
    return codes, index


def code_logs(
    frames: dict[str, pd.DataFrame], control: str, unit: str, paths: dict[str, str]
) -> CodedLogs:
    """Every arm's impressions (canonical frames with ``query``) coded, the control first."""
    arms = (control, *[name for name in frames if name != control])
    ordered = [frames[name] for name in arms]
    for name, frame in zip(arms, ordered, strict=True):
        if "query" not in frame.columns:
            raise DataError(
                f"{paths[name]}: query: expected a `query` column (the query text or id that "
                "candidate rankings are keyed by), found columns: "
                + ", ".join(map(str, frame.columns))
            )
        if frame["query"].isna().any():
            raise DataError(
                f"{paths[name]}: query: expected a query on every row, got empty values"
            )
    query_codes, queries = _global_codes([f["query"] for f in ordered])
    unit_codes, units = _global_codes([f[unit] for f in ordered])
    doc_codes, docs = _global_codes([f["doc_id"] for f in ordered])
    impression_codes = []
    offset = 0
    arm_of_impression = []
    for index, frame in enumerate(ordered):
        codes = pd.factorize(frame["impression_id"], sort=False)[0].astype(np.int64)
        n = int(codes.max()) + 1 if codes.size else 0
        impression_codes.append(codes + offset)
        arm_of_impression.append(np.full(n, index, dtype=np.int64))
        offset += n
    impression = np.concatenate(impression_codes)
    query_row = np.concatenate(query_codes).astype(np.int64)
    doc_row = np.concatenate(doc_codes).astype(np.int64)
    key = query_row * max(len(docs), 1) + doc_row
    pair, pairs = pd.factorize(key, sort=False)
    rank = np.concatenate([f["rank"].to_numpy(dtype=np.int64) for f in ordered])
    clicked = np.concatenate([f["clicked"].to_numpy(dtype=np.float64) for f in ordered])
    arm_of = np.concatenate(arm_of_impression)
    query = np.zeros(offset, dtype=np.int64)
    query[impression] = query_row
    propensity = None
    if all("propensity" in f.columns for f in ordered):
        propensity = np.concatenate([f["propensity"].to_numpy(dtype=np.float64) for f in ordered])
    return coded_logs(
        impression=impression,
        pair=pair.astype(np.int64),
        rank=rank,
        clicked=clicked,
        unit=np.concatenate(unit_codes).astype(np.int64),
        query=query,
        arm_of=arm_of,
        queries=queries,
        units=units,
        docs=docs,
        pairs=pd.Index(pairs),
        arms=arms,
        propensity=propensity,
    )


def coded_logs(
    *,
    impression: np.ndarray,
    pair: np.ndarray,
    rank: np.ndarray,
    clicked: np.ndarray,
    unit: np.ndarray,
    query: np.ndarray,
    arm_of: np.ndarray,
    queries: pd.Index,
    units: pd.Index,
    docs: pd.Index,
    pairs: pd.Index,
    arms: tuple[str, ...],
    propensity: np.ndarray | None,
) -> CodedLogs:
    """The coded logs (whichever engine coded them), from one value per logged row
    (``impression``, ``pair``, ``rank``, ``clicked``, ``unit`` codes) and per impression
    (``query``, ``arm_of`` its arm, 0 the logging arm): with the logging arm's lists, one
    row per impression of its and the pair code at each rank (-1 where nothing was
    logged)."""
    rows = ClickRows(
        impression=impression,
        pair=pair,
        rank=rank,
        clicked=clicked,
        unit=unit,
        query=query,
        logger=arm_of == 0,
        n_pairs=len(pairs),
        n_units=len(units),
    )
    max_rank = int(rows.rank.max()) if rows.rank.size else 0
    logger_rows = arm_of[rows.impression] == 0
    n_logger = int((arm_of == 0).sum())
    lists = np.full((n_logger, max_rank), -1, dtype=np.int64)
    lists[rows.impression[logger_rows], rows.rank[logger_rows] - 1] = rows.pair[logger_rows]
    return CodedLogs(
        rows=rows,
        logger_lists=Lists(lists, np.zeros(lists.shape, dtype=bool)),
        queries=queries,
        units=units,
        docs=docs,
        pairs=pairs,
        arm_of_impression=arm_of,
        arms=arms,
        max_rank=max_rank,
        propensity=propensity,
    )


def candidate_lists(
    logs: CodedLogs, rankings: pd.DataFrame, k: int
) -> tuple[Lists, dict[str, Any]]:
    """A candidate's top ``k`` per logged query as pair codes (rankings: query_id, doc_id,
    rank); a query of the logs the candidate has no list for has every slot unsupported.
    Also counts: the candidate's queries, those the logs have, those it lacks."""
    n_queries = len(logs.queries)
    top = rankings[rankings["rank"] <= k]
    q = logs.queries.get_indexer(pd.Index(top["query_id"].astype(str)))
    d = logs.docs.get_indexer(pd.Index(top["doc_id"].astype(str)))
    known = q >= 0
    rank = top["rank"].to_numpy(dtype=np.int64)[known]
    q, d = q[known], d[known]
    # the slot a document fills: its position among the query's documents by rank
    order = np.lexsort((rank, q))
    q, d, rank = q[order], d[order], rank[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, q.size]))
    slot = np.arange(q.size) - first
    pair = np.full(q.size, -1, dtype=np.int64)
    logged_doc = d >= 0
    keys = q[logged_doc].astype(np.int64) * max(len(logs.docs), 1) + d[logged_doc]
    pair[logged_doc] = logs.pairs.get_indexer(pd.Index(keys))
    pairs = np.full((n_queries, k), -1, dtype=np.int64)
    unsupported = np.zeros((n_queries, k), dtype=bool)
    keep = slot < k
    pairs[q[keep], slot[keep]] = pair[keep]
    unsupported[q[keep], slot[keep]] = pair[keep] < 0
    listed = np.zeros(n_queries, dtype=bool)
    listed[q] = True
    unsupported[~listed] = True
    counts = {
        "queries": int(rankings["query_id"].nunique()),
        "logged_queries": int(listed.sum()),
        "logged_queries_without_list": int((~listed).sum()),
    }
    return Lists(pairs, unsupported), counts
