"""JSON Lines ids that are objects or lists are refused by every engine, naming the file,
the line and the column; a column of mixed text and number ids reads the same everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import abrank
from abrank.cli import main
from abrank.errors import DataError

ENGINES = ["memory", "duckdb"]

CONFIG = """\
name: jsonl-ids
control: {path: control.csv}
treatments: [{path: treatment.jsonl}]
judgments: {path: JUDGMENTS}
metrics: [mrr@10]
"""


def experiment(folder: Path, rows: list[dict], judgments: list[dict] | None = None) -> Path:
    (folder / "control.csv").write_text("query_id,doc_id,rank\nq1,d1,1\nq2,d2,1\n")
    (folder / "treatment.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if judgments is None:
        (folder / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\nq1\td1\t1\nq2\td2\t1\n")
        name = "qrels.tsv"
    else:
        (folder / "qrels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judgments))
        name = "qrels.jsonl"
    path = folder / "exp.yaml"
    path.write_text(CONFIG.replace("JUDGMENTS", name))
    return path


GOOD = {"query_id": "q1", "doc_id": "d1", "rank": 1}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("bad", "line", "what"),
    [
        ({"query_id": {"a": 1}, "doc_id": "d2", "rank": 1}, 2, 'an object {"a": 1}'),
        ({"query_id": "q2", "doc_id": [1, 2], "rank": 1}, 2, "a list [1, 2]"),
    ],
)
def test_a_nested_id_in_a_ranking_is_refused(tmp_path, engine, bad, line, what):
    path = experiment(tmp_path, [GOOD, bad])
    column = "query_id" if isinstance(bad["query_id"], dict) else "doc_id"
    with pytest.raises(DataError) as info:
        abrank.run_experiment(path, engine=engine)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'treatment.jsonl'}: line {line}: {column}: ")
    assert f"expected an id (a text or a number), got {what}" in message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_column_of_lists_only_is_refused(tmp_path, engine):
    rows = [
        {"query_id": [1], "doc_id": "d1", "rank": 1},
        {"query_id": [2], "doc_id": "d2", "rank": 1},
    ]
    path = experiment(tmp_path, rows)
    with pytest.raises(DataError, match=r"treatment\.jsonl: line 1: query_id: .* got a list \[1\]"):
        abrank.run_experiment(path, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nested_id_in_judgments_is_refused(tmp_path, engine):
    judgments = [
        {"query_id": "q1", "doc_id": "d1", "relevance": 1},
        {"query_id": "q2", "doc_id": {"id": "d2"}, "relevance": 1},
    ]
    path = experiment(tmp_path, [GOOD], judgments)
    with pytest.raises(DataError, match=r"qrels\.jsonl: line 2: doc_id: .*got an object"):
        abrank.run_experiment(path, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cli_exits_2_on_a_nested_id(tmp_path, engine, capsys):
    path = experiment(tmp_path, [GOOD, {"query_id": {"a": 1}, "doc_id": "d2", "rank": 1}])
    assert main(["run", str(path), "--engine", engine, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "treatment.jsonl: line 2: query_id:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_mixed_text_and_number_ids_read_as_their_own_text(tmp_path, engine):
    # q1 (text) is found by the judgments' q1, and 7 (a number) by the judgments' "7":
    # treatment MRR is 1 on both, so its mean is 1 (a quoted '"q1"' would miss q1: 0.5)
    rows = [
        {"query_id": "q1", "doc_id": "d1", "rank": 1},
        {"query_id": 7, "doc_id": "d7", "rank": 1},
    ]
    path = experiment(tmp_path, rows)
    (tmp_path / "control.csv").write_text("query_id,doc_id,rank\nq1,d1,1\n7,d7,1\n")
    (tmp_path / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\nq1\td1\t1\n7\td7\t1\n")
    readout = abrank.run_experiment(path, engine=engine)
    (comparison,) = readout.summary["comparisons"]
    assert comparison["treatment_mean"] == 1.0 and comparison["n"] == 2
