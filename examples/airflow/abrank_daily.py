"""An Airflow DAG for abrank's daily readouts: one task per day, for the DAG run's date.

``{{ ds }}`` is the run's logical date, the day whose logs are complete when the run
starts. abrank exits 99 when an input of that date is not there yet (``--missing skip``):
``skip_on_exit_code`` makes that a skipped task, not a failure, and a later run (or
``airflow tasks clear``) catches up. Exit 3 (an alert named by ``--fail-on`` fired, the
readout written) fails the task so that its alerting reaches the owners; exit 2 is a bad
config or input. A retried or overlapping task is safe: readouts are swapped into place
whole and the history store takes concurrent writers. Catch-up runs are a backfill.

Copy this file into the DAGs folder and set ``ABRANK_HOME`` (the checkout of the
experiment configs) in the worker's environment.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow import DAG
from airflow.operators.bash import BashOperator

ABRANK_HOME = os.environ.get("ABRANK_HOME", "/srv/search-experiments")

with DAG(
    dag_id="abrank_daily_readouts",
    schedule="15 6 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=True,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=30)},
    tags=["abrank", "experiments"],
) as dag:
    BashOperator(
        task_id="abrank_run",
        bash_command=(
            'cd "$ABRANK_HOME" && abrank run experiments/daily --date {{ ds }} '
            "--missing skip --fail-on srm,stale -q"
        ),
        env={"ABRANK_HOME": ABRANK_HOME},
        append_env=True,
        skip_on_exit_code=99,
    )
