"""Per-impression credit, win / tie / loss and delta_AB against a slow per-impression reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from abrank.errors import ConfigError, DataError
from abrank.interleaving import delta_ab, impression_outcomes


def hand_log() -> pd.DataFrame:
    rows = [
        # impression, user, rank, doc, team, clicked, dwell
        ("i1", "u1", 1, "a", "bm25", 1, 40.0),
        ("i1", "u1", 2, "b", "rerank", 1, 5.0),
        ("i1", "u1", 3, "c", "rerank", 1, 31.0),
        ("i2", "u1", 2, "d", "bm25", 1, 60.0),  # rows out of rank order
        ("i2", "u1", 1, "e", "rerank", 0, np.nan),
        ("i3", "u2", 1, "f", "rerank", 0, np.nan),
        ("i3", "u2", 2, "g", "bm25", 0, np.nan),
    ]
    columns = ["impression_id", "user_id", "rank", "doc_id", "team", "clicked", "dwell"]
    return pd.DataFrame(rows, columns=columns)


def test_hand_worked_clicks_credit():
    out = impression_outcomes(hand_log(), control="bm25", treatment="rerank")
    assert list(out.columns) == [
        "impression_id",
        "user_id",
        "treatment_credit",
        "control_credit",
        "outcome",
        "clicked",
        "first_team",
    ]
    assert out["impression_id"].tolist() == ["i1", "i2", "i3"]
    assert out["user_id"].tolist() == ["u1", "u1", "u2"]
    assert out["treatment_credit"].tolist() == [2, 0, 0]
    assert out["control_credit"].tolist() == [1, 1, 0]
    assert out["outcome"].tolist() == [1, -1, 0]
    assert out["clicked"].tolist() == [True, True, False]
    assert out["first_team"].tolist() == ["bm25", "rerank", "rerank"]


def test_hand_worked_satisfied_clicks_credit():
    out = impression_outcomes(hand_log(), control="bm25", treatment="rerank", credit="sat_clicks")
    # i1: a (40 s) for bm25, c (31 s) for rerank, b (5 s) not satisfied: a tie
    assert out["treatment_credit"].tolist() == [1, 0, 0]
    assert out["control_credit"].tolist() == [1, 1, 0]
    assert out["outcome"].tolist() == [0, -1, 0]
    assert out["clicked"].tolist() == [True, True, False]  # any click, whatever the credit
    stricter = impression_outcomes(
        hand_log(), control="bm25", treatment="rerank", credit="sat_clicks", sat_dwell=35
    )
    assert stricter["outcome"].tolist() == [-1, -1, 0]


def random_log(rng: np.random.Generator, n_impressions: int) -> pd.DataFrame:
    """Impressions of 3..8 results from three teams, rows shuffled, ranks not from 1."""
    parts = []
    for i in range(n_impressions):
        size = int(rng.integers(3, 9))
        parts.append(
            pd.DataFrame(
                {
                    "impression_id": i * 7 % 1009,  # int ids, not in row order
                    "user_id": f"u{i % 37}",
                    "rank": rng.permutation(np.arange(size) * 2 + 3),
                    "doc_id": [f"d{j}" for j in range(size)],
                    "team": rng.choice(["A", "B", "C"], size=size, p=[0.4, 0.4, 0.2]),
                    "clicked": rng.random(size) < 0.3,
                    "dwell": np.where(rng.random(size) < 0.1, np.nan, rng.exponential(30, size)),
                }
            )
        )
    return pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=3)


def reference(log: pd.DataFrame, control: str, treatment: str, credit: str, sat_dwell: float):
    """One impression at a time, in plain Python."""
    rows = {}
    for impression in dict.fromkeys(log["impression_id"]):
        part = log[log["impression_id"] == impression]
        counts = {control: 0, treatment: 0}
        for team, clicked, dwell in zip(part["team"], part["clicked"], part["dwell"]):
            ok = clicked and (credit == "clicks" or (dwell == dwell and dwell >= sat_dwell))
            if ok and team in counts:
                counts[team] += 1
        t, c = counts[treatment], counts[control]
        top = part.loc[part["rank"].idxmin()]
        rows[impression] = (
            part["user_id"].iloc[0],
            t,
            c,
            1 if t > c else (-1 if t < c else 0),
            bool(part["clicked"].any()),
            top["team"],
        )
    return rows


@pytest.mark.parametrize("credit", ["clicks", "sat_clicks"])
@pytest.mark.parametrize(("control", "treatment"), [("A", "B"), ("A", "C"), ("C", "B")])
def test_matches_a_slow_reference_on_a_random_three_team_log(credit, control, treatment):
    log = random_log(np.random.default_rng(17), 400)
    out = impression_outcomes(log, control=control, treatment=treatment, credit=credit)
    expected = reference(log, control, treatment, credit, 30.0)
    assert out["impression_id"].tolist() == list(expected)
    got = {
        row.impression_id: (
            row.user_id,
            row.treatment_credit,
            row.control_credit,
            row.outcome,
            bool(row.clicked),
            row.first_team,
        )
        for row in out.itertuples()
    }
    assert got == expected
    wins, ties, losses = (int((out["outcome"] == v).sum()) for v in (1, 0, -1))
    assert wins + ties + losses == len(expected)


def test_delta_ab_by_hand():
    assert delta_ab(3, 2, 1) == pytest.approx((3 + 1) / 6 - 0.5)
    assert delta_ab(0, 5, 0) == 0.0
    assert delta_ab(4, 0, 0) == 0.5
    assert delta_ab(0, 0, 4) == -0.5


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ((0, 0, 0), r"wins, ties, losses: expected at least one impression, got none"),
        ((-1, 2, 3), r"wins: expected a whole number >= 0, got -1"),
        ((1, 2.5, 3), r"ties: expected a whole number >= 0, got 2.5"),
    ],
)
def test_delta_ab_bad_counts(counts, message):
    with pytest.raises(ConfigError, match=message):
        delta_ab(*counts)


def test_a_log_without_a_team_column_is_named():
    with pytest.raises(
        DataError,
        match=r"log: columns: expected impression_id, user_id, rank, team, clicked, got no team",
    ):
        impression_outcomes(hand_log().drop(columns="team"), control="bm25", treatment="rerank")


def test_a_team_not_in_the_log_is_named():
    with pytest.raises(
        DataError,
        match=r"log: team: expected the treatment team 'reranker' in the log, got teams "
        r"bm25, rerank",
    ):
        impression_outcomes(hand_log(), control="bm25", treatment="reranker")


def test_a_repeated_rank_is_named():
    log = hand_log()
    log.loc[2, "rank"] = 2
    with pytest.raises(
        DataError,
        match=r"log: row 3: rank: expected each rank once per impression, got rank 2 twice "
        r"in impression 'i1'",
    ):
        impression_outcomes(log, control="bm25", treatment="rerank")


def test_a_clicked_value_that_is_not_0_or_1_is_named():
    log = hand_log()
    log.loc[4, "clicked"] = 2
    with pytest.raises(DataError, match=r"log: row 5: clicked: expected 0/1 or true/false, got 2"):
        impression_outcomes(log, control="bm25", treatment="rerank")


def test_an_impression_with_two_users_is_named():
    log = hand_log()
    log.loc[1, "user_id"] = "u9"
    with pytest.raises(
        DataError,
        match=r"log: row 2: user_id: expected one user per impression, got 'u9' and 'u1' "
        r"in impression 'i1'",
    ):
        impression_outcomes(log, control="bm25", treatment="rerank")


def test_satisfied_clicks_need_a_dwell_column():
    with pytest.raises(DataError, match=r"log: columns: .*dwell, got no dwell"):
        impression_outcomes(
            hand_log().drop(columns="dwell"),
            control="bm25",
            treatment="rerank",
            credit="sat_clicks",
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"credit": "dwell"}, r"credit: expected one of clicks, sat_clicks, got 'dwell'"),
        ({"treatment": "bm25"}, r"control, treatment: expected two different team names"),
        ({"sat_dwell": -1.0}, r"sat_dwell: expected a number of seconds >= 0, got -1.0"),
    ],
)
def test_bad_options_are_config_errors(options, message):
    arguments = {"control": "bm25", "treatment": "rerank", **options}
    with pytest.raises(ConfigError, match=message):
        impression_outcomes(hand_log(), **arguments)
