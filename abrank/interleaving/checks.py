"""A validity check of an interleaved log: were the lists merged afresh per impression?

An interleaving test must merge the two rankings anew for every impression (its own coin
flips). A log in which every impression of a query shows one and the same merged list (the
same documents, from the same teams, at every rank) reuses one team assignment for all
the query's visitors: the preference of that query is then fixed by one draw, and a test
clustered on users is far too confident (on simulated A/A tests it rejects a true null
10-15% of the time at alpha 0.05 with five visits per query, and more with more visits).
:func:`fixed_lists` counts such queries among those with two impressions or more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import DataError

FIXED_LISTS_WARNING_SHARE = 0.5
"""Above this share of queries with one list for all their impressions, a warning."""


@dataclass(frozen=True)
class FixedLists:
    """``queries``: queries with two impressions or more; ``fixed``: those whose impressions
    all show one interleaved list; ``share`` = fixed / queries (None without such queries)."""

    queries: int
    fixed: int

    @property
    def share(self) -> float | None:
        return self.fixed / self.queries if self.queries else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: {queries, fixed, share}."""
        return {"queries": self.queries, "fixed": self.fixed, "share": self.share}

    def warning(self) -> str | None:
        """A sentence when most queries show one fixed list (None otherwise)."""
        share = self.share
        if share is None or share <= FIXED_LISTS_WARNING_SHARE:
            return None
        return (
            f"{share:.0%} of the {self.queries:,} queries seen more than once showed one "
            "interleaved list in all their impressions: the lists were not merged afresh per "
            "impression, so the test is too confident (merge per impression: "
            "abrank.interleave(..., impressions=...))"
        )


def fixed_lists(log: pd.DataFrame, query: str = "query_id") -> FixedLists:
    """:class:`FixedLists` of an interleaved log (``impression_id``, ``rank``, ``doc_id``,
    ``team`` and the ``query`` column; one row per shown result). A query's impressions
    show one list when, at every rank any of them shows, all of them show a result, the
    same document and the same team. DataError for missing columns."""
    needed = ("impression_id", query, "rank", "doc_id", "team")
    if not isinstance(log, pd.DataFrame):
        raise DataError(f"log: expected a DataFrame, got {type(log).__name__}")
    missing = [c for c in needed if c not in log.columns]
    if missing:
        raise DataError(
            f"log: columns: expected {', '.join(needed)}, got no {', '.join(missing)} "
            f"(columns: {', '.join(map(str, log.columns))})"
        )
    impression = pd.factorize(log["impression_id"].astype(str))[0]
    queries = pd.factorize(log[query].astype(str))[0]
    docs = pd.factorize(log["doc_id"].astype(str))[0]
    teams = pd.factorize(log["team"].astype(str))[0]
    ranks = pd.factorize(pd.to_numeric(log["rank"], errors="coerce"))[0]
    n_queries = int(queries.max(initial=-1)) + 1
    first = np.unique(impression, return_index=True)[1]
    per_query = np.bincount(queries[first], minlength=n_queries)  # impressions per query
    cells = pd.DataFrame({"q": queries, "r": ranks, "d": docs, "t": teams})
    by_cell = cells.groupby(["q", "r"], sort=False).agg(
        n=("d", "size"), docs=("d", "nunique"), teams=("t", "nunique")
    )
    q = by_cell.index.get_level_values("q").to_numpy()
    differs = (
        (by_cell["n"].to_numpy() != per_query[q])
        | (by_cell["docs"].to_numpy() != 1)
        | (by_cell["teams"].to_numpy() != 1)
    )
    varied = np.bincount(q, weights=differs, minlength=n_queries) > 0
    repeated = per_query >= 2
    return FixedLists(queries=int(repeated.sum()), fixed=int((repeated & ~varied).sum()))
