"""What the command line calls things: compare's arms by one name everywhere, the engine
that ran in summary.json, and what the default trec_eval set needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abrank.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def dl19(shared_data) -> tuple[Path, Path, Path]:
    folder = shared_data / "trec-dl-passage"
    return (
        folder / "qrels.dl19-passage.txt",
        folder / "runs" / "dl19.bm25-flat.top100.txt",
        folder / "runs" / "dl19.bm25-flat.top100+rankvicuna-7b.txt",
    )


def write_unjudged_pair(folder: Path, n: int = 30) -> list[Path]:
    """qrels, old+ranker.csv and new-ranker.csv: the control ranks each query's relevant
    document first, the treatment puts an unjudged document above it (judged@10 1.0 vs
    0.9: the unjudged check runs, and its note names both arms)."""
    old, new, qrels = ["query_id,doc_id,rank"], ["query_id,doc_id,rank"], []
    for i in range(n):
        q = f"q{i:02d}"
        docs = ["r", *(f"n{j}" for j in range(9))]
        qrels += [f"{q} 0 r 1", *(f"{q} 0 n{j} 0" for j in range(9))]
        old += [f"{q},{d},{rank}" for rank, d in enumerate(docs, 1)]
        new += [f"{q},{d},{rank}" for rank, d in enumerate(["u", *docs[:9]], 1)]
    paths = [folder / "qrels.txt", folder / "old+ranker.csv", folder / "new-ranker.csv"]
    for path, lines in zip(paths, (qrels, old, new)):
        path.write_text("\n".join(lines) + "\n")
    return paths


def test_compare_names_each_arm_alike_in_headline_notes_and_json(tmp_path, capsys):
    files = write_unjudged_pair(tmp_path)
    args = ["compare", *files, "-m", "mrr@10", "--resamples", "200"]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    # "+" cannot be in an arm's name: it reads "_", the same in every place
    control, treatment = "old_ranker.csv", "new-ranker.csv"
    # the headline names the arm and carries the unjudged-documents caveat
    assert out.rstrip().endswith(
        f"→ {treatment} loses — depends on unjudged documents: inconclusive on judged documents only"
    )
    assert "the verdict depends on unjudged documents" in err
    assert f"{treatment} 0.900" in err and f"{control} 1.000" in err  # judged@10 per arm
    # the roles' words never stand for an arm's name ("against control's" is the role)
    assert "treatment" not in err and "control 1.000" not in err
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    (comparison,) = json.loads(out)
    assert comparison["treatment"] == treatment


def test_compare_names_real_runs_by_their_files(dl19, capsys):
    code, out, err = run_cli(capsys, "compare", *dl19, "-m", "ndcg@10", "--resamples", "200")
    assert code == 0, err
    assert out.rstrip().endswith("→ dl19.bm25-flat.top100_rankvicuna-7b.txt wins")


def test_compare_of_two_runs_with_one_file_name_falls_back_to_the_roles(tmp_path, dl19, capsys):
    qrels, control, _ = dl19
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / control.name).write_bytes(control.read_bytes())
    args = ["compare", qrels, control, tmp_path / "a" / control.name, "-m", "ndcg@10", "--json"]
    code, out, err = run_cli(capsys, *args, "--resamples", "200")
    assert code == 0, err
    assert json.loads(out)[0]["treatment"] == "treatment"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_summary_json_records_the_engine_that_ran(tmp_path, capsys, engine):
    config = tmp_path / "demo.yaml"
    text = (ROOT / "experiments" / "demo-reranker.yaml").read_text()
    config.write_text(
        text.replace("data/", f"{ROOT}/experiments/data/").replace(
            "resamples: 10000", "resamples: 200"
        )
    )
    out = tmp_path / "out"
    code, _, err = run_cli(
        capsys, "run", config, "--out", out, "--format", "json", "--engine", engine, "-q"
    )
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["engine"] == engine


def test_summary_json_names_the_default_engine(tmp_path, capsys):
    config = tmp_path / "demo.yaml"
    text = (ROOT / "experiments" / "demo-reranker.yaml").read_text()
    config.write_text(
        text.replace("data/", f"{ROOT}/experiments/data/").replace(
            "resamples: 10000", "resamples: 200"
        )
    )
    code, _, err = run_cli(capsys, "run", config, "--out", tmp_path / "o", "--format", "json", "-q")
    assert code == 0, err
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["engine"] == "memory"


def test_metrics_without_m_on_a_table_says_the_default_set_needs_a_trec_run(dl19, tmp_path, capsys):
    qrels, run, _ = dl19
    table = tmp_path / "run.csv"
    rows = [line.split() for line in run.read_text().splitlines()[:50]]
    table.write_text(
        "query_id,doc_id,rank,score\n" + "".join(f"{r[0]},{r[2]},{r[3]},{r[4]}\n" for r in rows)
    )
    code, out, err = run_cli(capsys, "metrics", qrels, table)
    assert code == 2 and out == ""
    assert "without -m" in err and "default set" in err and "TREC run" in err
    assert "-m " in err  # how to name the measures
    assert "-m runid" not in err  # the user never named runid
