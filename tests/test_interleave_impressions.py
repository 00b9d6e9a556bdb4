"""abrank.interleave with impressions: a fresh merge per impression, seeded by its id."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.errors import DataError
from abrank.interleaving import Cascade, simulate_clicks


def ranking(lists: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, d, r + 1) for q, docs in lists.items() for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])


A = {"q1": list("abcdef"), "q2": list("uvwxyz")}
B = {"q1": list("fedcba"), "q2": list("zyxwvu")}


@pytest.mark.parametrize("method", ["team_draft", "balanced"])
def test_each_impression_is_its_querys_merge_under_its_own_id(method: str) -> None:
    visits = pd.DataFrame(
        {
            "impression_id": [f"i{k}" for k in range(40)],
            "query_id": ["q1", "q2"] * 20,
            "user_id": np.arange(40) % 7,
        }
    )
    out = abrank.interleave(ranking(A), ranking(B), impressions=visits, seed=5, method=method)
    ranks = ["rank_control", "rank_treatment"] if method == "balanced" else []
    columns = ["impression_id", "query_id", "rank", "doc_id", "team", *ranks, "user_id"]
    assert list(out.columns) == columns
    assert list(pd.unique(out["impression_id"])) == list(visits["impression_id"])
    lists = set()
    for row in visits.itertuples():
        # reference: the per-query merge of this query's rankings renamed to the impression id
        a = ranking({row.impression_id: A[row.query_id]})
        b = ranking({row.impression_id: B[row.query_id]})
        expected = abrank.interleave(a, b, seed=5, method=method)
        mine = out[out["impression_id"] == row.impression_id]
        assert list(mine["doc_id"]) == list(expected["doc_id"])
        assert list(mine["team"]) == list(expected["team"])
        for column in ranks:  # each shown document's rank in each source ranking
            source = (A if column == "rank_control" else B)[row.query_id]
            want = [source.index(d) + 1 if d in source else None for d in mine["doc_id"]]
            assert [None if pd.isna(v) else int(v) for v in mine[column]] == want
        assert set(mine["user_id"]) == {row.user_id} and set(mine["query_id"]) == {row.query_id}
        lists.add((row.query_id, tuple(mine["team"])))
    assert len(lists) > 2  # the same query is shown in different merges


def test_cascade_clicks_on_per_impression_lists() -> None:
    visits = pd.DataFrame({"impression_id": ["i1", "i2"], "query_id": ["q1", "q1"]})
    shown = abrank.interleave(ranking(A), ranking(B), impressions=visits, seed=1)
    shown["relevance"] = 1
    clicks = simulate_clicks(shown, None, Cascade(), seed=0)
    assert clicks.shape == (1, len(shown))


def test_impressions_without_the_columns_are_rejected() -> None:
    with pytest.raises(DataError, match="impressions: columns: expected impression_id, query_id"):
        abrank.interleave(ranking(A), ranking(B), impressions=pd.DataFrame({"query_id": ["q1"]}))
    twice = pd.DataFrame({"impression_id": ["i", "i"], "query_id": ["q1", "q2"]})
    with pytest.raises(DataError, match="row 2: impression_id: expected each impression once"):
        abrank.interleave(ranking(A), ranking(B), impressions=twice)


def test_fixed_lists_counts_queries_whose_impressions_all_show_one_list() -> None:
    from abrank.interleaving import fixed_lists

    visits = pd.DataFrame(
        {"impression_id": [f"i{k}" for k in range(21)], "query_id": ["q1", "q2"] * 10 + ["q3"]}
    )
    per_query = abrank.interleave(ranking(A), ranking(B), seed=2)
    reused = visits.merge(per_query, on="query_id", how="inner")  # one list per query
    fixed = fixed_lists(reused)
    # q1 and q2 are seen 10 times each with one list; q3 is in no ranking (no rows)
    assert fixed.to_dict() == {"queries": 2, "fixed": 2, "share": 1.0}
    assert "not merged afresh" in fixed.warning()
    fresh = fixed_lists(abrank.interleave(ranking(A), ranking(B), seed=2, impressions=visits))
    assert fresh.queries == 2 and fresh.fixed == 0 and fresh.warning() is None
    # by hand: two impressions of q1 alike, one of q2 shorter than the other
    log = pd.DataFrame(
        {
            "impression_id": ["a", "a", "b", "b", "c", "c", "d"],
            "query_id": ["q1", "q1", "q1", "q1", "q2", "q2", "q2"],
            "rank": [1, 2, 1, 2, 1, 2, 1],
            "doc_id": ["x", "y", "x", "y", "u", "v", "u"],
            "team": ["A", "B", "A", "B", "A", "B", "A"],
        }
    )
    assert fixed_lists(log).to_dict() == {"queries": 2, "fixed": 1, "share": 0.5}
    assert fixed_lists(log).warning() is None  # half, not most
