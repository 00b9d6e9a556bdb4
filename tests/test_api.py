"""The Python API as a notebook user meets it: ``dir(abrank)``, and ``evaluate`` taking the
same column spellings as the file readers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import abrank
from abrank.engines.evaluate import canonical_frame, diagnose, first_relevant_rank
from abrank.errors import DataError


def test_dir_lists_the_public_api_lazy_names_included():
    names = dir(abrank)
    for name in ("evaluate", "compare", "run_experiment", "read_rankings", "Readout"):
        assert name in names
    assert "ConfigError" in names and "__version__" in names
    assert names == sorted(names)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    for name in names:  # every name listed is really there
        assert getattr(abrank, name) is not None


# q1: a (grade 0) then b (grade 1): first relevant at 2, MRR 1/2, NDCG@10 1/log2(3)
# q2: c (grade 2) first: MRR 1, NDCG@10 1
EXPECTED = {"q1": (0.5, 1 / math.log2(3)), "q2": (1.0, 1.0)}


@pytest.mark.parametrize(
    ("ranking_columns", "judgment_columns"),
    [
        (("query_id", "doc_id", "rank"), ("query_id", "doc_id", "relevance")),
        (("qid", "docid", "pos"), ("qid", "doc", "rel")),
        (("topic", "docno", "position"), ("query", "document", "grade")),
        (("QID", "DocNo", "Rank"), ("Qid", "DOC_ID", "Label")),
    ],
)
def test_evaluate_accepts_the_readers_column_spellings(ranking_columns, judgment_columns):
    q, d, r = ranking_columns
    rankings = pd.DataFrame({q: ["q1", "q1", "q2"], d: ["a", "b", "c"], r: [1, 2, 1]})
    jq, jd, jr = judgment_columns
    judgments = pd.DataFrame({jq: ["q1", "q1", "q2"], jd: ["a", "b", "c"], jr: [0, 1, 2]})
    values = abrank.evaluate(rankings, judgments, ["mrr@10", "ndcg@10"])
    assert list(values.index) == ["q1", "q2"]
    for query, (mrr, ndcg) in EXPECTED.items():
        assert values.loc[query, "mrr@10"] == pytest.approx(mrr, abs=1e-12)
        assert values.loc[query, "ndcg@10"] == pytest.approx(ndcg, abs=1e-12)
    assert first_relevant_rank(rankings, judgments).tolist() == [2.0, 1.0]
    # judged@2 divides by k: q1 2/2, q2 1/2
    assert diagnose(rankings, judgments, k=2).judged_at_k == 0.75


def test_a_score_column_spelt_sim_ranks_and_inline_labels_spelt_grade():
    rankings = pd.DataFrame(
        {"qid": ["q1", "q1"], "docid": ["a", "b"], "sim": [1.0, 2.0], "grade": [1, 0]}
    )
    # b scores higher, so the relevant a is second
    assert abrank.evaluate(rankings, None, ["mrr"])["mrr"].tolist() == [0.5]


def test_canonical_names_win_and_frames_needing_nothing_are_not_copied():
    frame = pd.DataFrame({"query_id": ["q"], "qid": ["other"], "doc_id": ["a"], "rank": [1]})
    assert canonical_frame(frame) is frame
    renamed = canonical_frame(pd.DataFrame({"qid": ["q"], "doc": ["a"], "pos": [1]}))
    assert list(renamed.columns) == ["query_id", "doc_id", "rank"]


def test_a_frame_without_any_spelling_of_a_column_is_still_refused():
    with pytest.raises(DataError) as info:
        abrank.evaluate(
            pd.DataFrame({"q_no": ["q"], "doc": ["a"], "pos": [1]}),
            pd.DataFrame({"qid": ["q"], "doc": ["a"], "rel": [1]}),
            ["mrr"],
        )
    assert str(info.value) == "rankings: columns: expected query_id, doc_id, got q_no, doc_id, rank"
