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


#: Parametrized tests that run a sample of their cases on Spark (each a second or more
#: there): test -> whether a Spark case's parameters are kept. Spark runs the statements
#: DuckDB runs (one definition, compiled for each), and DuckDB runs every case.
SPARK_SAMPLES = {
    # every option and ranking on the first generated collection (seeds 1, 2 on DuckDB)
    "test_engine_judged_sql.py::test_generated_cases_score_as_on_the_memory_engine": (
        lambda case: case[-1] == "0"
    ),
    # one bad input of each kind of check (files, cells, pairs, online, interleaved)
    "test_validate_like_run.py::test_a_bad_input_fails_validate_and_run_alike": (
        lambda case: case[1]
        in {
            "missing file",
            "glob matching nothing",
            "bad rank",
            "duplicate pairs",
            "online: bad clicked value",
            "interleaved: unknown team",
        }
    ),
    # the checks across an impression's rows (the cells' checks are the online log's)
    "test_engine_interleaved_sql.py::test_bad_rows_and_impressions_name_the_file_row_and_impression": (
        lambda case: case[1] in {"change0", "change1", "change2", "change3", "change10"}
    ),
}


def pytest_collection_modifyitems(config, items):
    """Mark the slow tests ``slow``, so that the quick profile (``pytest -m "not slow"``)
    leaves them out: those of :data:`SLOW_TESTS`, and every test that starts Spark (a JVM,
    then Spark's planning per query): each one that takes the ``spark`` fixture, or is the
    ``spark`` case of a parametrized test. Spark cases outside :data:`SPARK_SAMPLES`'
    samples are deselected."""
    left_out = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.id.split("-") if callspec is not None else []
        keep = SPARK_SAMPLES.get(f"{item.path.name}::{item.originalname}")
        if keep is not None and "spark" in case and not keep(case):
            left_out.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.id.split("-") if callspec is not None else []
        name = f"{item.path.name}::{item.originalname}"
        spark = "spark" in getattr(item, "fixturenames", ()) or "spark" in case
        if spark or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if spark:  # one worker runs them all, on one JVM (pytest -n 2 --dist loadgroup)
            item.add_marker(pytest.mark.xdist_group("spark"))


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
