"""Click metrics: their names in the one registry and parser, and their per-impression values
against a slow reference (a Python loop per impression) written here."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from abrank.engines.clicks import KERNELS, ctr_by_rank, judged_inputs, score_impressions, unit_sums
from abrank.engines.evaluate import evaluate
from abrank.errors import ConfigError, DataError
from abrank.metrics import FAMILIES, Metric, parse_metric
from abrank.metrics.names import click_metrics, judged_metrics
from abrank.metrics.registry import click_families, judged_families, known_names

# --------------------------------------------------------------------------- names

SPELLINGS = [
    ("click_rr@10", "click_rr", 10, "click_rr@10", "ClickRR@10"),
    ("Click_RR@10", "click_rr", 10, "click_rr@10", "ClickRR@10"),
    ("click_mrr@5", "click_rr", 5, "click_rr@5", "ClickRR@5"),
    ("CLICK_MRR", "click_rr", None, "click_rr", "ClickRR"),
    ("click_rr", "click_rr", None, "click_rr", "ClickRR"),
    ("ctr@3", "ctr", 3, "ctr@3", "CTR@3"),
    ("CTR", "ctr", None, "ctr", "CTR"),
    ("clicks@2", "clicks", 2, "clicks@2", "Clicks@2"),
    ("Clicks", "clicks", None, "clicks", "Clicks"),
    ("abandonment", "abandonment", None, "abandonment", "Abandonment"),
    ("ABANDONMENT", "abandonment", None, "abandonment", "Abandonment"),
    ("sat_ctr@10", "sat_ctr", 10, "sat_ctr@10", "SatCTR@10"),
    ("SAT_CTR", "sat_ctr", None, "sat_ctr", "SatCTR"),
]


@pytest.mark.parametrize(("text", "family", "k", "name", "label"), SPELLINGS)
def test_every_click_spelling_resolves(text, family, k, name, label):
    metric = parse_metric(text)
    assert (metric.family, metric.k, metric.name, metric.label) == (family, k, name, label)
    assert metric.is_click
    assert parse_metric(metric.name) == metric


def test_click_families_are_a_kind_of_the_one_registry():
    assert click_families() == ["click_rr", "ctr", "clicks", "abandonment", "sat_ctr"]
    assert judged_families() == [
        "mrr", "ndcg", "dcg", "err", "alpha_ndcg", "err_ia", "recall", "precision", "hit",
        "map", "ap", "gm_map", "bpref", "rprec", "infap", "rbp", "rbp_residual", "judged"
    ]  # fmt: skip
    assert all(FAMILIES[f].relevance == "click" for f in click_families())
    assert not any(parse_metric(name).is_click for name in ("mrr@10", "ndcg", "map", "judged@5"))
    assert "; click metrics click_rr, click_rr@k, click_mrr, ctr, ctr@k, clicks, clicks@k, " in (
        known_names()
    )
    assert "abandonment, sat_ctr, sat_ctr@k; parameters" in known_names()


BAD = [
    ("abandonment@5", "metric 'abandonment@5': cutoff: expected abandonment without a cutoff, "
     "got 5"),
    ("ctr@0", "metric 'ctr@0': cutoff: expected a whole number from 1 to 1000000, got '0'"),
    ("click_rr@x", "metric 'click_rr@x': cutoff: expected a whole number from 1 to 1000000, got 'x'"),
    ("clicks@2.5", "metric 'clicks@2.5': cutoff: expected a whole number from 1 to 1000000, got '2.5'"),
    ("ctr(rel=2)@3", "metric 'ctr(rel=2)@3': rel: expected no relevance threshold (it applies "
     "to mrr, recall, precision, hit, map, ap, gm_map, bpref, rprec, infap and rbp), got one"),
    ("sat_ctr(gain=exp)", "metric 'sat_ctr(gain=exp)': gain: expected no gain (it applies to "
     "ndcg and dcg), got one"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_click_names_are_clear_config_errors(text, message):
    with pytest.raises(ConfigError) as info:
        parse_metric(text)
    assert str(info.value) == message


def test_a_misspelt_click_name_suggests_the_click_family():
    with pytest.raises(ConfigError) as info:
        parse_metric("click_r@10")
    assert str(info.value).endswith("got 'click_r@10'; did you mean 'click_rr@10'?")
    with pytest.raises(ConfigError) as info:
        Metric("abandonment", 3)
    assert str(info.value) == (
        "metric abandonment: cutoff: expected abandonment without a cutoff, got 3"
    )


def test_judged_and_click_metrics_are_told_apart():
    assert [m.name for m in click_metrics(["CTR@3", "abandonment"])] == ["ctr@3", "abandonment"]
    assert [m.name for m in judged_metrics(["RR@10", "ndcg"])] == ["mrr@10", "ndcg"]
    with pytest.raises(ConfigError) as info:
        judged_metrics(["mrr@10", "ctr@3", "abandonment"])
    assert str(info.value) == (
        "metric ctr@3 and abandonment: expected a judged metric (scored from rankings and "
        "judgments), got a click metric (scored from an impression log by "
        "abrank.engines.clicks.score_impressions)"
    )
    with pytest.raises(ConfigError) as info:
        click_metrics(["ctr@3", "ndcg@10"])
    assert str(info.value).startswith(
        "metric ndcg@10: expected a click metric (click_rr, ctr, clicks, abandonment, sat_ctr), "
        "got a judged metric"
    )


def test_evaluate_refuses_a_click_metric_with_a_config_error():
    rankings = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "rank": [1]})
    judgments = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1.0]})
    assert evaluate(rankings, judgments, ["mrr@10"])["mrr@10"].tolist() == [1.0]
    with pytest.raises(ConfigError, match=r"^metric click_rr@10: expected a judged metric"):
        evaluate(rankings, judgments, ["mrr@10", "click_mrr@10"])


# --------------------------------------------------------------------------- values

METRICS = [
    "click_rr@10", "click_rr@2", "click_rr", "ctr@3", "ctr@1", "ctr", "clicks@2", "clicks",
    "abandonment", "sat_ctr@3", "sat_ctr",
]  # fmt: skip


def reference(impressions: pd.DataFrame, metric: str, sat_dwell: float) -> dict[str, float]:
    """Each impression's value, one impression at a time, from the definitions."""
    family, _, cut = metric.partition("@")
    k = int(cut) if cut else math.inf
    out = {}
    for impression, rows in impressions.groupby(impressions["impression_id"].astype(str)):
        shown = sorted(
            zip(rows["rank"], rows["clicked"], rows.get("dwell", [math.nan] * len(rows)))
        )
        clicked = [rank for rank, click, _ in shown if click]
        within = [rank for rank in clicked if rank <= k]
        satisfied = [
            rank for rank, click, dwell in shown
            if click and rank <= k and not math.isnan(dwell) and dwell >= sat_dwell
        ]  # fmt: skip
        if family == "click_rr":
            value = 1 / within[0] if within else 0.0
        elif family == "ctr":
            value = 1.0 if within else 0.0
        elif family == "clicks":
            value = float(len(within))
        elif family == "abandonment":
            value = 0.0 if clicked else 1.0
        else:
            value = 1.0 if satisfied else 0.0
        out[impression] = value
    return out


def generated_log(seed: int, impressions: int, int_ids: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 13, impressions)
    impression = np.repeat(np.arange(impressions) * 7 + 3, lengths)
    rank = np.concatenate([rng.permutation(n) + 1 for n in lengths])
    clicked = rng.random(rank.size) < 0.4 / np.sqrt(rank)
    dwell = np.where(rng.random(rank.size) < 0.3, np.nan, rng.exponential(30.0, rank.size))
    users = np.repeat(rng.integers(0, max(1, impressions // 3), impressions), lengths)
    log = pd.DataFrame(
        {
            "impression_id": impression if int_ids else [f"imp{i}" for i in impression],
            "user_id": users if int_ids else [f"user{u}" for u in users],
            "rank": rank,
            "doc_id": rng.integers(0, 50, rank.size).astype(str),
            "clicked": clicked.astype(np.int8) if int_ids else clicked,
            "dwell": dwell,
            "device": np.repeat(rng.choice(["phone", "desk", "tablet"], impressions), lengths),
        }
    )
    return log.iloc[rng.permutation(len(log))].reset_index(drop=True)  # unsorted rows


@pytest.mark.parametrize(("seed", "int_ids"), [(1, True), (2, False), (3, True)])
def test_click_metrics_equal_a_slow_reference(seed, int_ids):
    log = generated_log(seed, 300, int_ids)
    sat_dwell = 20.0 if seed == 3 else 30.0
    values = score_impressions(log, METRICS, sat_dwell=sat_dwell)
    expected_ids = sorted({str(i) for i in log["impression_id"]})  # byte order of the text
    assert values.index.tolist() == expected_ids
    assert values.index.name == "impression_id"
    assert list(values.columns) == METRICS
    assert (values.dtypes == np.float64).all()
    assert not values.isna().any().any()
    for metric in METRICS:
        expected = reference(log, metric, sat_dwell)
        assert values[metric].tolist() == pytest.approx([expected[i] for i in expected_ids]), metric


def hand_log(clicks: list[int]) -> pd.DataFrame:
    """One impression of five results; ``clicks`` lists the clicked ranks."""
    return pd.DataFrame(
        {
            "impression_id": ["i"] * 5,
            "user_id": ["u"] * 5,
            "rank": [1, 2, 3, 4, 5],
            "doc_id": list("abcde"),
            "clicked": [int(r in clicks) for r in range(1, 6)],
            "dwell": [40.0 if r in clicks else np.nan for r in range(1, 6)],
        }
    )


def test_small_cases_by_hand():
    names = ["click_rr@10", "click_rr@2", "ctr@3", "ctr@2", "abandonment", "clicks@5"]
    at_three = score_impressions(hand_log([3]), names).iloc[0].tolist()
    assert at_three == pytest.approx([1 / 3, 0.0, 1.0, 0.0, 0.0, 1.0])
    nothing = score_impressions(hand_log([]), names).iloc[0].tolist()
    assert nothing == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    both = score_impressions(hand_log([2, 4]), [*names, "sat_ctr@1", "sat_ctr@2"]).iloc[0]
    assert both.tolist() == pytest.approx([0.5, 0.5, 1.0, 1.0, 0.0, 2.0, 0.0, 1.0])
    # a click with a short or unknown dwell is not a satisfied click
    short = hand_log([1]).assign(dwell=[10.0, np.nan, np.nan, np.nan, np.nan])
    unknown = hand_log([1]).assign(dwell=np.nan)
    assert score_impressions(short, ["sat_ctr", "ctr"]).iloc[0].tolist() == [0.0, 1.0]
    assert score_impressions(short, ["sat_ctr"], sat_dwell=10).iloc[0].tolist() == [1.0]
    assert score_impressions(unknown, ["sat_ctr"], sat_dwell=0).iloc[0].tolist() == [0.0]


def test_bad_calls_are_clear_errors():
    log = hand_log([1])
    with pytest.raises(DataError) as info:
        score_impressions(log.drop(columns="dwell"), ["ctr@3", "sat_ctr@3"])
    assert str(info.value) == (
        "metric sat_ctr@3: expected a dwell column (seconds) in the impressions, found columns: "
        "impression_id, user_id, rank, doc_id, clicked"
    )
    with pytest.raises(ConfigError, match=r"^metric mrr@10: expected a click metric"):
        score_impressions(log, ["ctr@3", "mrr@10"])
    with pytest.raises(ConfigError) as info:
        score_impressions(log, ["ctr"], sat_dwell=-1)
    assert str(info.value) == "sat_dwell: expected a number of seconds >= 0, got -1"
    with pytest.raises(DataError) as info:
        score_impressions(log.assign(clicked=[0, 1, 2, 0, 0]), ["ctr"])
    assert str(info.value) == "impressions: row 2: clicked: expected 0, 1, true or false, got 2"
    with pytest.raises(DataError) as info:
        score_impressions(log.drop(columns="clicked"), ["ctr"])
    assert str(info.value) == (
        "impressions: expected a clicked column, found columns: impression_id, user_id, rank, "
        "doc_id, dwell"
    )


# --------------------------------------------------------------------------- unit sums


def reference_sums(log: pd.DataFrame, values: pd.DataFrame, by: str | None) -> dict:
    """(segment, unit) or unit -> {impressions, metric sums, metric counts}, by loops."""
    unit_of, segment_of = {}, {}
    for row in log.itertuples():
        unit_of[str(row.impression_id)] = str(row.user_id)
        segment_of[str(row.impression_id)] = getattr(row, by) if by else None
    out: dict = {}
    for impression in sorted(unit_of):
        key = (segment_of[impression], unit_of[impression]) if by else unit_of[impression]
        entry = out.setdefault(key, {"impressions": 0})
        if impression not in values.index:
            continue
        entry["impressions"] += 1
        for metric in values.columns:
            value = values.loc[impression, metric]
            entry.setdefault(metric, 0.0)
            entry.setdefault(f"{metric}:n", 0)
            if not math.isnan(value):
                entry[metric] += value
                entry[f"{metric}:n"] += 1
    return out


@pytest.mark.parametrize("by", [None, "device"])
@pytest.mark.parametrize("int_ids", [True, False])
def test_unit_sums_equal_a_slow_reference(by, int_ids):
    log = generated_log(5, 400, int_ids)
    values = score_impressions(log, ["click_rr@10", "ctr@3", "abandonment"])
    # a judged metric beside them: undefined (NaN) on some impressions
    rng = np.random.default_rng(9)
    values["mrr@10"] = np.where(rng.random(len(values)) < 0.3, np.nan, rng.random(len(values)))
    values = values.iloc[rng.permutation(len(values))[:-20]]  # some impressions have no values
    sums = unit_sums(log, values, by=by)
    expected = reference_sums(log, values, by)
    assert sums.index.tolist() == sorted(expected)
    assert sums.index.names == ([by, "user_id"] if by else ["user_id"])
    assert list(sums.columns) == [
        "impressions", "click_rr@10", "ctr@3", "abandonment", "mrr@10", "mrr@10:n"
    ]  # fmt: skip
    for column in sums.columns:
        wanted = [expected[key].get(column, 0) for key in sums.index]
        assert sums[column].tolist() == pytest.approx(wanted), column
    assert sums["impressions"].sum() == len(values)
    every = unit_sums(log, values, by=by, all_counts=True)
    assert every["ctr@3:n"].tolist() == sums["impressions"].tolist()


def test_unit_sums_refuse_inconsistent_inputs():
    log = hand_log([1])
    values = score_impressions(log, ["ctr"])
    with pytest.raises(DataError) as info:
        unit_sums(log, pd.DataFrame({"ctr": [1.0]}, index=pd.Index(["zz"], name="impression_id")))
    assert str(info.value) == (
        "values: impression_id: expected impressions of the log, got 'zz', which has no row in "
        "the impressions (1 such)"
    )
    two_users = log.assign(user_id=["u", "u", "v", "u", "u"])
    with pytest.raises(DataError) as info:
        unit_sums(two_users, values)
    assert str(info.value) == (
        "impressions: row 2: user_id: expected one user_id per impression, got two in "
        "impression 'i'"
    )
    with pytest.raises(DataError) as info:
        unit_sums(log, values, by="device")
    assert str(info.value) == (
        "impressions: expected a device column, found columns: impression_id, user_id, rank, "
        "doc_id, clicked, dwell"
    )
    with pytest.raises(DataError) as info:
        unit_sums(log.assign(device=["a", None, "a", "a", "a"]), values, by="device")
    assert str(info.value) == (
        "impressions: row 1: device: expected a segment value, got a missing value"
    )


# --------------------------------------------------------------------------- ctr by rank


def test_ctr_by_rank_by_hand():
    log = pd.concat(
        [
            hand_log([1, 3]).assign(impression_id="a"),
            hand_log([1]).assign(impression_id="b").iloc[:2],
            hand_log([]).assign(impression_id="c").iloc[:3],
        ]
    )
    # rank 1: shown 3 times, clicked in a and b; rank 2: shown 3 times, never clicked;
    # rank 3: shown in a and c, clicked in a; ranks 4 and 5: shown once (a), not clicked
    table = ctr_by_rank(log)
    assert table["rank"].tolist() == [1, 2, 3, 4, 5]
    assert table["impressions"].tolist() == [3, 3, 2, 1, 1]
    assert table["clicks"].tolist() == [2, 0, 1, 0, 0]
    assert table["ctr"].tolist() == pytest.approx([2 / 3, 0.0, 0.5, 0.0, 0.0])
    top = ctr_by_rank(log, max_rank=2)
    assert top["rank"].tolist() == [1, 2] and top["clicks"].tolist() == [2, 0]
    deep = pd.concat([log, hand_log([]).assign(impression_id="d", rank=[1, 2, 3, 4, 10**9])])
    table = ctr_by_rank(deep)
    assert table["rank"].tolist() == [1, 2, 3, 4, 5, 10**9]
    assert table["impressions"].tolist() == [4, 4, 3, 2, 1, 1]
    assert table["clicks"].tolist() == [2, 0, 1, 0, 0, 0]
    with pytest.raises(DataError) as info:
        ctr_by_rank(log.drop(columns="clicked"))
    assert str(info.value) == (
        "impressions: expected a clicked column, found columns: impression_id, user_id, rank, "
        "doc_id, dwell"
    )
    with pytest.raises(ConfigError) as info:
        ctr_by_rank(log, max_rank=0)
    assert str(info.value) == "max_rank: expected a whole number >= 1, got 0"


# --------------------------------------------------------------------------- judged inputs


def test_judged_metrics_on_an_online_log():
    log = pd.DataFrame(
        {
            "impression_id": [5, 5, 5, 6, 6, 7],
            "user_id": ["u1"] * 3 + ["u2"] * 3,
            "rank": [1, 2, 3, 1, 2, 1],
            "doc_id": ["a", "b", "c", "b", "a", "z"],
            "clicked": [0] * 6,
            "query": ["cats", "cats", "cats", "cats", "cats", "unjudged"],
        }
    )
    judgments = pd.DataFrame(
        {"query_id": ["cats", "cats", "dogs"], "doc_id": ["b", "x", "a"], "relevance": [1, 2, 1.0]}
    )
    rankings, judged = judged_inputs(log, judgments)
    assert rankings["query_id"].tolist() == ["5", "5", "5", "6", "6", "7"]
    assert judged.values.tolist() == [
        ["5", "b", 1.0], ["5", "x", 2.0], ["6", "b", 1.0], ["6", "x", 2.0]
    ]  # fmt: skip
    per_impression = evaluate(rankings, judged, ["mrr@10", "recall@10"])
    # impression 5 finds b (relevant) at rank 2 of the two relevant documents b and x;
    # impression 6 finds b at rank 1; impression 7's query has no judgments: not scored
    assert per_impression.index.tolist() == ["5", "6"]
    assert per_impression["mrr@10"].tolist() == [0.5, 1.0]
    assert per_impression["recall@10"].tolist() == [0.5, 0.5]
    with pytest.raises(DataError) as info:
        judged_inputs(log.drop(columns="query"), judgments)
    assert str(info.value) == (
        "impressions: expected a query column (the query each impression served), found "
        "columns: impression_id, user_id, rank, doc_id, clicked"
    )


def test_every_click_family_has_a_kernel():
    assert set(KERNELS) == set(click_families())
