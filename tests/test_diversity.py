"""Diversity metrics (alpha_ndcg@k, err_ia@k) and subtopic judgments: worked by hand, against
pyndeval (ndeval's C code, which ir_measures calls for alpha_nDCG and ERR_IA) on seeded
synthetic subtopic judgments and on DL19 runs with synthetic subtopics, the readers
(subtopic detection, the subtopic column, repeated triples) and the parser. The SQL
engines' equality with the memory engine is in ``test_diversity_sql.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank import evaluate
from abrank.errors import ConfigError, DataError
from abrank.io import read_judgments
from abrank.io.arrow import rank_by_score
from abrank.io.subtopics import collapse_frame
from abrank.io.trec import qrels_arrays, read_trec_qrels, read_trec_run
from abrank.metrics import parse_metric

KS = (2, 5, 10, 20)  # pyndeval computes ranks up to 20; ERR-IA@1 is left undivided there


def _hand() -> tuple[pd.DataFrame, pd.DataFrame]:
    # query 1: subtopics s1, s2; a is relevant to s1, b to s1 and s2, c to s2, d to none;
    # the ranking is a, e (unjudged), b, c, d. Query 2: judged, nothing relevant.
    judgments = pd.DataFrame(
        {
            "query_id": ["1"] * 5 + ["2"],
            "subtopic": ["s1", "s1", "s2", "s2", "s1", "s1"],
            "doc_id": ["a", "b", "b", "c", "d", "x"],
            "relevance": [1, 2, 1, 1, 0, 0],
        }
    )
    rankings = pd.DataFrame(
        {
            "query_id": ["1"] * 5 + ["2"],
            "doc_id": ["a", "e", "b", "c", "d", "x"],
            "rank": [1, 2, 3, 4, 5, 1],
        }
    )
    return rankings, judgments


def test_alpha_ndcg_and_err_ia_by_hand():
    rankings, judgments = _hand()
    names = ["alpha_ndcg@3", "alpha_ndcg@5", "err_ia@3", "err_ia@5", "alpha_ndcg(alpha=1)@3"]
    values = evaluate(rankings, judgments, names)
    # gains (α = 0.5): a covers s1 -> 1; e -> 0; b: s1 seen once (0.5) + s2 new (1) -> 1.5;
    # c: s2 seen once -> 0.5; d -> 0.
    # α-DCG@3 = 1/log2(2) + 0 + 1.5/log2(4) = 1.75
    # greedy ideal: b (2), then a and c tie at 0.5 -> the larger doc id, c; then a (0.5):
    # α-IDCG@3 = 2 + 0.5/log2(3) + 0.5/log2(4)
    ideal3 = 2 + 0.5 / math.log2(3) + 0.25
    assert values.at["1", "alpha_ndcg@3"] == pytest.approx(1.75 / ideal3, abs=1e-15)
    # @5 adds c's 0.5/log2(5); the ideal has nothing more (d covers nothing)
    assert values.at["1", "alpha_ndcg@5"] == pytest.approx(
        (1.75 + 0.5 / math.log2(5)) / ideal3, abs=1e-15
    )
    # ERR-IA@3 = (1/1 + 0/2 + 1.5/3) / (S = 2 times (1 + 0.5/2 + 0.25/3)) = 1.5 / (8/3)
    assert values.at["1", "err_ia@3"] == pytest.approx(0.5625, abs=1e-15)
    # @5: + 0.5/4; ideal ideal 2 * (1 + 1/4 + 1/12 + 1/32 + 1/80)
    assert values.at["1", "err_ia@5"] == pytest.approx(
        (1.5 + 0.125) / (2 * (1 + 1 / 4 + 1 / 12 + 1 / 32 + 1 / 80)), abs=1e-15
    )
    # α = 1: a subtopic counts once. Run: a 1, e 0, b 1 (s2) -> 1 + 1/2; ideal: b 2, then
    # nothing new (a and c gain 0) -> 2
    assert values.at["1", "alpha_ndcg(alpha=1)@3"] == pytest.approx(0.75, abs=1e-15)
    # no relevant judgment: undefined (ndeval prints 0)
    assert values.loc["2"].isna().all()


def test_ordinary_judgments_are_one_subtopic_per_query():
    rankings, judgments = _hand()
    plain = collapse_frame(judgments)  # one grade per document: a 1, b 2, c 1, d 0
    values = evaluate(rankings, plain, ["alpha_ndcg@3", "err_ia@3"])
    # one subtopic: gains 1, 0, 0.5 (b is the second relevant document), ideal 1, 0.5, 0.25
    ideal = 1 + 0.5 / math.log2(3) + 0.25 / 2
    assert values.at["1", "alpha_ndcg@3"] == pytest.approx((1 + 0.25) / ideal, abs=1e-15)
    # ERR-IA@3 = (1 + 0.5/3) / (1 + 0.5/2 + 0.25/3)
    assert values.at["1", "err_ia@3"] == pytest.approx((1 + 0.5 / 3) / (4 / 3), abs=1e-15)


def test_other_metrics_read_the_highest_grade_over_subtopics():
    rankings, judgments = _hand()
    names = ["ndcg@5", "mrr(rel=2)@5", "recall@5", "judged@5"]
    on_subtopics = evaluate(rankings, judgments, names)
    collapsed = collapse_frame(judgments)
    assert sorted(collapsed.itertuples(index=False, name=None)) == [
        ("1", "a", 1.0),
        ("1", "b", 2.0),  # 2 on s1, 1 on s2
        ("1", "c", 1.0),
        ("1", "d", 0.0),
        ("2", "x", 0.0),
    ]
    pd.testing.assert_frame_equal(on_subtopics, evaluate(rankings, collapsed, names))
    # b (grade 2) at rank 3 is the first document of grade 2
    assert on_subtopics.at["1", "mrr(rel=2)@5"] == pytest.approx(1 / 3)


def test_judged_only_variant_removes_unjudged_documents():
    rankings, judgments = _hand()
    values = evaluate(rankings, judgments, ["alpha_ndcg@3(judged)", "alpha_ndcg@3"])
    # without e: a, b, c in the top 3 -> 1 + 1.5/log2(3) + 0.5/log2(4)
    ideal3 = 2 + 0.5 / math.log2(3) + 0.25
    expected = (1 + 1.5 / math.log2(3) + 0.25) / ideal3
    assert values.at["1", "alpha_ndcg@3(judged)"] == pytest.approx(expected, abs=1e-15)


# ---------------------------------------------------------------------------- synthetic


def _synthetic(seed: int = 7, queries: int = 400) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Subtopic judgments and a run: 1 to 6 subtopics a query, grades 0 to 3, a tenth of
    the queries without a relevant judgment, some without any, unjudged documents and tied
    scores in the run."""
    rng = np.random.default_rng(seed)
    judged_rows, run_rows = [], []
    for q in range(queries):
        qid = f"q{q}"
        docs = list(dict.fromkeys(f"d{rng.integers(0, 60):03d}" for _ in range(40)))
        judged = docs[: rng.integers(0, len(docs))]
        for s in range(int(rng.integers(1, 7))):
            for d in judged:
                if rng.random() < 0.4:
                    grade = int(rng.integers(0, 4)) if q % 10 else 0
                    judged_rows.append((qid, str(s + 1), d, grade))
        ranked = docs + [f"u{i}" for i in range(5)]  # u*: never judged
        rng.shuffle(ranked)
        for d, score in zip(ranked, rng.integers(0, 8, len(ranked)), strict=True):
            run_rows.append((qid, d, float(score)))
    judgments = pd.DataFrame(judged_rows, columns=["query_id", "subtopic", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    return run, judgments


def _pyndeval_values(pyndeval, judgments, run, measures, alpha):
    """pyndeval on abrank's ranking (trec_eval's order: ties by doc id descending), given as
    distinct scores so that pyndeval's own tie rule (doc id ascending) has nothing to do."""
    ranked = rank_by_score(run.copy()).sort_values(["query_id", "rank"])
    scored = [
        (q, d, -float(r))
        for q, d, r in ranked[["query_id", "doc_id", "rank"]].itertuples(index=False)
    ]
    qrels = [
        (q, s, d, int(g))
        for q, s, d, g in judgments[["query_id", "subtopic", "doc_id", "relevance"]].itertuples(
            index=False
        )
    ]
    return pyndeval.ndeval(qrels, scored, measures, alpha=alpha)


def _compare(ours: pd.DataFrame, theirs: dict, alpha: float) -> tuple[int, float]:
    """Every per-query value against pyndeval's: defined ones within 1e-9, undefined ones
    where pyndeval prints 0. Returns the count compared and the largest difference."""
    compared, worst = 0, 0.0
    for query, row in theirs.items():
        for k in KS:
            for mine, name in (
                (parse_metric(f"alpha_ndcg(alpha={alpha})@{k}").name, f"alpha-nDCG@{k}"),
                (parse_metric(f"err_ia(alpha={alpha})@{k}").name, f"ERR-IA@{k}"),
            ):
                value = ours.at[query, mine]
                if np.isnan(value):
                    assert row[name] == 0, (query, name)
                    continue
                assert value == pytest.approx(row[name], abs=1e-9), (query, name)
                worst = max(worst, abs(value - row[name]))
                compared += 1
    return compared, worst


@pytest.mark.parametrize("alpha", [0.5, 0.7, 0.0, 1.0])
def test_agrees_with_pyndeval_on_synthetic_subtopic_judgments(alpha):
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    run, judgments = _synthetic()
    names = [f"alpha_ndcg(alpha={alpha})@{k}" for k in KS] + [
        f"err_ia(alpha={alpha})@{k}" for k in KS
    ]
    ours = evaluate(run, judgments, names)
    measures = [f"alpha-nDCG@{k}" for k in KS] + [f"ERR-IA@{k}" for k in KS]
    theirs = _pyndeval_values(pyndeval, judgments, run, measures, alpha)
    compared, worst = _compare(ours, theirs, alpha)
    assert compared >= 2500
    assert worst < 1e-9
    # queries without a relevant judgment are there, undefined
    assert ours[parse_metric(f"alpha_ndcg(alpha={alpha})@10").name].isna().sum() >= 30


def test_agrees_with_ir_measures():
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is not installed")
    pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    run, judgments = _synthetic(seed=11, queries=200)
    ours = evaluate(run, judgments, ["alpha_ndcg@10", "err_ia@10", "alpha_ndcg@20"])
    ranked = rank_by_score(run.copy())
    qrels = pd.DataFrame(
        {
            "query_id": judgments["query_id"],
            "iteration": judgments["subtopic"],
            "doc_id": judgments["doc_id"],
            "relevance": judgments["relevance"].astype(int),
        }
    )
    theirs_run = pd.DataFrame(
        {
            "query_id": ranked["query_id"],
            "doc_id": ranked["doc_id"],
            "score": -ranked["rank"].astype(float),
        }
    )
    measures = [
        ir_measures.parse_measure(m) for m in ("alpha_nDCG@10", "ERR_IA@10", "alpha_nDCG@20")
    ]
    compared = 0
    for result in ir_measures.iter_calc(measures, qrels, theirs_run):
        name = {"alpha_nDCG@10": "alpha_ndcg@10", "ERR_IA@10": "err_ia@10"}.get(
            str(result.measure), "alpha_ndcg@20"
        )
        value = ours.at[result.query_id, name]
        if np.isnan(value):
            assert result.value == 0
            continue
        assert value == pytest.approx(result.value, abs=1e-9)
        compared += 1
    assert compared >= 450


def test_agrees_with_pyndeval_on_dl19_runs_with_synthetic_subtopics(shared_data):
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    folder = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(folder / "qrels.dl19-passage.txt")
    rng = np.random.default_rng(19)
    # each judgment on 1 to 3 of 4 subtopics, with its grade on one and 0 or its grade on
    # the others
    rows = []
    for q, d, g in qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        for s in rng.choice(4, size=int(rng.integers(1, 4)), replace=False):
            rows.append((q, f"t{s}", d, g if rng.random() < 0.7 else 0.0))
    judgments = pd.DataFrame(rows, columns=["query_id", "subtopic", "doc_id", "relevance"])
    runs = sorted((folder / "runs").glob("dl19.*.txt"))
    assert runs
    compared = 0
    for path in runs[:2]:
        run = read_trec_run(path).drop(columns=["rank"])
        names = [f"alpha_ndcg@{k}" for k in KS] + [f"err_ia@{k}" for k in KS]
        ours = evaluate(run, judgments, names)
        measures = [f"alpha-nDCG@{k}" for k in KS] + [f"ERR-IA@{k}" for k in KS]
        theirs = _pyndeval_values(pyndeval, judgments, run, measures, 0.5)
        count, worst = _compare(ours, theirs, 0.5)
        assert worst < 1e-9
        compared += count
    assert compared >= 600


def test_ordinary_qrels_agree_with_pyndeval_as_one_subtopic():
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    run, judgments = _synthetic(seed=3, queries=150)
    plain = collapse_frame(judgments)
    ours = evaluate(run, plain, [f"alpha_ndcg@{k}" for k in KS] + [f"err_ia@{k}" for k in KS])
    theirs = _pyndeval_values(
        pyndeval,
        plain.assign(subtopic="0"),
        run,
        [
            *(f"alpha-nDCG@{k}" for k in KS),
            *(f"ERR-IA@{k}" for k in KS),
        ],
        0.5,
    )
    compared, worst = _compare(ours, theirs, 0.5)
    assert compared >= 800 and worst < 1e-9


# ---------------------------------------------------------------------------- readers


def test_a_second_column_of_several_values_is_read_as_subtopics(tmp_path):
    path = tmp_path / "diversity.qrels"
    path.write_text("1 1 a 1\n1 2 a 0\n1 2 b 2\n2 1 c 1\n")
    frame = read_trec_qrels(path)
    assert list(frame.columns) == ["query_id", "doc_id", "relevance", "subtopic"]
    assert frame["subtopic"].tolist() == ["1", "2", "2", "1"]
    # the trec_eval path reads one grade per (query, doc): the highest
    qid, doc, grade = qrels_arrays(path)
    assert list(zip(qid.to_pylist(), doc.to_pylist(), grade.tolist(), strict=True)) == [
        ("1", "a", 1.0),
        ("1", "b", 2.0),
        ("2", "c", 1.0),
    ]


@pytest.mark.parametrize("second", [["0", "0", "0"], ["Q0", "Q0", "Q0"], ["0", "Q0", "0"]])
def test_a_constant_second_column_is_ordinary(tmp_path, second):
    path = tmp_path / "plain.qrels"
    path.write_text("".join(f"1 {s} {d} 1\n" for s, d in zip(second, "abc", strict=True)))
    assert list(read_trec_qrels(path).columns) == ["query_id", "doc_id", "relevance"]


def test_a_repeated_triple_is_refused_with_its_line(tmp_path):
    path = tmp_path / "repeat.qrels"
    path.write_text("1 1 a 1\n1 2 a 0\n1 1 b 1\n1 1 a 2\n")
    with pytest.raises(DataError) as info:
        read_trec_qrels(path)
    assert str(info.value) == (
        f"{path}: line 4: expected one judgment per (query, subtopic, doc) triple, got 1 "
        "repeated: ('1', '1', 'a') at line 4"
    )


def test_a_repeated_pair_of_ordinary_qrels_is_still_refused(tmp_path):
    path = tmp_path / "repeat.qrels"
    path.write_text("1 0 a 1\n1 0 a 2\n")
    with pytest.raises(DataError, match="line 2: expected one judgment per \\(query, doc\\)"):
        read_trec_qrels(path)


def test_a_table_may_carry_a_subtopic_column(tmp_path):
    path = tmp_path / "judgments.csv"
    path.write_text("query_id,subtopic,doc_id,relevance\n1,1,a,1\n1,2,a,0\n1,2,b,2\n")
    frame = read_judgments(path)
    assert frame["subtopic"].tolist() == ["1", "2", "2"]
    assert frame["doc_id"].tolist() == ["a", "a", "b"]
    repeated = tmp_path / "repeated.csv"
    repeated.write_text("query_id,subtopic,doc_id,relevance\n1,1,a,1\n1,2,a,0\n1,1,a,2\n")
    with pytest.raises(DataError) as info:
        read_judgments(repeated)
    message = str(info.value)
    assert message.startswith(f"{repeated}: line 4: expected one judgment per ")
    assert "('1', '1', 'a')" in message


def test_subtopic_qrels_file_scores_as_the_frame(tmp_path):
    rankings, judgments = _hand()
    path = tmp_path / "hand.qrels"
    path.write_text(
        "".join(
            f"{q} {s} {d} {int(g)}\n"
            for q, s, d, g in judgments[["query_id", "subtopic", "doc_id", "relevance"]].itertuples(
                index=False
            )
        )
    )
    from_file = evaluate(rankings, read_trec_qrels(path), ["alpha_ndcg@5", "err_ia@5", "ndcg@5"])
    pd.testing.assert_frame_equal(
        from_file, evaluate(rankings, judgments, ["alpha_ndcg@5", "err_ia@5", "ndcg@5"])
    )


# ---------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("text", "name", "label", "alpha"),
    [
        ("alpha_ndcg@10", "alpha_ndcg@10", "α-nDCG@10", 0.5),
        ("alpha_nDCG@10", "alpha_ndcg@10", "α-nDCG@10", 0.5),
        ("alpha_nDCG(alpha=0.5)@10", "alpha_ndcg@10", "α-nDCG@10", 0.5),
        ("alpha_ndcg(alpha=0.7)@10", "alpha_ndcg(alpha=0.7)@10", "α-nDCG(alpha=0.7)@10", 0.7),
        ("ERR_IA@20", "err_ia@20", "ERR-IA@20", 0.5),
        ("err_ia(alpha=0)@5(judged)", "err_ia(alpha=0)@5(judged)", "ERR-IA(alpha=0)@5(judged)", 0),
    ],
)
def test_names(text, name, label, alpha):
    metric = parse_metric(text)
    assert (metric.name, metric.label, metric.redundancy) == (name, label, alpha)
    assert parse_metric(metric.name) == metric


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "alpha_ndcg",
            "metric 'alpha_ndcg': cutoff: expected alpha_ndcg@k (e.g. alpha_ndcg@10), got no "
            "cutoff",
        ),
        ("err_ia", "metric 'err_ia': cutoff: expected err_ia@k (e.g. err_ia@10), got no cutoff"),
        (
            "alpha_ndcg(alpha=1.5)@10",
            "metric 'alpha_ndcg(alpha=1.5)@10': alpha: expected a number from 0 to 1, got 1.5",
        ),
        (
            "alpha_ndcg(alpha=much)@10",
            "metric 'alpha_ndcg(alpha=much)@10': alpha: expected a number from 0 to 1, got 'much'",
        ),
        (
            "ndcg(alpha=0.5)@10",
            "metric 'ndcg(alpha=0.5)@10': alpha: expected no alpha (it applies to alpha_ndcg "
            "and err_ia), got one",
        ),
        (
            "alpha_ndcg(gain=exp)@10",
            "metric 'alpha_ndcg(gain=exp)@10': gain: expected no gain (it applies to ndcg and "
            "dcg), got one",
        ),
    ],
)
def test_bad_names(text, message):
    with pytest.raises(ConfigError) as info:
        parse_metric(text)
    assert str(info.value) == message


# ---------------------------------------------------------------------------- end to end


def _write_experiment(folder, engine: str = "memory") -> Path:
    """A small offline experiment on subtopic qrels: two TREC runs over 60 queries."""
    run, judgments = _synthetic(seed=5, queries=60)
    rng = np.random.default_rng(5)
    qrels = folder / "diversity.qrels"
    qrels.write_text(
        "".join(
            f"{q} {s} {d} {int(g)}\n"
            for q, s, d, g in judgments[["query_id", "subtopic", "doc_id", "relevance"]].itertuples(
                index=False
            )
        )
    )
    for name, noise in (("control", 0.0), ("treatment", 3.0)):
        scored = run.assign(score=run["score"] + noise * rng.random(len(run)))
        (folder / f"{name}.run").write_text(
            "".join(
                f"{q} Q0 {d} 0 {s!r} {name}\n"
                for q, d, s in scored[["query_id", "doc_id", "score"]].itertuples(index=False)
            )
        )
    config = folder / "diversity.yaml"
    config.write_text(
        "name: diversity\n"
        "title: Diversity readout\n"
        f"engine: {engine}\n"
        "control: {name: control, path: control.run, format: trec}\n"
        "treatments:\n  - {name: treatment, path: treatment.run, format: trec}\n"
        "judgments: {path: diversity.qrels, format: qrels}\n"
        "metrics: [alpha_ndcg@10, err_ia@10, 'alpha_ndcg(alpha=0.7)@5', ndcg@10]\n"
        "analysis: {resamples: 200, seed: 3}\n"
    )
    return config


def test_abrank_run_compares_diversity_metrics(tmp_path, capsys):
    from abrank.cli import main

    config = _write_experiment(tmp_path)
    out = tmp_path / "report"
    assert main(["run", str(config), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "α-nDCG@10" in printed and "ERR-IA@10" in printed
    summary = json.loads((out / "summary.json").read_text())
    compared = {c["metric"] for c in summary["comparisons"] if c["segment"] is None}
    assert compared >= {"alpha_ndcg@10", "err_ia@10", "alpha_ndcg(alpha=0.7)@5", "ndcg@10"}
    per_query = pd.read_csv(out / "per_query.csv", dtype={"query_id": str})
    # the readout's values are evaluate()'s on the same files
    judgments = read_trec_qrels(tmp_path / "diversity.qrels")
    expected = evaluate(read_trec_run(tmp_path / "control.run"), judgments, ["alpha_ndcg@10"])
    control = per_query[per_query["arm"] == "control"].set_index("query_id")["alpha_ndcg@10"]
    joined = expected["alpha_ndcg@10"].dropna()
    assert np.allclose(control.loc[joined.index].to_numpy(), joined.to_numpy(), atol=1e-12)


def test_abrank_metrics_reads_the_subtopics_of_a_qrels_file(tmp_path, capsys):
    from abrank.cli import main

    config = _write_experiment(tmp_path)
    qrels, run = tmp_path / "diversity.qrels", tmp_path / "control.run"
    assert config.exists()
    assert main(["metrics", str(qrels), str(run), "-m", "alpha_ndcg@10", "err_ia@10", "-q"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    printed = {(m.strip(), q): float(v) for m, q, v in lines}
    expected = evaluate(read_trec_run(run), read_trec_qrels(qrels), ["alpha_ndcg@10", "err_ia@10"])
    checked = 0
    for name in ("alpha_ndcg@10", "err_ia@10"):
        for query, value in expected[name].fillna(0.0).items():
            assert printed[(name, query)] == pytest.approx(value, abs=1e-4)
            checked += 1
    assert checked >= 100  # the judged queries of the run, both metrics


def test_err_ia_at_1_is_divided_where_ndeval_leaves_it_undivided():
    """ndeval's normalising loop starts at rank 2, so its ERR-IA@1 is the number of
    subtopics the first document covers; abrank divides it by S like every other cutoff."""
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    run, judgments = _synthetic(seed=9, queries=100)
    ours = evaluate(run, judgments, ["err_ia@1"])["err_ia@1"]
    theirs = _pyndeval_values(pyndeval, judgments, run, ["ERR-IA@1"], 0.5)
    relevant = judgments[judgments["relevance"] > 0]
    subtopics = relevant.groupby("query_id")["subtopic"].nunique()
    checked = 0
    for query, row in theirs.items():
        if np.isnan(ours[query]):
            continue
        assert ours[query] * subtopics[query] == pytest.approx(row["ERR-IA@1"], abs=1e-12)
        checked += 1
    assert checked >= 80


def test_online_logs_and_simulated_clicks_read_subtopic_judgments():
    from abrank.engines.clicks import judged_inputs
    from abrank.interleaving.build import grades_of_shown

    rankings, judgments = _hand()
    # one impression per query, the hand ranking as shown
    log = rankings.assign(impression_id="i" + rankings["query_id"], query=rankings["query_id"])
    ranked, judged = judged_inputs(log, judgments)
    assert "subtopic" in judged.columns
    values = evaluate(ranked, judged, ["alpha_ndcg@3", "ndcg@5"])
    expected = evaluate(rankings, judgments, ["alpha_ndcg@3", "ndcg@5"])
    assert values.at["i1", "alpha_ndcg@3"] == pytest.approx(expected.at["1", "alpha_ndcg@3"])
    assert values.at["i1", "ndcg@5"] == pytest.approx(expected.at["1", "ndcg@5"])
    # simulated users see a document's highest grade over its subtopics
    grades = grades_of_shown(rankings, judgments)
    assert grades.tolist()[:3] == [1.0, pytest.approx(np.nan, nan_ok=True), 2.0]


def test_the_greedy_search_drops_finished_queries_without_changing_values():
    """Most queries have 2 or 3 relevant documents, a few have 30: after three steps the
    search goes on over the few alone (what it keeps must be renumbered right)."""
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (ndeval's C code) is not installed")
    rng = np.random.default_rng(13)
    judged, ranked = [], []
    for q in range(120):
        qid = f"q{q:03d}"
        docs = [f"d{i:02d}" for i in range(30 if q % 20 == 0 else int(rng.integers(2, 4)))]
        for d in docs:
            for s in rng.choice(5, size=int(rng.integers(1, 4)), replace=False):
                judged.append((qid, f"s{s}", d, 1))
        for r, d in enumerate(rng.permutation(docs + ["x1", "x2"])):
            ranked.append((qid, d, float(-r)))
    judgments = pd.DataFrame(judged, columns=["query_id", "subtopic", "doc_id", "relevance"])
    run = pd.DataFrame(ranked, columns=["query_id", "doc_id", "score"])
    ours = evaluate(run, judgments, [f"alpha_ndcg@{k}" for k in KS] + [f"err_ia@{k}" for k in KS])
    measures = [f"alpha-nDCG@{k}" for k in KS] + [f"ERR-IA@{k}" for k in KS]
    compared, worst = _compare(ours, _pyndeval_values(pyndeval, judgments, run, measures, 0.5), 0.5)
    assert compared == 120 * 8 and worst < 1e-9


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([["0", "0"], ["Q0", "0"]], False),  # the placeholders count as one value
        ([["0", "0"], ["0", "1"]], True),  # a second value in a later chunk
        ([["1", "1"], ["1"]], False),  # one value throughout
        ([["2", "3"]], True),
    ],
)
def test_a_second_column_is_subtopics_when_it_holds_two_values(chunks, expected):
    """The second column as the TREC reader gives it (text, in chunks), and as numbers."""
    import pyarrow as pa

    from abrank.io.subtopics import is_subtopic_column

    plain = pa.chunked_array([pa.array(c) for c in chunks])
    assert is_subtopic_column(plain) is expected
    numbers = [[int(v) for v in c] for c in chunks if all(v.isdigit() for v in c)]
    if len(numbers) == len(chunks):
        assert is_subtopic_column(pa.chunked_array(numbers)) is expected
    assert is_subtopic_column(pa.chunked_array([], pa.string())) is False
