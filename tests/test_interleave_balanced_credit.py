"""Balanced interleaving credit against the rule of Joachims (2003) as Chapelle, Joachims,
Radlinski & Yue state it (TOIS 2012, section 2.2), written out slowly from the paper."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.interleaving import impression_outcomes


def paper_outcome(a: list[str], b: list[str], shown: list[str], clicked: list[bool]) -> int:
    """+1 when B (the treatment) is preferred, -1 when A is, 0 for a tie.

    Chapelle et al. 2012, 2.2: let c_max be the lowest-ranked click in the interleaved list
    I; k = min{ j : I[c_max] = a_j or I[c_max] = b_j }; h_a = |{clicked i : i in a_1..a_k}|,
    h_b likewise; A wins when h_a > h_b, B when h_b > h_a, else a tie (also with no click).
    """
    clicks = [r for r, c in enumerate(clicked) if c]
    if not clicks:
        return 0
    d = shown[max(clicks)]
    k = min(j for j in range(1, max(len(a), len(b)) + 1) if d in a[:j] or d in b[:j])
    h_a = sum(shown[r] in a[:k] for r in clicks)
    h_b = sum(shown[r] in b[:k] for r in clicks)
    return int(np.sign(h_b - h_a))


def rankings(lists: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, d, r + 1) for q, docs in lists.items() for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])


def random_case(rng: np.random.Generator, queries: int):
    a, b = {}, {}
    for q in range(queries):
        pool = [f"d{j}" for j in range(rng.integers(2, 12))]
        a[f"q{q}"] = list(rng.permutation(pool)[: rng.integers(1, len(pool) + 1)])
        b[f"q{q}"] = list(rng.permutation(pool)[: rng.integers(1, len(pool) + 1)])
    return a, b


@pytest.mark.parametrize("seed", range(8))
def test_balanced_credit_is_the_papers_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = random_case(rng, 150)
    shown = abrank.interleave(
        rankings(a), rankings(b), method="balanced", seed=seed, depth=int(rng.integers(3, 11))
    )
    log = shown.assign(
        impression_id=shown["query_id"],
        user_id=shown["query_id"],
        clicked=rng.random(len(shown)) < 0.35,
    )
    got = impression_outcomes(log, control="control", treatment="treatment", method="balanced")
    outcome = dict(zip(got["impression_id"], got["outcome"]))
    for q, rows in log.groupby("query_id", sort=False):
        rows = rows.sort_values("rank")
        expected = paper_outcome(a[q], b[q], list(rows["doc_id"]), list(rows["clicked"]))
        assert outcome[q] == expected, q


def test_a_click_on_a_document_both_rank_alike_is_a_tie() -> None:
    # both rankings put "a" first: the lone click on it is in both top-1 prefixes
    a, b = {"q": ["a", "b", "c"]}, {"q": ["a", "c", "b"]}
    shown = abrank.interleave(rankings(a), rankings(b), method="balanced", seed=0)
    log = shown.assign(impression_id="i", user_id="u", clicked=shown["doc_id"] == "a")
    team = impression_outcomes(log, control="control", treatment="treatment")
    balanced = impression_outcomes(log, control="control", treatment="treatment", method="balanced")
    assert balanced["outcome"].tolist() == [0]
    assert team["outcome"].tolist() != [0]  # the row's team alone credits one side
