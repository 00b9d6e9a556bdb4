"""The numerical core of counterfactual evaluation, against independent computations.

- the PBM's expected click metrics against the enumeration of every click pattern of a
  short list, and their gradients against finite differences;
- harvested propensities against the known examination of a simulated log;
- IPS and SNIPS estimates against a slow per-row implementation on a tiny log;
- the PBM check: a position-based log passes, a cascade log fails.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from abrank.demo.click_world import make_world
from abrank.designs.counterfactual.logs import candidate_lists, code_logs
from abrank.designs.counterfactual.samples import linearised
from abrank.stats.ips import (
    attractiveness,
    attractiveness_by_propensities,
    distinct_lists,
    list_sums,
    mean_estimate,
)
from abrank.stats.pbm import expected_metric, metric_gradient
from abrank.stats.pbm_check import pbm_check
from abrank.stats.propensity import harvest_propensities


def _enumerated(family: str, c: np.ndarray) -> float:
    """E[metric] by summing over all 2^k click patterns of independent clicks."""
    total = 0.0
    for pattern in itertools.product([0, 1], repeat=c.size):
        clicks = np.array(pattern)
        chance = float(np.prod(np.where(clicks == 1, c, 1 - c)))
        if family == "clicks":
            value = clicks.sum()
        elif family == "ctr":
            value = float(clicks.any())
        else:
            value = 1.0 / (np.argmax(clicks) + 1) if clicks.any() else 0.0
        total += chance * value
    return total


@pytest.mark.parametrize("family", ["click_rr", "ctr", "clicks"])
def test_expected_metrics_are_the_enumerated_expectations(family):
    rng = np.random.default_rng(4)
    c = rng.random((6, 5))
    c[0, 2] = 1.0  # a certain click
    c[1] = 0.0
    got = expected_metric(family, c)
    want = [_enumerated(family, row) for row in c]
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("family", ["click_rr", "ctr", "clicks"])
def test_gradients_are_the_finite_differences(family):
    rng = np.random.default_rng(5)
    c = rng.uniform(0.05, 0.9, (4, 6))
    gradient = metric_gradient(family, c)
    h = 1e-6
    for j in range(c.shape[1]):
        up, down = c.copy(), c.copy()
        up[:, j] += h
        down[:, j] -= h
        numeric = (expected_metric(family, up) - expected_metric(family, down)) / (2 * h)
        assert gradient[:, j] == pytest.approx(numeric, abs=1e-7)


def _coded(log: pd.DataFrame, control: str = "A"):
    frames = {arm: g.drop(columns="arm").reset_index(drop=True) for arm, g in log.groupby("arm")}
    return code_logs(frames, control, "user_id", {arm: f"{arm}.csv" for arm in frames})


def test_harvested_propensities_recover_the_examination():
    # 40,000 impressions of two rankers over 200 queries: the bootstrap's interval of rank 10
    # is about +-0.01 wide here, so 0.03 is three times what the noise allows
    rng = np.random.default_rng(11)
    world = make_world(
        rng, examination=np.array([1, 0.7, 0.5, 0.4, 0.33, 0.28, 0.24, 0.2, 0.18, 0.15])
    )
    logs = _coded(world.log(rng, 40_000, {"A": 0.5, "B": 0.5}))
    rows = logs.rows
    found = harvest_propensities(
        rows.pair, rows.rank, rows.clicked, rows.unit, max_rank=10, resamples=30, seed=2
    )
    assert found.converged
    assert found.estimate == pytest.approx(world.examination, abs=0.03)
    covered = (found.ci_low <= world.examination) & (world.examination <= found.ci_high)
    assert covered.sum() >= 8
    assert all(check.agrees is not False for check in found.adjacent[:5])


def test_a_rank_no_pair_crosses_has_no_estimate():
    # one ranker, one list per query: nothing is ever shown at two ranks
    rows = pd.DataFrame(
        {"pair": [0, 1, 0, 1], "rank": [1, 2, 1, 2], "clicked": [1, 0, 0, 1], "unit": [0, 0, 1, 1]}
    )
    found = harvest_propensities(
        rows["pair"], rows["rank"], rows["clicked"], rows["unit"], max_rank=2, resamples=0
    )
    assert np.isnan(found.estimate).all() and found.pairs == 0


TINY = pd.DataFrame(
    [
        # impression, user, rank, doc, clicked, query, arm
        (1, "u1", 1, "a", 1, "q1", "A"),
        (1, "u1", 2, "b", 0, "q1", "A"),
        (1, "u1", 3, "c", 1, "q1", "A"),
        (2, "u2", 1, "a", 0, "q1", "A"),
        (2, "u2", 2, "b", 1, "q1", "A"),
        (2, "u2", 3, "c", 0, "q1", "A"),
        (3, "u2", 1, "x", 1, "q2", "A"),
        (3, "u2", 2, "y", 0, "q2", "A"),
        (3, "u2", 3, "z", 0, "q2", "A"),
        (4, "u3", 1, "b", 1, "q1", "B"),
        (4, "u3", 2, "a", 1, "q1", "B"),
        (4, "u3", 3, "d", 0, "q1", "B"),
        (5, "u4", 1, "y", 0, "q2", "B"),
        (5, "u4", 2, "x", 1, "q2", "B"),
        (5, "u4", 3, "z", 1, "q2", "B"),
    ],
    columns=["impression_id", "user_id", "rank", "doc_id", "clicked", "query", "arm"],
)
P = np.array([1.0, 0.6, 0.4])
CANDIDATE = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2", "q2"],
        "doc_id": ["d", "b", "e", "z", "x", "y"],  # e was never logged for q1
        "rank": [1, 2, 3, 1, 2, 3],
    }
)


def _slow_alpha(estimator: str) -> dict[tuple[str, str], float]:
    clicks: dict = {}
    weight: dict = {}
    shown: dict = {}
    for row in TINY.itertuples():
        key = (row.query, row.doc_id)
        p = P[row.rank - 1]
        clicks[key] = clicks.get(key, 0.0) + (
            row.clicked if estimator == "snips" else row.clicked / p
        )
        weight[key] = weight.get(key, 0.0) + p
        shown[key] = shown.get(key, 0) + 1
    if estimator == "snips":
        return {key: clicks[key] / weight[key] for key in clicks}
    return {key: clicks[key] / shown[key] for key in clicks}


def _slow_metric(family: str, docs: list[str], query: str, alpha: dict) -> float:
    c = [P[j] * alpha.get((query, d), 0.0) for j, d in enumerate(docs)]
    if family == "clicks":
        return sum(c)
    c = [min(value, 1.0) for value in c]  # a click probability (alpha may exceed 1 / p here)
    miss = 1.0
    value = 0.0
    for j, cj in enumerate(c):
        if family == "click_rr":
            value += miss * cj / (j + 1)
        miss *= 1 - cj
    return 1 - miss if family == "ctr" else value


@pytest.mark.parametrize("estimator", ["snips", "ips"])
@pytest.mark.parametrize("family", ["click_rr", "ctr", "clicks"])
def test_estimates_equal_a_slow_per_row_implementation(estimator, family):
    logs = _coded(TINY)
    rows = logs.rows
    alpha = _slow_alpha(estimator)
    lists, counts = candidate_lists(logs, CANDIDATE, 3)
    assert counts == {"queries": 2, "logged_queries": 2, "logged_queries_without_list": 0}
    per_query = logs.logger_impressions_per_query()
    index = np.where(rows.logger, rows.query, -1)
    got = list_sums(rows, lists, per_query, index, P, family, 3, estimator)
    # the candidate over the logging arm's three impressions: q1, q1, q2
    want = (
        2 * _slow_metric(family, ["d", "b", "e"], "q1", alpha)
        + _slow_metric(family, ["z", "x", "y"], "q2", alpha)
    ) / 3
    assert got.estimate == pytest.approx(want, rel=1e-12)
    assert got.numerator.sum() / got.denominator.sum() == pytest.approx(want, rel=1e-12)
    assert got.denominator.sum() == 3
    # the logging arm scored by the model over its own lists
    own = list_sums(
        rows,
        logs.logger_lists,
        np.ones(3),
        np.where(rows.logger, np.arange(rows.logger.size), -1),
        P,
        family,
        3,
        estimator,
    )
    lists_a = {1: (["a", "b", "c"], "q1"), 2: (["a", "b", "c"], "q1"), 3: (["x", "y", "z"], "q2")}
    want_own = np.mean([_slow_metric(family, d, q, alpha) for d, q in lists_a.values()])
    assert own.estimate == pytest.approx(want_own, rel=1e-12)
    # d was logged for q1 (by B) and e never was: one unsupported slot of six
    assert lists.unsupported.sum() == 1
    assert attractiveness(rows, P, estimator)[0].size == len(logs.pairs)


def test_the_pbm_check_passes_a_position_based_log_and_fails_a_cascade():
    outcomes = {}
    for model in ("pbm", "cascade"):
        rng = np.random.default_rng(21)
        world = make_world(rng)
        logs = _coded(world.log(rng, 20_000, {"A": 0.5, "B": 0.5}, model=model))
        rows = logs.rows
        p = harvest_propensities(
            rows.pair, rows.rank, rows.clicked, rows.unit, max_rank=10, resamples=0
        ).estimate
        alpha, _ = attractiveness(rows, p, "snips")
        check = pbm_check(
            rows.impression, rows.rank, rows.clicked, p[rows.rank - 1] * alpha[rows.pair], rows.unit
        )
        outcomes[model] = check
    assert not outcomes["pbm"].fails and outcomes["pbm"].p_value > 0.05
    assert outcomes["cascade"].fails and outcomes["cascade"].p_value < 1e-6
    assert outcomes["pbm"].df == 18


def test_the_pbm_check_does_not_depend_on_the_order_of_the_impressions():
    """Equal lists expect equal clicks above each rank, wherever their impressions lie in
    the arrays: renumbering the impressions and shuffling the rows leaves the thirds and
    the statistic as they were (the DuckDB engine numbers impressions in its own order)."""
    rng = np.random.default_rng(5)
    world = make_world(rng, queries=20)
    rows = _coded(world.log(rng, 4000, {"A": 0.5, "B": 0.5})).rows
    p = world.examination
    alpha, _ = attractiveness(rows, p, "snips")
    expected = p[rows.rank - 1] * alpha[rows.pair]
    first = pbm_check(rows.impression, rows.rank, rows.clicked, expected, rows.unit)
    renumber = rng.permutation(int(rows.impression.max()) + 1)
    shuffle = rng.permutation(rows.impression.size)
    again = pbm_check(
        renumber[rows.impression][shuffle],
        rows.rank[shuffle],
        rows.clicked[shuffle],
        expected[shuffle],
        rows.unit[shuffle],
    )
    assert [r["rows"] for r in again.to_dict()["table"]] == [
        r["rows"] for r in first.to_dict()["table"]
    ]
    assert again.chi2 == pytest.approx(first.chi2, rel=1e-9)


def test_distinct_lists_score_as_every_list_does():
    rng = np.random.default_rng(3)
    world = make_world(rng, queries=30)
    logs = _coded(world.log(rng, 3000, {"A": 0.5, "B": 0.5}))
    rows = logs.rows
    p = world.examination
    alpha, _ = attractiveness(rows, p, "snips")
    distinct, counts = distinct_lists(logs.logger_lists)
    assert counts.sum() == logs.n_logger
    assert distinct.pairs.shape[0] == len(np.unique(logs.logger_lists.pairs, axis=0))
    every = mean_estimate(logs.logger_lists, np.ones(logs.n_logger), alpha, p, "click_rr", 10)
    once = mean_estimate(distinct, counts, alpha, p, "click_rr", 10)
    assert once == pytest.approx(every, rel=1e-12)


def test_the_linearised_values_carry_the_ratio_and_the_delta_methods_variance():
    sums = pd.DataFrame({"impressions": [2.0, 1.0, 0.0, 3.0], "m": [1.0, 0.5, 0.2, 0.9]})
    values = linearised(sums, "m")
    ratio = 2.6 / 6.0
    assert values.mean() == pytest.approx(ratio, rel=1e-12)
    # Var(sum M / sum D) by the delta method, worked out by hand
    z = sums["m"] - ratio * sums["impressions"]
    by_hand = (z**2).sum() * 4 / 3 / 6.0**2
    assert values.var(ddof=1) / 4 == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("estimator", ["snips", "ips"])
def test_attractiveness_for_many_propensities_is_each_ones(estimator):
    logs = _coded(TINY)
    draws = np.array([P, [1.0, 0.5, 0.25], [1.0, 0.9, 0.8]])
    many = attractiveness_by_propensities(logs.rows, draws, estimator)
    for b, p in enumerate(draws):
        assert many[:, b] == pytest.approx(attractiveness(logs.rows, p, estimator)[0], rel=1e-12)


@pytest.mark.parametrize("family", ["click_rr", "ctr", "clicks"])
def test_with_clicks_at_their_expectation_the_estimate_is_the_models_exact_value(family):
    # one impression of every query per ranker, each result "clicked" p_r * alpha (its
    # expected click): SNIPS recovers every alpha exactly, so the candidate's estimate is
    # the PBM's exact expectation of its lists (by the enumeration of click patterns)
    rng = np.random.default_rng(17)
    world = make_world(rng, queries=12, pool=8, k=4, noise={"A": 0.3, "B": 0.3})
    n, k = world.alpha.shape[0], world.k
    rows = []
    for arm in ("A", "B"):
        for q in range(n):
            for r, d in enumerate(world.lists[arm][q]):
                chance = world.examination[r] * world.alpha[q, d]
                rows.append(
                    (f"{arm}{q}", f"u{arm}{q}", r + 1, str(q * 1000 + d), chance, str(q), arm)
                )
    log = pd.DataFrame(rows, columns=TINY.columns)
    logs = _coded(log)
    shown = [
        sorted(set(a) | set(b)) for a, b in zip(world.lists["A"], world.lists["B"], strict=True)
    ]
    best = [sorted(docs, key=lambda d: -world.alpha[q, d])[:k] for q, docs in enumerate(shown)]
    candidate = pd.DataFrame(
        [
            (str(q), str(q * 1000 + d), r + 1)
            for q, docs in enumerate(best)
            for r, d in enumerate(docs)
        ],
        columns=["query_id", "doc_id", "rank"],
    )
    lists, _ = candidate_lists(logs, candidate, k)
    assert not lists.unsupported.any()
    got = list_sums(
        logs.rows,
        lists,
        logs.logger_impressions_per_query(),
        np.where(logs.rows.logger, logs.rows.query, -1),
        world.examination,
        family,
        k,
    )
    exact = np.mean(
        [_enumerated(family, world.examination * world.alpha[q, best[q]]) for q in range(n)]
    )
    assert got.estimate == pytest.approx(exact, rel=1e-12)
