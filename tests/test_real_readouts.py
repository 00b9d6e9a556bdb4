"""Whole readouts on real TREC data agree with trec_eval's figures (shared data README).

The expected means and query counts are trec_eval 9.0.8's ``all`` rows as printed in the
significance table at the end of the shared README.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from abrank.analysis import run_experiment
from abrank.config import build_experiment


def dl_hard(shared_data: Path, kind: str, treatment: str, **overrides) -> dict:
    base = shared_data / "dl-hard"
    config = {
        "name": "dl-hard",
        "control": {"name": "bm25", "path": str(base / "baselines" / kind / "bm25.run.gz")},
        "treatments": [
            {"name": "rerank", "path": str(base / "baselines" / kind / f"{treatment}.run.gz")}
        ],
        "judgments": {"path": str(base / f"dl_hard-{kind}.qrels")},
        "analysis": {"resamples": 200},
        **overrides,
    }
    summary = run_experiment(build_experiment(config, source="dl-hard.yaml")).summary
    return {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}


def test_ndcg_keeps_queries_judged_only_below_the_relevance_threshold(shared_data):
    """DL-HARD doc, threshold 2: two queries hold only grade-1 documents. They have no
    MRR(rel=2) but do have an NDCG (its gains are the raw grades), so NDCG@10 is read on all
    50 queries, as trec_eval reads it: 0.2716 -> 0.3850."""
    found = dl_hard(
        shared_data, "doc", "bm25+electra-mp", metrics=["ndcg@10", "mrr"], relevance_threshold=2
    )
    ndcg = found["ndcg@10"]
    assert ndcg["n"] == 50
    assert round(ndcg["control_mean"], 4) == 0.2716
    assert round(ndcg["treatment_mean"], 4) == 0.3850
    assert found["mrr"]["n"] == 48


def test_no_relevant_zero_gives_trec_eval_all_row(shared_data):
    """DL-HARD passage BM25 -> BM25+T5 MRR at -l 2: trec_eval's means 0.5044 -> 0.5910 on 50
    queries, which count the queries without a grade-2 document as 0."""
    zero = dl_hard(
        shared_data,
        "passage",
        "bm25+t5(zs)",
        metrics=["mrr"],
        relevance_threshold=2,
        no_relevant="zero",
    )["mrr"]
    assert zero["n"] == 50
    assert round(zero["control_mean"], 4) == 0.5044
    assert round(zero["treatment_mean"], 4) == 0.5910
    dropped = dl_hard(
        shared_data, "passage", "bm25+t5(zs)", metrics=["mrr"], relevance_threshold=2
    )["mrr"]
    assert dropped["n"] < 50
    # the same sums over fewer queries
    assert dropped["control_mean"] * dropped["n"] == pytest.approx(zero["control_mean"] * 50)
