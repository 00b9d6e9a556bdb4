"""Metric names: one parser, one registry, canonical names and labels, clear errors."""

from __future__ import annotations

import dataclasses
import json

import pytest

from abrank.errors import ConfigError
from abrank.metrics import Metric, parse_metric, parse_metrics

# spelling -> (family, k, rel, gain, canonical name, label)
TABLE = [
    ("mrr", ("mrr", None, None, None), "mrr", "MRR"),
    ("MRR@10", ("mrr", 10, None, None), "mrr@10", "MRR@10"),
    ("RR@10", ("mrr", 10, None, None), "mrr@10", "MRR@10"),
    ("recip_rank", ("mrr", None, None, None), "mrr", "MRR"),
    ("RR(rel=2)@10", ("mrr", 10, 2.0, None), "mrr(rel=2)@10", "MRR(rel=2)@10"),
    ("mrr(rel=2)@10", ("mrr", 10, 2.0, None), "mrr(rel=2)@10", "MRR(rel=2)@10"),
    ("ndcg", ("ndcg", None, None, None), "ndcg", "NDCG"),
    ("nDCG@10", ("ndcg", 10, None, None), "ndcg@10", "NDCG@10"),
    ("ndcg_cut.10", ("ndcg", 10, None, None), "ndcg@10", "NDCG@10"),
    ("ndcg_cut_10", ("ndcg", 10, None, None), "ndcg@10", "NDCG@10"),
    ("ndcg(gain=exp)@10", ("ndcg", 10, None, "exp"), "ndcg(gain=exp)@10", "NDCG(gain=exp)@10"),
    (
        "nDCG(dcg='exp-log2')@10",
        ("ndcg", 10, None, "exp"),
        "ndcg(gain=exp)@10",
        "NDCG(gain=exp)@10",
    ),
    ("dcg@5", ("dcg", 5, None, None), "dcg@5", "DCG@5"),
    ("recall@100", ("recall", 100, None, None), "recall@100", "Recall@100"),
    ("R@100", ("recall", 100, None, None), "recall@100", "Recall@100"),
    ("recall.100", ("recall", 100, None, None), "recall@100", "Recall@100"),
    ("precision@5", ("precision", 5, None, None), "precision@5", "P@5"),
    ("p@5", ("precision", 5, None, None), "precision@5", "P@5"),
    ("P_5", ("precision", 5, None, None), "precision@5", "P@5"),
    ("P(rel=2)@5", ("precision", 5, 2.0, None), "precision(rel=2)@5", "P(rel=2)@5"),
    ("hit@3", ("hit", 3, None, None), "hit@3", "Hit@3"),
    ("Success@3", ("hit", 3, None, None), "hit@3", "Hit@3"),
    ("success.10", ("hit", 10, None, None), "hit@10", "Hit@10"),
    ("map", ("map", None, None, None), "map", "MAP"),
    ("AP", ("map", None, None, None), "map", "MAP"),
    ("ap@100", ("ap", 100, None, None), "ap@100", "AP@100"),
    ("map@100", ("ap", 100, None, None), "ap@100", "AP@100"),
    ("map_cut.100", ("ap", 100, None, None), "ap@100", "AP@100"),
    ("judged@10", ("judged", 10, None, None), "judged@10", "Judged@10"),
    ("Judged@10", ("judged", 10, None, None), "judged@10", "Judged@10"),
    ("  NDCG@20 ", ("ndcg", 20, None, None), "ndcg@20", "NDCG@20"),
    ("mrr(rel=1.5)", ("mrr", None, 1.5, None), "mrr(rel=1.5)", "MRR(rel=1.5)"),
]


@pytest.mark.parametrize(("text", "fields", "name", "label"), TABLE)
def test_parse_table(text, fields, name, label):
    metric = parse_metric(text)
    assert (metric.family, metric.k, metric.rel, metric.gain) == fields
    assert metric.name == name
    assert str(metric) == name
    assert metric.label == label
    # the canonical name parses back to the same metric
    assert parse_metric(metric.name) == metric


def test_metric_is_a_frozen_hashable_value():
    a, b = parse_metric("nDCG@10"), parse_metric("ndcg_cut.10")
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.k = 5  # type: ignore[misc]
    assert parse_metric(a) is a


def test_average_precision_naming_follows_the_cutoff():
    assert Metric("map", 10).name == "ap@10"
    assert Metric("ap", None).name == "map"
    # what the pipeline's metric@k curves do
    assert dataclasses.replace(parse_metric("map"), k=5).name == "ap@5"


def test_to_dict_is_json_safe():
    data = parse_metric("mrr(rel=2)@10").to_dict()
    assert json.loads(json.dumps(data)) == {
        "name": "mrr(rel=2)@10",
        "label": "MRR(rel=2)@10",
        "family": "mrr",
        "k": 10,
        "rel": 2.0,
        "gain": None,
    }


def test_unknown_name_lists_known_names_and_suggests_the_closest():
    with pytest.raises(ConfigError) as info:
        parse_metric("ndgc@10")
    message = str(info.value)
    assert message.startswith("metric: expected a known metric name (mrr, mrr@k, ndcg, ndcg@k,")
    assert "got 'ndgc@10'; did you mean 'ndcg@10'?" in message


def test_unknown_name_without_close_match_has_no_suggestion():
    with pytest.raises(ConfigError) as info:
        parse_metric("zzzz")
    assert str(info.value).endswith("got 'zzzz'")
    with pytest.raises(ConfigError) as info:
        parse_metric("ndcg@@10")  # a known family: nothing closer to suggest
    assert str(info.value).endswith("got 'ndcg@@10'")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndcg@0", "metric 'ndcg@0': cutoff: expected a whole number from 1 to 1000000, got '0'"),
        (
            "ndcg@2.5",
            "metric 'ndcg@2.5': cutoff: expected a whole number from 1 to 1000000, got '2.5'",
        ),
        (
            "ndcg@ten",
            "metric 'ndcg@ten': cutoff: expected a whole number from 1 to 1000000, got 'ten'",
        ),
        (
            "precision",
            "metric 'precision': cutoff: expected precision@k (e.g. precision@10), got no cutoff",
        ),
        (
            "ndcg(rel=2)@10",
            "metric 'ndcg(rel=2)@10': rel: expected no relevance threshold (it "
            "applies to mrr, recall, precision, hit, map, ap, gm_map, bpref, rprec, infap and rbp), got one",
        ),
        (
            "mrr(gain=exp)",
            "metric 'mrr(gain=exp)': gain: expected no gain (it applies to ndcg and dcg), got one",
        ),
        (
            "ndcg(gain=cubic)@10",
            "metric 'ndcg(gain=cubic)@10': gain: expected linear or exp, got 'cubic'",
        ),
        ("mrr(rel=high)", "metric 'mrr(rel=high)': rel: expected a number, got 'high'"),
        (
            "mrr(depth=3)",
            "metric 'mrr(depth=3)': parameters: expected rel=<number>, "
            "gain=linear|exp, p=<persistence> or alpha=<number from 0 to 1>, got 'depth'",
        ),
        ("mrr(rel)", "metric 'mrr(rel)': parameters: expected name=value, got 'rel'"),
    ],
)
def test_bad_parameters_say_what_was_expected(text, message):
    with pytest.raises(ConfigError) as info:
        parse_metric(text)
    assert str(info.value) == message


def test_non_string_is_rejected():
    with pytest.raises(ConfigError) as info:
        parse_metric(10)  # type: ignore[arg-type]
    assert str(info.value) == "metric: expected a metric name such as 'ndcg@10', got 10"


def test_parse_metrics_reports_every_error_at_once():
    with pytest.raises(ConfigError) as info:
        parse_metrics(["ndcg@10", "ndgc@10", "mrr@0", "map"])
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("got 'ndgc@10'; did you mean 'ndcg@10'?")
    assert lines[1] == "metric 'mrr@0': cutoff: expected a whole number from 1 to 1000000, got '0'"


def test_parse_metrics_drops_duplicates_and_keeps_order():
    parsed = parse_metrics(["nDCG@10", "RR@10", "ndcg_cut.10", "mrr@10", "map", "AP"])
    assert [m.name for m in parsed] == ["ndcg@10", "mrr@10", "map"]
    assert parse_metrics("p@5") == [parse_metric("precision@5")]
    with pytest.raises(ConfigError) as info:
        parse_metrics([])
    assert str(info.value) == "metrics: expected at least one metric name, got none"


def test_direct_construction_is_validated():
    with pytest.raises(ConfigError) as info:
        Metric("ndcgg", 10)
    assert str(info.value) == (
        "metric: family: expected one of mrr, ndcg, dcg, err, alpha_ndcg, err_ia, recall, "
        "precision, hit, map, ap, gm_map, bpref, rprec, infap, rbp, rbp_residual, judged, "
        "got 'ndcgg'"
    )
    with pytest.raises(ConfigError):
        Metric("ndcg", 0)
    assert Metric("NDCG", 10, gain="EXP").name == "ndcg(gain=exp)@10"
