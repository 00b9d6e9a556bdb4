"""The package's licence and metadata: the MIT licence pyproject.toml names is shipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_mit_licence_named_in_pyproject_is_shipped():
    meta = project()
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the abrank authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_classifiers_are_trove_shaped_and_match_the_metadata():
    classifiers = project()["classifiers"]
    assert classifiers == sorted(set(classifiers))
    assert all(" :: " in c for c in classifiers)
    # a licence classifier beside a licence expression is refused by setuptools >= 77
    assert not any(c.startswith("License ::") for c in classifiers)
    assert "Programming Language :: Python :: 3" in classifiers


def test_the_test_extra_leaves_pyspark_to_the_spark_extra_and_ci_installs_both():
    meta = project()
    extras = meta["optional-dependencies"]
    assert not any(req.startswith("pyspark") for req in extras["test"])
    assert any(req.startswith("pyspark") for req in extras["spark"])
    assert "pip install -q '.[test,spark]'" in (ROOT / ".ci" / "run").read_text()


def test_the_tests_that_start_spark_are_marked_slow(pytestconfig):
    import subprocess
    import sys

    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--co",
            "-q",
            "-n",
            "0",
            "-m",
            "not slow",
            "-p",
            "no:cacheprovider",
            "tests/test_engine_spark.py",
            "tests/test_engine_judged_sql.py",
            "tests/test_engine_interleaved_sql.py",
            "tests/test_scheduler_examples.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    quick = [line for line in listed.splitlines() if "::" in line]
    assert quick  # the fast checks of the Spark options stay in the quick profile
    ids = [line.split("::", 1)[1] for line in quick]
    assert not any(re.search(r"\[(.*-)?spark(-.*)?\]$", i) for i in ids)  # spark cases
    spark_fixture = ("scores_on_spark_as_on", "on_memory_duckdb_and_spark", "cli_runs_on_spark")
    assert not any(name in i for i in ids for name in spark_fixture)
    assert not any("crontab_line_runs" in i or "airflow_task_command_runs" in i for i in ids)


def test_every_test_the_quick_profile_leaves_out_exists():
    """``slow_tests.txt`` names tests by ``file::function``: a renamed or removed test would
    silently return to the quick profile's list of nothing, so each name must resolve."""
    import ast

    listed = (ROOT / "tests" / "slow_tests.txt").read_text().splitlines()
    names = [line for line in listed if line and not line.startswith("#")]
    assert len(names) == len(set(names))
    defined: dict[str, set[str]] = {}
    for name in names:
        file, function = name.split("::")
        if file not in defined:
            tree = ast.parse((ROOT / "tests" / file).read_text())
            defined[file] = {
                node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            }
        assert function in defined[file], name
