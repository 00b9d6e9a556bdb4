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
