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


#: Tests of several seconds each (measured on 2 busy cores), marked ``slow`` here so that
#: the quick profile leaves them out: full demo runs, subprocesses, large resamplings.
SLOW_TESTS = frozenset(
    {
        "test_online_pipeline.py::test_readme_shows_what_the_online_demo_run_prints",
        "test_online_pipeline.py::test_a_lost_share_of_one_arms_users_raises_the_srm_alarm",
        "test_scheduler_examples.py::test_the_airflow_task_command_runs_the_date_and_exits_99_before_its_logs",
        "test_scheduler_examples.py::test_the_crontab_line_runs_yesterdays_readouts",
        "test_resampling.py::test_large_samples_of_distinct_values_switch_to_grid_cells",
        "test_sequential.py::test_online_demo_with_sequential_inference_clusters_and_keeps_cuped",
        "test_history.py::test_two_processes_rewriting_the_same_date_leave_one_complete_file",
        "test_schedule.py::test_sigterm_stops_the_run_with_143_and_leaves_the_earlier_readout",
        # starts Spark from inside the test (not through the fixture's name)
        "test_engine_judged_sql.py::test_the_demo_experiment_gives_the_same_summary_on_every_engine",
        "test_fast_stats.py::test_index_bootstrap_sums_are_numpys_gather_and_sum_to_the_last_bit",
        "test_unit_lattice.py::test_the_linearized_bootstrap_agrees_with_the_exact_unit_bootstrap",
        "test_judged_only.py::test_judged_only_matches_filter_then_score",
        "test_schedule.py::test_a_dated_readout_charts_the_trend_of_the_dates_before_it",
        "test_schedule.py::test_two_processes_recording_two_dates_at_once_both_land",
        "test_workers.py::test_a_dead_chart_worker_is_replaced_by_drawing_here",
        "test_engine_duckdb.py::test_the_bundled_online_demo_gives_the_same_summary_on_duckdb",
        "test_interleaved_stats.py::test_intervals_cover_a_true_preference",
        "test_metrics.py::test_matches_slow_reference",
    }
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
