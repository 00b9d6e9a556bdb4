"""Experiment configs: valid files resolve, every invalid one is named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest

from abrank.config import load_experiment
from abrank.errors import ConfigError

MINIMAL = """\
name: t1
control: {path: control.csv}
treatments:
  - {path: treatment.csv}
judgments: {path: qrels.tsv}
metrics: [mrr@10, nDCG@10]
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in ("control.csv", "treatment.csv", "qrels.tsv"):
        (tmp_path / name).write_text("query_id,doc_id,rank\nq1,d1,1\n")
    return tmp_path


def write(folder: Path, text: str) -> Path:
    path = folder / "exp.yaml"
    path.write_text(text)
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    return str(info.value)


def test_minimal_config_gets_defaults_and_resolved_paths(folder):
    exp = load_experiment(write(folder, MINIMAL))
    assert [arm.name for arm in exp.arms] == ["control", "treatment"]
    assert exp.control.path == str((folder / "control.csv").resolve())
    assert exp.metrics == ["mrr@10", "ndcg@10"]  # canonical names
    assert exp.primary_metric == "mrr@10"
    assert exp.analysis.design == "paired" and exp.analysis.missing_queries == "zero"
    assert exp.analysis.resamples == 10_000 and exp.analysis.correction == "holm"
    assert exp.relevance_threshold == 1 and exp.gain == "linear" and exp.depth == 1000


def test_several_treatments_get_numbered_names(folder):
    text = MINIMAL.replace(
        "  - {path: treatment.csv}", "  - {path: treatment.csv}\n  - {path: treatment.csv}"
    )
    exp = load_experiment(write(folder, text))
    assert [arm.name for arm in exp.treatments] == ["treatment-1", "treatment-2"]


def test_every_arm_has_a_name_and_a_label_after_loading(folder):
    text = MINIMAL.replace(
        "control: {path: control.csv}", "control: {path: control.csv, name: null}"
    )
    text = text.replace(
        "  - {path: treatment.csv}",
        "  - {path: treatment.csv, name: bm25, label: ''}\n  - {path: treatment.csv, label: New}",
    )
    exp = load_experiment(write(folder, text))
    assert [(arm.name, arm.label) for arm in exp.arms] == [
        ("control", "control"),
        ("bm25", "bm25"),
        ("treatment-2", "New"),
    ]


def test_an_arm_name_that_is_not_text_is_the_only_problem(folder):
    text = MINIMAL.replace("control: {path: control.csv}", "control: {path: control.csv, name: 5}")
    message = error_of(write(folder, text))
    assert message.count("\n") == 0 and "control.name: " in message


def test_yaml_syntax_error_names_the_line(folder):
    message = error_of(write(folder, "name: t1\ncontrol: {path: [unclosed\nmetrics: [mrr]\n"))
    assert message.startswith(f"{folder / 'exp.yaml'}: line ")
    assert "expected valid YAML, got a syntax error" in message


def test_config_that_is_not_a_mapping(folder):
    assert error_of(write(folder, "- a\n- b\n")).endswith(
        "line 1: expected a mapping of config keys, got a list"
    )
    assert error_of(write(folder, "")).endswith(
        "expected a mapping of config keys, got an empty file"
    )


def test_misspelt_key_suggests_the_right_one_with_its_line(folder):
    text = MINIMAL.replace("metrics:", "metics:")
    message = error_of(write(folder, text))
    assert f"{folder / 'exp.yaml'}: 2 problems in the config:" in message
    assert "line 6: metics: unknown key; did you mean 'metrics'?" in message
    assert "metrics: expected this required key, got nothing" in message


def test_nested_unknown_key_and_bad_choice_reported_together(folder):
    text = MINIMAL + "analysis:\n  sed: 3\n  design: pairde\n"
    message = error_of(write(folder, text))
    assert "line 8: analysis.sed: unknown key; did you mean 'seed'?" in message
    assert (
        "line 9: analysis.design: expected 'paired', 'independent', 'interleaved' or "
        "'counterfactual', got 'pairde'" in message
    )


def test_missing_data_file_is_named_with_its_field(folder):
    (folder / "qrels.tsv").unlink()
    message = error_of(write(folder, MINIMAL))
    assert "line 5: judgments.path: expected an existing file, got 'qrels.tsv'" in message


def test_unknown_metric_is_reported_with_its_list_position(folder):
    message = error_of(write(folder, MINIMAL.replace("nDCG@10", "ndgc@10")))
    assert "line 6: metrics[1]:" in message
    assert "ndcg" in message  # the suggestion


def test_missing_file(tmp_path):
    assert (
        error_of(tmp_path / "nope.yaml")
        == f"{tmp_path / 'nope.yaml'}: expected an experiment config file, got no such file"
    )


def test_binary_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"name: \xff\xfe\x00")
    assert "expected UTF-8 YAML text, got a binary or non-UTF-8 file" in error_of(path)


def test_duplicate_arm_names_and_wrong_primary_metric(folder):
    text = MINIMAL.replace("{path: control.csv}", "{name: a, path: control.csv}")
    text = text.replace("  - {path: treatment.csv}", "  - {name: a, path: treatment.csv}")
    text += "primary_metric: map\n"
    message = error_of(write(folder, text))
    assert "treatments[0].name: expected a unique arm name, got 'a' again" in message
    assert "primary_metric: expected one of the metrics ['mrr@10', 'ndcg@10'], got 'map'" in message


def test_yaml_is_read_safely(folder):
    message = error_of(write(folder, "name: !!python/object/apply:os.system ['echo hi']\n"))
    assert "expected valid YAML" in message


def test_demo_config_is_valid():
    exp = load_experiment(
        Path(__file__).resolve().parent.parent / "experiments" / "demo-reranker.yaml"
    )
    assert exp.name == "demo-reranker"
    assert exp.segments.columns == ["locale", "device"]
    assert exp.treatments[0].columns.mapping() == {
        "query_id": "qid",
        "doc_id": "doc",
        "rank": "pos",
    }
