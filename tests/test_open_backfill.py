"""``abrank run CONFIG --from D`` without ``--to``: a backfill through the last date whose
inputs exist, not a skip (or an error) for every day from there to today."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from abrank.cli import main
from abrank.demo.daily import write_daily_demo

TODAY = dt.date.today()
START = TODAY - dt.timedelta(days=6)  # inputs for START .. START + 2; none after
DAYS = [(START + dt.timedelta(days=i)).isoformat() for i in range(3)]


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def daily(tmp_path_factory) -> Path:
    """Three days of a small demo, ending four days before today."""
    folder = tmp_path_factory.mktemp("open")
    return write_daily_demo(folder, start=START, days=3, resamples=200, n_queries=300)


@pytest.mark.parametrize("missing", ["skip", "error"])
def test_from_without_to_stops_at_the_last_date_with_inputs(daily, tmp_path, capsys, missing):
    out = tmp_path / "reports"
    code, stdout, err = run_cli(
        capsys,
        "run",
        daily,
        "--from",
        DAYS[0],
        "--out",
        out,
        "--format",
        "json",
        "--missing",
        missing,
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "history") == DAYS
    lines = stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [f"demo-daily {day}" for day in DAYS]
    assert "skipped" not in err and "error" not in err
    # the dates left out are said once, with the last date run
    assert f"through {DAYS[-1]}" in err
    assert err.count("note:") == 1
    for day in DAYS:
        assert json.loads((out / day / "summary.json").read_text())["schedule"]["date"] == day


def test_from_without_to_exits_with_the_worst_written_run(tmp_path, capsys):
    # on the middle date the treatment serves the control's rankings: its primary metric is
    # inconclusive there (an alert, exit 3), the other dates are wins (exit 0, as each date
    # run alone shows); the backfill exits 3, the worst of its runs
    config = write_daily_demo(tmp_path / "aa", start=START, days=3, resamples=200, n_queries=300)
    logs = config.parent / "logs" / DAYS[1]
    control = logs / "control.csv"
    (logs / "treatment.csv").write_text(control.read_text())
    alerts = ["--fail-on", "inconclusive", "--format", "json", "--missing", "skip"]
    alone = [
        run_cli(capsys, "run", config, "--date", day, "--out", tmp_path / day, *alerts)[0]
        for day in DAYS
    ]
    assert alone == [0, 3, 0]
    out = tmp_path / "reports"
    code, stdout, err = run_cli(capsys, "run", config, "--from", DAYS[0], "--out", out, *alerts)
    assert code == 3, err
    lines = [line for line in (stdout + err).splitlines() if line.startswith("demo-daily ")]
    status = {
        line.split(": ")[0]: line.split(": ")[1] for line in lines
    }  # ok: stdout; alert: stderr
    assert status == {f"demo-daily {d}": s for d, s in zip(DAYS, ["ok", "alert", "ok"])}


def test_a_gap_before_the_last_date_is_still_reported(tmp_path, capsys):
    config = write_daily_demo(tmp_path / "gap", start=START, days=3, resamples=200, n_queries=300)
    (config.parent / "logs" / DAYS[1] / "control.csv").unlink()
    out = tmp_path / "reports"
    code, stdout, err = run_cli(
        capsys,
        "run",
        config,
        "--from",
        DAYS[0],
        "--out",
        out,
        "--format",
        "json",
        "--missing",
        "skip",
    )
    assert code == 99
    assert err.count("skipped") == 1 and f"demo-daily {DAYS[1]}: skipped" in err
    # the readouts of the dates run (beside them, out's own history and index page)
    dated = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "history")
    assert dated == [DAYS[0], DAYS[2]]


def test_no_date_with_inputs_reports_the_first_date_once(daily, tmp_path, capsys):
    later = (TODAY - dt.timedelta(days=2)).isoformat()  # after the demo's last day
    code, _, err = run_cli(
        capsys, "run", daily, "--from", later, "--out", tmp_path / "o", "--missing", "skip"
    )
    assert code == 99
    assert err.count("does not exist yet") == 1 and later in err
    assert not (tmp_path / "o").exists()
