"""Click metrics: their names in the one registry and parser, and their per-impression values
against a slow reference (a Python loop per impression) written here."""

from __future__ import annotations

import pandas as pd
import pytest

from abrank.engines.evaluate import evaluate
from abrank.errors import ConfigError
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
        "mrr", "ndcg", "dcg", "recall", "precision", "hit", "map", "ap", "judged"
    ]  # fmt: skip
    assert all(FAMILIES[f].relevance == "click" for f in click_families())
    assert not any(parse_metric(name).is_click for name in ("mrr@10", "ndcg", "map", "judged@5"))
    assert "; click metrics click_rr, click_rr@k, click_mrr, ctr, ctr@k, clicks, clicks@k, " in (
        known_names()
    )
    assert "abandonment, sat_ctr, sat_ctr@k; parameters" in known_names()


BAD = [
    ("abandonment@5", "metric 'abandonment@5': cutoff: expected no cutoff (abandonment takes "
     "none), got @5"),
    ("ctr@0", "metric 'ctr@0': cutoff: expected a whole number >= 1, got '0'"),
    ("click_rr@x", "metric 'click_rr@x': cutoff: expected a whole number >= 1, got 'x'"),
    ("clicks@2.5", "metric 'clicks@2.5': cutoff: expected a whole number >= 1, got '2.5'"),
    ("ctr(rel=2)@3", "metric 'ctr(rel=2)@3': rel: expected no relevance threshold (it applies "
     "to mrr, recall, precision, hit, map and ap), got one"),
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
        "metric abandonment: cutoff: expected no cutoff (abandonment takes none), got @3"
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
