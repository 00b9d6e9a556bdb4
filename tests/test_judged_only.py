"""Judged-only ("condensed") metrics, bpref, and their spellings.

A judged-only value must equal the plain value of the same ranking with its unjudged
documents filtered out first: the slow reference below filters, then scores with
test_metrics' plain per-query definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from test_metrics import METRICS, cases, frame, qrels, reference

from abrank.engines.evaluate import evaluate, score_arm
from abrank.errors import ConfigError
from abrank.metrics import Metric, as_judged_only, parse_metric, parse_metrics

RELEVANCE_METRICS = [m for m in METRICS if not m.startswith("judged")]


def judged_only_name(name: str) -> str:
    return parse_metric(name).name + "(judged)"


def filtered(rankings: pd.DataFrame, judged: dict, depth) -> pd.DataFrame:
    """The rankings cut to ``depth`` (trec_eval's order), then without unjudged rows."""
    order = "rank" if "rank" in rankings.columns else "score"
    keep = []
    for _, rows in rankings.groupby("query_id", sort=False):
        rows = rows.sort_values("doc_id", ascending=False, kind="stable")
        rows = rows.sort_values(order, ascending=order == "rank", kind="stable")
        keep.append(rows.head(depth) if depth else rows)
    cut = pd.concat(keep) if keep else rankings
    mask = [(q, d) in judged for q, d in zip(cut.query_id, cut.doc_id, strict=True)]
    return cut.loc[mask]


# --------------------------------------------------------------------------- spellings


@pytest.mark.parametrize(
    ("text", "name", "label"),
    [
        ("ndcg@10(judged)", "ndcg@10(judged)", "NDCG@10(judged)"),
        ("nDCG(judged)@10", "ndcg@10(judged)", "NDCG@10(judged)"),
        ("NDCG@10(Judged)", "ndcg@10(judged)", "NDCG@10(judged)"),
        ("mrr(rel=2)@10(judged)", "mrr(rel=2)@10(judged)", "MRR(rel=2)@10(judged)"),
        ("RR(rel=2,judged)@10", "mrr(rel=2)@10(judged)", "MRR(rel=2)@10(judged)"),
        ("map(judged)", "map(judged)", "MAP(judged)"),
        ("P_5(judged)", "precision@5(judged)", "P@5(judged)"),
        ("ndcg_cut.10(judged)", "ndcg@10(judged)", "NDCG@10(judged)"),
        ("ndcg(gain=exp)@5(judged)", "ndcg(gain=exp)@5(judged)", "NDCG(gain=exp)@5(judged)"),
        ("bpref", "bpref", "bpref"),
        ("recip_rank(judged)", "mrr(judged)", "MRR(judged)"),
        ("reciprocal_rank(rel=2)", "mrr(rel=2)", "MRR(rel=2)"),  # parameters, not a suffix
        ("hit_rate(rel=2)@3", "hit(rel=2)@3", "Hit(rel=2)@3"),
    ],
)
def test_judged_only_spellings(text, name, label):
    metric = parse_metric(text)
    assert metric.name == name
    assert metric.label == label
    assert metric.judged_only == name.endswith("(judged)")
    assert parse_metric(metric.name) == metric  # the canonical name parses back


def test_judged_only_is_part_of_the_value():
    plain, condensed = parse_metric("ndcg@10"), parse_metric("ndcg@10(judged)")
    assert plain != condensed
    assert condensed == Metric("ndcg", 10, judged_only=True)
    assert parse_metrics(["ndcg@10", "ndcg(judged)@10", "ndcg@10(judged)"]) == [plain, condensed]
    assert condensed.to_dict()["judged_only"] is True
    assert "judged_only" not in plain.to_dict()  # unchanged for plain metrics
    assert as_judged_only(parse_metrics(["mrr@10", "judged@10"])) == [
        Metric("mrr", 10, judged_only=True),
        Metric("judged", 10),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ndcg@10(judge)",
            "metric 'ndcg@10(judge)': suffix: expected (judged) after the cutoff "
            "(e.g. ndcg@10(judged)), got (judge)",
        ),
        (
            "judged@10(judged)",
            "metric 'judged@10(judged)': (judged): expected a metric that reads grades, got "
            "judged, which counts the unjudged documents a judged-only variant removes",
        ),
        (
            "ndcg@10(judged)(judged)",
            "metric 'ndcg@10(judged)(judged)': cutoff: expected a whole number from 1 to 1000000, "
            "got '10(judged)(judged)'",
        ),
        (
            "bpref@10",
            "metric 'bpref@10': cutoff: expected bpref without a cutoff, got 10",
        ),
    ],
)
def test_bad_judged_only_spellings(text, message):
    with pytest.raises(ConfigError) as info:
        parse_metric(text)
    assert str(info.value) == message


def test_direct_construction_checks_judged_only():
    with pytest.raises(ConfigError) as info:
        Metric("mrr", 10, judged_only="yes")
    assert str(info.value) == "metric mrr: judged_only: expected True or False, got 'yes'"


# --------------------------------------------------------------------------- values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_judged_only_matches_filter_then_score(case):
    """Ties, negative grades, judged documents outside the rankings: the generated cases of
    test_metrics, scored judged-only, equal the plain reference on the filtered rankings."""
    rankings, judged, options = case
    judgments = qrels([(q, d, g) for (q, d), g in judged.items()])
    expected = reference(filtered(rankings, judged, options["depth"]), judged, **options)
    if rankings.empty:
        rankings = rankings.astype({"query_id": str, "doc_id": str})
    names = [judged_only_name(m) for m in RELEVANCE_METRICS]
    table = evaluate(rankings, judgments, names, **options)
    # a query ranked with only unjudged documents is still a ranked query
    assert set(table.index) >= set(expected)
    for q in table.index:
        for plain, name in zip(RELEVANCE_METRICS, names, strict=True):
            value = expected.get(q, {}).get(plain)
            if value is None:  # every document of the query unjudged: an empty ranking
                empty = reference(
                    rankings.iloc[:0],
                    {k: v for k, v in judged.items() if k[0] == q},
                    **{**options, "complete": True},
                )
                value = empty[q][plain]
            got = table.at[q, name]
            if math.isnan(value):
                assert math.isnan(got), (q, name)
            else:
                assert got == pytest.approx(value, abs=1e-12), (q, name, got, value)
    # judged_only=True is the same as naming every metric judged-only
    bulk = evaluate(rankings, judgments, RELEVANCE_METRICS, judged_only=True, **options)
    pd.testing.assert_frame_equal(bulk, table)


def test_judged_only_by_hand():
    # ranking a b c d e; b and d unjudged; a=0, c=2, e=1 (rel_level 1)
    rankings = frame([("q", d, r) for r, d in enumerate("abcde", start=1)])
    judgments = qrels([("q", "a", 0), ("q", "c", 2), ("q", "e", 1), ("q", "z", 1)])
    table = evaluate(
        rankings,
        judgments,
        ["mrr", "mrr(judged)", "precision@2(judged)", "recall@3(judged)", "ndcg@3(judged)"],
    )
    row = table.loc["q"]
    assert row["mrr"] == pytest.approx(1 / 3)
    assert row["mrr(judged)"] == pytest.approx(1 / 2)  # condensed list: a c e
    assert row["precision@2(judged)"] == pytest.approx(1 / 2)
    assert row["recall@3(judged)"] == pytest.approx(2 / 3)  # c, e of c, e, z
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert row["ndcg@3(judged)"] == pytest.approx(dcg / idcg)


def test_judged_only_reads_rows_below_the_largest_cutoff():
    # ten unjudged documents, then a relevant one at rank 11: judged-only MRR@1 is 1
    rows = [("q", f"u{i:02d}", i) for i in range(1, 11)] + [("q", "rel", 11)]
    table = evaluate(frame(rows), qrels([("q", "rel", 1)]), ["mrr@1", "mrr@1(judged)"])
    assert table.loc["q"].tolist() == [0.0, 1.0]


def test_score_arm_takes_judged_only():
    rankings = frame([("q", "u", 1), ("q", "r", 2)])
    arm = score_arm(rankings, qrels([("q", "r", 1)]), ["mrr", "judged@10"], judged_only=True)
    assert arm.values.columns.tolist() == ["mrr(judged)", "judged@10"]
    assert arm.values.loc["q"].tolist() == [1.0, 0.1]
    assert arm.judged_at_k == pytest.approx(0.1)


# --------------------------------------------------------------------------- bpref


def bpref_reference(ranked: list, grades: dict, t: float) -> float:
    """Buckley & Voorhees' bpref as trec_eval 9 computes it, one document at a time."""
    big_r = sum(g >= t for g in grades.values())
    big_n = sum(0 <= g < t for g in grades.values())
    if big_r == 0:
        return math.nan
    total, nonrel = 0.0, 0
    for d in ranked:
        if d not in grades or grades[d] < 0:
            continue
        if grades[d] < t:
            nonrel += 1
        else:
            total += 1.0 - min(nonrel, big_r) / min(big_n, big_r) if nonrel else 1.0
    return total / big_r


def test_bpref_by_hand():
    # R = 2 (r1, r2; r3 not retrieved... no: r3 unretrieved makes R = 3), N = 2
    rankings = frame([("q", d, i) for i, d in enumerate(["n1", "u", "r1", "n2", "r2"], 1)])
    judgments = qrels(
        [("q", "r1", 1), ("q", "r2", 2), ("q", "r3", 1), ("q", "n1", 0), ("q", "n2", 0)]
    )
    # r1: 1 nonrel above -> 1 - min(1, 3)/min(2, 3) = 1/2; r2: 2 above -> 1 - 2/2 = 0
    assert evaluate(rankings, judgments, ["bpref"]).at["q", "bpref"] == pytest.approx(0.5 / 3)
    # rel=2: only r2 is relevant (R = 1), N = 4 judged below 2; 1 - min(4, 1)/min(4, 1) = 0
    assert evaluate(rankings, judgments, ["bpref(rel=2)"]).iat[0, 0] == 0.0
    # every relevant document above every nonrelevant one: 1
    best = frame([("q", d, i) for i, d in enumerate(["r1", "r2", "r3", "n1"], 1)])
    assert evaluate(best, judgments, ["bpref"]).iat[0, 0] == 1.0


def test_bpref_ignores_unjudged_and_negative_grades():
    rankings = frame([("q", d, i) for i, d in enumerate(["x", "neg", "r"], 1)])
    judgments = qrels([("q", "r", 1), ("q", "neg", -1), ("q", "n", 0)])
    assert evaluate(rankings, judgments, ["bpref"]).iat[0, 0] == 1.0
    # no relevant judgment: undefined
    assert np.isnan(evaluate(rankings, qrels([("q", "n", 0)]), ["bpref"]).iat[0, 0])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_bpref_matches_the_reference(case):
    rankings, judged, options = case
    judgments = qrels([(q, d, g) for (q, d), g in judged.items()])
    if rankings.empty:
        return
    cut = filtered(
        rankings, {k: 0 for k in set(zip(rankings.query_id, rankings.doc_id))}, options["depth"]
    )
    table = evaluate(rankings, judgments, ["bpref", "bpref(judged)"], **options)
    for q in table.index:
        grades = {d: g for (qq, d), g in judged.items() if qq == q}
        ranked = cut.loc[cut.query_id == q, "doc_id"].tolist()
        value = bpref_reference(ranked, grades, options["rel_level"])
        for name in ("bpref", "bpref(judged)"):
            got = table.at[q, name]
            assert (math.isnan(value) and math.isnan(got)) or got == pytest.approx(value), q
