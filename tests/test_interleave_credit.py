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


# --------------------------------------------------------------------------- column kinds


def _as_outcomes(out: pd.DataFrame) -> dict:
    return {
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


def test_integer_teams_are_named_by_their_text():
    log = hand_log()
    log["team"] = log["team"].map({"bm25": 1, "rerank": 2}).astype(np.int64)
    out = impression_outcomes(log, control="1", treatment="2")
    # the hand-worked credits of test_hand_worked_clicks_credit, under other names
    assert out["treatment_credit"].tolist() == [2, 0, 0]
    assert out["control_credit"].tolist() == [1, 1, 0]
    assert out["outcome"].tolist() == [1, -1, 0]
    assert out["first_team"].tolist() == ["1", "2", "2"]
    with pytest.raises(
        DataError, match=r"expected the treatment team '2.0' in the log, got teams 1, 2"
    ):
        impression_outcomes(log, control="1", treatment="2.0")


def test_a_categorical_team_with_a_missing_value_credits_nobody_for_it():
    log = hand_log()
    teams = log["team"].astype(object)
    teams[2] = None  # i1's clicked rank 3: no team
    teams[4] = None  # i2's top result: no team
    log["team"] = pd.Categorical(teams, categories=["rerank", "bm25", "unused"])
    out = impression_outcomes(log, control="bm25", treatment="rerank")
    # i1: a (bm25) and b (rerank) clicked, c has no team: 1-1, a tie
    assert out["treatment_credit"].tolist() == [1, 0, 0]
    assert out["control_credit"].tolist() == [1, 1, 0]
    assert out["outcome"].tolist() == [0, -1, 0]
    assert out["clicked"].tolist() == [True, True, False]
    first = out["first_team"].tolist()
    assert first[0] == "bm25" and pd.isna(first[1]) and first[2] == "rerank"


TEAM_KINDS = {
    "object": lambda t: t.astype(object),
    "str": lambda t: t.astype("str"),
    "string[python]": lambda t: t.astype("string"),
    "categorical": lambda t: t.astype("category"),
    "categorical of ints, one missing": lambda t: pd.Series(
        pd.Categorical(t.map({"A": 1, "B": 2, "C": None})), index=t.index
    ),
    "int64": lambda t: t.map({"A": 1, "B": 2, "C": 3}).astype(np.int64),
    "Int64, one missing": lambda t: t.map({"A": 1, "B": 2, "C": None}).astype("Int64"),
    "float": lambda t: t.map({"A": 1.0, "B": 0.0, "C": -0.0}),
    "bool": lambda t: t.map({"A": True, "B": False, "C": False}),
    "object, mixed": lambda t: t.map({"A": 1, "B": "1", "C": 1.0}).astype(object),
}


@pytest.mark.parametrize("kind", list(TEAM_KINDS))
def test_every_kind_of_team_column_is_credited_by_the_text_of_each_row(kind):
    """Whatever the column's type, a row's team is its value as text (``astype(str)``)."""
    log = random_log(np.random.default_rng(5), 150)
    log["team"] = TEAM_KINDS[kind](log["team"])
    text = log.assign(team=log["team"].astype(str))
    names = sorted({t for t in text["team"] if isinstance(t, str)})
    control, treatment = names[0], names[-1]
    out = impression_outcomes(log, control=control, treatment=treatment)
    expected = reference(text, control, treatment, "clicks", 30.0)
    got = _as_outcomes(out)
    assert list(got) == list(expected)
    for key, row in expected.items():
        same = got[key][:5] == row[:5]
        first = got[key][5], row[5]
        assert same and (first[0] == first[1] or (pd.isna(first[0]) and pd.isna(first[1])))


# --------------------------------------------------------------------------- row layouts


def _layouts() -> dict[str, pd.DataFrame]:
    log = random_log(np.random.default_rng(23), 300)
    by_impression = log.sort_values(["impression_id", "rank"], kind="stable")
    shuffle = np.random.default_rng(1).random(len(log))
    blocks_unsorted = (
        log.assign(shuffle=shuffle)
        .sort_values(["impression_id", "shuffle"])
        .drop(columns="shuffle")
    )
    return {
        "shuffled rows": log,
        "blocks in rank order": by_impression,
        "blocks, ranks shuffled": blocks_unsorted,
        "float ranks": log.assign(rank=log["rank"] * 1.0),
        "fractional ranks": log.assign(rank=log["rank"] / 4),
        "a wide range of ranks": log.assign(rank=log["rank"] ** 4),
        "ranks near 2**40": log.assign(rank=log["rank"] + 2**40),
        "negative ranks": log.assign(rank=-log["rank"]),
        "Int64 ranks": log.assign(rank=log["rank"].astype("Int64")),
        "int8 ranks": by_impression.assign(rank=by_impression["rank"].astype(np.int8)),
        "float ids": by_impression.assign(impression_id=by_impression["impression_id"] * 0.5),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
def test_every_row_layout_matches_the_slow_reference(layout):
    log = _layouts()[layout]
    out = impression_outcomes(log, control="A", treatment="B")
    assert _as_outcomes(out) == reference(log, "A", "B", "clicks", 30.0)


def test_a_repeated_rank_in_a_log_of_blocks_is_named_by_the_same_row():
    log = pd.DataFrame(
        {
            "impression_id": [7, 7, 7, 8, 8, 8],
            "user_id": [1, 1, 1, 2, 2, 2],
            "rank": [1, 2, 3, 1, 2, 2],
            "team": ["A", "B", "A", "B", "A", "B"],
            "clicked": [0, 1, 0, 0, 0, 1],
        }
    )
    with pytest.raises(
        DataError,
        match=r"log: row 6: rank: expected each rank once per impression, got rank 2 twice "
        r"in impression 8",
    ):
        impression_outcomes(log, control="A", treatment="B")
    log.loc[5, "rank"] = 3
    log.loc[4, "user_id"] = 5
    with pytest.raises(
        DataError,
        match=r"log: row 5: user_id: expected one user per impression, got 5 and 2 "
        r"in impression 8",
    ):
        impression_outcomes(log, control="A", treatment="B")
    log.loc[4, "user_id"] = 2
    out = impression_outcomes(log, control="A", treatment="B")
    assert out["impression_id"].tolist() == [7, 8]
    assert out["outcome"].tolist() == [1, 1]
    assert out["first_team"].tolist() == ["A", "B"]
