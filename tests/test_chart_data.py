"""The numbers behind the charts (abrank.readout.charts), on readouts small enough to count
by hand: every expected bin, share and series below is worked out in the comments, not
taken from the code."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from abrank.readout import Readout
from abrank.readout.charts import (
    bootstrap_panels,
    bootstrap_treatments,
    ctr_by_rank,
    curve_depths,
    delta_distributions,
    distribution_comparisons,
    first_relevant_shares,
    metric_curves,
    outcomes,
    overall_forest,
    preference_distribution,
    segment_forests,
    trend_panels,
    unit_distribution,
    unit_value_range,
    units_per_arm,
)

ARMS = [
    {"name": "old", "label": "Old ranker", "role": "control"},
    {"name": "new", "label": "New ranker", "role": "treatment"},
]


def comparison(metric: str, treatment: str = "new", segment: str | None = None, **fields):
    """A comparison of a hand-built summary: only the fields a test names, over defaults."""
    return {
        "metric": metric,
        "treatment": treatment,
        "segment": segment,
        "design": "paired",
        "delta": 0.1,
        "ci": [0.05, 0.15],
        "verdict": "win",
        "n": 10,
        "wins": 6,
        "ties": 3,
        "losses": 1,
        **fields,
    }


def summary(comparisons=(), arms=ARMS, **fields) -> dict:
    return {
        "arms": list(arms),
        "metrics": ["mrr@10", "ndcg@10"],
        "primary_metric": "mrr@10",
        "comparisons": list(comparisons),
        **fields,
    }


def readout(summary_dict: dict, per_query: pd.DataFrame | None = None, **parts) -> Readout:
    return Readout(
        summary_dict,
        per_query if per_query is not None else pd.DataFrame(columns=["arm", "query_id"]),
        parts.pop("curves", pd.DataFrame(columns=["arm", "metric", "k", "value"])),
        parts.pop("first_relevant", pd.DataFrame(columns=["arm", "query_id", "rank"])),
        **parts,
    )


def as_json(data) -> object:
    """``data.to_dict()`` through strict JSON (no NaN allowed) and back."""
    return json.loads(json.dumps(data.to_dict(), allow_nan=False))


# --------------------------------------------------------------------------- forests


def test_the_overall_forest_has_a_row_per_overall_comparison_in_order():
    comps = [
        comparison("mrr@10", delta=0.2, ci=[0.1, 0.3], verdict="win"),
        comparison("ndcg@10", delta=-0.05, ci=[float("nan"), 0.01], verdict=None),
        comparison("mrr@10", segment="mobile", delta=0.4),
    ]
    forest = overall_forest(summary(comps))
    assert [(r.metric, r.delta, r.interval, r.verdict) for r in forest.rows] == [
        ("mrr@10", 0.2, (0.1, 0.3), "win"),
        ("ndcg@10", -0.05, None, "inconclusive"),  # a NaN bound: no interval drawn
    ]
    assert not forest.several_treatments
    assert as_json(forest)["rows"][1] == {
        "metric": "ndcg@10",
        "treatment": "new",
        "segment": None,
        "delta": -0.05,
        "ci": None,
        "verdict": "inconclusive",
    }
    assert overall_forest(summary([comparison("mrr@10", segment="mobile")])) is None


def test_segment_forests_one_per_metric_with_the_overall_delta_for_one_treatment():
    comps = [
        comparison("mrr@10", delta=0.25),
        comparison("ndcg@10", delta=0.125),
        comparison("ndcg@10", segment="mobile", delta=0.5),
        comparison("mrr@10", segment="mobile", delta=0.75, ci=[0.5, 1.0]),
        comparison("mrr@10", segment="desktop", delta=-0.25, verdict="loss"),
    ]
    forests = segment_forests(summary(comps))
    assert [f.metric for f in forests] == ["ndcg@10", "mrr@10"]  # the order met
    assert [f.overall for f in forests] == [0.125, 0.25]
    assert [(r.segment, r.delta, r.verdict) for r in forests[1].rows] == [
        ("mobile", 0.75, "win"),
        ("desktop", -0.25, "loss"),
    ]
    # two treatments share a chart: no single overall delta to draw
    boost = [comparison("mrr@10", treatment="boost", segment="mobile"), *comps]
    arms = [*ARMS, {"name": "boost", "label": "Boost", "role": "treatment"}]
    assert [f.overall for f in segment_forests(summary(boost, arms=arms))] == [None, None]


# --------------------------------------------------------------------------- distributions


def test_paired_deltas_fall_into_loss_tie_and_win_bins_counted_by_hand():
    # deltas (new - old): q1 -0.5, q2 0, q3 0, q4 +0.25, q5 +1.0; q6 is only in one arm,
    # q7 has no treatment value: both left out
    per_query = pd.DataFrame(
        {
            "arm": ["old"] * 7 + ["new"] * 6,
            "query_id": ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]
            + ["q5", "q4", "q3", "q2", "q1", "q7"],
            "mrr@10": [1.0, 0.5, 0.0, 0.25, 0.0, 1.0, 0.5] + [1.0, 0.5, 0.0, 0.5, 0.5, np.nan],
        }
    )
    data = delta_distributions(readout(summary([comparison("mrr@10")]), per_query))
    assert data.paired and data.control == "old"
    (panel,) = data.panels
    split = panel.deltas
    # span 1: 42 edges -1 + 2k/41; every |edge| >= 1/41 > 1/82 stays, and the tie bin
    # [-1/82, 1/82) is added: 44 edges, 43 bins, the tie bin being bin 21
    assert len(split.edges) == 44
    assert split.edges[0] == -1.0 and split.edges[-1] == 1.0
    assert split.edges[21] == pytest.approx(-1 / 82) and split.edges[22] == pytest.approx(1 / 82)
    losses, ties, wins = [0] * 43, [0] * 43, [0] * 43
    losses[10] = 1  # -0.5 lies in [-21/41, -19/41), bin k = 10
    ties[21] = 2  # the two zeros
    wins[27] = 1  # +0.25 lies in [9/41, 11/41): the 5th bin past 1/41, bin 23 + 4
    wins[42] = 1  # +1.0 lies on the last edge: the last bin is closed
    assert (split.losses, split.ties, split.wins) == (tuple(losses), tuple(ties), tuple(wins))
    assert (panel.wins, panel.ties, panel.losses) == (6, 3, 1)  # the comparison's own
    assert as_json(data)["panels"][0]["deltas"]["ties"][21] == 2


def test_a_panel_of_ties_only_gets_a_tie_bin_of_a_fifth_of_the_axis():
    per_query = pd.DataFrame(
        {"arm": ["old"] * 3 + ["new"] * 3, "query_id": ["a", "b", "c"] * 2, "mrr@10": [0.5] * 6}
    )
    (panel,) = delta_distributions(readout(summary([comparison("mrr@10")]), per_query)).panels
    edges = np.asarray(panel.deltas.edges)
    # no delta: span 1 and the tie bin [-0.1, 0.1] holds the three queries
    at = int(np.flatnonzero(np.isclose(edges, -0.1))[0])
    assert edges[at + 1] == pytest.approx(0.1)
    assert panel.deltas.ties[at] == 3 and sum(panel.deltas.ties) == 3
    assert sum(panel.deltas.wins) == sum(panel.deltas.losses) == 0


def test_no_paired_query_gives_a_panel_without_deltas():
    per_query = pd.DataFrame({"arm": ["old", "new"], "query_id": ["a", "b"], "mrr@10": [1.0, 0.0]})
    (panel,) = delta_distributions(readout(summary([comparison("mrr@10")]), per_query)).panels
    assert panel.deltas is None


def test_the_independent_design_counts_each_arms_values_in_30_bins():
    per_query = pd.DataFrame(
        {
            "arm": ["old"] * 3 + ["new"] * 4,
            "query_id": ["a", "b", "c", "d", "e", "f", "g"],
            "mrr@10": [0.0, 0.5, 1.0, 0.2, 0.2, 0.2, np.nan],
        }
    )
    comp = comparison("mrr@10", design="independent")
    data = delta_distributions(readout(summary([comp], design="independent"), per_query))
    assert not data.paired
    (panel,) = data.panels
    assert panel.deltas is None and [arm for arm, _ in panel.arms] == ["old", "new"]
    old, new = (hist for _, hist in panel.arms)
    # old: 30 bins over [0, 1] of width 1/30: 0 in the first, 0.5 = 15/30 in bin 15,
    # 1 on the closed last edge
    assert old.edges == pytest.approx(tuple(i / 30 for i in range(31)))
    expected = [0] * 30
    expected[0] = expected[15] = expected[29] = 1
    assert old.counts == tuple(expected)
    # new: three equal values (the NaN left out): numpy's range [0.2 - 0.5, 0.2 + 0.5],
    # 0.2 in the middle bin
    assert new.edges[0] == pytest.approx(-0.3) and new.edges[-1] == pytest.approx(0.7)
    assert new.counts[15] == 3 and new.total == 3


def test_online_readouts_have_no_per_query_distribution():
    per_query = pd.DataFrame({"arm": ["old", "new"], "query_id": ["a", "a"], "mrr@10": [1.0, 0.0]})
    online = summary([comparison("mrr@10")], unit="user_id")
    assert distribution_comparisons(readout(online, per_query)) == []
    assert delta_distributions(readout(online, per_query)) is None
    # offline, a comparison whose metric the table lacks has no panel
    offline = readout(summary([comparison("mrr@10"), comparison("ndcg@10")]), per_query)
    assert [c.metric for c in distribution_comparisons(offline)] == ["mrr@10"]


def test_bootstrap_panels_count_the_finite_draws_in_60_bins():
    comps = [
        comparison("mrr@10", delta=1.5, bootstrap_ci=[0.5, 2.5]),
        comparison("mrr@10", treatment="boost", delta=None, bootstrap_ci=[None, 1.0]),
    ]
    arms = [*ARMS, {"name": "boost", "label": "Boost", "role": "treatment"}]
    draws = {
        ("mrr@10", "boost"): np.array([1.0, 1.0]),
        ("mrr@10", "new"): np.array([0.0, 1.0, np.nan, 2.0, 3.0]),
        ("ndcg@10", "new"): np.array([5.0]),  # not the primary metric
    }
    with_draws = readout(summary(comps, arms=arms), resampled_deltas=draws)
    assert bootstrap_treatments(with_draws) == ["new", "boost"]  # the summary's order
    panels = bootstrap_panels(with_draws)
    assert [p.treatment for p in panels] == ["new", "boost"]
    new, boost = panels
    # [0, 3] in 60 bins of 0.05: 1 starts bin 20, 2 bin 40, 3 closes the last bin (59)
    expected = [0] * 60
    expected[0] = expected[20] = expected[40] = expected[59] = 1
    assert new.histogram.counts == tuple(expected) and new.resamples == 4
    assert (new.interval, new.delta) == ((0.5, 2.5), 1.5)
    assert (boost.interval, boost.delta, boost.resamples) == (None, None, 2)
    assert as_json(boost)["bootstrap_ci"] is None
    assert bootstrap_panels(readout(summary(comps, arms=arms))) == ()


# --------------------------------------------------------------------------- positions


def test_first_relevant_shares_per_arm_the_summarys_arms_first():
    frame = pd.DataFrame(
        {
            "arm": ["new", "new", "extra", "old", "old", "old", "old"],
            "query_id": ["a", "b", "a", "a", "b", "c", "d"],
            "rank": [1.0, 2.0, 15.0, 1.0, 200.0, np.nan, 50.0],
        }
    )
    data = first_relevant_shares(readout(summary(), first_relevant=frame))
    assert data.buckets == (*map(str, range(1, 11)), "11–20", "21–100", ">100", "none")
    assert [a.arm for a in data.arms] == ["old", "new", "extra"]
    old, new, extra = (a.values for a in data.arms)
    # old: rank 1, 200 (>100), none, 50 (21-100): a quarter each
    assert old == (0.25, *[0.0] * 10, 0.25, 0.25, 0.25)
    assert new == (0.5, 0.5, *[0.0] * 12)
    assert extra == (*[0.0] * 10, 1.0, 0.0, 0.0, 0.0)
    assert first_relevant_shares(readout(summary())) is None


def test_metric_curves_a_panel_per_family_lines_sorted_by_k():
    curves = pd.DataFrame(
        {
            "arm": ["new", "new", "old", "old", "old"],
            "metric": ["ndcg", "ndcg", "ndcg", "ndcg", "recall"],
            "k": [2, 1, 1, 2, 5],
            "value": [0.6, 0.5, 0.3, 0.4, 0.9],
        }
    )
    assert curve_depths(readout(summary(), curves=curves)) == {"ndcg": 2.0, "recall": 5.0}
    data = metric_curves(readout(summary(), curves=curves))
    assert data.arms == ("old", "new")
    ndcg, recall = data.panels
    assert (ndcg.metric, ndcg.deepest, recall.metric, recall.deepest) == ("ndcg", 2, "recall", 5)
    assert [(line.arm, line.k, line.values) for line in ndcg.lines] == [
        ("old", (1.0, 2.0), (0.3, 0.4)),
        ("new", (1.0, 2.0), (0.5, 0.6)),
    ]
    assert [line.arm for line in recall.lines] == ["old"]  # no empty line for "new"


# --------------------------------------------------------------------------- online


def test_ctr_by_rank_every_rank_of_any_arm_and_0_where_an_arm_has_none():
    frame = pd.DataFrame(
        {
            "arm": ["new", "new", "old"],
            "rank": [3, 1, 1],
            "impressions": [10, 10, 10],
            "clicks": [2, 5, 4],
            "ctr": [0.2, 0.5, 0.4],
        }
    )
    data = ctr_by_rank(readout(summary(), ctr_by_rank=frame))
    assert data.ranks == (1, 3)
    assert [(a.arm, a.values) for a in data.arms] == [("old", (0.4, 0.0)), ("new", (0.5, 0.2))]
    assert ctr_by_rank(readout(summary())) is None


def test_unit_distribution_counts_each_arms_finite_units_over_40_bins():
    values = pd.DataFrame(
        {"arm": ["old", "old", "new", "new", "new"], "value": [0.0, 1.0, 0.5, np.nan, 1.0]}
    )
    assert unit_value_range(readout(summary(unit="user_id"), unit_values=values)) == (0.0, 1.0)
    data = unit_distribution(readout(summary(unit="user_id"), unit_values=values))
    assert (data.metric, data.unit) == ("mrr@10", "user_id")
    # [0, 1] in 40 bins of 0.025: 0 in bin 0, 0.5 starts bin 20, 1 closes bin 39
    assert data.edges[0] == 0.0 and data.edges[-1] == 1.0 and len(data.edges) == 41
    old, new = data.groups
    expected_old, expected_new = [0] * 40, [0] * 40
    expected_old[0] = expected_old[39] = 1
    expected_new[20] = expected_new[39] = 1
    assert (old.arm, old.units, old.counts, old.mean) == ("old", 2, tuple(expected_old), 0.5)
    assert (new.arm, new.units, new.counts, new.mean) == ("new", 2, tuple(expected_new), 0.75)
    assert new.shares[20] == 0.5
    # every unit alike: one bin of width 1 from that value
    same = pd.DataFrame({"arm": ["old", "new"], "value": [0.3, 0.3]})
    edges = unit_distribution(readout(summary(unit="user_id"), unit_values=same)).edges
    assert (edges[0], edges[-1]) == (0.3, pytest.approx(1.3))
    interleaved = summary(unit="user_id", design="interleaved")
    assert unit_distribution(readout(interleaved, unit_values=values)) is None


# --------------------------------------------------------------------------- interleaving


def test_outcomes_are_shares_of_the_impressions():
    comps = [
        comparison("clicks", design="interleaved", wins=30, ties=50, losses=20, n=100),
        comparison("clicks", treatment="b", design="interleaved", wins=None, ties=0, n=0),
        comparison("clicks", segment="mobile", design="interleaved"),
    ]
    data = outcomes(summary(comps))
    assert [(r.treatment, r.wins, r.ties, r.losses, r.impressions) for r in data.rows] == [
        ("new", 0.3, 0.5, 0.2, 100),
        ("b", 0.0, 0.0, 1.0, 0),  # no impression: the counts themselves (divided by 1)
    ]
    assert outcomes(summary([comparison("mrr@10")])) is None  # not an interleaving comparison


def test_the_preference_per_unit_is_clipped_to_the_bins_its_mean_is_not():
    values = pd.DataFrame({"arm": ["new vs old"] * 4, "value": [-0.7, 0.0, 0.25, 0.5]})
    interleaved = summary(unit="user_id", design="interleaved", primary_metric="clicks")
    data = preference_distribution(readout(interleaved, unit_values=values))
    assert (data.metric, data.unit) == ("clicks", "user_id")
    (group,) = data.groups
    # [-0.5, 0.5] in 40 bins of 0.025: -0.7 -> -0.5 in bin 0, 0 starts bin 20,
    # 0.25 starts bin 30, 0.5 closes bin 39
    expected = [0] * 40
    expected[0] = expected[20] = expected[30] = expected[39] = 1
    assert group.counts == tuple(expected) and group.units == 4
    assert group.mean == pytest.approx((-0.7 + 0.0 + 0.25 + 0.5) / 4)
    assert preference_distribution(readout(summary(unit="user_id"), unit_values=values)) is None


# --------------------------------------------------------------------------- trends


def history() -> pd.DataFrame:
    """Two dates of experiment "exp" (and a row of another experiment, and a segment row,
    both left out), with the store's columns that the trend reads."""
    rows = [
        ("exp", "2026-11-02", "ndcg@10", "new", None, 0.2, 0.1, 0.3, "win", 110, 120),
        ("exp", "2026-11-01", "mrr@10", "new", None, 0.1, -0.1, 0.3, "inconclusive", 100, 105),
        ("exp", "2026-11-02", "mrr@10", "new", None, np.nan, np.nan, np.nan, "odd", 110, 120),
        ("exp", "2026-11-01", "ndcg@10", "new", None, 0.15, 0.05, 0.25, "win", 100, 105),
        ("exp", "2026-11-02", "mrr@10", "new", "mobile", 0.9, 0.8, 1.0, "win", 50, 60),
        ("other", "2026-11-03", "mrr@10", "new", None, 0.5, 0.4, 0.6, "win", 1, 1),
    ]
    columns = ["experiment", "date", "metric", "treatment", "segment", "delta", "ci_low"]
    columns += ["ci_high", "verdict", "n_control", "n_treatment"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["unit"] = "user_id"
    frame["control"] = "old"
    frame["primary"] = frame["metric"] == "mrr@10"
    return frame


def test_trend_panels_per_treatment_and_metric_in_the_summarys_order():
    dated = summary(experiment={"name": "exp"})
    panels = trend_panels(readout(dated, history=history()))
    assert [(p.treatment, p.metric) for p in panels] == [("new", "mrr@10"), ("new", "ndcg@10")]
    mrr, ndcg = panels
    assert mrr.dates == ("2026-11-01", "2026-11-02")  # oldest first
    assert mrr.delta[0] == 0.1 and math.isnan(mrr.delta[1])
    assert mrr.verdicts == ("inconclusive", "inconclusive")  # "odd" is no verdict
    assert (ndcg.delta, ndcg.ci_low, ndcg.ci_high) == ((0.15, 0.2), (0.05, 0.1), (0.25, 0.3))
    assert as_json(mrr)["delta"] == [0.1, None]
    # up to the readout's own date only: one date left, no trend
    early = summary(experiment={"name": "exp"}, schedule={"date": "2026-11-01"})
    assert trend_panels(readout(early, history=history())) == []


def test_units_per_arm_from_the_primary_metrics_rows():
    dated = summary(experiment={"name": "exp"})
    data = units_per_arm(readout(dated, history=history()))
    assert data.unit == "user_id"
    assert [(s.arm, s.dates, s.counts) for s in data.arms] == [
        ("old", ("2026-11-01", "2026-11-02"), (100.0, 110.0)),
        ("new", ("2026-11-01", "2026-11-02"), (105.0, 120.0)),
    ]
    offline = history().assign(unit=None)
    assert units_per_arm(readout(dated, history=offline)) is None
