"""Shared fixtures: the real TREC data that lies beside the checkout in ``../shared/data``.

A fresh clone elsewhere has no such folder: the tests that read it are then skipped with a
one-line reason. In CI (``CI=true``) the folder is always laid beside the checkout, so its
absence is a failure rather than a silent skip. The same holds for the Spark tests' session
(``spark``): pyspark and a Java runtime are installed in CI.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real qrels, runs and trec_eval outputs (see its README)."""
    if not SHARED_DATA.is_dir():
        reason = f"{SHARED_DATA}: the shared TREC data is not beside the checkout"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (expected in CI)")
        pytest.skip(reason)
    return SHARED_DATA


#: Tests of a second or more each, marked ``slow`` here so that the quick profile leaves them
#: out: full demo runs, subprocesses, large resamplings. The list lives in ``slow_tests.txt``
#: beside this file, measured by ``benchmarks/time_tests.py``.
SLOW_TESTS = frozenset(
    line
    for line in (Path(__file__).parent / "slow_tests.txt").read_text().splitlines()
    if line and not line.startswith("#")
)


def pytest_collection_modifyitems(items):
    """Mark the slow tests ``slow``, so that the quick profile (``pytest -m "not slow"``)
    leaves them out: those of :data:`SLOW_TESTS`, and every test that starts Spark (a JVM,
    then Spark's planning per query): each one that takes the ``spark`` fixture, or is the
    ``spark`` case of a parametrized test."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.id.split("-") if callspec is not None else []
        name = f"{item.path.name}::{item.originalname}"
        if "spark" in getattr(item, "fixturenames", ()) or "spark" in case or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A local SparkSession (2 cores, 4 shuffle partitions, no web UI), stopped at the end."""
    problem = None
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        problem = "pyspark is not installed (pip install 'abrank[spark]')"
    if problem is None and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        problem = "no Java runtime for Spark (openjdk-17-jre-headless)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem} (expected in CI)")
        pytest.skip(problem)
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("FATAL")
    yield session
    session.stop()
