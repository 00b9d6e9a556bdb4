"""The metrics engine: hand-worked examples, conventions, errors, and a property test
against a slow, obviously-correct reference written here from the definitions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abrank.engines.evaluate import diagnose, evaluate, first_relevant_rank
from abrank.errors import ConfigError, DataError


def frame(rows, columns=("query_id", "doc_id", "rank")) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def qrels(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def log2(x: float) -> float:
    return math.log(x, 2)


# --------------------------------------------------------------------------- worked examples


def test_mrr_worked_example_first_relevant_at_1_3_2():
    rankings = frame(
        [
            ("a", "a1", 1),
            ("a", "a2", 2),
            ("b", "b1", 1),
            ("b", "b2", 2),
            ("b", "b3", 3),
            ("c", "c1", 1),
            ("c", "c2", 2),
            ("c", "c3", 3),
        ]
    )
    judgments = qrels([("a", "a1", 1), ("b", "b3", 1), ("c", "c2", 2), ("c", "c3", 1)])
    table = evaluate(rankings, judgments, ["mrr"])
    assert table["mrr"].tolist() == [1.0, 1 / 3, 1 / 2]
    assert table["mrr"].mean() == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert round(table["mrr"].mean(), 3) == 0.611


GRADED_RUN = frame([("q", "d1", 1), ("q", "d2", 2), ("q", "d3", 3), ("q", "d4", 4), ("q", "d5", 5)])
# d4 is unjudged; d6 is relevant but not retrieved; d7 has a negative grade
GRADED_QRELS = qrels(
    [
        ("q", "d1", 3),
        ("q", "d2", 0),
        ("q", "d3", 2),
        ("q", "d5", 1),
        ("q", "d6", 3),
        ("q", "d7", -1),
    ]
)


def test_dcg_and_ndcg_linear_gain_by_hand():
    table = evaluate(GRADED_RUN, GRADED_QRELS, ["dcg@5", "ndcg@5", "ndcg@1", "ndcg@3", "ndcg"])
    dcg5 = 3 / log2(2) + 0 + 2 / log2(4) + 0 + 1 / log2(6)
    # ideal ordering from all judgments: 3, 3, 2, 1 (d6 counts although not retrieved)
    idcg = [
        3,
        3 + 3 / log2(3),
        3 + 3 / log2(3) + 2 / log2(4),
        3 + 3 / log2(3) + 2 / log2(4) + 1 / log2(5),
    ]
    assert table.at["q", "dcg@5"] == pytest.approx(dcg5, abs=1e-12)
    assert table.at["q", "ndcg@5"] == pytest.approx(dcg5 / idcg[3], abs=1e-12)
    assert table.at["q", "ndcg@1"] == pytest.approx(1.0, abs=1e-12)
    assert table.at["q", "ndcg@3"] == pytest.approx((3 + 2 / log2(4)) / idcg[2], abs=1e-12)
    assert table.at["q", "ndcg"] == pytest.approx(dcg5 / idcg[3], abs=1e-12)
    assert round(table.at["q", "ndcg@5"], 6) == 0.693742  # 4.386853 / 6.323466


def test_dcg_and_ndcg_exponential_gain_by_hand():
    table = evaluate(
        GRADED_RUN, GRADED_QRELS, ["ndcg@5", "ndcg(gain=linear)@5", "dcg@5"], gain="exp"
    )
    dcg5 = 7 + 3 / log2(4) + 1 / log2(6)
    idcg5 = 7 + 7 / log2(3) + 3 / log2(4) + 1 / log2(5)
    assert table.at["q", "dcg@5"] == pytest.approx(dcg5, abs=1e-12)
    assert table.at["q", "ndcg@5"] == pytest.approx(dcg5 / idcg5, abs=1e-12)
    linear = (3 + 2 / log2(4) + 1 / log2(6)) / (3 + 3 / log2(3) + 2 / log2(4) + 1 / log2(5))
    assert table.at["q", "ndcg(gain=linear)@5"] == pytest.approx(linear, abs=1e-12)
    per_metric = evaluate(GRADED_RUN, GRADED_QRELS, ["ndcg(gain=exp)@5"])
    assert per_metric.iat[0, 0] == pytest.approx(dcg5 / idcg5, abs=1e-12)


def test_binary_metrics_by_hand():
    names = [
        "precision@2",
        "precision@10",
        "recall@3",
        "recall",
        "map",
        "ap@3",
        "hit@1",
        "hit@2",
        "judged@4",
        "judged",
        "mrr@1",
    ]
    table = evaluate(GRADED_RUN, GRADED_QRELS, names)
    row = table.loc["q"]
    # relevant (grade >= 1): d1, d3, d5 retrieved at 1, 3, 5; d6 not retrieved -> 4 relevant
    assert row["precision@2"] == 0.5
    assert row["precision@10"] == 3 / 10  # divides by k although only 5 retrieved
    assert row["recall@3"] == 2 / 4
    assert row["recall"] == 3 / 4
    assert row["map"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 5) / 4, abs=1e-15)
    assert row["ap@3"] == pytest.approx((1 / 1 + 2 / 3) / 4, abs=1e-15)
    assert (row["hit@1"], row["hit@2"], row["mrr@1"]) == (1.0, 1.0, 1.0)
    assert row["judged@4"] == 3 / 4  # d4 unjudged
    assert row["judged"] == 4 / 5


def test_relevance_threshold_and_per_metric_override():
    table = evaluate(
        GRADED_RUN,
        GRADED_QRELS,
        ["mrr", "recall", "precision@5", "mrr(rel=3)", "ndcg@5"],
        rel_level=2,
    )
    row = table.loc["q"]
    assert row["mrr"] == 1.0
    assert row["recall"] == 2 / 3  # grade >= 2: d1, d3 retrieved; d6 not
    assert row["precision@5"] == 2 / 5
    assert row["mrr(rel=3)"] == 1.0
    # the threshold does not change NDCG's gains
    assert row["ndcg@5"] == evaluate(GRADED_RUN, GRADED_QRELS, ["ndcg@5"]).at["q", "ndcg@5"]
    assert (
        evaluate(GRADED_RUN, GRADED_QRELS, ["mrr(rel=2)"], rel_level=3).at["q", "mrr(rel=2)"] == 1
    )


def test_query_without_relevant_judgment_is_undefined_for_every_judged_metric():
    rankings = frame([("q", "d1", 1), ("q", "d2", 2), ("z", "z1", 1)])
    judgments = qrels([("q", "d1", 3), ("z", "z1", 0), ("z", "z9", -2)])
    names = [
        "mrr",
        "ndcg@10",
        "recall@10",
        "map",
        "ap@5",
        "precision@2",
        "hit@2",
        "dcg@2",
        "judged@2",
    ]
    table = evaluate(rankings, judgments, names)
    z = table.loc["z"]
    # no ranking could score above 0 on z: every metric but the judged@k diagnostic is undefined
    assert (
        z[["mrr", "ndcg@10", "recall@10", "map", "ap@5", "precision@2", "hit@2", "dcg@2"]]
        .isna()
        .all()
    )
    assert z["judged@2"] == 0.5
    assert table.loc["q", "mrr"] == 1.0


def test_undefined_is_decided_per_metric_not_per_query():
    """Threshold 2, a query judged only with grade 1: no MRR/recall/P/hit, but an NDCG."""
    rankings = frame([("g1", "a", 1), ("g1", "b", 2)])
    judgments = qrels([("g1", "a", 0), ("g1", "b", 1)])
    table = evaluate(
        rankings, judgments, ["mrr", "recall@2", "p@2", "hit@2", "ndcg@2", "dcg@2"], rel_level=2
    )
    row = table.loc["g1"]
    assert row[["mrr", "recall@2", "precision@2", "hit@2"]].isna().all()
    # by hand: DCG@2 = 0 / log2(2) + 1 / log2(3); the ideal puts b first: IDCG@2 = 1
    assert row["dcg@2"] == pytest.approx(1 / math.log2(3), abs=1e-15)
    assert row["ndcg@2"] == pytest.approx(1 / math.log2(3), abs=1e-15)


def test_query_sets_and_complete():
    rankings = frame([("q1", "a", 1), ("q2", "b", 1), ("unjudged", "c", 1)])
    judgments = qrels([("q1", "a", 1), ("q2", "x", 1), ("q3", "y", 1), ("q4", "z", 0)])
    table = evaluate(rankings, judgments, ["mrr", "precision@1"])
    assert table.index.tolist() == ["q1", "q2"]
    full = evaluate(rankings, judgments, ["mrr", "precision@1"], complete=True)
    assert full.index.tolist() == ["q1", "q2", "q3", "q4"]
    assert full.loc["q3"].tolist() == [0.0, 0.0]
    assert math.isnan(full.at["q4", "mrr"]) and math.isnan(full.at["q4", "precision@1"])


def test_output_shape_index_and_column_order():
    rankings = frame([("10", "a", 1), ("9", "a", 1), ("2", "b", 1)])
    judgments = qrels([("10", "a", 1), ("9", "a", 1), ("2", "a", 1)])
    table = evaluate(rankings, judgments, ["p@1", "MRR", "nDCG@3"])
    assert table.index.name == "query_id"
    assert table.index.tolist() == ["10", "2", "9"]  # string order, as trec_eval
    assert list(table.columns) == ["precision@1", "mrr", "ndcg@3"]
    assert (table.dtypes == np.float64).all()


def test_rank_column_order_only_matters_ties_by_doc_id_descending():
    # 0-based, gapped ranks; "d9" > "d10" in string order, so d9 comes first at the tie
    rankings = frame([("q", "d10", 5), ("q", "d9", 5), ("q", "x", 0), ("q", "y", 40)])
    judgments = qrels([("q", "d9", 1), ("q", "d10", 1)])
    table = evaluate(rankings, judgments, ["mrr", "precision@2", "ap@2"])
    assert table.at["q", "mrr"] == 1 / 2
    assert table.at["q", "precision@2"] == 1 / 2
    ranks = first_relevant_rank(rankings, qrels([("q", "d10", 1)]))
    assert ranks.at["q"] == 3.0


def test_score_column_is_ranked_like_trec_eval():
    rankings = frame(
        [("q", "a", 0.5), ("q", "b", 2.0), ("q", "c", 2.0), ("q", "d", -1.0)],
        columns=("query_id", "doc_id", "score"),
    )
    judgments = qrels([("q", "b", 1)])
    # order: c (2.0, "c" > "b"), b (2.0), a, d
    assert evaluate(rankings, judgments, ["mrr"]).at["q", "mrr"] == 0.5


def test_depth_keeps_only_the_first_documents():
    rankings = frame([("q", f"d{i}", i) for i in range(1, 8)])
    judgments = qrels([("q", "d5", 1), ("q", "d6", 1)])
    assert evaluate(rankings, judgments, ["mrr"], depth=4).at["q", "mrr"] == 0.0
    assert evaluate(rankings, judgments, ["mrr"], depth=5).at["q", "mrr"] == 0.2
    assert evaluate(rankings, judgments, ["recall"], depth=5).at["q", "recall"] == 0.5
    assert evaluate(rankings, judgments, ["recall"], depth=None).at["q", "recall"] == 1.0


def test_labels_carried_by_the_log():
    rankings = pd.DataFrame(
        {
            "query_id": ["q", "q", "q", "r"],
            "doc_id": ["a", "b", "c", "a"],
            "rank": [1, 2, 3, 1],
            "relevance": [0, np.nan, 2, np.nan],
        }
    )
    table = evaluate(rankings, None, ["mrr", "judged@3", "ndcg@3"])
    assert table.index.tolist() == ["q"]  # r carries no label: not judged
    assert table.at["q", "mrr"] == 1 / 3
    assert table.at["q", "judged@3"] == 2 / 3
    assert table.at["q", "ndcg@3"] == pytest.approx((2 / log2(4)) / 2, abs=1e-15)


def test_first_relevant_rank():
    rankings = frame([("a", "x", 1), ("a", "y", 2), ("b", "x", 1), ("c", "x", 1)])
    judgments = qrels([("a", "y", 2), ("b", "z", 1), ("c", "x", 1)])
    ranks = first_relevant_rank(rankings, judgments)
    assert ranks.index.name == "query_id"
    assert ranks.loc["a"] == 2.0 and math.isnan(ranks.loc["b"]) and ranks.loc["c"] == 1.0
    assert math.isnan(first_relevant_rank(rankings, judgments, rel_level=3).loc["a"])


def test_long_ids_use_hashed_keys_and_still_match_exactly():
    prefix = "msmarco_v2.1_doc_29_677149#3_"
    rankings = frame([("q", f"{prefix}{i}", i) for i in range(1, 30)])
    judgments = qrels([("q", f"{prefix}{i}", 1) for i in (3, 17, 99)])
    table = evaluate(rankings, judgments, ["mrr", "recall", "precision@20"])
    assert table.loc["q"].tolist() == [1 / 3, 2 / 3, 2 / 20]


def test_diagnostics_of_an_arm():
    rankings = frame([("a", "x", 1), ("a", "y", 2), ("b", "x", 1), ("b", "w", 2), ("c", "x", 1)])
    judgments = qrels([("a", "y", 2), ("b", "z", 0), ("b", "x", 0), ("d", "x", 1)])
    found = diagnose(rankings, judgments, k=2)
    # ranked: a, b, c; scored (also judged): a, b; b has no relevant judgment
    # judged@2: a -> 1/2 (y), b -> 1/2 (x)
    assert found.to_dict() == {
        "queries": 3,
        "judged_queries": 2,
        "without_relevant": 1,
        "judged_at_k": 0.5,
        "k": 2,
        "rel_level": 1.0,
    }
    assert diagnose(rankings, judgments, k=2, rel_level=0).without_relevant == 0
    empty = diagnose(rankings, qrels([("d", "x", 1)]))
    assert empty.judged_queries == 0 and empty.to_dict()["judged_at_k"] is None


@pytest.mark.parametrize("stem", ["a", "abcdefg"])
def test_ids_that_differ_only_by_a_trailing_nul_byte_are_different(stem):
    rankings = frame([("q", stem + "\x00", 1), ("q", stem, 2)])
    table = evaluate(rankings, qrels([("q", stem, 1)]), ["mrr"])
    assert table.at["q", "mrr"] == 0.5


# --------------------------------------------------------------------------- errors


def test_duplicate_documents_in_a_ranking_are_an_error():
    rankings = frame([("q", "a", 1), ("q", "b", 2), ("q", "a", 3), ("r", "a", 1)])
    with pytest.raises(DataError) as info:
        evaluate(rankings, qrels([("q", "a", 1)]), ["mrr"])
    assert str(info.value) == (
        "rankings: (query_id, doc_id): expected each document once per query, got 1 "
        "duplicate(s): ('q', 'a')"
    )


def test_repeated_judgments_are_an_error():
    judgments = qrels([("q", "a", 1), ("q", "a", 2), ("q", "zz", 1), ("q", "zz", 0)])
    with pytest.raises(DataError) as info:
        evaluate(frame([("q", "a", 1)]), judgments, ["mrr"])
    assert str(info.value) == (
        "judgments: (query_id, doc_id): expected one judgment per pair, got 2 repeated: "
        "('q', 'a'), ('q', 'zz')"
    )


def test_arrays_without_labels_or_judgments_are_refused():
    import pyarrow as pa

    from abrank.engines.memory import prepare_arrays

    ids = pa.chunked_array([pa.array(["q", "q"])])
    docs = pa.chunked_array([pa.array(["a", "b"])])
    with pytest.raises(ValueError, match="expected labels inline or judgments"):
        prepare_arrays(ids, docs, np.array([1.0, 2.0]), None, ids, None, None, None, None)


def test_bad_frames_and_options():
    with pytest.raises(DataError) as info:
        evaluate(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"]}), qrels([]), ["mrr"])
    assert str(info.value) == (
        "rankings: columns: expected a rank or a score column, got query_id, doc_id"
    )
    with pytest.raises(DataError) as info:
        evaluate(pd.DataFrame({"q_no": ["q"], "doc_id": ["a"], "rank": [1]}), qrels([]), ["mrr"])
    assert str(info.value) == "rankings: columns: expected query_id, doc_id, got q_no, doc_id, rank"
    with pytest.raises(DataError) as info:
        evaluate(frame([("q", "a", "first")]), qrels([("q", "a", 1)]), ["mrr"])
    assert str(info.value) == "rankings: rank: row 0: expected a number, got 'first'"
    with pytest.raises(DataError) as info:
        evaluate(frame([("q", "a", 1)]), qrels([("q", "a", "high")]), ["mrr"])
    assert str(info.value) == "judgments: relevance: row 0: expected a number, got 'high'"
    with pytest.raises(DataError) as info:
        evaluate(frame([("q", "a", 1)]), None, ["mrr"])
    assert str(info.value) == (
        "judgments: expected a judgments frame or a relevance column in the rankings, got neither"
    )
    with pytest.raises(DataError) as info:
        evaluate(frame([("q", "a", 1), ("q", None, 2)]), qrels([("q", "a", 1)]), ["mrr"])
    assert str(info.value) == "rankings: doc_id: row 1: expected an id, got a missing value"
    with pytest.raises(ConfigError) as info:
        evaluate(frame([("q", "a", 1)]), qrels([("q", "a", 1)]), ["mrr"], gain="cubic")
    assert str(info.value) == "gain: expected one of linear, exp, got 'cubic'"
    with pytest.raises(ConfigError) as info:
        evaluate(frame([("q", "a", 1)]), qrels([("q", "a", 1)]), ["mrr"], depth=0)
    assert str(info.value) == "depth: expected a whole number >= 1 or None, got 0"
    with pytest.raises(ConfigError) as info:
        evaluate(frame([("q", "a", 1)]), qrels([("q", "a", 1)]), ["mrr"], rel_level="x")
    assert str(info.value) == "rel_level: expected a number, got 'x'"


# --------------------------------------------------------------------------- property test

METRICS = [
    "mrr",
    "mrr@3",
    "mrr(rel=2)@5",
    "ndcg",
    "ndcg@3",
    "ndcg(gain=exp)@4",
    "dcg@3",
    "dcg",
    "recall@3",
    "recall",
    "precision@3",
    "precision(rel=2)@1",
    "hit@2",
    "hit",
    "map",
    "ap@3",
    "judged@3",
    "judged",
]


def reference(rankings: pd.DataFrame, judged: dict, *, rel_level, gain, depth, complete):
    """Per-query metric values straight from the definitions, one query at a time."""
    by_query: dict[str, list] = {}
    for row in rankings.itertuples(index=False):
        by_query.setdefault(row.query_id, []).append(row)
    judged_queries = {q for q, _ in judged}
    queries = sorted(judged_queries if complete else judged_queries & set(by_query))
    out = {}
    for q in queries:
        rows = by_query.get(q, [])
        rows = sorted(rows, key=lambda r: r.doc_id, reverse=True)  # ties: doc id descending
        if "rank" in rankings.columns:
            rows = sorted(rows, key=lambda r: r.rank)
        else:
            rows = sorted(rows, key=lambda r: -r.score)
        docs = [r.doc_id for r in rows][: depth or None]
        grades = {d: g for (qq, d), g in judged.items() if qq == q}
        values = {}
        for name in METRICS:
            family, _, k = name.partition("@")
            k = int(k) if k else None
            t = rel_level
            kind = gain
            if "(rel=2)" in family:
                family, t = family.split("(")[0], 2
            if "(gain=exp)" in family:
                family, kind = family.split("(")[0], "exp"
            top = docs[:k] if k else docs
            rel = [d in grades and grades[d] >= t for d in top]
            num_rel = sum(g >= t for g in grades.values())

            def g_of(grade, kind=kind):
                if grade is None or grade <= 0:
                    return 0.0
                return 2.0**grade - 1 if kind == "exp" else float(grade)

            if family == "mrr":
                first = next((i for i, r in enumerate(rel) if r), None)
                v = math.nan if num_rel == 0 else (0.0 if first is None else 1 / (first + 1))
            elif family in ("ndcg", "dcg"):
                dcg = sum(g_of(grades.get(d)) / math.log2(i + 2) for i, d in enumerate(top))
                ideal = sorted((g_of(x) for x in grades.values()), reverse=True)
                ideal = [x for x in ideal if x > 0][: k or None]
                idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal))
                # undefined when no judged document has any gain to give
                v = math.nan if idcg == 0 else (dcg if family == "dcg" else dcg / idcg)
            elif family == "recall":
                v = sum(rel) / num_rel if num_rel else math.nan
            elif family == "precision":
                v = sum(rel) / k if num_rel else math.nan
            elif family == "hit":
                v = float(any(rel)) if num_rel else math.nan
            elif family in ("map", "ap"):
                found, total = 0, 0.0
                for i, r in enumerate(rel):
                    if r:
                        found += 1
                        total += found / (i + 1)
                v = total / num_rel if num_rel else math.nan
            elif family == "judged":
                n_judged = sum(d in grades for d in top)
                denominator = k if k else len(top)
                v = n_judged / denominator if denominator else 0.0
            values[name] = v
        out[q] = values
    return out


QUERIES = ["q1", "q10", "q2", "9", "b"]


@st.composite
def cases(draw):
    long_ids = draw(st.booleans())
    pool = [
        f"doc-{i:02d}-with-a-rather-long-identifier" if long_ids else f"d{i}" for i in range(12)
    ]
    by_rank = draw(st.booleans())
    rows = []
    for q in draw(st.lists(st.sampled_from(QUERIES), unique=True, max_size=4)):
        docs = draw(st.lists(st.sampled_from(pool), unique=True, max_size=9))
        for d in docs:
            key = (
                draw(st.integers(0, 4)) if by_rank else draw(st.sampled_from([-1.0, 0.0, 0.5, 2.0]))
            )
            rows.append((q, d, key))
    draw(st.randoms()).shuffle(rows)
    rankings = frame(rows, columns=("query_id", "doc_id", "rank" if by_rank else "score"))
    judged = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), unique=True, max_size=4)):
        for d in draw(st.lists(st.sampled_from(pool), unique=True, max_size=6)):
            judged[(q, d)] = draw(st.sampled_from([-1, 0, 1, 2, 3]))
    options = {
        "rel_level": draw(st.sampled_from([1, 2])),
        "gain": draw(st.sampled_from(["linear", "exp"])),
        "depth": draw(st.sampled_from([None, 3, 1000])),
        "complete": draw(st.booleans()),
    }
    return rankings, judged, options


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_matches_slow_reference(case):
    rankings, judged, options = case
    judgments = qrels([(q, d, g) for (q, d), g in judged.items()])
    expected = reference(rankings, judged, **options)
    if rankings.empty:
        rankings = rankings.astype({"query_id": str, "doc_id": str})
    table = evaluate(rankings, judgments, METRICS, **options)
    assert table.index.tolist() == list(expected)
    for q, values in expected.items():
        for name, value in values.items():
            got = table.at[q, name]
            if math.isnan(value):
                assert math.isnan(got), (q, name)
            else:
                assert got == pytest.approx(value, abs=1e-12), (q, name, got, value)


CUT_METRICS = [m for m in METRICS if "@" in m and m != "judged@3"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_cutoff_only_metrics_join_only_the_rows_they_read(case):
    """With every metric cut off, rows below the deepest cutoff are not joined at all."""
    rankings, judged, options = case
    judgments = qrels([(q, d, g) for (q, d), g in judged.items()])
    expected = reference(rankings, judged, **options)
    if rankings.empty:
        rankings = rankings.astype({"query_id": str, "doc_id": str})
    table = evaluate(rankings, judgments, CUT_METRICS, **options)
    assert table.index.tolist() == list(expected)
    for q, values in expected.items():
        for name in CUT_METRICS:
            value, got = values[name], table.at[q, name]
            assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_inline_labels_match_a_separate_judgments_frame(case):
    rankings, judged, options = case
    if rankings.empty:
        return
    labels = [
        judged.get((q, d), np.nan) for q, d in zip(rankings.query_id, rankings.doc_id, strict=True)
    ]
    inline = rankings.assign(relevance=labels)
    carried = {
        (q, d): g
        for (q, d), g in judged.items()
        if ((rankings.query_id == q) & (rankings.doc_id == d)).any()
    }
    if not carried:
        return
    options = {**options, "complete": False}
    separate = evaluate(
        rankings, qrels([(q, d, g) for (q, d), g in carried.items()]), METRICS, **options
    )
    pd.testing.assert_frame_equal(evaluate(inline, None, METRICS, **options), separate)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(1, 70).map(float), st.floats(0.01, 80, allow_nan=False)),
        max_size=40,
    )
)
def test_gain_levels_by_counting_equal_numpys_unique(values):
    from abrank.engines.memory import gain_levels

    gains = np.array(values, dtype=np.float64)
    levels, level_of = gain_levels(gains)
    expected_levels, expected_of = np.unique(gains, return_inverse=True)
    np.testing.assert_array_equal(levels, expected_levels)
    np.testing.assert_array_equal(level_of, expected_of)
