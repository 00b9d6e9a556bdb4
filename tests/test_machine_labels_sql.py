"""Machine-labelled judgments on the SQL engines: the three estimates and the labels'
agreement (summary.json's ``comparisons`` with their ``estimates``, and
``diagnostics.machine_labels``, and on the demo the per-query and explanation tables, which
read the machine-filled labels) equal the memory engine's, on the bundled demo and on a
small fixture whose control is ranked by tied scores (the top rows the per-arm agreement
reads are then numbered in trec_eval's order); the machine-filled relation holds every
human judgment and the machine's of the pairs no human judged; a bad machine-labels file
fails as the memory engine's reader fails it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from trees import assert_same_summary, assert_same_tree

from abrank.analysis import run_experiment
from abrank.cli import main
from abrank.config import load_experiment
from abrank.demo import generate_demo
from abrank.demo.machine_labels import favoured_documents, human_sample, machine_labels

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
name: ml-sql
control: {path: control.csv}
treatments:
  - {name: reranker, path: treatment.csv}
judgments:
  - {path: human.tsv, kind: human}
  - {path: machine.tsv, kind: machine, model: gpt-4o-mini}
metrics: [ndcg@10, mrr@10, recall@20]
analysis:
  seed: 3
  resamples: 200
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """120 queries: the control ranked by scores with ties (1 / position to one decimal),
    the treatment by rank; human labels on a quarter of the queries, biased machine labels
    on every judged document."""
    folder = tmp_path_factory.mktemp("ml-sql")
    demo = generate_demo(seed=11, n_queries=120)
    control = demo.control.assign(score=np.round(1.0 / demo.control["position"], 1))
    control.drop(columns=["position"]).to_csv(folder / "control.csv", index=False)
    demo.treatment.rename(columns={"position": "rank"}).to_csv(
        folder / "treatment.csv", index=False
    )
    favoured = favoured_documents(demo.control, demo.treatment)
    machine = machine_labels(demo.judgments, seed=12, favoured=favoured, bias=0.3)
    human_sample(demo.judgments, share=0.25, seed=13).to_csv(
        folder / "human.tsv", sep="\t", index=False
    )
    machine.to_csv(folder / "machine.tsv", sep="\t", index=False)
    (folder / "ml.yaml").write_text(CONFIG)
    return folder


def assert_same_machine_label_numbers(memory: dict, sql: dict) -> None:
    """Every number of the comparisons (with their estimates) and of the machine labels'
    diagnostics within 1e-12, and the rest of the summary as the engine tests compare it."""
    assert_same_tree(memory["comparisons"], sql["comparisons"], rel=1e-12)
    labels = memory["diagnostics"]["machine_labels"]
    assert_same_tree(labels, sql["diagnostics"]["machine_labels"], rel=1e-12)
    assert_same_summary(memory, sql)


def test_the_bundled_demo_gives_the_memory_engines_numbers_on_duckdb():
    experiment = load_experiment(ROOT / "experiments" / "demo-machine-labels.yaml")
    on_memory = run_experiment(experiment)
    on_duckdb = run_experiment(experiment, engine="duckdb")
    memory, sql = on_memory.summary, on_duckdb.summary
    assert_same_machine_label_numbers(memory, sql)
    # the rest of the readout reads the machine-filled labels on both engines
    for table in ("per_query", "queries", "rankings"):
        pd.testing.assert_frame_equal(
            getattr(on_memory, table).reset_index(drop=True),
            getattr(on_duckdb, table).reset_index(drop=True),
            check_dtype=False,
            rtol=1e-12,
        )
    # the three estimates are there, and differ (else the test would not tell them apart)
    estimates = memory["comparisons"][0]["estimates"]
    assert set(estimates) == {"human", "filled", "ppi"}
    assert len({estimates[name]["delta"] for name in estimates}) == 3
    assert memory["diagnostics"]["machine_labels"]["per_arm"]["bm25"]["overlap"] > 0


def test_a_fixture_ranked_by_tied_scores_gives_the_memory_engines_numbers_on_duckdb(folder):
    memory = run_experiment(folder / "ml.yaml").summary
    sql = run_experiment(folder / "ml.yaml", engine="duckdb").summary
    assert_same_machine_label_numbers(memory, sql)


def test_each_arms_rankings_are_checked_once_whatever_the_label_sets(folder, monkeypatch):
    """Human, machine-filled and machine labels number each arm's rows three times; the
    checks left to the numbering (repeated pairs, a rank found again) read the rankings
    alone, so they run once an arm."""
    from abrank.engines.sql import rankings

    checked = []
    original = rankings.check_numbered
    monkeypatch.setattr(
        rankings,
        "check_numbered",
        lambda backend, opened, *a, **k: (
            checked.append(opened.sql) or original(backend, opened, *a, **k)
        ),
    )
    run_experiment(folder / "ml.yaml", engine="duckdb")
    assert len(checked) == len(set(checked)) == 2  # control and treatment


def test_a_fixture_ranked_by_tied_scores_gives_the_memory_engines_numbers_on_spark(spark, folder):
    memory = run_experiment(folder / "ml.yaml").summary
    sql = run_experiment(folder / "ml.yaml", engine="spark").summary
    assert_same_machine_label_numbers(memory, sql)


def test_the_filled_relation_is_every_human_judgment_and_the_machines_of_the_rest(folder):
    from abrank.analysis.engine import EngineChoice
    from abrank.designs.offline.sql import SqlOffline

    experiment = load_experiment(folder / "ml.yaml")
    human, machine = (
        pd.read_csv(folder / name, sep="\t", dtype={"query_id": str, "doc_id": str}).rename(
            columns={"grade": "relevance"}
        )
        for name in ("human.tsv", "machine.tsv")
    )
    expected = {(q, d): float(r) for q, d, r in human[["query_id", "doc_id", "relevance"]].values}
    for q, d, r in machine[["query_id", "doc_id", "relevance"]].values:
        expected.setdefault((q, d), float(r))
    offline = SqlOffline(experiment, EngineChoice("duckdb", {}), lambda message: None)
    try:
        offline.load()
        found = offline.backend.run(f"SELECT * FROM {offline.relation('filled')[0]}").to_pandas()
    finally:
        offline.close()
    rows = {(q, d): r for q, d, r in found[["query_id", "doc_id", "relevance"]].values}
    assert len(found) == len(rows) == len(expected)
    assert rows == expected
    # some human grade differs from the machine's: the filled rows took the human one
    both = human.merge(machine, on=["query_id", "doc_id"], suffixes=("_h", "_m"))
    assert (both["relevance_h"] != both["relevance_m"]).any()


def test_a_bad_machine_labels_file_on_duckdb_exits_2_naming_it(folder, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("control.csv", "treatment.csv", "human.tsv", "ml.yaml"):
        (bad / name).write_bytes((folder / name).read_bytes())
    lines = (folder / "machine.tsv").read_text().splitlines()
    fields = lines[3].split("\t")
    fields[-1] = "high"
    lines[3] = "\t".join(fields)
    (bad / "machine.tsv").write_text("\n".join(lines) + "\n")
    errors = {}
    for engine in ("memory", "duckdb"):
        out = tmp_path / f"out-{engine}"
        args = ["run", str(bad / "ml.yaml"), "--engine", engine, "--out", str(out), "--quiet"]
        assert main(args) == 2
        errors[engine] = capsys.readouterr().err
        assert not out.exists()
    assert "machine.tsv" in errors["duckdb"] and "line 4" in errors["duckdb"]
    assert "'high'" in errors["duckdb"] and "Traceback" not in errors["duckdb"]
    assert errors["duckdb"] == errors["memory"]
