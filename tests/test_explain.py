"""Explanations: ranked lists in trec_eval's order, RBO against a slow reference, and the
per-document decomposition of ΔDCG@k / ΔNDCG@k against the metric engine on TREC runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from abrank import evaluate
from abrank.explain.dcg import dcg_contributions, ideal_dcg, query_changes
from abrank.explain.lists import ranked_lists
from abrank.explain.rbo import rbo
from abrank.io.trec import read_trec_qrels, read_trec_run


def _lists(rows: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"query_id": q, "doc_id": d, "rank": i + 1}
            for q, docs in rows.items()
            for i, d in enumerate(docs)
        ],
        columns=["query_id", "doc_id", "rank"],
    )


# --------------------------------------------------------------------------- lists


def test_ranked_lists_follow_trec_evals_order_and_cut():
    frame = pd.DataFrame(
        {
            "query_id": ["q2", "q1", "q1", "q1", "q2"],
            "doc_id": ["x", "a", "c", "b", "y"],
            "score": [1.0, 2.0, 2.0, 3.0, 5.0],
        }
    )
    lists = ranked_lists(frame)
    # q1: b (3.0), then a and c tied at 2.0: doc id descending, c before a
    assert lists.values.tolist() == [
        ["q1", "b", 1],
        ["q1", "c", 2],
        ["q1", "a", 3],
        ["q2", "y", 1],
        ["q2", "x", 2],
    ]
    assert ranked_lists(frame, depth=1)["doc_id"].tolist() == ["b", "y"]


# --------------------------------------------------------------------------- RBO


def _rbo_reference(s: list[str], other: list[str], p: float) -> float:
    """Webber et al.'s equation 32, term by term with sets (s the shorter list)."""
    if len(s) > len(other):
        s, other = other, s
    if not s:
        return 0.0 if other else math.nan
    short, long = len(s), len(other)

    def x(d: int) -> int:
        return len(set(s[: min(d, short)]) & set(other[:d]))

    first = sum(x(d) / d * p**d for d in range(1, long + 1))
    second = sum(x(short) * (d - short) / (short * d) * p**d for d in range(short + 1, long + 1))
    last = ((x(long) - x(short)) / long + x(short) / short) * p**long
    return (1 - p) / p * (first + second) + last


def test_rbo_by_hand():
    control = _lists({"q1": ["a", "b"], "q2": ["a", "b", "c"], "q3": ["a"], "q5": ["z"]})
    treatment = _lists({"q1": ["b", "a"], "q2": ["a", "b", "c"], "q3": ["b"], "q4": ["a"]})
    got = rbo(control, treatment, p=0.9)
    # q1: X_1 = 0, X_2 = 2: 0.1 / 0.9 * (2 / 2 * 0.81) + (2 / 2) * 0.81 = 0.09 + 0.81
    assert got["q1"] == pytest.approx(0.9, abs=1e-15)
    assert got["q2"] == pytest.approx(1.0, abs=1e-15)  # identical lists
    assert got["q3"] == 0.0  # disjoint
    assert got["q4"] == 0.0 and got["q5"] == 0.0  # one arm did not rank the query
    assert list(got.index) == ["q1", "q2", "q3", "q4", "q5"]


def test_rbo_equals_the_reference_on_generated_lists():
    rng = np.random.default_rng(11)
    pool = [f"d{i}" for i in range(40)]
    control_rows, treatment_rows = {}, {}
    for query in range(300):
        kind = query % 5
        a = list(rng.choice(pool, size=int(rng.integers(1, 30)), replace=False))
        if kind == 0:  # disjoint
            b = [d for d in pool if d not in a][: int(rng.integers(1, 10))]
        elif kind == 1:  # the same documents, shuffled and cut
            b = list(rng.permutation(a))[: int(rng.integers(1, len(a) + 1))]
        else:
            b = list(rng.choice(pool, size=int(rng.integers(1, 35)), replace=False))
        control_rows[f"q{query:03d}"], treatment_rows[f"q{query:03d}"] = a, b
    for p in (0.9, 0.5, 0.98):
        got = rbo(_lists(control_rows), _lists(treatment_rows), p=p)
        for query, a in control_rows.items():
            expected = _rbo_reference(a, treatment_rows[query], p)
            assert got[query] == pytest.approx(expected, abs=1e-12), (query, p)


def test_rbo_reads_ties_in_trec_evals_order():
    # tied scores: the lists RBO compares are trec_eval's (doc id descending within a tie)
    control = pd.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [1.0, 1.0, 1.0, 0.5]}
    )
    treatment = pd.DataFrame(
        {"query_id": ["q"] * 3, "doc_id": ["d", "a", "b"], "score": [3.0, 2.0, 2.0]}
    )
    got = rbo(ranked_lists(control), ranked_lists(treatment))
    expected = _rbo_reference(["c", "b", "a", "d"], ["d", "b", "a"], 0.9)
    assert got["q"] == pytest.approx(expected, abs=1e-12)


def test_rbo_refuses_a_persistence_outside_0_1():
    lists = _lists({"q": ["a"]})
    for p in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="persistence"):
            rbo(lists, lists, p=p)


# --------------------------------------------------------------------------- ΔDCG


def test_contributions_by_hand():
    control = _lists({"q": ["a", "b", "c"]})
    treatment = _lists({"q": ["c", "a", "x"]})
    judgments = pd.DataFrame(
        {"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "c"], "relevance": [1.0, 2.0, 3.0]}
    )
    rows = dcg_contributions(control, treatment, judgments, k=3).set_index("doc_id")
    log2 = math.log2
    assert rows.loc["a", "contribution"] == pytest.approx(1 * (1 / log2(3) - 1 / log2(2)))
    assert rows.loc["b", "contribution"] == pytest.approx(2 * (0 - 1 / log2(3)))  # dropped
    assert rows.loc["c", "contribution"] == pytest.approx(3 * (1 / log2(2) - 1 / log2(4)))
    assert rows.loc["x", "contribution"] == 0.0 and math.isnan(rows.loc["x", "grade"])
    ideal = 3 + 2 / log2(3) + 1 / log2(4)
    assert rows["ideal"].tolist() == pytest.approx([ideal] * 4)
    dcg_c = 1 + 2 / log2(3) + 3 / log2(4)
    dcg_t = 3 + 1 / log2(3)
    changes = query_changes(rows.reset_index())
    assert changes.loc["q", "delta_dcg"] == pytest.approx(dcg_t - dcg_c, abs=1e-15)
    assert changes.loc["q", "delta_ndcg"] == pytest.approx((dcg_t - dcg_c) / ideal, abs=1e-15)


def test_ideal_dcg_with_exp_gain():
    judgments = pd.DataFrame(
        {"query_id": ["q"] * 3 + ["r"], "doc_id": list("abcd"), "relevance": [1, 3, 0, 0.0]}
    )
    ideal = ideal_dcg(judgments, 2, "exp")
    assert ideal["q"] == pytest.approx(7 + 1 / math.log2(3))
    assert math.isnan(ideal["r"])  # no gain to be had


def _run(path) -> pd.DataFrame:
    return read_trec_run(path).drop(columns=["rank"])  # scored as trec_eval does: by score


def test_contributions_sum_to_the_engines_deltas_on_trec_runs(shared_data):
    folder = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(folder / "qrels.dl19-passage.txt")
    runs = sorted((folder / "runs").glob("dl19.*.txt"))
    assert len(runs) >= 2
    metrics = ["dcg@10", "ndcg@10"]
    for gain in ("linear", "exp"):
        scored = {
            run.name: evaluate(_run(run), qrels, metrics, gain=gain, depth=None) for run in runs
        }
        for first, second in itertools.combinations(runs, 2):
            control, treatment = _run(first), _run(second)
            rows = dcg_contributions(
                ranked_lists(control), ranked_lists(treatment), qrels, 10, gain
            )
            changes = query_changes(rows)
            before, after = scored[first.name], scored[second.name]
            both = before.index.intersection(after.index).intersection(changes.index)
            assert len(both) >= 40
            for metric, column in (("dcg@10", "delta_dcg"), ("ndcg@10", "delta_ndcg")):
                want = (after.loc[both, metric] - before.loc[both, metric]).to_numpy()
                got = changes.loc[both, column].to_numpy()
                defined = ~np.isnan(want)
                assert defined.sum() >= 40
                np.testing.assert_allclose(got[defined], want[defined], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- moves


def test_moves_tags_and_their_parts_of_the_change():
    from abrank.explain.moves import by_move, document_moves, query_tags

    control = _lists({"q": ["a", "b", "c", "e"], "r": ["a"]})
    treatment = _lists({"q": ["c", "a", "u", "f"], "r": ["a"]})
    judgments = pd.DataFrame(
        {
            "query_id": ["q"] * 5 + ["r"],
            "doc_id": ["a", "b", "c", "e", "f", "a"],
            "relevance": [1.0, 2.0, 3.0, 0.0, 1.0, 1.0],
        }
    )
    rows = dcg_contributions(control, treatment, judgments, k=4)
    moves = dict(zip(rows["query_id"] + ":" + rows["doc_id"], document_moves(rows), strict=True))
    assert moves == {
        "q:a": "relevant_demoted",  # 1 -> 2
        "q:b": "relevant_dropped",
        "q:c": "relevant_promoted",  # 3 -> 1
        "q:e": "other",  # judged not relevant, dropped
        "q:f": "relevant_entered",
        "q:u": "unjudged_entered",
        "r:a": "unchanged",
    }
    missing = pd.Series({"q": "", "r": "reranker", "s": "reranker"})
    tags = query_tags(rows, missing=missing)
    assert tags["q"] == [
        "relevant_promoted",
        "relevant_demoted",
        "relevant_entered",
        "relevant_dropped",
        "unjudged_entered",
    ]
    assert tags["r"] == ["missing_log"] and tags["s"] == ["missing_log"]
    parts = by_move(rows)
    changes = query_changes(rows)
    assert parts.sum() == pytest.approx(changes["delta_dcg"].mean(), abs=1e-15)
    log2 = math.log2
    assert parts["relevant_promoted"] == pytest.approx(3 * (1 - 1 / log2(4)) / 2)
    assert parts["relevant_entered"] == pytest.approx(1 / log2(5) / 2)
    assert parts["unjudged_entered"] == 0.0
    normalised = by_move(rows, normalise=True)
    assert normalised.sum() == pytest.approx(changes["delta_ndcg"].mean(), abs=1e-15)


# --------------------------------------------------------------------------- other metrics


@pytest.mark.parametrize(
    "metric", ["mrr@10", "hit@3", "recall@20", "precision@5", "ndcg@10", "dcg@5"]
)
def test_every_split_metric_sums_to_the_engines_delta_on_trec_runs(shared_data, metric):
    from abrank.explain.contributions import metric_contributions

    folder = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(folder / "qrels.dl19-passage.txt")
    first, second = sorted((folder / "runs").glob("dl19.bm25*.txt"))[:2]
    control, treatment = _run(first), _run(second)
    before = evaluate(control, qrels, [metric], rel_level=2, depth=None)[metric]
    after = evaluate(treatment, qrels, [metric], rel_level=2, depth=None)[metric]
    rows = metric_contributions(
        metric, ranked_lists(control), ranked_lists(treatment), qrels, threshold=2
    )
    got = rows.groupby("query_id")["contribution"].sum()
    both = before.dropna().index.intersection(after.dropna().index)
    assert len(both) >= 40
    want = after[both] - before[both]
    # a query whose top k holds nothing relevant in either arm has no rows: its change is 0
    np.testing.assert_allclose(got.reindex(both, fill_value=0.0), want, rtol=0, atol=1e-12)
    assert (want != 0).sum() >= 5  # the two runs differ on many queries


def test_a_metric_that_does_not_split_is_refused():
    from abrank.explain.contributions import metric_contributions

    lists = _lists({"q": ["a"]})
    judgments = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1.0]})
    with pytest.raises(ValueError, match="map"):
        metric_contributions("map", lists, lists, judgments)


# --------------------------------------------------------------------------- the readout


@pytest.fixture(scope="module")
def demo_readout(tmp_path_factory):
    from pathlib import Path

    import abrank
    from abrank.analysis import write_readout
    from abrank.readout import load_readout

    root = Path(__file__).resolve().parent.parent
    readout = abrank.run_experiment(root / "experiments" / "demo-reranker.yaml")
    folder = tmp_path_factory.mktemp("explained") / "demo"
    write_readout(readout, folder, formats=("json", "csv"))
    return readout, load_readout(folder), folder


def test_the_demo_keeps_its_explanation_tables(demo_readout):
    readout, loaded, folder = demo_readout
    queries, rankings = readout.queries, readout.rankings
    assert len(queries) == 2000 and queries["query_id"].is_unique
    # the lists are the top 20 (recall@20 is the deepest cutoff), with the judgments' grades
    assert rankings.groupby(["arm", "query_id"]).size().max() == 20
    assert set(rankings["arm"]) == {"bm25", "reranker"}
    per_query = readout.per_query.set_index(["arm", "query_id"])
    for arm in ("bm25", "reranker"):
        mine = queries.set_index("query_id")[f"{arm}:mrr@10"]
        theirs = per_query.loc[arm, "mrr@10"].reindex(mine.index)
        np.testing.assert_array_equal(mine.to_numpy(), theirs.to_numpy())
    lacked = queries.loc[queries["missing_in"] != "", "tags:reranker"]
    assert len(lacked) == 20 and all("missing_log" in tags for tags in lacked)
    # read back from the folder: the same tables
    pd.testing.assert_frame_equal(loaded.rankings, rankings)
    assert loaded.queries["query_id"].tolist() == queries["query_id"].tolist()
    size = sum((folder / name).stat().st_size for name in ("queries.parquet", "rankings.parquet"))
    assert size < 2 * (folder / "per_query.csv").stat().st_size


@pytest.mark.parametrize("metric", ["mrr@10", "ndcg@10", "recall@20", "hit@3"])
def test_query_lists_sum_to_each_querys_change(demo_readout, metric):
    readout, loaded, _ = demo_readout
    queries = readout.queries.set_index("query_id")
    deltas = queries[f"delta:reranker:{metric}"].dropna()
    moved = deltas[deltas != 0]
    for query in [*moved.index[:15], moved.idxmin(), moved.idxmax()]:
        table = loaded.query(query, metric)
        assert table["contribution"].sum() == pytest.approx(deltas[query], abs=1e-12)
        assert list(table.columns) == [
            "doc_id",
            "grade",
            "rank_bm25",
            "rank_reranker",
            "contribution",
        ]
    # the mean change over the compared queries, split by move: the parts sum to it
    parts = readout.explain(metric)
    assert parts["change"].sum() == pytest.approx(deltas.mean(), abs=1e-12)


def test_query_and_explain_name_what_they_refuse(demo_readout):
    from abrank.errors import ConfigError

    readout, _, _ = demo_readout
    with pytest.raises(ConfigError, match="expected a query of the readout"):
        readout.query("no-such-query")
    with pytest.raises(ConfigError, match="expected one of"):
        readout.query(readout.queries["query_id"][0], "map")
    with pytest.raises(ConfigError, match="treatment: expected one of"):
        readout.explain("mrr@10", treatment="bm25")


def test_a_readout_above_the_row_limit_goes_without_the_tables(tmp_path, monkeypatch):
    from pathlib import Path

    import abrank
    from abrank.designs.offline import explain

    monkeypatch.setattr(explain, "MAX_ROWS", 10)
    said = []
    root = Path(__file__).resolve().parent.parent
    readout = abrank.run_experiment(
        root / "experiments" / "demo-reranker.yaml", progress=said.append
    )
    assert readout.queries is None and readout.rankings is None
    assert any("no explanation tables: 79," in line and "more than 10" in line for line in said)


# --------------------------------------------------------------------------- integer joins


def _side_frames(rng, n, prefix):
    queries = rng.integers(0, 50, size=n)
    docs = rng.integers(0, 400, size=n)
    frame = pd.DataFrame({"query_id": [f"q{q}" for q in queries], "doc_id": docs})
    frame["doc_id"] = prefix + frame["doc_id"].astype(str)
    return frame.drop_duplicates(["query_id", "doc_id"], ignore_index=True)


@pytest.mark.parametrize("prefix", ["d", "a-document-id-longer-than-sixteen-bytes/"])
def test_pair_lookups_equal_a_merge_on_the_id_strings(prefix):
    import pyarrow as pa

    from abrank.explain.pairs import _lookup_sorted, lookup, sides
    from abrank.io.arrow import as_arrow, query_codes

    rng = np.random.default_rng(3)
    left, right = _side_frames(rng, 6000, prefix), _side_frames(rng, 4000, prefix)
    (codes_l, codes_r), _ = query_codes(as_arrow(left["query_id"]), as_arrow(right["query_id"]))
    side_l, side_r = sides(
        [
            (codes_l, as_arrow(left["doc_id"]), np.arange(len(left))),
            (codes_r, as_arrow(right["doc_id"]), np.arange(len(right))),
        ]
    )
    assert side_l.keys.exact == (prefix == "d")
    merged = left.merge(right.reset_index(), on=["query_id", "doc_id"], how="left")
    want = merged["index"].fillna(-1).to_numpy(dtype=np.int64)
    assert (want >= 0).sum() > 100
    np.testing.assert_array_equal(lookup(side_l, side_r), want)
    np.testing.assert_array_equal(_lookup_sorted(side_l, side_r), want)
    # a right side holding a pair twice is joined by the sort, to the first of the two
    twice = side_r.take(np.concatenate([np.arange(len(right)), [0]]))
    np.testing.assert_array_equal(lookup(side_l, twice), want)
    assert isinstance(side_l.docs, pa.ChunkedArray)


def test_the_tables_do_not_depend_on_how_long_the_ids_are(demo_readout):
    from abrank.explain.tables import offline_explanation

    readout, _, _ = demo_readout
    rankings = readout.rankings
    lists = {
        arm: rankings[rankings["arm"] == arm].drop(columns=["arm"]) for arm in ("bm25", "reranker")
    }
    judged = rankings.dropna(subset=["grade"]).drop_duplicates(["query_id", "doc_id"])
    judgments = judged[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
    queries = readout.queries.set_index("query_id")
    metrics = ["mrr@10", "hit@3", "recall@20"]
    values = {
        arm: queries[[f"{arm}:{m}" for m in metrics]].set_axis(metrics, axis=1)
        for arm in ("bm25", "reranker")
    }
    args = (values, queries[[]], queries["missing_in"])
    options = {"control": "bm25", "metrics": metrics, "threshold": 1.0}
    short = offline_explanation(lists, judgments, *args, **options)
    long_prefix = "https://example.org/a/long/document/path/"
    lengthened = {
        arm: frame.assign(doc_id=long_prefix + frame["doc_id"]) for arm, frame in lists.items()
    }
    long = offline_explanation(
        lengthened, judgments.assign(doc_id=long_prefix + judgments["doc_id"]), *args, **options
    )
    pd.testing.assert_frame_equal(long.queries, short.queries, check_exact=True)
    unprefixed = long.rankings.assign(doc_id=long.rankings["doc_id"].str.removeprefix(long_prefix))
    pd.testing.assert_frame_equal(unprefixed, short.rankings, check_exact=True)
    assert short.rankings["grade"].notna().sum() > 1000


# --------------------------------------------------------------------------- SQL engines


def _same_tables(readout, reference):
    assert readout.queries is not None and readout.rankings is not None
    for mine, theirs in (
        (readout.rankings, reference.rankings),
        (readout.queries, reference.queries),
    ):
        pd.testing.assert_frame_equal(mine, theirs, check_exact=False, rtol=0, atol=1e-12)


def _trec_experiment(folder, shared_data):
    dl = shared_data / "trec-dl-passage"
    config = folder / "dl19.yaml"
    config.write_text(
        f"""name: dl19-rerank
control: {{name: bm25, path: "{dl / "runs" / "dl19.bm25-flat.top100.txt"}"}}
treatments:
  - {{name: vicuna, path: "{dl / "runs" / "dl19.bm25-flat.top100+rankvicuna-7b.txt"}"}}
judgments: {{path: "{dl / "qrels.dl19-passage.txt"}"}}
metrics: [ndcg@10, recall@20, mrr@10, precision@5]
relevance_threshold: 2
gain: exp
analysis: {{design: paired, tests: [t], resamples: 200, seed: 3}}
"""
    )
    return config


@pytest.fixture(scope="module")
def trec_readouts(shared_data, tmp_path_factory):
    import abrank

    config = _trec_experiment(tmp_path_factory.mktemp("dl19"), shared_data)
    return config, abrank.run_experiment(config)


def test_duckdb_readouts_have_the_memory_engines_tables(demo_readout, trec_readouts):
    from pathlib import Path

    import abrank

    root = Path(__file__).resolve().parent.parent
    # the demo: ranked by rank, a query missing from the treatment's log, segments
    said = []
    demo = abrank.run_experiment(
        root / "experiments" / "demo-reranker.yaml", engine="duckdb", progress=said.append
    )
    _same_tables(demo, demo_readout[0])
    assert any("top 20 per query on duckdb" in line for line in said)
    # TREC runs: ranked by score (trec_eval's ties), graded judgments, exp gain
    config, memory = trec_readouts
    trec = abrank.run_experiment(config, engine="duckdb")
    _same_tables(trec, memory)
    assert trec.rankings.groupby(["arm", "query_id"]).size().max() == 20
    assert trec.queries["normaliser:ndcg@10"].notna().sum() == 43


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_run_without_explanation_has_no_tables_and_the_same_summary(trec_readouts, engine):
    import abrank
    from abrank.errors import ConfigError

    config, memory = trec_readouts
    said = []
    readout = abrank.run_experiment(config, engine=engine, explain=False, progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert not any("per query on" in line for line in said)  # no ranking rows fetched
    explained = memory if engine == "memory" else abrank.run_experiment(config, engine=engine)
    assert explained.queries is not None
    assert readout.summary == explained.summary
    with pytest.raises(ConfigError, match="expected its explanation tables"):
        readout.query("1037798")


def test_an_sql_readout_above_the_row_limit_goes_without_the_tables(trec_readouts, monkeypatch):
    import abrank
    from abrank.designs.offline import explain

    config, _ = trec_readouts
    monkeypatch.setattr(explain, "MAX_ROWS", 100)
    said = []
    readout = abrank.run_experiment(config, engine="duckdb", progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert any("up to 1,720 ranking rows, more than 100" in line for line in said)


def test_spark_readouts_have_the_memory_engines_tables(spark, trec_readouts):
    import abrank

    config, memory = trec_readouts
    _same_tables(abrank.run_experiment(config, engine=spark), memory)


def test_the_tables_grades_and_tags_equal_those_of_the_string_merges(demo_readout):
    from pathlib import Path

    from abrank.explain.moves import query_tags

    readout, _, _ = demo_readout
    root = Path(__file__).resolve().parent.parent / "experiments" / "data"
    judgments = pd.read_csv(root / "demo-judgments.tsv", sep="\t", dtype={"query_id": str})
    judgments = judgments.rename(columns={"grade": "relevance"})
    rankings = readout.rankings
    lists = {
        a: rankings.loc[rankings["arm"] == a, ["query_id", "doc_id", "rank"]]
        for a in ("bm25", "reranker")
    }
    # grades: a merge on the id strings
    merged = rankings.merge(judgments, on=["query_id", "doc_id"], how="left")
    np.testing.assert_array_equal(merged["relevance"].to_numpy(), rankings["grade"].to_numpy())
    # tags: the decomposition's merges, then the moves of each document
    queries = readout.queries.set_index("query_id")
    rows = dcg_contributions(lists["bm25"], lists["reranker"], judgments, 20)
    tags = query_tags(rows, 1.0, missing=queries["missing_in"]).reindex(queries.index)
    assert tags.tolist() == queries["tags:reranker"].tolist()
    # RBO: the reference, term by term, on a sample of queries
    for query in queries.index[::97]:
        pair = [lists[a].loc[lists[a]["query_id"] == query, "doc_id"].tolist() for a in lists]
        want = _rbo_reference(pair[0], pair[1], 0.9)
        assert queries.loc[query, "rbo:reranker"] == pytest.approx(want, abs=1e-12)


def test_explain_depth_sets_how_deep_the_lists_are_kept(shared_data, tmp_path):
    """``explain.depth`` overrides the deepest metric cutoff (10 here: the runs hold 100
    results per query); one below a metric's cutoff is refused naming the key, with exit 2
    on the command line."""
    import abrank
    from abrank.cli import main
    from abrank.errors import ConfigError

    folder = shared_data / "trec-dl-passage"
    runs = sorted((folder / "runs").glob("dl19.*.txt"))
    text = (
        "name: deep\n"
        f"judgments: {{path: {folder / 'qrels.dl19-passage.txt'}, format: trec}}\n"
        f"control: {{name: a, path: {runs[0]}, format: trec}}\n"
        f"treatments: [{{name: b, path: {runs[1]}, format: trec}}]\n"
        "metrics: [ndcg@10, mrr@5]\n"
    )
    plain = tmp_path / "plain.yaml"
    plain.write_text(text)
    assert abrank.run_experiment(plain).rankings.groupby(["arm", "query_id"]).size().max() == 10
    deeper = tmp_path / "deeper.yaml"
    deeper.write_text(text + "explain:\n  depth: 25\n")
    readout = abrank.run_experiment(deeper)
    lengths = readout.rankings.groupby(["arm", "query_id"]).size()
    assert lengths.max() == 25
    # longer lists leave each metric's split exact
    queries = readout.queries.set_index("query_id")
    parts = readout.explain("ndcg@10", treatment="b")
    want = queries["delta:b:ndcg@10"].mean()
    assert parts["change"].sum() == pytest.approx(want, abs=1e-12)
    shallow = tmp_path / "shallow.yaml"
    shallow.write_text(text + "explain:\n  depth: 5\n")
    with pytest.raises(ConfigError, match=r"explain\.depth: expected at least the deepest"):
        abrank.run_experiment(shallow)
    assert main(["validate", str(shallow)]) == 2
