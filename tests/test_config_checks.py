"""Config checks: reserved experiment names, duplicate YAML keys, every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from abrank.cli import main
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


# --------------------------------------------------------------------------- reserved names


@pytest.mark.parametrize("name", ["history", "index.html", "History", "INDEX.HTML"])
def test_a_name_of_abranks_own_files_under_the_reports_root_is_refused(folder, name):
    text = "description: x\n" + MINIMAL.replace("name: t1", f"name: {name}")
    message = error_of(write(folder, text))
    assert message.startswith(f"{folder / 'exp.yaml'}: line 2: name: ")
    assert "reserved" in message
    assert "history" in message and "index.html" in message


def test_a_reserved_name_exits_2_before_anything_is_written(folder, capsys):
    path = write(folder, MINIMAL.replace("name: t1", "name: history"))
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "line 1: name:" in err and "reserved" in err and "Traceback" not in err
    assert main(["validate", str(path)]) == 2


def test_the_reserved_names_are_those_the_store_and_the_index_page_write(tmp_path):
    import pandas as pd

    from abrank.history import history_folder
    from abrank.render import write_index
    from abrank.root_names import RESERVED_NAMES

    assert history_folder(tmp_path) == tmp_path / "history"
    page = write_index(tmp_path, pd.DataFrame(), {})
    assert page == tmp_path / "index.html"
    assert set(RESERVED_NAMES) == {"history", "index.html"}


def test_names_that_only_resemble_the_reserved_ones_are_accepted(folder):
    for name in ("history-2", "index", "my.history"):
        assert load_experiment(write(folder, MINIMAL.replace("t1", name))).name == name


# --------------------------------------------------------------------------- repeated keys


def test_a_repeated_top_level_key_names_both_lines(folder):
    text = MINIMAL + "name: t2\n"
    message = error_of(write(folder, text))
    assert message.startswith(f"{folder / 'exp.yaml'}: line 7: name: ")
    assert "got 'name' again (first at line 1, again at line 7" in message


def test_repeated_keys_in_nested_mappings_are_refused(folder):
    text = MINIMAL.replace(
        "  - {path: treatment.csv}", "  - path: treatment.csv\n    label: a\n    label: b"
    ) + ("analysis:\n  alpha: 0.05\n  seed: 1\n  alpha: 0.1\n")
    message = error_of(write(folder, text))
    assert "2 problems in the config" in message
    lines = message.splitlines()[1:]
    assert "line 6: treatments[0].label: " in lines[0]
    assert "(first at line 5, again at line 6" in lines[0]
    assert "line 12: analysis.alpha: " in lines[1]
    assert "(first at line 10, again at line 12" in lines[1]


def test_a_key_overriding_a_merged_one_is_no_repetition(folder):
    text = MINIMAL + "analysis:\n  <<: {alpha: 0.05, seed: 1}\n  alpha: 0.1\n"
    exp = load_experiment(write(folder, text))
    assert exp.analysis.alpha == 0.1 and exp.analysis.seed == 1


def test_the_same_anchor_used_twice_is_no_repetition(folder):
    text = MINIMAL.replace("control: {path: control.csv}", "control: &arm {path: control.csv}")
    text = text.replace("  - {path: treatment.csv}", "  - *arm")
    exp = load_experiment(write(folder, text))
    assert exp.treatments[0].path == exp.control.path


# --------------------------------------------------------------------------- all at once


def test_every_problem_is_reported_at_once_sorted_by_line(folder):
    text = """\
name: t1
control: {path: control.csv, colour: red}
treatments:
  - {path: treatment.csv}
judgments: {path: qrels.tsv}
relevance_threshold: high
metrics: [mrr@10, nonsense@3]
analysis:
  alpha: 2
  correction: nope
"""
    message = error_of(write(folder, text))
    head, *lines = message.splitlines()
    assert head == f"{folder / 'exp.yaml'}: 5 problems in the config:"
    numbers = [int(line.split(": line ")[1].split(":")[0]) for line in lines]
    assert numbers == [2, 6, 7, 9, 10]
    assert "control.colour: unknown key" in lines[0]
    assert "relevance_threshold: expected a valid number" in lines[1]
    assert "metrics[1]: " in lines[2] and "'nonsense@3'" in lines[2]
    assert "analysis.alpha: expected less than 1, got 2" in lines[3]
    assert "analysis.correction: " in lines[4] and "'nope'" in lines[4]


def test_a_value_set_aside_is_not_reported_twice(folder):
    # control.path of the wrong type: one problem, not also "the arm's log file: got nothing"
    text = MINIMAL.replace("control: {path: control.csv}", "control: {path: [control.csv]}")
    message = error_of(write(folder, text))
    assert "problems in the config" not in message
    assert "line 2: control.path: expected a valid string" in message


def test_a_refused_required_key_still_reports_the_others(folder):
    text = MINIMAL.replace("name: t1", "name: not a slug") + "gain: cubic\nmetics: [x]\n"
    message = error_of(write(folder, text))
    head, *lines = message.splitlines()
    assert head.endswith("3 problems in the config:")
    assert "line 1: name: expected a name" in lines[0]
    assert "line 7: gain: " in lines[1] and "line 8: metics: unknown key" in lines[2]
