"""Dated runs: {date} templates, windows, backfills, batches of configs, exit codes, SIGTERM."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import abrank
from abrank.cli import main
from abrank.config.dates import check_template, date_range, fill_date, parse_date
from abrank.demo.daily import write_daily_demo
from abrank.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
START = dt.date(2026, 1, 1)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def daily(tmp_path_factory) -> Path:
    """Five days of the demo (400 queries a day), daily window, few resamples."""
    folder = tmp_path_factory.mktemp("daily")
    return write_daily_demo(folder, days=5, resamples=500)


@pytest.fixture(scope="module")
def cumulative(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cumulative")
    return write_daily_demo(folder, days=5, resamples=500, cumulative=True)


def demo_copy(path: Path, extra: str = "") -> Path:
    """The bundled offline demo's config at ``path`` (its data where it is, 500 resamples),
    with ``extra`` keys appended."""
    text = (ROOT / "experiments" / "demo-reranker.yaml").read_text()
    text = text.replace("data/", f"{ROOT}/experiments/data/")
    path.write_text(text.replace("resamples: 10000", "resamples: 500") + extra)
    return path


def queries_on(config: Path, days: list[str]) -> int:
    """Queries in the control logs of those days, counted from the files themselves."""
    frames = [pd.read_csv(config.parent / "logs" / day / "control.csv") for day in days]
    return int(pd.concat(frames)["query_id"].nunique())


# --------------------------------------------------------------------------- templates


def test_date_fields_fill_with_iso_dates_and_strftime_formats():
    day = dt.date(2026, 3, 7)
    assert fill_date("logs/{date}/x.parquet", day) == "logs/2026-03-07/x.parquet"
    assert fill_date("logs/{date:%Y%m%d}.csv", day) == "logs/20260307.csv"
    assert fill_date("d={date:%Y}/m={date:%m}/{date}", day) == "d=2026/m=03/2026-03-07"
    assert check_template("logs/{date}/{user}.csv") is not None
    assert check_template("logs/{date:Ymd}.csv") is not None
    assert check_template("logs/{date:%Y%m%d}.csv") is None


def test_dates_are_iso_and_ranges_are_inclusive():
    assert parse_date("2026-02-28", "--date") == dt.date(2026, 2, 28)
    for bad in ("2026-02-30", "02/03/2026", "2026-2-3", "yesterday"):
        with pytest.raises(ConfigError, match="--date: expected a date as YYYY-MM-DD"):
            parse_date(bad, "--date")
    days = date_range(dt.date(2026, 2, 27), dt.date(2026, 3, 2))
    assert [d.isoformat() for d in days] == ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]
    with pytest.raises(ConfigError, match="on or before"):
        date_range(dt.date(2026, 3, 2), dt.date(2026, 3, 1))


# --------------------------------------------------------------------------- config


def test_a_dated_path_is_not_looked_for_until_its_date_runs(daily):
    experiment = abrank.load_experiment(daily)
    assert experiment.dated and experiment.date is None
    assert experiment.window == "daily"


def test_a_bad_date_field_is_a_config_error_naming_the_key(tmp_path, daily, capsys):
    text = daily.read_text().replace("logs/{date}/control.csv", "logs/{day}/control.csv")
    config = daily.parent / "bad-field.yaml"
    config.write_text(text)
    code, _, err = run_cli(capsys, "validate", config)
    assert code == 2
    assert "control" in err and "{day}" in err and "Traceback" not in err


def test_a_cumulative_window_needs_dated_logs(tmp_path, capsys):
    config = demo_copy(tmp_path / "c.yaml", "window: {cumulative: 2026-01-01}\n")
    code, _, err = run_cli(capsys, "validate", config)
    assert code == 2
    assert "window" in err and "{date}" in err


def test_a_dated_config_without_a_date_says_how_to_give_one(daily, tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", daily, "--out", tmp_path / "o", "-q")
    assert code == 2
    assert "control.path" in err and "--date" in err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- runs


def test_a_daily_run_reads_its_date_only(daily, tmp_path):
    readout = abrank.run_experiment(daily, date="2026-01-02")
    schedule = readout.summary["schedule"]
    assert schedule == {
        "date": "2026-01-02",
        "window": "daily",
        "window_start": None,
        "dates": 1,
        "previous_date": None,
        "stale": None,
    }
    inputs = [item["path"] for item in readout.summary["inputs"]]
    assert any("2026-01-02" in path for path in inputs)
    assert not any("2026-01-01" in path or "2026-01-03" in path for path in inputs)
    control = readout.per_query[readout.per_query["arm"] == "bm25"]
    assert control["query_id"].nunique() == queries_on(daily, ["2026-01-02"])


def test_a_cumulative_run_reads_every_date_from_its_start(cumulative):
    readout = abrank.run_experiment(cumulative, date="2026-01-03")
    days = ["2026-01-01", "2026-01-02", "2026-01-03"]
    control = readout.per_query[readout.per_query["arm"] == "bm25"]
    assert control["query_id"].nunique() == queries_on(cumulative, days)
    assert readout.summary["schedule"]["window"] == "cumulative"
    assert readout.summary["schedule"]["window_start"] == "2026-01-01"
    assert readout.summary["schedule"]["dates"] == 3
    files = [item["path"] for item in readout.summary["inputs"] if item["role"] == "control"]
    assert len(files) == 3 and all(day in f for day, f in zip(days, files))
    with pytest.raises(ConfigError, match="on or after"):
        abrank.run_experiment(cumulative, date="2025-12-31")


def test_a_query_in_two_dates_of_a_window_is_an_error_naming_both_files(tmp_path, capsys):
    config = write_daily_demo(tmp_path, days=2, resamples=500, cumulative=True)
    first = tmp_path / "logs" / "2026-01-01" / "control.csv"
    second = tmp_path / "logs" / "2026-01-02" / "control.csv"
    rows = pd.read_csv(first)
    moved = rows[rows["query_id"] == rows["query_id"].iloc[0]]
    pd.concat([pd.read_csv(second), moved]).to_csv(second, index=False)
    code, _, err = run_cli(capsys, "run", config, "--date", "2026-01-02", "-q")
    assert code == 2
    assert str(second.name) in err and "2026-01-01" in err and "2026-01-02" in err
    assert repr(str(moved["query_id"].iloc[0])) in err


def test_a_backfill_writes_one_readout_per_date_in_order(daily, tmp_path, capsys):
    out = tmp_path / "reports" / "demo-daily"
    code, stdout, err = run_cli(
        capsys,
        "run",
        daily,
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-03",
        "--out",
        out,
        "--format",
        "json,csv",
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["2026-01-01", "2026-01-02", "2026-01-03"]
    lines = stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "demo-daily 2026-01-01",
        "demo-daily 2026-01-02",
        "demo-daily 2026-01-03",
    ]
    assert all(": ok: " in line and "of 3 comparisons" in line for line in lines)
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        summary = json.loads((out / day / "summary.json").read_text())
        assert summary["schedule"]["date"] == day
        per_query = pd.read_csv(out / day / "per_query.csv")
        assert per_query.loc[per_query["arm"] == "bm25", "query_id"].nunique() == queries_on(
            daily, [day]
        )


def test_from_and_date_together_and_to_without_from_are_refused(daily, capsys):
    assert run_cli(capsys, "run", daily, "--date", "2026-01-01", "--from", "2026-01-01")[0] == 2
    code, _, err = run_cli(capsys, "run", daily, "--to", "2026-01-02")
    assert code == 2 and "--from" in err


# --------------------------------------------------------------------------- exit codes


def test_a_missing_input_exits_2_or_99_with_skip_and_writes_nothing(daily, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = run_cli(capsys, "run", daily, "--date", "2026-02-01", "--out", out, "-q")
    assert code == 2
    assert "control.path" in err and "2026-02-01" in err and "--missing skip" in err
    code, _, err = run_cli(
        capsys, "run", daily, "--date", "2026-02-01", "--out", out, "--missing", "skip"
    )
    assert code == 99
    assert "skipped" in err and "does not exist yet" in err
    assert not out.exists()


def test_an_alert_exits_3_after_writing_the_readout(daily, tmp_path, capsys):
    # Recall@20 is a significant loss of the reranker on the cumulative demo's days
    out = tmp_path / "o"
    code, _, err = run_cli(
        capsys, "run", daily, "--date", "2026-01-01", "--out", out, "--fail-on", "loss", "-q"
    )
    summary = json.loads((out / "2026-01-01" / "summary.json").read_text())
    losses = [c for c in summary["comparisons"] if c["segment"] is None and c["verdict"] == "loss"]
    assert code == (3 if losses else 0)
    assert (out / "2026-01-01" / "report.html").exists()
    if losses:
        assert "abrank: alert: demo-daily: loss" in err


def test_a_folder_of_configs_runs_each_and_exits_with_the_worst(daily, tmp_path, capsys):
    configs = tmp_path / "configs"
    configs.mkdir()
    good = (
        daily.read_text()
        .replace("logs/", f"{daily.parent}/logs/")
        .replace("judgments.tsv", f"{daily.parent}/judgments.tsv")
    )
    (configs / "a-good.yaml").write_text(good)
    (configs / "b-bad.yaml").write_text(good.replace("metrics: [mrr@10", "metrics: [nope@10"))
    (configs / "c-good.yaml").write_text(good.replace("name: demo-daily", "name: third"))
    (configs / "notes.txt").write_text("not a config")
    out = tmp_path / "reports"
    code, stdout, err = run_cli(
        capsys, "run", configs, "--date", "2026-01-02", "--out", out, "--format", "json"
    )
    assert code == 2
    assert (out / "demo-daily" / "2026-01-02" / "summary.json").exists()
    assert (out / "third" / "2026-01-02" / "summary.json").exists()
    assert "b-bad.yaml: error:" in err
    assert stdout.count(": ok: ") == 2


def test_an_empty_folder_of_configs_is_bad_input(tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", tmp_path)
    assert code == 2 and "*.yaml" in err


def test_sigterm_stops_the_run_with_143_and_leaves_the_earlier_readout(daily, tmp_path):
    out = tmp_path / "o"
    day = "2026-01-04"
    first = ["run", str(daily), "--date", day, "--out", str(out), "-q", "--format", "json"]
    assert main(first) == 0
    before = (out / day / "summary.json").read_bytes()
    process = subprocess.Popen(
        [sys.executable, "-m", "abrank", "run", str(daily), "--date", day, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    staging = []
    while time.monotonic() < deadline and process.poll() is None and not staging:
        staging = list(out.glob(f".{day}.tmp-*"))
        time.sleep(0.005)
    assert staging, "the run never staged its readout"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "SIGTERM" in err and "Traceback" not in err
    assert list(out.glob(".*")) == []
    assert (out / day / "summary.json").read_bytes() == before


def test_a_cumulative_readout_without_sequential_tests_warns_about_peeking(cumulative, daily):
    warned = abrank.run_experiment(cumulative, date="2026-01-02").summary["diagnostics"]
    assert any("analysis.sequential: true" in w for w in warned["warnings"])
    plain = abrank.run_experiment(daily, date="2026-01-02").summary["diagnostics"]
    assert not any("analysis.sequential" in w for w in plain["warnings"])


# --------------------------------------------------------------------------- recording


def _history(root: Path) -> pd.DataFrame:
    return pd.read_parquet(root / "history")  # the one pandas call the README promises


def test_a_backfill_records_each_date_and_a_rerun_replaces_its_rows(daily, tmp_path, capsys):
    root = tmp_path / "reports"
    out = root / "demo-daily"
    args = ["run", daily, "--out", out, "--format", "json", "-q"]
    assert run_cli(capsys, *args, "--from", "2026-01-01", "--to", "2026-01-05")[0] == 0
    history = _history(root)
    assert sorted(history["date"].unique()) == [f"2026-01-0{d}" for d in range(1, 6)]
    per_date = history.groupby("date").size().to_dict()
    summaries = {day: json.loads((out / day / "summary.json").read_text()) for day in per_date}
    assert per_date == {day: len(s["comparisons"]) for day, s in summaries.items()}
    summary = summaries["2026-01-03"]
    day3 = history[(history["date"] == "2026-01-03") & history["segment"].isna()]
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    assert list(day3["metric"]) == [c["metric"] for c in overall]
    assert list(day3["delta"]) == [c["delta"] for c in overall]
    assert list(day3["p_adjusted"]) == [c["p_adjusted"] for c in overall]
    count = len(history)
    assert run_cli(capsys, *args, "--date", "2026-01-03", "--seed", "3")[0] == 0
    again = _history(root)
    assert len(again) == count
    assert sorted(again["date"].unique()) == sorted(history["date"].unique())
    # the index page lists the experiment and links its latest readout
    page = (root / "index.html").read_text()
    assert "demo-daily" in page and "2026-01-05" in page


def test_a_dated_readout_charts_the_trend_of_the_dates_before_it(daily, tmp_path, capsys):
    out = tmp_path / "reports" / "demo-daily"
    args = ["run", daily, "--out", out, "--format", "md,json", "-q"]
    assert run_cli(capsys, *args, "--from", "2026-01-01", "--to", "2026-01-03")[0] == 0
    first = (out / "2026-01-01" / "report.md").read_text()
    third = (out / "2026-01-03" / "report.md").read_text()
    assert "Trend" not in first  # one date: nothing to chart
    assert "## Trend" in third and "charts/trend.png" in third
    trend = pd.read_parquet(out / "2026-01-03" / "charts" / "history.parquet")
    assert sorted(trend["date"].unique()) == ["2026-01-01", "2026-01-02", "2026-01-03"]


def test_the_same_inputs_on_a_later_date_are_stale(tmp_path, capsys):
    # an undated config run on two dates reads the very same files: the logs did not refresh
    config = demo_copy(tmp_path / "fixed.yaml")
    out = tmp_path / "reports" / "demo-reranker"
    args = ["run", config, "--out", out, "--format", "json", "-q", "--fail-on", "stale"]
    assert run_cli(capsys, *args, "--date", "2026-01-01")[0] == 0
    code, _, err = run_cli(capsys, *args, "--date", "2026-01-02")
    assert code == 3
    assert "stale" in err and "2026-01-01" in err
    schedule = json.loads((out / "2026-01-02" / "summary.json").read_text())["schedule"]
    assert schedule["stale"] is True and schedule["previous_date"] == "2026-01-01"
    assert _history(tmp_path / "reports").groupby("date")["stale"].all().to_dict() == {
        "2026-01-01": False,
        "2026-01-02": True,
    }


def test_stale_inputs_are_said_on_every_output_without_fail_on(tmp_path, capsys):
    config = demo_copy(tmp_path / "fixed.yaml")
    out = tmp_path / "reports" / "demo-reranker"
    args = ["run", config, "--out", out, "--format", "md,json", "--date"]
    code, first_out, first_err = run_cli(capsys, *args, "2026-01-01")
    assert code == 0 and "Stale" not in first_out + first_err
    code, shown, err = run_cli(capsys, *args, "2026-01-02")
    assert code == 0  # no --fail-on: still said, not an exit code
    warning = (
        "Stale inputs: the inputs of 2026-01-02 are byte-identical to those of 2026-01-01 "
        "(the logs did not refresh), so this readout repeats that date's data"
    )
    assert f"note: {warning}" in err.splitlines()
    summary = json.loads((out / "2026-01-02" / "summary.json").read_text())
    assert summary["diagnostics"]["warnings"][0] == warning
    headline = [line for line in shown.splitlines() if line.startswith("MRR@10")]
    assert headline and headline[0].endswith("— stale inputs, those of 2026-01-01")
    report = (out / "2026-01-02" / "report.md").read_text()
    title_block = report.split("\n## ", 1)[0]
    assert f"> **Warning:** {warning}" in title_block  # the banner above everything
    assert report.count(warning) == 1
    assert "a win, but on stale inputs (byte-identical to those of 2026-01-01)." in title_block


def test_two_processes_recording_two_dates_at_once_both_land(daily, tmp_path):
    out = tmp_path / "reports" / "demo-daily"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "abrank", "run", str(daily), "--out", str(out), "-q"]
    runs = [
        subprocess.Popen(
            [*command, "--date", day, "--format", "json"], env=env, stderr=subprocess.PIPE
        )
        for day in ("2026-01-02", "2026-01-04")
    ]
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    assert sorted(_history(tmp_path / "reports")["date"].unique()) == ["2026-01-02", "2026-01-04"]


def test_an_undated_one_off_readout_leaves_no_history_beside_it(tmp_path, capsys):
    config = ROOT / "experiments" / "demo-reranker.yaml"
    out = tmp_path / "one-off"
    assert run_cli(capsys, "run", config, "--out", out, "--format", "json", "-q")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one-off"]


def test_no_history_records_nothing(daily, tmp_path, capsys):
    out = tmp_path / "reports" / "demo-daily"
    args = ["run", daily, "--out", out, "--format", "json", "-q", "--no-history"]
    assert run_cli(capsys, *args, "--date", "2026-01-01")[0] == 0
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["demo-daily"]


def test_a_file_where_the_history_goes_is_refused_before_the_analysis(daily, tmp_path, capsys):
    root = tmp_path / "reports"
    root.mkdir()
    (root / "history").write_text("mine")
    code, _, err = run_cli(
        capsys, "run", daily, "--out", root / "demo-daily", "--date", "2026-01-01", "-q"
    )
    assert code == 2 and "history" in err and "expected" in err
    assert (root / "history").read_text() == "mine"
    assert not (root / "demo-daily").exists()


def test_a_broken_history_file_is_skipped_named_and_replaced_by_its_rerun(
    daily, tmp_path, capsys
):
    from abrank.history import read_history

    root = tmp_path / "reports"
    args = ["run", daily, "--out", root / "demo-daily", "--format", "json", "-q"]
    assert run_cli(capsys, *args, "--from", "2026-01-01", "--to", "2026-01-02")[0] == 0
    broken = root / "history" / "demo-daily" / "2026-01-01.parquet"
    comparisons = pq.read_metadata(broken).num_rows
    broken.write_bytes(broken.read_bytes()[:100])  # truncated
    stray = root / "history" / "other" / "backup.parquet"  # another experiment's stray file
    stray.parent.mkdir()
    stray.write_bytes(b"")
    code, _, err = run_cli(capsys, *args, "--date", "2026-01-03")
    assert code == 0, err
    assert f"note: {broken}: skipped: expected a history file (Parquet)" in err
    assert f"note: {stray}: skipped: expected history files named <YYYY-MM-DD>.parquet" in err
    summary = json.loads((root / "demo-daily" / "2026-01-03" / "summary.json").read_text())
    assert any(w.startswith(f"{broken}: skipped") for w in summary["diagnostics"]["warnings"])
    assert summary["schedule"]["previous_date"] == "2026-01-02"
    # re-running the broken date replaces its file
    code, _, err = run_cli(capsys, *args, "--date", "2026-01-01")
    assert code == 0, err
    assert str(broken) not in err
    assert pq.read_metadata(broken).num_rows == comparisons
    dates = read_history(root, "demo-daily", skipped=[])["date"].unique()
    assert sorted(dates) == ["2026-01-01", "2026-01-02", "2026-01-03"]
    assert stray.read_bytes() == b""  # left alone


def test_a_foreign_index_page_is_left_alone_with_a_note(daily, tmp_path, capsys):
    root = tmp_path / "reports"
    root.mkdir()
    (root / "index.html").write_text("<html>my page</html>")
    code, _, err = run_cli(
        capsys, "run", daily, "--out", root / "demo-daily", "--date", "2026-01-01",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert (root / "index.html").read_text() == "<html>my page</html>"
    assert "index page not written" in err


def test_a_sequential_cumulative_config_does_not_warn_about_peeking(cumulative):
    config = cumulative.parent / "sequential.yaml"
    config.write_text(
        cumulative.read_text().replace("analysis: {", "analysis: {sequential: true, ")
    )
    summary = abrank.run_experiment(config, date="2026-01-02").summary
    assert not any("analysis.sequential" in w for w in summary["diagnostics"]["warnings"])
    assert summary["sequential"] is not None


def test_validate_checks_a_dated_config_and_with_a_date_its_files(daily, capsys):
    code, out, _ = run_cli(capsys, "validate", daily)
    assert code == 0 and "dated config" in out
    code, out, _ = run_cli(capsys, "validate", daily, "--date", "2026-01-02")
    assert code == 0
    assert f"bm25 ({queries_on(daily, ['2026-01-02']):,} queries)" in out
    code, _, err = run_cli(capsys, "validate", daily, "--date", "2026-03-01")
    assert code == 2 and "2026-03-01" in err


def test_a_history_folder_made_by_another_run_before_its_first_date_reads_as_empty(daily, tmp_path):
    # a concurrent run has made reports/history/<name>/ but not yet renamed its first file
    from abrank.analysis.record import attach_history, recording_for
    from abrank.analysis.write import readout_folder

    root = tmp_path / "reports"
    (root / "history" / "demo-daily").mkdir(parents=True)
    (root / "history" / "demo-daily" / ".2026-01-01.parquet.tmp-1").write_bytes(b"")
    run = abrank.load_experiment(daily).for_date("2026-01-02")
    recording = recording_for(run, readout_folder(run, root / "demo-daily"), root / "demo-daily")
    readout, rows = attach_history(abrank.run_experiment(run), run, recording)
    assert readout.summary["schedule"]["previous_date"] is None
    assert list(readout.history["date"].unique()) == ["2026-01-02"]
    assert len(rows) == len(readout.summary["comparisons"])
