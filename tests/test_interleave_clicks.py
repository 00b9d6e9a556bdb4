"""Click models: simulated click rates against the models' exact probabilities."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from abrank.errors import ConfigError, DataError
from abrank.interleaving import CLICK_PROFILES, Cascade, PositionBased, simulate_clicks

N = 200_000  # simulated impressions: Monte-Carlo standard errors below 0.0012


def within_mc_error(observed: np.ndarray, expected: np.ndarray, n: int) -> bool:
    """Each observed frequency within 5 standard errors of its exact probability."""
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-12) / n)
    return bool((np.abs(observed - expected) <= 5 * se + 1e-12).all())


def one_list(grades: list[float | None], query: str = "q1") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": query,
            "rank": np.arange(1, len(grades) + 1),
            "doc_id": [f"{query}-d{i}" for i in range(len(grades))],
            "relevance": [np.nan if g is None else g for g in grades],
        }
    )


def test_position_based_click_rates_are_examination_times_attractiveness():
    grades = [4, 0, 2, None, 3, 1]  # None: unjudged, clicked like grade 0
    shown = one_list(grades)
    clicks = simulate_clicks(shown, None, PositionBased(), impressions=N, seed=1)
    assert clicks.shape == (N, len(grades)) and clicks.dtype == bool
    attract = {0: 0.05, 1: 0.3, 2: 0.5, 3: 0.7, 4: 0.95}
    expected = np.array([attract[g or 0] / rank for rank, g in enumerate(grades, start=1)])
    assert within_mc_error(clicks.mean(axis=0), expected, N)


def test_position_based_with_given_examination_and_eta():
    shown = one_list([2, 2, 2, 2])
    model = PositionBased(examination=(0.9, 0.5, 0.2), attractiveness={2: 0.6})
    clicks = simulate_clicks(shown, None, model, impressions=N, seed=2)
    # rank 4 is past the examination table: never examined
    assert within_mc_error(clicks.mean(axis=0), np.array([0.54, 0.30, 0.12, 0.0]), N)
    steep = PositionBased(attractiveness={2: 1.0}, eta=2.0)
    clicks = simulate_clicks(shown, None, steep, impressions=N, seed=3)
    assert within_mc_error(clicks.mean(axis=0), np.array([1, 1 / 4, 1 / 9, 1 / 16]), N)


def test_position_based_clicks_are_independent_across_ranks():
    shown = one_list([4, 4])
    clicks = simulate_clicks(shown, None, PositionBased(), impressions=N, seed=4)
    both = (clicks[:, 0] & clicks[:, 1]).mean()
    assert within_mc_error(np.array([both]), np.array([0.95 * 0.95 / 2]), N)


def exact_cascade(attract: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(first click at each rank) and P(click at each rank) of the cascade with stops."""
    not_before = np.concatenate(([1.0], np.cumprod(1 - attract)[:-1]))
    first = not_before * attract
    examined = np.concatenate(([1.0], np.cumprod(1 - attract * stop)[:-1]))
    return first, examined * attract


def test_cascade_first_click_and_click_rates_are_exact():
    grades = [1, 4, 0, 3, 2]
    model = Cascade()
    navigational = CLICK_PROFILES["navigational"]
    attract = np.array([navigational["attractiveness"][g] for g in grades])
    stop = np.array([navigational["stop"][g] for g in grades])
    # two queries, rows shuffled: each list is scanned in its own rank order
    shown = pd.concat([one_list(grades, "q1"), one_list(grades[::-1], "q2")], ignore_index=True)
    shuffled = shown.sample(frac=1.0, random_state=5).reset_index(drop=True)
    clicks = simulate_clicks(shuffled, None, model, impressions=N, seed=6)
    for query, order in (("q1", slice(None)), ("q2", slice(None, None, -1))):
        rows = shuffled.index[shuffled["query_id"] == query]
        by_rank = clicks[:, rows[np.argsort(shuffled.loc[rows, "rank"].to_numpy())]]
        first_expected, click_expected = exact_cascade(attract[order], stop[order])
        any_click = by_rank.any(axis=1)
        first_rank = np.where(any_click, by_rank.argmax(axis=1), -1)
        first_observed = np.array([(first_rank == r).mean() for r in range(len(grades))])
        assert within_mc_error(first_observed, first_expected, N)
        assert within_mc_error(
            np.array([1 - any_click.mean()]), np.array([np.prod(1 - attract)]), N
        )
        assert within_mc_error(by_rank.mean(axis=0), click_expected, N)


def test_pure_cascade_clicks_at_most_once():
    model = Cascade(attractiveness={0: 0.3, 1: 0.6}, stop={0: 1.0, 1: 1.0})
    clicks = simulate_clicks(one_list([0, 1, 0, 1]), None, model, impressions=50_000, seed=7)
    assert clicks.sum(axis=1).max() == 1


def test_grades_come_from_judgments_and_unjudged_results_take_grade_zero():
    shown = one_list([None, None, None]).drop(columns="relevance")
    judgments = pd.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": ["q1-d0", "q1-d2"], "relevance": [1.0, 0.0]}
    )
    model = PositionBased(examination=(1.0, 1.0, 1.0), attractiveness={0: 0.0, 1: 1.0})
    clicks = simulate_clicks(shown, judgments, model, impressions=100, seed=8)
    assert clicks[:, 0].all() and not clicks[:, 1:].any()


def test_the_same_seed_gives_the_same_clicks():
    shown = one_list([1, 2, 3])
    a = simulate_clicks(shown, None, Cascade(), impressions=10, seed=9)
    b = simulate_clicks(shown, None, Cascade(), impressions=10, seed=9)
    c = simulate_clicks(shown, None, Cascade(), impressions=10, seed=10)
    assert (a == b).all() and not (a == c).all()


def test_models_to_dict_are_json_safe():
    model = PositionBased(examination=(1, 0.5), attractiveness={0: 0.1, 1: 0.9})
    assert json.loads(json.dumps(model.to_dict())) == {
        "model": "pbm",
        "examination": [1.0, 0.5],
        "eta": 1.0,
        "attractiveness": {"0": 0.1, "1": 0.9},
    }
    assert Cascade().to_dict()["stop"] == {"0": 0.2, "1": 0.3, "2": 0.5, "3": 0.7, "4": 0.9}


def test_a_grade_the_model_does_not_list_is_named():
    with pytest.raises(
        DataError,
        match=r"attractiveness: expected a probability for every "
        r"grade shown \(0, 1 are given\), got grade 3",
    ):
        simulate_clicks(one_list([1, 3]), None, PositionBased(attractiveness={0: 0.1, 1: 0.5}))
    with pytest.raises(DataError, match=r"got unjudged results \(grade 0\)"):
        simulate_clicks(one_list([1, None]), None, PositionBased(attractiveness={1: 0.5}))


def test_a_repeated_rank_is_named():
    shown = one_list([1, 2])
    shown.loc[1, "rank"] = 1
    with pytest.raises(
        DataError,
        match=r"shown: row 2: rank: expected each rank once per "
        r"query, got rank 1 twice in query 'q1'",
    ):
        simulate_clicks(shown, None, Cascade())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: PositionBased(attractiveness={0: 1.5}),
            r"attractiveness\[0\]: expected "
            r"probabilities in \[0, 1\], got 1.5",
        ),
        (
            lambda: PositionBased(examination=(1.0, -0.1)),
            r"examination: expected "
            r"probabilities in \[0, 1\], got -0.1",
        ),
        (lambda: Cascade(stop={}), r"stop: expected a mapping of grade to probability"),
        (lambda: PositionBased(eta=-1), r"eta: expected a number >= 0, got -1"),
    ],
)
def test_bad_model_parameters_are_config_errors(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_bad_impressions_and_missing_columns():
    with pytest.raises(ConfigError, match=r"impressions: expected a whole number >= 1, got 0"):
        simulate_clicks(one_list([1]), None, Cascade(), impressions=0)
    with pytest.raises(
        DataError,
        match=r"shown: columns: expected relevance when no "
        r"judgments are given",
    ):
        simulate_clicks(one_list([1]).drop(columns="relevance"), None, Cascade())
    with pytest.raises(
        DataError,
        match=r"shown: columns: expected query_id, rank, doc_id, "
        r"got no rank",
    ):
        simulate_clicks(one_list([1]).drop(columns="rank"), None, Cascade())
