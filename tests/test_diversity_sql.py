"""Diversity metrics and subtopic judgments on the SQL engines (DuckDB and Spark): per-query
values equal to the memory engine's within 1e-12 (the memory engine agrees with pyndeval:
``test_diversity.py``), from subtopic qrels, ordinary qrels and a table with a subtopic
column; a repeated (query, subtopic, doc) triple named as the memory engine's reader names
it; an experiment on DuckDB gives the memory engine's per-query values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_diversity import _synthetic, _write_experiment

from abrank.cli import main
from abrank.engines.evaluate import score_arm
from abrank.engines.sql.judged import score_arm_sql
from abrank.engines.sql.rankings import TableSource, open_judgments, open_rankings
from abrank.errors import DataError
from abrank.io import read_judgments
from abrank.io.trec import read_trec_qrels, read_trec_run

pytest.importorskip("duckdb")

METRICS = [
    "alpha_ndcg@5",
    "alpha_ndcg@10",
    "alpha_ndcg(alpha=0.7)@20",
    "alpha_ndcg(alpha=1)@10",
    "err_ia@10",
    "err_ia(alpha=0.3)@20",
    "alpha_ndcg@10(judged)",
    "err_ia@5(judged)",
    "ndcg@10",
    "mrr(rel=2)@10",
    "recall@100",
    "judged@10",
]


def duckdb_backend(request):
    from abrank.engines.sql.duckdb import DuckDBBackend

    return DuckDBBackend()


def spark_backend(request):
    from abrank.engines.sql.spark import SparkBackend

    return SparkBackend(request.getfixturevalue("spark"))


@pytest.fixture(
    scope="module",
    params=[pytest.param(duckdb_backend, id="duckdb"), pytest.param(spark_backend, id="spark")],
)
def backend(request):
    made = request.param(request)
    yield made
    made.close()


def _files(folder: Path, seed: int, subtopics: bool = True) -> tuple[Path, Path]:
    run, judgments = _synthetic(seed=seed, queries=120)
    qrels = folder / f"judgments_{seed}.qrels"
    if not subtopics:  # one grade a document, Q0 in the second column
        judgments = judgments.groupby(["query_id", "doc_id"], sort=False, as_index=False)[
            "relevance"
        ].max()
        judgments["subtopic"] = "Q0"
    qrels.write_text(
        "".join(
            f"{q} {s} {d} {int(g)}\n"
            for q, s, d, g in judgments[["query_id", "subtopic", "doc_id", "relevance"]].itertuples(
                index=False
            )
        )
    )
    path = folder / f"run_{seed}.run"
    path.write_text(
        "".join(
            f"{q} Q0 {d} 0 {s!r} r\n"
            for q, d, s in run[["query_id", "doc_id", "score"]].itertuples(index=False)
        )
    )
    return qrels, path


def _assert_same(memory, sql) -> int:
    assert list(sql.values.index) == list(memory.values.index)
    assert list(sql.values.columns) == list(memory.values.columns)
    compared = 0
    for column in memory.values.columns:
        a, b = memory.values[column].to_numpy(), sql.values[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.max(np.abs(a[~np.isnan(a)] - b[~np.isnan(b)]), initial=0.0) <= 1e-12, column
        compared += int((~np.isnan(a)).sum())
    pd.testing.assert_series_equal(sql.first_relevant, memory.first_relevant)
    return compared


@pytest.mark.parametrize("subtopics", [True, False], ids=["subtopics", "ordinary"])
def test_qrels_score_as_on_the_memory_engine(backend, tmp_path, subtopics):
    qrels, run = _files(tmp_path, seed=21, subtopics=subtopics)
    ranked = open_rankings(backend, "div_run", TableSource((str(run),), "trec", str(run)))
    judged = open_judgments(backend, "div_qrels", TableSource((str(qrels),), "qrels", str(qrels)))
    assert (judged.subtopics is not None) is subtopics
    for depth in (1000, 8):
        sql = score_arm_sql(
            backend,
            ranked.sql,
            judged.sql,
            METRICS,
            ranked_by=ranked.ranked_by,
            depth=depth,
            complete=True,
            subtopics=judged.subtopics,
        )
        memory = score_arm(
            read_trec_run(run), read_trec_qrels(qrels), METRICS, depth=depth, complete=True
        )
        assert _assert_same(memory, sql) >= 1000


def test_a_table_with_a_subtopic_column_scores_as_on_the_memory_engine(backend, tmp_path):
    qrels, run = _files(tmp_path, seed=22)
    table = tmp_path / "judgments.csv"
    read_trec_qrels(qrels).to_csv(table, index=False)
    ranked = open_rankings(backend, "div_run_t", TableSource((str(run),), "trec", str(run)))
    judged = open_judgments(backend, "div_table", TableSource((str(table),), "csv", str(table)))
    assert judged.subtopics is not None
    sql = score_arm_sql(
        backend, ranked.sql, judged.sql, METRICS, ranked_by="score", subtopics=judged.subtopics
    )
    memory = score_arm(read_trec_run(run), read_judgments(table), METRICS)
    assert _assert_same(memory, sql) >= 1000


def test_a_repeated_triple_is_named_with_its_line(backend, tmp_path):
    path = tmp_path / "repeat.qrels"
    path.write_text("1 1 a 1\n1 2 a 0\n1 1 b 1\n1 1 a 2\n")
    with pytest.raises(DataError) as info:
        open_judgments(backend, "div_repeat", TableSource((str(path),), "qrels", str(path)))
    assert str(info.value) == (
        f"{path}: line 4: expected one judgment per (query, subtopic, doc) triple, got 1 "
        "repeated: ('1', '1', 'a') at line 4"
    )


def test_an_experiment_on_duckdb_gives_the_memory_engines_values(tmp_path):
    values = {}
    for engine in ("memory", "duckdb"):
        folder = tmp_path / engine
        folder.mkdir()
        config = _write_experiment(folder, engine=engine)
        out = folder / "report"
        assert main(["run", str(config), "--out", str(out)]) == 0
        values[engine] = pd.read_csv(out / "per_query.csv", dtype={"query_id": str})
        summary = json.loads((out / "summary.json").read_text())
        assert any(c["metric"] == "alpha_ndcg@10" for c in summary["comparisons"])
    memory, duckdb = values["memory"], values["duckdb"]
    for column in ("alpha_ndcg@10", "err_ia@10", "alpha_ndcg(alpha=0.7)@5", "ndcg@10"):
        np.testing.assert_allclose(
            duckdb[column].to_numpy(), memory[column].to_numpy(), rtol=0, atol=1e-12
        )


def test_a_subtopic_column_of_another_name_is_mapped_by_columns(backend, tmp_path):
    qrels, run = _files(tmp_path, seed=23)
    table = tmp_path / "intents.csv"
    frame = read_trec_qrels(qrels).rename(columns={"subtopic": "intent", "relevance": "grade"})
    frame.to_csv(table, index=False)
    columns = {"subtopic": "intent"}
    memory_judgments = read_judgments(table, columns=columns)
    assert "subtopic" in memory_judgments.columns
    ranked = open_rankings(backend, "div_run_m", TableSource((str(run),), "trec", str(run)))
    judged = open_judgments(
        backend, "div_mapped", TableSource((str(table),), "csv", str(table), columns=columns)
    )
    assert judged.subtopics is not None
    sql = score_arm_sql(
        backend, ranked.sql, judged.sql, METRICS, ranked_by="score", subtopics=judged.subtopics
    )
    memory = score_arm(read_trec_run(run), memory_judgments, METRICS)
    assert _assert_same(memory, sql) >= 1000
