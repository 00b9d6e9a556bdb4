"""ERR (expected reciprocal rank, Chapelle et al. 2009): by hand, against a slow
term-by-term reference on TREC runs, and against gdeval (through ir_measures) on DL19 and
DL20 runs; the SQL engines' equality with the memory engine is in
``test_engine_judged_sql.py``."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from abrank import evaluate
from abrank.errors import ConfigError
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.metrics import parse_metric


def _stop(grade: float) -> float:
    return (2 ** min(max(grade, 0), 4) - 1) / 16


def _slow_err(ranked_grades: list[float], k: int | None) -> float:
    """ERR term by term: sum_i R_i / i prod_{j<i} (1 - R_j)."""
    value, go_on = 0.0, 1.0
    for i, grade in enumerate(ranked_grades[:k] if k else ranked_grades):
        stop = _stop(grade)
        value += go_on * stop / (i + 1)
        go_on *= 1 - stop
    return value


def test_err_by_hand():
    # grades in rank order: 0, 2, 1, 5 (counts as 4), an unjudged document
    rankings = pd.DataFrame(
        {
            "query_id": ["1"] * 5 + ["2"],
            "doc_id": ["a", "b", "c", "d", "e", "x"],
            "score": [5.0, 4.0, 3.0, 2.0, 1.0, 1.0],
        }
    )
    judgments = pd.DataFrame(
        {
            "query_id": ["1"] * 4 + ["2"],
            "doc_id": ["a", "b", "c", "d", "x"],
            "relevance": [0, 2, 1, 5, 0],
        }
    )
    values = evaluate(rankings, judgments, ["err@2", "err@3", "err"])
    # rank 2: R = 3/16, reached with certainty: 3/32
    assert values.at["1", "err@2"] == pytest.approx(3 / 32, abs=1e-15)
    # rank 3: R = 1/16, reached with 13/16: + 13/16 * 1/16 / 3
    assert values.at["1", "err@3"] == pytest.approx(3 / 32 + 13 / 768, abs=1e-15)
    # rank 4: R = 15/16, reached with 13/16 * 15/16: + that * 15/16 / 4
    whole = 3 / 32 + 13 / 768 + (13 / 16) * (15 / 16) * (15 / 16) / 4
    assert values.at["1", "err"] == pytest.approx(whole, abs=1e-15)
    # no judgment with a grade above 0: undefined, as gdeval scores no such topic
    assert np.isnan(values.at["2", "err"])


def test_err_names_and_refusals():
    assert parse_metric("ERR@10").name == "err@10"
    assert parse_metric("err").k is None
    assert parse_metric("err@20(judged)").judged_only
    with pytest.raises(
        ConfigError, match="gain: expected no gain \\(it applies to ndcg and dcg\\)"
    ):
        parse_metric("err(gain=exp)@10")


def test_err_equals_the_slow_reference_on_trec_runs(shared_data):
    folder = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(folder / "qrels.dl19-passage.txt")
    grade = qrels.set_index(["query_id", "doc_id"])["relevance"]
    for run in sorted((folder / "runs").glob("dl19.*.txt")):
        ranked = read_trec_run(run).drop(columns=["rank"])
        values = evaluate(ranked, qrels, ["err@10", "err"], depth=None)
        ordered = ranked.sort_values(
            ["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable"
        )
        checked = 0
        for query, rows in ordered.groupby("query_id", sort=False):
            if query not in values.index or np.isnan(values.at[query, "err"]):
                continue
            grades = [float(grade.get((query, doc), 0.0)) for doc in rows["doc_id"].astype(str)]
            assert values.at[query, "err@10"] == pytest.approx(_slow_err(grades, 10), abs=1e-12)
            assert values.at[query, "err"] == pytest.approx(_slow_err(grades, None), abs=1e-12)
            checked += 1
        assert checked >= 40


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_err_agrees_with_gdeval_through_ir_measures(shared_data, year):
    """gdeval prints ERR with five decimals: the values print the same digits."""
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is not installed")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed (gdeval is a Perl script)")
    folder = shared_data / "trec-dl-passage"
    qrels_path = folder / f"qrels.{year}-passage.txt"
    qrels = read_trec_qrels(qrels_path)
    runs = sorted((folder / "runs").glob(f"{year}.*.txt"))
    assert runs, f"no {year} runs in {folder / 'runs'}"
    theirs_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    compared = 0
    for run in runs:
        ranked = read_trec_run(run).drop(columns=["rank"])
        mine = evaluate(ranked, qrels, ["err@10", "err@20"], depth=None)
        for k in (10, 20):
            measure = ir_measures.parse_measure(f"ERR@{k}")
            theirs = {
                m.query_id: m.value
                for m in ir_measures.iter_calc(
                    [measure], theirs_qrels, list(ir_measures.read_trec_run(str(run)))
                )
            }
            defined = mine[f"err@{k}"].dropna()
            assert set(defined.index) == set(theirs)
            for query, value in defined.items():
                # as gdeval prints it (%.5f; C and Python round the exact binary value alike)
                assert f"{value:.5f}" == f"{theirs[query]:.5f}", (run.name, query, k)
                compared += 1
    assert compared >= 200
