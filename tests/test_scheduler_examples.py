"""The crontab line and the Airflow DAG of examples/ run abrank as they say they do.

Airflow itself is not a dependency: the DAG file is imported against a small stand-in of
the two Airflow classes it uses, which records what the DAG declares; the task's command
is then rendered for a date and run in a shell, as the BashOperator would.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from abrank.demo.daily import write_daily_demo

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _home(tmp_path: Path, start: dt.date, days: int) -> Path:
    """An experiments checkout as the examples expect: experiments/daily/*.yaml, reports/."""
    home = tmp_path / "home"
    config = write_daily_demo(home / "experiments" / "daily", start=start, days=days, resamples=500)
    assert config.parent == home / "experiments" / "daily"
    (home / "reports").mkdir()
    return home


def _shell(command: str, home: Path) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)  # where this Python's `abrank` script lives
    env = {
        **os.environ,
        "ABRANK_HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300
    )


def _readout_summaries(home: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((home / "reports").glob("*/*/summary.json")):
        found[path.parent.name] = json.loads(path.read_text())
    return found


def test_the_crontab_line_runs_yesterdays_readouts(tmp_path):
    lines = [
        line
        for line in (EXAMPLES / "crontab").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    variables = dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z_]+=", line))
    entries = [line for line in lines if not re.match(r"^[A-Z_]+=", line)]
    assert list(variables) == ["ABRANK_HOME"] and len(entries) == 1
    fields = entries[0].split(None, 5)
    assert fields[:5] == ["15", "6", "*", "*", "*"]
    command = fields[5].replace("\\%", "%")  # cron's escape of a literal %
    yesterday = dt.date.today() - dt.timedelta(days=1)
    home = _home(tmp_path, yesterday - dt.timedelta(days=1), 2)
    done = _shell(command, home)
    log = (home / "reports" / "abrank-cron.log").read_text()
    assert done.returncode in (0, 3), log
    summaries = _readout_summaries(home)
    assert list(summaries) == [yesterday.isoformat()]
    assert summaries[yesterday.isoformat()]["schedule"]["date"] == yesterday.isoformat()
    assert f"demo-daily {yesterday.isoformat()}: " in log  # the batch's line per config


def _airflow_stand_in() -> dict[str, types.ModuleType]:
    """``airflow.DAG`` and ``airflow.operators.bash.BashOperator``, recording their arguments."""
    declared: list = []

    class DAG:
        def __init__(self, dag_id: str, **options):
            self.dag_id, self.options, self.tasks = dag_id, options, []

        def __enter__(self):
            declared.append(self)
            return self

        def __exit__(self, *exc):
            return False

    class BashOperator:
        def __init__(self, *, task_id: str, bash_command: str, **options):
            self.task_id, self.bash_command, self.options = task_id, bash_command, options
            declared[-1].tasks.append(self)

    airflow = types.ModuleType("airflow")
    airflow.DAG = DAG
    airflow.declared = declared
    operators = types.ModuleType("airflow.operators")
    bash = types.ModuleType("airflow.operators.bash")
    bash.BashOperator = BashOperator
    return {"airflow": airflow, "airflow.operators": operators, "airflow.operators.bash": bash}


@pytest.fixture
def dag(monkeypatch):
    modules = _airflow_stand_in()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location(
        "abrank_daily", EXAMPLES / "airflow" / "abrank_daily.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (declared,) = modules["airflow"].declared
    return declared


def test_the_airflow_dag_declares_one_daily_task_that_skips_on_99(dag):
    assert dag.dag_id == "abrank_daily_readouts"
    assert dag.options["schedule"] == "15 6 * * *" and dag.options["catchup"] is True
    (task,) = dag.tasks
    assert task.options["skip_on_exit_code"] == 99
    assert "{{ ds }}" in task.bash_command and "--missing skip" in task.bash_command


def test_the_airflow_task_command_runs_the_date_and_exits_99_before_its_logs(dag, tmp_path):
    (task,) = dag.tasks
    start = dt.date(2026, 1, 1)
    home = _home(tmp_path, start, 2)
    done = _shell(task.bash_command.replace("{{ ds }}", "2026-01-02"), home)
    assert done.returncode in (0, 3), done.stderr
    assert list(_readout_summaries(home)) == ["2026-01-02"]
    # the next day's logs have not landed: skipped (Airflow's skip code), nothing written
    done = _shell(task.bash_command.replace("{{ ds }}", "2026-01-03"), home)
    assert done.returncode == 99, done.stderr
    assert "does not exist yet" in done.stderr
    assert list(_readout_summaries(home)) == ["2026-01-02"]
