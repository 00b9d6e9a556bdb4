"""The history store: rows from summary.json, atomic dated files, concurrent and killed
writers, the one-call pandas read, errors, and ``abrank history`` in its three formats."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from abrank.errors import ConfigError, DataError
from abrank.history import (
    HISTORY_COLUMNS,
    HISTORY_SCHEMA,
    HistoryWarning,
    history_rows,
    previous_inputs,
    read_history,
    remove_abandoned_files,
    schema_table,
    write_history,
)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "golden" / "demo-summary.json").read_text())
CONFIG_SHA = "c" * 64
RUN_TIME = dt.datetime(2026, 11, 30, 6, 0, 1, 250_000, tzinfo=dt.timezone.utc)
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _rows(date: str, summary: dict | None = None, **options) -> pd.DataFrame:
    options = {"config_sha256": CONFIG_SHA, "run_time": RUN_TIME, **options}
    return history_rows(GOLDEN if summary is None else summary, date=date, **options)


def _without_roles(summary: dict) -> dict:
    """The summary of the demo as its config would give it without metric roles."""
    plain = copy.deepcopy(summary)
    plain.pop("decision", None)
    for comparison in plain["comparisons"]:
        comparison.pop("role", None)
        comparison.pop("decision_checks", None)
    return plain


def _online_summary() -> dict:
    """The golden summary made clustered and all-pairs by hand: units per arm, an SRM test,
    a sequential key, and comparisons that name their own control arm."""
    summary = copy.deepcopy(GOLDEN)
    summary["experiment"]["name"] = "demo-online"
    summary["sequential"] = {"method": "asymptotic confidence sequences"}
    summary["diagnostics"]["srm"] = {"p_value": 0.0004, "alarm": True, "units": {}}
    for index, comparison in enumerate(summary["comparisons"]):
        comparison["unit"] = "user_id"
        comparison["n_units"] = {"control": 1000 + index, "treatment": 2000 + index}
        comparison["control"] = "arm-a" if index % 2 else "bm25"
    summary["comparisons"][0]["p_value"] = None  # a test that gave no p-value
    return summary


# --------------------------------------------------------------------------- rows


def test_rows_of_the_golden_summary_are_its_comparisons():
    rows = _rows("2026-11-30")
    comparisons = GOLDEN["comparisons"]
    assert list(rows.columns) == list(HISTORY_COLUMNS)
    assert len(rows) == len(comparisons) == 32
    for (_, row), comparison in zip(rows.iterrows(), comparisons):
        for key in ("metric", "treatment", "design", "primary_test", "verdict"):
            assert row[key] == comparison[key]
        for key in ("n", "n_control", "n_treatment"):
            assert row[key] == comparison[key]
        for key in ("control_mean", "treatment_mean", "delta", "relative_lift", "ci_level"):
            assert row[key] == comparison[key]
        for key in ("p_value", "p_adjusted"):
            assert row[key] == comparison[key]
        assert list(row["ci"]) == comparison["ci"]
        assert (row["ci_low"], row["ci_high"]) == tuple(comparison["ci"])
        assert (None if pd.isna(row["segment"]) else row["segment"]) == comparison["segment"]
        assert row["primary"] == (comparison["metric"] == "mrr@10")
    assert set(rows["control"]) == {"bm25"}
    assert rows["experiment"].eq("demo-reranker").all() and rows["date"].eq("2026-11-30").all()
    assert rows["unit"].isna().all() and rows["srm_p_value"].isna().all()
    assert rows["srm_alarm"].isna().all()
    assert not rows["sequential"].any() and not rows["stale"].any()
    assert rows["window"].eq("daily").all() and rows["window_start"].isna().all()
    assert rows["abrank_version"].eq("0.1.0").all()
    assert rows["run_time"].eq(pd.Timestamp("2026-11-30 06:00:01.25", tz="UTC")).all()
    # 4 metrics overall, then each metric per segment; 8 rows of the primary metric
    assert rows["segment"].isna().sum() == 4 and rows["primary"].sum() == 8


def test_inputs_fingerprint_is_sha256_of_the_sorted_file_digests_one_per_line():
    digests = [
        "1e9ae3713861249234c046e2d51899cf562de5111bcf987b04f2383dc2f25a24",  # judgments
        "8aee445e87c500f4f4470acb0145d545cb4c6f30e1da0efa2c50c3140006d6e2",  # control
        "f1a2128b28399b36cd3a0b90623ffa63ffd81ccea5dac20da9a62a16e4a0276e",  # treatment
    ]
    expected = hashlib.sha256("\n".join(digests).encode()).hexdigest()
    assert set(_rows("2026-11-30")["inputs_sha256"]) == {expected}
    shuffled = copy.deepcopy(GOLDEN)
    shuffled["inputs"].reverse()
    assert set(_rows("2026-11-30", shuffled)["inputs_sha256"]) == {expected}


def test_rows_of_a_clustered_all_pairs_sequential_summary():
    summary = _online_summary()
    rows = _rows("2026-11-30", summary, window="cumulative", window_start="2026-11-01", stale=True)
    assert rows["experiment"].eq("demo-online").all()
    assert list(rows["n_control"]) == [1000 + i for i in range(32)]
    assert list(rows["n_treatment"]) == [2000 + i for i in range(32)]
    assert list(rows["n"]) == [c["n"] for c in GOLDEN["comparisons"]]
    assert list(rows["control"][:4]) == ["bm25", "arm-a", "bm25", "arm-a"]
    assert rows["unit"].eq("user_id").all() and rows["sequential"].all()
    assert rows["srm_p_value"].eq(0.0004).all() and rows["srm_alarm"].eq(True).all()
    assert rows["window"].eq("cumulative").all() and rows["window_start"].eq("2026-11-01").all()
    assert rows["stale"].all()
    assert math.isnan(rows["p_value"][0])


def test_rows_default_run_time_is_now_in_utc():
    before = dt.datetime.now(dt.timezone.utc)
    rows = history_rows(GOLDEN, date="2026-11-30", config_sha256=CONFIG_SHA)
    after = dt.datetime.now(dt.timezone.utc)
    stamp = rows["run_time"][0].to_pydatetime()
    assert before - dt.timedelta(milliseconds=1) <= stamp <= after


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"date": "2026-13-01"}, "date: expected a date written YYYY-MM-DD, got '2026-13-01'"),
        ({"date": "2026-1-05"}, "date: expected a date written YYYY-MM-DD, got '2026-1-05'"),
        ({"window": "weekly"}, "window: expected one of daily, cumulative, got 'weekly'"),
        (
            {"window": "cumulative"},
            "window_start: expected a date written YYYY-MM-DD, got None",
        ),
        (
            {"window": "cumulative", "window_start": "2026-12-02"},
            "window_start: expected a date on or before 2026-11-30, got 2026-12-02",
        ),
        (
            {"window_start": "2026-11-01"},
            "window_start: expected none for a daily window, got '2026-11-01'",
        ),
        (
            {"run_time": dt.datetime(2026, 11, 30, 6)},
            "run_time: expected a timezone-aware time, got 2026-11-30T06:00:00",
        ),
    ],
)
def test_rows_reject_bad_options(options, message):
    options = {"date": "2026-11-30", **options}
    with pytest.raises(ConfigError) as caught:
        _rows(**options)
    assert str(caught.value) == message


def test_rows_of_a_summary_without_its_keys():
    summary = {key: value for key, value in GOLDEN.items() if key != "inputs"}
    with pytest.raises(
        DataError, match="summary: expected the keys of summary.json, missing 'inputs'"
    ):
        _rows("2026-11-30", summary)


NO_SHIP = (
    "No-ship: Recall@20 deteriorates (-0.009, p = 0.0017) and is not shown within its -0.005 margin"
)


def _decided_summary(status: str = "no-ship", reasons: list | None = None) -> dict:
    """The golden summary as a config with metric roles makes it: each overall comparison
    with its role, and the readout's decision."""
    summary = copy.deepcopy(GOLDEN)
    roles = {"mrr@10": "success", "recall@20": "guardrail"}
    for comparison in summary["comparisons"]:
        if comparison["segment"] is None:
            comparison["role"] = roles.get(comparison["metric"], "secondary")
    reasons = (
        [NO_SHIP, "the win on MRR@10 (+0.246) does not outweigh a harm"]
        if reasons is None
        else reasons
    )
    summary["decision"] = {
        "status": status,
        "rule": "ship-if-success-and-no-harm",
        "reasons": reasons,
    }
    return summary


def test_rows_carry_the_decision_on_every_row_and_each_overall_comparisons_role():
    rows = _rows("2026-11-30", _decided_summary())
    assert rows["decision"].eq("no-ship").all() and len(rows) == 32
    assert rows["decision_reason"].eq(NO_SHIP).all()
    overall = rows[rows["segment"].isna()]
    assert dict(zip(overall["metric"], overall["role"])) == {
        "mrr@10": "success",
        "ndcg@10": "secondary",
        "recall@20": "guardrail",
        "hit@3": "secondary",
    }
    assert rows.loc[rows["segment"].notna(), "role"].isna().all()  # segments have no role
    # a decision without reasons: the status's own word
    rows = _rows("2026-11-30", _decided_summary("keep-running", reasons=[]))
    assert rows["decision_reason"].eq("Keep running").all()


def test_rows_without_metric_roles_have_no_decision_nor_role():
    rows = _rows("2026-11-30", _without_roles(GOLDEN))
    assert rows[["role", "decision", "decision_reason"]].isna().all().all()


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (
            {"status": "maybe", "reasons": []},
            "summary: decision.status: expected one of ship, no-ship, keep-running, "
            "unhealthy, got 'maybe'",
        ),
        ({"reasons": []}, "summary: decision.status: expected one of ship, no-ship, "),
        (
            {"status": "ship", "reasons": "Ship"},
            "summary: decision.reasons: expected a list of texts, got 'Ship'",
        ),
        ("ship", "summary: decision: expected an object, got 'ship'"),
    ],
)
def test_rows_of_a_malformed_decision_name_the_key(decision, message):
    summary = _decided_summary()
    summary["decision"] = decision
    with pytest.raises(DataError) as caught:
        _rows("2026-11-30", summary)
    assert str(caught.value).startswith(message)


# --------------------------------------------------------------------------- store


def _dates(start: str, count: int) -> list[str]:
    first = dt.date.fromisoformat(start)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(count)]


def test_written_files_have_the_schema_and_pandas_reads_the_store_in_one_call(tmp_path):
    for date in ("2026-11-29", "2026-11-30"):
        path = write_history(tmp_path, "demo-reranker", date, _rows(date))
        assert path == tmp_path / "history" / "demo-reranker" / f"{date}.parquet"
        assert pq.read_schema(path).equals(HISTORY_SCHEMA, check_metadata=True)
    online = _rows("2026-11-30", _online_summary())
    write_history(tmp_path, "demo-online", "2026-11-30", online)
    whole = pd.read_parquet(tmp_path / "history")
    assert len(whole) == 3 * 32
    assert list(whole.columns) == list(HISTORY_COLUMNS)
    assert whole.groupby(["experiment", "date"]).size().to_dict() == {
        ("demo-online", "2026-11-30"): 32,
        ("demo-reranker", "2026-11-29"): 32,
        ("demo-reranker", "2026-11-30"): 32,
    }
    # and the values come back as written
    back = read_history(tmp_path, "demo-online")
    assert list(back["n_control"]) == list(online["n_control"])
    assert back["srm_alarm"].eq(True).all()
    assert back["run_time"].eq(pd.Timestamp(RUN_TIME)).all()


def test_backfill_of_five_dates_then_a_rerun_replaces_that_dates_rows(tmp_path):
    dates = _dates("2026-11-01", 5)
    for date in dates:
        write_history(tmp_path, "demo-reranker", date, _rows(date))
    history = read_history(tmp_path, "demo-reranker")
    assert sorted(history["date"].unique()) == dates and len(history) == 5 * 32
    write_history(tmp_path, "demo-reranker", dates[2], _rows(dates[2], stale=True))
    history = read_history(tmp_path, "demo-reranker")
    assert len(history) == 5 * 32
    assert history.groupby("date")["stale"].all().to_dict() == {
        date: date == dates[2] for date in dates
    }


def test_rows_are_sorted_by_experiment_and_date_each_date_in_written_order(tmp_path):
    for date in ("2026-11-03", "2026-11-01", "2026-11-02"):
        write_history(tmp_path, "demo-reranker", date, _rows(date))
    write_history(
        tmp_path, "a-first", "2026-11-05", _rows("2026-11-05").assign(experiment="a-first")
    )
    history = read_history(tmp_path)
    keys = list(zip(history["experiment"], history["date"]))
    assert keys == sorted(keys)
    assert keys[0] == ("a-first", "2026-11-05") and keys[-1] == ("demo-reranker", "2026-11-03")
    one_date = history[history["date"] == "2026-11-02"]
    assert list(one_date["metric"]) == [c["metric"] for c in GOLDEN["comparisons"]]
    assert list(one_date["segment"].fillna("")) == [
        c["segment"] or "" for c in GOLDEN["comparisons"]
    ]


def test_an_empty_store_reads_as_an_empty_frame_with_the_columns(tmp_path):
    empty = read_history(tmp_path)
    assert empty.empty and list(empty.columns) == list(HISTORY_COLUMNS)


def test_an_experiment_without_history_names_those_with_one(tmp_path):
    with pytest.raises(DataError) as caught:
        read_history(tmp_path, "nope")
    assert str(caught.value) == (
        f"{tmp_path / 'history'}: expected a history for experiment 'nope', got none "
        "(experiments with a history: none)"
    )
    write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    write_history(tmp_path, "demo-online", "2026-11-30", _rows("2026-11-30", _online_summary()))
    with pytest.raises(
        DataError, match=r"\(experiments with a history: demo-online, demo-reranker\)"
    ):
        read_history(tmp_path, "demo-reranker2")


def _spoil(folder: Path, date: str, how: str) -> Path:
    """A date file of ``folder`` made unreadable: cut to half its bytes, empty, not Parquet,
    of another schema; or a stray Parquet file whose name is not a date's."""
    path = folder / f"{date}.parquet"
    if how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"PAR1 not really")
    elif how == "schema":
        pq.write_table(pa.table({"date": [date], "value": [1.0]}), path)
    elif how == "stray":
        path = folder / "notes.parquet"
        path.write_bytes(b"")
    return path


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "schema", "stray"])
def test_an_unreadable_file_is_skipped_with_a_warning_naming_it(tmp_path, how):
    dates = ["2026-11-28", "2026-11-29", "2026-11-30"]
    for date in dates:
        write_history(tmp_path, "demo-reranker", date, _rows(date))
    write_history(tmp_path, "demo-online", "2026-11-30", _rows("2026-11-30", _online_summary()))
    folder = tmp_path / "history" / "demo-reranker"
    broken = _spoil(folder, "2026-11-29", how)
    kept = dates if how == "stray" else ["2026-11-28", "2026-11-30"]
    with pytest.warns(HistoryWarning) as caught:
        history = read_history(tmp_path, "demo-reranker")
    assert sorted(history["date"].unique()) == kept and len(history) == 32 * len(kept)
    assert any(str(w.message).startswith(f"{broken}: skipped: ") for w in caught)
    skipped: list[str] = []
    whole = read_history(tmp_path, skipped=skipped)  # every experiment: the others' rows too
    assert len(whole) == 32 * (len(kept) + 1)
    assert len(skipped) == 1 and skipped[0].startswith(f"{broken}: skipped: ")
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-30", skipped=[]) is not None
    if how != "stray":  # rewriting the date replaces the broken file
        write_history(tmp_path, "demo-reranker", "2026-11-29", _rows("2026-11-29"))
        again: list[str] = []
        history = read_history(tmp_path, "demo-reranker", skipped=again)
        assert again == [] and sorted(history["date"].unique()) == dates


def test_a_file_of_the_wrong_date_or_not_a_regular_file_is_skipped(tmp_path):
    write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    folder = tmp_path / "history" / "demo-reranker"
    write_history(tmp_path, "demo-reranker", "2026-11-28", _rows("2026-11-28"))
    moved = folder / "2026-11-29.parquet"  # a history file moved to another date's name
    os.replace(folder / "2026-11-28.parquet", moved)
    fifo = folder / "2026-11-27.parquet"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    skipped: list[str] = []
    history = read_history(tmp_path, "demo-reranker", skipped=skipped)
    assert list(history["date"].unique()) == ["2026-11-30"]
    assert skipped == [
        f"{fifo}: skipped: expected a history file, got not a regular file",
        f"{moved}: skipped: date: expected '2026-11-29' in every row (the file's name), "
        "got '2026-11-28'",
    ]


def test_refuses_a_store_whose_folders_are_files(tmp_path):
    (tmp_path / "history").write_text("not a folder")
    with pytest.raises(ConfigError) as caught:
        write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    assert str(caught.value) == (
        f"{tmp_path / 'history'}: expected a folder for the history store, got a file"
    )
    assert (tmp_path / "history").read_text() == "not a folder"
    other = tmp_path / "other"
    (other / "history").mkdir(parents=True)
    (other / "history" / "demo-reranker").write_text("mine")
    with pytest.raises(ConfigError, match="demo-reranker: expected a folder for the history"):
        write_history(other, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    assert (other / "history" / "demo-reranker").read_text() == "mine"


@pytest.mark.parametrize(
    ("experiment", "date", "change", "message"),
    [
        ("../up", "2026-11-30", None, "experiment: expected a name of letters"),
        (".hidden", "2026-11-30", None, "experiment: expected a name of letters"),
        ("demo-reranker", "30/11/2026", None, "date: expected a date written YYYY-MM-DD"),
        ("demo-reranker", "2026-11-29", None, "rows: date: expected '2026-11-29' in every row"),
        ("other", "2026-11-30", None, "rows: experiment: expected 'other' in every row"),
        (
            "demo-reranker",
            "2026-11-30",
            "drop",
            "rows: expected the history's columns, got missing ci",
        ),
        (
            "demo-reranker",
            "2026-11-30",
            "type",
            "rows: expected values of the history's column types",
        ),
    ],
)
def test_write_rejects_bad_arguments_and_rows(tmp_path, experiment, date, change, message):
    rows = _rows("2026-11-30")
    if change == "drop":
        rows = rows.drop(columns="ci")
    elif change == "type":
        rows["n"] = "many"
    with pytest.raises(ConfigError, match=re.escape(message)):
        write_history(tmp_path, experiment, date, rows)
    assert not any((tmp_path / "history").rglob("*.parquet"))


def test_previous_inputs_is_the_latest_earlier_dates(tmp_path):
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-30") is None
    for day, digest in (("2026-11-27", "1"), ("2026-11-28", "2"), ("2026-11-30", "3")):
        rows = _rows(day).assign(inputs_sha256=digest * 64)
        write_history(tmp_path, "demo-reranker", day, rows)
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-27") is None
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-28") == "1" * 64
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-29") == "2" * 64
    assert previous_inputs(tmp_path, "demo-reranker", "2026-12-25") == "3" * 64
    assert previous_inputs(tmp_path, "demo-online", "2026-12-25") is None


# --------------------------------------------------------------------------- concurrency

_WRITER = """
import sys, json, datetime as dt
from abrank.history import history_rows, write_history
root, date, marker, times = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
summary = json.load(open(sys.argv[5]))
for i in range(times):
    rows = history_rows(summary, date=date, config_sha256=marker * 64)
    write_history(root, "demo-reranker", date, rows)
"""


def _writer(root: Path, date: str, marker: str, times: int) -> subprocess.Popen:
    golden = str(ROOT / "tests" / "golden" / "demo-summary.json")
    command = [sys.executable, "-c", _WRITER, str(root), date, marker, str(times), golden]
    return subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE, text=True)


def test_two_processes_writing_two_dates_at_once_lose_nothing(tmp_path):
    writers = [_writer(tmp_path, "2026-11-29", "a", 15), _writer(tmp_path, "2026-11-30", "b", 15)]
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.stderr.read()
    history = read_history(tmp_path, "demo-reranker")
    assert history.groupby("date")["config_sha256"].agg(set).to_dict() == {
        "2026-11-29": {"a" * 64},
        "2026-11-30": {"b" * 64},
    }
    assert len(history) == 64
    assert sorted(p.name for p in (tmp_path / "history" / "demo-reranker").iterdir()) == [
        "2026-11-29.parquet",
        "2026-11-30.parquet",
        "_rows.parquet",  # the consolidated copy
    ]


def test_two_processes_rewriting_the_same_date_leave_one_complete_file(tmp_path):
    write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    writers = [_writer(tmp_path, "2026-11-30", m, 40) for m in "ab"]
    reads = 0
    while any(writer.poll() is None for writer in writers):
        history = read_history(tmp_path, "demo-reranker")  # never a partial file
        assert len(history) == 32 and history["config_sha256"].nunique() == 1
        reads += 1
    for writer in writers:
        assert writer.returncode == 0, writer.stderr.read()
    assert reads > 0
    history = read_history(tmp_path, "demo-reranker")
    assert len(history) == 32 and set(history["config_sha256"]) <= {"a" * 64, "b" * 64}
    assert sorted(p.name for p in (tmp_path / "history" / "demo-reranker").iterdir()) == [
        "2026-11-30.parquet",
        "_rows.parquet",  # the consolidated copy
    ]


def test_threads_of_one_process_writing_at_once_lose_nothing(tmp_path):
    dates = _dates("2026-11-01", 6)
    threads = [
        threading.Thread(target=write_history, args=(tmp_path, "demo-reranker", d, _rows(d)))
        for d in dates
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = read_history(tmp_path, "demo-reranker")
    assert sorted(history["date"].unique()) == dates and len(history) == 6 * 32


_STUCK_WRITER = """
import sys, time, json
import pyarrow.parquet as pq
from abrank.history import history_rows, write_history

real = pq.write_table
copy = sys.argv[3] == "copy"  # stall on the consolidated copy, or on the date file

def stuck(table, where, **options):  # half a file, then hangs until killed
    if ("_rows" in where.name) != copy:
        return real(table, where, **options)
    where.write(b"PAR1" + b"x" * 1000)
    where.flush()
    print("writing", flush=True)
    time.sleep(60)

pq.write_table = stuck
rows = history_rows(json.load(open(sys.argv[2])), date="2026-11-30", config_sha256="k" * 64)
write_history(sys.argv[1], "demo-reranker", "2026-11-30", rows)
"""


def _stuck_writer(root: Path, stalls_on: str) -> subprocess.Popen:
    """A process writing 2026-11-30 that hangs halfway through its ``date`` file or its
    ``copy``, once it has said so."""
    golden = str(ROOT / "tests" / "golden" / "demo-summary.json")
    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK_WRITER, str(root), golden, stalls_on],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "writing\n"
    return child


def test_a_writer_killed_mid_write_leaves_the_store_readable_and_the_next_cleans_up(tmp_path):
    write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    folder = tmp_path / "history" / "demo-reranker"
    foreign = {  # hidden, as Parquet readers skip them
        ".notes": b"mine",
        ".2026-11-30.parquet.tmp-abc": b"not abrank's",
        ".2026-11-30.parquet.tmp-1.bak": b"not abrank's either",
    }
    for name, content in foreign.items():
        (folder / name).write_bytes(content)
    child = _stuck_writer(tmp_path, "date")
    temp = folder / f".2026-11-30.parquet.tmp-{child.pid}"
    assert temp.exists()
    # while it runs, another writer leaves its temporary file alone
    write_history(tmp_path, "demo-reranker", "2026-11-29", _rows("2026-11-29"))
    assert temp.exists()
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    # the store reads as before, with pandas' one call too
    history = read_history(tmp_path, "demo-reranker")
    assert len(history) == 64 and set(history["config_sha256"]) == {CONFIG_SHA}
    assert len(pd.read_parquet(folder.parent)) == 64
    assert temp.exists()
    write_history(tmp_path, "demo-reranker", "2026-11-28", _rows("2026-11-28"))
    assert not temp.exists()
    assert {name: (folder / name).read_bytes() for name in foreign} == foreign
    assert len(read_history(tmp_path, "demo-reranker")) == 96


def test_other_files_in_the_store_are_never_touched(tmp_path):
    folder = tmp_path / "history" / "demo-reranker"
    folder.mkdir(parents=True)
    foreign = {
        folder / "notes.txt": b"mine",
        folder / "2026-11-30.parquet.tmp-1": b"visible, not abrank's",
        folder / ".2026-11-30.parquet.tmp-1x": b"hidden, not abrank's",
        tmp_path / "history" / "README": b"about the store",
    }
    for path, content in foreign.items():
        path.write_bytes(content)
    for _ in range(2):
        write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    assert len(read_history(tmp_path)) == 32  # files that are not Parquet are not read
    assert {path: path.read_bytes() for path in foreign} == foreign
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            ".2026-11-30.parquet.tmp-1x",
            "2026-11-30.parquet",
            "2026-11-30.parquet.tmp-1",
            "_rows.parquet",  # the consolidated copy
            "notes.txt",
        ]
    )


def test_only_dead_writers_temporary_files_are_removed(tmp_path):
    folder = tmp_path / "history" / "x"
    folder.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead = _dead_pid()
        live = folder / f".2026-11-30.parquet.tmp-{sleeper.pid}"
        mine = folder / f".2026-11-29.parquet.tmp-{os.getpid()}"
        gone = folder / f".2026-11-28.parquet.tmp-{dead}"
        for path in (live, mine, gone):
            path.write_bytes(b"partial")
        assert remove_abandoned_files(folder) == [gone]
        assert live.exists() and mine.exists() and not gone.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def _dead_pid() -> int:
    """The id of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    pid = child.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


# --------------------------------------------------------------------------- CLI


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "abrank", "history", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture()
def store(tmp_path) -> Path:
    """Two dates of the demo's history, with a segment that needs quoting and a NaN."""
    for date in ("2026-11-29", "2026-11-30"):
        rows = _rows(date, _without_roles(GOLDEN))
        rows.loc[5, "segment"] = 'locale="en, US"\tx'
        rows.loc[6, "p_value"] = float("nan")
        rows.loc[7, "ci"] = None
        rows.loc[7, ["ci_low", "ci_high"]] = float("nan")
        write_history(tmp_path, "demo-reranker", date, rows)
    write_history(tmp_path, "demo-online", "2026-11-30", _rows("2026-11-30", _online_summary()))
    return tmp_path


def test_cli_json_is_every_row_with_every_column(store):
    done = _cli("demo-reranker", "--json", "--root", str(store))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = read_history(store, "demo-reranker")
    assert len(printed) == len(expected) == 64
    for row, (_, want) in zip(printed, expected.iterrows()):
        assert list(row) == list(HISTORY_COLUMNS)
        for name in HISTORY_COLUMNS:
            value = want[name]
            if name == "ci":
                assert row[name] == (None if value is None else list(value))
            elif name == "run_time":
                assert dt.datetime.fromisoformat(row[name]) == value.to_pydatetime()
                assert row[name] == "2026-11-30T06:00:01.250000+00:00"
            elif value is None or (isinstance(value, float) and math.isnan(value)):
                assert row[name] is None, name
            else:
                assert row[name] == value, name
    assert printed[5]["segment"] == 'locale="en, US"\tx'
    assert printed[6]["p_value"] is None and printed[7]["ci"] is None


def test_cli_csv_is_every_column(store):
    done = _cli("demo-reranker", "--csv", "--root", str(store))
    assert done.returncode == 0, done.stderr
    printed = pd.read_csv(io.StringIO(done.stdout), keep_default_na=False, na_values=[""])
    expected = read_history(store, "demo-reranker")
    assert list(printed.columns) == list(HISTORY_COLUMNS) and len(printed) == 64
    for name in ("control_mean", "delta", "ci_low", "p_value", "p_adjusted", "n", "n_control"):
        pd.testing.assert_series_equal(printed[name], expected[name], check_dtype=False)
    assert list(printed["metric"]) == list(expected["metric"])
    assert printed["segment"][5] == 'locale="en, US"\tx'
    assert printed["ci"][0] == json.dumps(list(expected["ci"][0]))
    assert pd.isna(printed["ci"][7])
    assert pd.to_datetime(printed["run_time"]).eq(pd.Timestamp(RUN_TIME)).all()
    assert printed["primary"].tolist() == expected["primary"].tolist()


def test_cli_text_is_an_aligned_table_of_the_main_columns(store):
    done = _cli("demo-reranker", "--root", str(store))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines[0].split()
    assert header == [
        "date", "treatment", "metric", "segment", "control_mean", "treatment_mean",
        "delta", "ci", "p_adjusted", "verdict", "n",
    ]  # fmt: skip
    assert len(lines) == 1 + 64
    assert len({len(line) for line in lines[1:]}) == 1  # every row as wide
    expected = read_history(store, "demo-reranker")
    for line, (_, want) in zip(lines[1:], expected.iterrows()):
        cells = re.split(r"\s{2,}", line.strip())
        if cells[3].startswith('locale="en, US"'):
            continue  # its tab is printed as it is
        assert cells[:3] == [want["date"], want["treatment"], want["metric"]]
        assert cells[3] == (want["segment"] if isinstance(want["segment"], str) else "overall")
        assert float(cells[4]) == pytest.approx(want["control_mean"], abs=5e-5)
        assert float(cells[5]) == pytest.approx(want["treatment_mean"], abs=5e-5)
        assert float(cells[6]) == pytest.approx(want["delta"], abs=5e-5)
        assert cells[6][0] in "+-"
        if want["ci"] is None:
            assert cells[7] == "-"
        else:
            low, high = (float(end) for end in cells[7].strip("[]").split(", "))
            assert (low, high) == pytest.approx(tuple(want["ci"]), abs=5e-5)
        if want["p_adjusted"] < 1e-4:
            assert cells[8] == "<0.0001"
        else:
            assert float(cells[8]) == pytest.approx(want["p_adjusted"], abs=5e-5)
        assert cells[9:] == [want["verdict"], str(want["n"])]
    assert lines[1].split()[:4] == ["2026-11-29", "reranker", "mrr@10", "overall"]
    assert "+0.2459  [+0.2257, +0.2662]  " in lines[1]  # MRR@10, the one success metric: 95%


def test_cli_unknown_name_and_both_formats_exit_2(store):
    done = _cli("nope", "--root", str(store))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"abrank: error: {store / 'history'}: expected a history for experiment 'nope', got "
        "none (experiments with a history: demo-online, demo-reranker)\n"
    )
    done = _cli("demo-reranker", "--json", "--csv", "--root", str(store))
    assert done.returncode == 2
    assert "argument --csv: not allowed with argument --json" in done.stderr


def test_cli_default_root_is_reports(store):
    done = subprocess.run(
        [sys.executable, "-m", "abrank", "history", "demo-online", "--json"],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=store.parent,
        timeout=60,
    )
    assert done.returncode == 2 and "reports/history: expected a history" in done.stderr
    (store.parent / "reports").symlink_to(store)
    done = subprocess.run(
        [sys.executable, "-m", "abrank", "history", "demo-online", "--json"],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=store.parent,
        timeout=60,
    )
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 32


def test_cli_history_loads_neither_pandas_nor_scipy(store):
    script = (
        "import sys; from abrank.cli import main; "
        f"code = main(['history', 'demo-reranker', '--json', '--root', {str(store)!r}]); "
        "print(code, sorted(m for m in ('pandas', 'scipy', 'matplotlib', 'pyarrow.dataset') "
        "if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.stderr.strip() == "0 []"
    assert len(json.loads(done.stdout)) == 64


def test_formats_of_an_empty_table():
    from abrank.history.output import history_csv, history_json, history_text

    empty = HISTORY_SCHEMA.empty_table()
    assert history_json(empty) == b"[]\n"
    assert history_csv(empty).decode() == ",".join(HISTORY_COLUMNS) + "\n"
    assert history_text(empty).split() == [
        "date", "treatment", "metric", "segment", "control_mean", "treatment_mean",
        "delta", "ci", "p_adjusted", "verdict", "n",
    ]  # fmt: skip


def test_formats_are_the_same_in_small_batches(store, monkeypatch):
    from abrank.history import output
    from abrank.history.store import history_table

    table = history_table(store)
    whole = [output.history_json(table), output.history_csv(table), output.history_text(table)]
    monkeypatch.setattr(output, "BATCH", 7)
    assert [
        output.history_json(table),
        output.history_csv(table),
        output.history_text(table),
    ] == whole
    assert len(json.loads(whole[0])) == 96


def test_text_numbers_have_four_signed_decimals():
    from abrank.history.output import history_text

    rng = np.random.default_rng(12)
    deltas = np.concatenate(
        [[0.00004, -0.00004, -0.01204, 1234.56786], rng.normal(0, 0.3, 28) ** 3]
    )
    rows = _rows("2026-11-30")
    rows["delta"] = deltas
    rows["control_mean"] = [0.5, float("nan"), 2.0, 1e13, *rng.uniform(0, 1, 28)]
    rows["p_adjusted"] = [0.00009, 0.0001, 0.04999, float("nan"), *rng.uniform(0, 1, 28)]
    table = pa.Table.from_pandas(rows, schema=HISTORY_SCHEMA, preserve_index=False)
    lines = history_text(table).splitlines()[1:]
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines]

    def signed(value: float) -> str:  # Python's own rounding; no sign on a zero
        text = f"{value:+.4f}"
        return text[1:] if float(text) == 0 else text

    assert [c[6] for c in cells] == [signed(value) for value in deltas]
    assert [c[6] for c in cells[:4]] == ["0.0000", "0.0000", "-0.0120", "+1234.5679"]
    assert [c[4] for c in cells[:4]] == ["0.5000", "-", "2.0000", "1e+13"]
    assert [c[4] for c in cells[4:]] == [f"{value:.4f}" for value in rows["control_mean"][4:]]
    assert [c[8] for c in cells[:4]] == ["<0.0001", "0.0001", "0.0500", "-"]


# --------------------------------------------------------------------------- README


def test_readme_schema_table_is_the_schemas_docs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- history schema: begin -->\n(.*?)\n<!-- history schema: end -->", text, re.DOTALL
    )
    assert match is not None, "README.md: the history schema markers are missing"
    assert match.group(1) == schema_table()
    assert len(match.group(1).splitlines()) == 2 + len(HISTORY_SCHEMA) == 39


def test_schema_is_the_shared_one():
    types = {field.name: str(field.type) for field in HISTORY_SCHEMA}
    assert types["ci"] == "list<element: double>"
    assert types["run_time"] == "timestamp[us, tz=UTC]"
    assert [n for n, t in types.items() if t == "bool"] == [
        "primary", "sequential", "srm_alarm", "stale",
    ]  # fmt: skip
    assert [n for n, t in types.items() if t == "int64"] == ["n", "n_control", "n_treatment"]


def test_a_file_of_another_experiment_or_with_missing_keys_is_skipped_naming_it(tmp_path):
    write_history(tmp_path, "demo-reranker", "2026-11-30", _rows("2026-11-30"))
    write_history(tmp_path, "demo-online", "2026-11-29", _rows("2026-11-29", _online_summary()))
    moved = tmp_path / "history" / "demo-reranker" / "2026-11-29.parquet"
    os.replace(tmp_path / "history" / "demo-online" / "2026-11-29.parquet", moved)
    skipped: list[str] = []
    assert len(read_history(tmp_path, "demo-reranker", skipped=skipped)) == 32
    assert skipped == [
        f"{moved}: skipped: experiment: expected 'demo-reranker' in every row (the file's "
        "folder), got 'demo-online'"
    ]
    skipped = []
    assert previous_inputs(tmp_path, "demo-reranker", "2026-11-30", skipped=skipped) is None
    assert skipped and skipped[0].startswith(f"{moved}: skipped: experiment: expected")
    table = pq.read_table(moved)
    dates = pa.array(["2026-11-29"] * 31 + [None], pa.string())
    experiments = pa.array(["demo-reranker"] * 32, pa.string())
    table = table.set_column(0, "experiment", experiments).set_column(1, "date", dates)
    pq.write_table(table, moved)
    skipped = []
    assert len(read_history(tmp_path, skipped=skipped)) == 32
    assert skipped == [
        f"{moved}: skipped: date: expected '2026-11-29' in every row (the file's name), got None"
    ]


def test_cli_names_the_unreadable_files_and_prints_the_others(store):
    folder = store / "history" / "demo-reranker"
    broken = _spoil(folder, "2026-11-29", "truncated")
    done = _cli("demo-reranker", "--json", "--root", str(store))
    assert done.returncode == 0, done.stderr
    assert {row["date"] for row in json.loads(done.stdout)} == {"2026-11-30"}
    assert f"abrank: warning: {broken}: skipped: expected a history file (Parquet)" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- consolidated copy

from abrank.history import consolidated  # noqa: E402
from abrank.history.consolidated import MANIFEST_KEY, copy_manifest, refresh_copy  # noqa: E402
from abrank.history.store import history_table  # noqa: E402

NAME = "demo-reranker"


def _file_by_file(root: Path, experiment: str | None = None, columns=None) -> pd.DataFrame:
    """The reference: every date file read on its own with pyarrow, by experiment and date."""
    tables = []
    for folder in sorted((root / "history").iterdir()):
        if folder.is_dir() and experiment in (None, folder.name):
            for path in sorted(folder.glob("[0-9]*.parquet")):
                tables.append(pq.read_table(path, columns=columns))
    return pa.concat_tables(tables).to_pandas()


def _assert_reads_as_its_files(root: Path, experiment: str | None = NAME) -> None:
    pd.testing.assert_frame_equal(read_history(root, experiment), _file_by_file(root, experiment))
    few = ["experiment", "date", "metric", "delta", "ci", "verdict"]
    pd.testing.assert_frame_equal(
        history_table(root, experiment, columns=["metric", "delta", "ci", "verdict"]).to_pandas(),
        _file_by_file(root, experiment, columns=few),
    )


def _distinct_rows(date: str, seed: int, **options) -> pd.DataFrame:
    """A date's rows with means of their own, so that rows of two dates never look alike."""
    rows = _rows(date, **options)
    rng = np.random.default_rng(seed)
    rows["control_mean"] = rng.uniform(0, 1, len(rows))
    rows["delta"] = rng.normal(0, 0.1, len(rows))
    return rows


@pytest.fixture()
def backfill(tmp_path) -> Path:
    """Thirty dates of one experiment, each written by write_history, and one of another."""
    for index, date in enumerate(_dates("2026-10-01", 30)):
        write_history(tmp_path, NAME, date, _distinct_rows(date, index))
    online = _rows("2026-10-05", _online_summary())
    write_history(tmp_path, "demo-online", "2026-10-05", online)
    return tmp_path


@pytest.fixture()
def file_reads(monkeypatch) -> list[Path]:
    """The date files the copy's reader reads, in the order it reads them."""
    read: list[Path] = []
    real = consolidated.read_date_file

    def counted(path, columns=None):
        read.append(Path(path))
        return real(path, columns)

    monkeypatch.setattr(consolidated, "read_date_file", counted)
    return read


def _folder(root: Path, experiment: str = NAME) -> Path:
    return root / "history" / experiment


def test_a_backfill_reads_from_its_copy_as_from_its_files(backfill, file_reads):
    manifest = copy_manifest(_folder(backfill))
    assert manifest is not None
    refresh_copy(_folder(backfill), NAME, always=True)
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    _assert_reads_as_its_files(backfill, None)
    assert file_reads == []  # every row came from the copies
    manifest = copy_manifest(_folder(backfill))
    assert [entry.date for entry in manifest] == _dates("2026-10-01", 30)
    for entry in manifest:
        stat = (_folder(backfill) / f"{entry.date}.parquet").stat()
        assert (entry.inode, entry.size, entry.mtime_ns) == (
            stat.st_ino,
            stat.st_size,
            stat.st_mtime_ns,
        )
        assert entry.rows == 32
    # pandas' one call still sees each row once: the copy is not read as history
    whole = pd.read_parquet(backfill / "history")
    assert len(whole) == 31 * 32
    assert whole.groupby(["experiment", "date"]).size().eq(32).all()


def test_a_rerun_of_one_date_is_read_from_its_new_file(backfill, file_reads):
    refresh_copy(_folder(backfill), NAME, always=True)
    old = (_folder(backfill) / "2026-10-07.parquet").stat().st_ino
    write_history(backfill, NAME, "2026-10-07", _distinct_rows("2026-10-07", 99, stale=True))
    assert (_folder(backfill) / "2026-10-07.parquet").stat().st_ino != old
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    assert set(file_reads) == {_folder(backfill) / "2026-10-07.parquet"}
    history = read_history(backfill, NAME)
    assert history.groupby("date")["stale"].all().to_dict() == {
        date: date == "2026-10-07" for date in _dates("2026-10-01", 30)
    }


def test_a_date_file_removed_by_hand_is_gone_from_the_read(backfill, file_reads):
    refresh_copy(_folder(backfill), NAME, always=True)
    for date in ("2026-10-01", "2026-10-15", "2026-10-30"):
        (_folder(backfill) / f"{date}.parquet").unlink()
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    assert file_reads == []
    history = read_history(backfill, NAME)
    assert len(history) == 27 * 32
    assert not history["date"].isin(["2026-10-01", "2026-10-15", "2026-10-30"]).any()


def test_dates_added_by_another_writer_without_the_copy_are_read(backfill, file_reads):
    refresh_copy(_folder(backfill), NAME, always=True)
    before = copy_manifest(_folder(backfill))
    # a writer that knows nothing of the copy: one earlier date, one later, one in between
    for seed, date in enumerate(("2026-09-30", "2026-10-31", "2026-10-10")):
        rows = _distinct_rows(date, 200 + seed)
        table = pa.Table.from_pandas(rows, schema=HISTORY_SCHEMA, preserve_index=False)
        if date == "2026-10-10":  # a rewrite in place: same inode, new size or time
            os.utime(_folder(backfill) / f"{date}.parquet", ns=(1, 1))
        else:
            pq.write_table(
                table.replace_schema_metadata(None), _folder(backfill) / f"{date}.parquet"
            )
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    assert sorted(p.name for p in set(file_reads)) == [
        "2026-09-30.parquet",
        "2026-10-10.parquet",
        "2026-10-31.parquet",
    ]
    assert copy_manifest(_folder(backfill)) == before  # 3 of 32 dates: not rebuilt yet
    assert len(read_history(backfill, NAME)) == 32 * 32


def test_a_copy_far_out_of_date_is_rebuilt_by_its_reader(backfill, file_reads):
    refresh_copy(_folder(backfill), NAME, always=True)
    for date in _dates("2026-11-01", 4):  # 4 of 34 dates: more than a tenth
        rows = _distinct_rows(date, 300)
        table = pa.Table.from_pandas(rows, schema=HISTORY_SCHEMA, preserve_index=False)
        pq.write_table(table.replace_schema_metadata(None), _folder(backfill) / f"{date}.parquet")
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    assert len(copy_manifest(_folder(backfill))) == 34
    file_reads.clear()
    _assert_reads_as_its_files(backfill)
    assert file_reads == []


def test_a_read_only_store_still_reads(backfill, monkeypatch):
    (_folder(backfill) / "_rows.parquet").unlink()

    def refused(folder, assembled):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(consolidated, "write_copy", refused)
    _assert_reads_as_its_files(backfill)
    assert not (_folder(backfill) / "_rows.parquet").exists()


def _write_copy_like(folder: Path, table: pa.Table, manifest: dict) -> None:
    metadata = {MANIFEST_KEY: json.dumps(manifest).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), folder / "_rows.parquet")


@pytest.mark.parametrize(
    "spoil",
    [
        "garbage",
        "empty",
        "no manifest",
        "older manifest format",
        "older schema",
        "rows that are not the manifest's",
        "another experiment's copy",
    ],
)
def test_a_corrupt_or_foreign_copy_is_ignored_and_rebuilt(backfill, spoil):
    folder = _folder(backfill)
    refresh_copy(folder, NAME, always=True)
    copy = folder / "_rows.parquet"
    good = pq.read_table(copy)
    manifest = json.loads(pq.read_metadata(copy).metadata[MANIFEST_KEY])
    if spoil == "garbage":
        copy.write_bytes(b"PAR1" + os.urandom(5000) + b"PAR1")
    elif spoil == "empty":
        copy.write_bytes(b"")
    elif spoil == "no manifest":
        pq.write_table(good.replace_schema_metadata(None), copy)
    elif spoil == "older manifest format":
        _write_copy_like(folder, good, {**manifest, "format": 0})
    elif spoil == "older schema":  # a column fewer, the manifest as it was
        _write_copy_like(folder, good.drop_columns(["srm_alarm"]), manifest)
    elif spoil == "rows that are not the manifest's":  # each date's rows moved a date on
        shifted = good.slice(32).append_column("x", pa.nulls(len(good) - 32)).drop_columns("x")
        shifted = pa.concat_tables([shifted, good.slice(0, 32)])
        _write_copy_like(folder, shifted, manifest)
    else:
        other = _folder(backfill, "demo-online")
        refresh_copy(other, "demo-online", always=True)
        os.replace(other / "_rows.parquet", copy)
    _assert_reads_as_its_files(backfill)
    rebuilt = copy_manifest(folder)  # every date was missing: the reader rebuilt it
    assert rebuilt is not None and len(rebuilt) == 30
    assert pq.read_table(copy).equals(good)


def test_concurrent_writers_leave_a_correct_store_and_copy(tmp_path):
    write_history(tmp_path, NAME, "2026-11-28", _rows("2026-11-28"))
    writers = [
        _writer(tmp_path, date, m, 8) for date, m in (("2026-11-29", "a"), ("2026-11-30", "b"))
    ]
    writers.append(_writer(tmp_path, "2026-11-29", "c", 8))
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.stderr.read()
    _assert_reads_as_its_files(tmp_path)
    history = read_history(tmp_path, NAME)
    assert len(history) == 3 * 32
    assert history.groupby("date")["config_sha256"].nunique().eq(1).all()
    refresh_copy(_folder(tmp_path), NAME, always=True)
    _assert_reads_as_its_files(tmp_path)
    assert [entry.date for entry in copy_manifest(_folder(tmp_path))] == [
        "2026-11-28",
        "2026-11-29",
        "2026-11-30",
    ]


def test_a_writer_killed_writing_the_copy_leaves_a_temp_file_the_next_removes(tmp_path):
    write_history(tmp_path, NAME, "2026-11-29", _rows("2026-11-29"))
    (_folder(tmp_path) / "_rows.parquet").unlink()  # so that the next writer rebuilds it
    child = _stuck_writer(tmp_path, "copy")
    temp = _folder(tmp_path) / f"._rows.parquet.tmp-{child.pid}"
    assert temp.exists()
    write_history(tmp_path, NAME, "2026-11-28", _rows("2026-11-28"))  # it runs: left alone
    assert temp.exists()
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    _assert_reads_as_its_files(tmp_path)  # its date file is in place, its copy never was
    assert len(read_history(tmp_path, NAME)) == 3 * 32
    assert len(pd.read_parquet(tmp_path / "history")) == 3 * 32
    write_history(tmp_path, NAME, "2026-11-27", _rows("2026-11-27"))
    assert not temp.exists()
    assert sorted(p.name for p in _folder(tmp_path).iterdir()) == [
        "2026-11-27.parquet",
        "2026-11-28.parquet",
        "2026-11-29.parquet",
        "2026-11-30.parquet",
        "_rows.parquet",
    ]
    _assert_reads_as_its_files(tmp_path)


def test_only_dead_writers_temporary_copies_are_removed(tmp_path):
    folder = _folder(tmp_path)
    folder.mkdir(parents=True)
    dead = _dead_pid()
    gone = folder / f"._rows.parquet.tmp-{dead}"
    mine = folder / f"._rows.parquet.tmp-{os.getpid()}"
    other = folder / f"._rows.parquet.tmp-{dead}.bak"
    for path in (gone, mine, other):
        path.write_bytes(b"partial")
    assert remove_abandoned_files(folder) == [gone]
    assert mine.exists() and other.exists()


# --------------------------------------------------------------------------- earlier versions

#: The columns of the store's first version, as it wrote them (before role, decision and
#: decision_reason)
FIRST_VERSION = (
    "experiment", "date", "metric", "treatment", "control", "segment", "primary", "design",
    "primary_test", "unit", "control_mean", "treatment_mean", "delta", "ci", "ci_low",
    "ci_high", "ci_level", "relative_lift", "p_value", "p_adjusted", "verdict", "n",
    "n_control", "n_treatment", "sequential", "srm_p_value", "srm_alarm", "window",
    "window_start", "stale", "config_sha256", "inputs_sha256", "abrank_version", "run_time",
)  # fmt: skip
ADDED = ("role", "decision", "decision_reason")


def _first_version_store(root: Path, dates: list[str]) -> dict[str, bytes]:
    """The demo's rows of ``dates`` as the store's first version wrote them: date files of
    its schema, and its consolidated copy of them (its manifest up to date). Returns each
    date file's bytes."""
    schema = pa.schema([HISTORY_SCHEMA.field(name) for name in FIRST_VERSION])
    folder = _folder(root)
    folder.mkdir(parents=True)
    tables, entries = [], []
    for date in dates:
        rows = _rows(date)[list(FIRST_VERSION)]
        table = pa.Table.from_pandas(rows, schema=schema, preserve_index=False)
        table = table.replace_schema_metadata(None)
        path = folder / f"{date}.parquet"
        pq.write_table(table, path, use_dictionary=False, write_statistics=False)
        stat = path.stat()
        tables.append(table)
        entries.append([date, stat.st_ino, stat.st_size, stat.st_mtime_ns, table.num_rows])
    _write_copy_like(folder, pa.concat_tables(tables), {"format": 1, "files": entries})
    return {date: (folder / f"{date}.parquet").read_bytes() for date in dates}


def test_the_first_versions_columns_are_the_schemas_less_those_added():
    assert [name for name in HISTORY_COLUMNS if name not in ADDED] == list(FIRST_VERSION)
    assert [field.type for field in HISTORY_SCHEMA if field.name in ADDED] == [pa.string()] * 3


def test_a_store_of_the_first_version_is_read_with_the_new_columns_null(tmp_path):
    old = _first_version_store(tmp_path, ["2026-11-28", "2026-11-29"])
    skipped: list[str] = []
    history = read_history(tmp_path, NAME, skipped=skipped)
    assert skipped == [] and len(history) == 64
    assert list(history.columns) == list(HISTORY_COLUMNS)
    assert history[list(ADDED)].isna().all().all()
    expected = _file_by_file(tmp_path, NAME)  # the first version's columns, as written
    pd.testing.assert_frame_equal(history[list(FIRST_VERSION)], expected)
    few = history_table(tmp_path, NAME, columns=["decision", "delta"])
    assert few.column_names == ["experiment", "date", "delta", "decision"]
    assert few.column("decision").null_count == 64
    assert previous_inputs(tmp_path, NAME, "2026-11-30") == history["inputs_sha256"][0]
    # the first version's copy holds none of the dates: read from the files, then rebuilt
    manifest = copy_manifest(_folder(tmp_path))
    assert manifest is not None and [e.date for e in manifest] == ["2026-11-28", "2026-11-29"]
    assert pq.read_schema(_folder(tmp_path) / "_rows.parquet").equals(HISTORY_SCHEMA)
    assert {date: (_folder(tmp_path) / f"{date}.parquet").read_bytes() for date in old} == old


def test_a_store_of_the_first_version_is_appended_to(tmp_path):
    old = _first_version_store(tmp_path, ["2026-11-28", "2026-11-29"])
    write_history(tmp_path, NAME, "2026-11-30", _rows("2026-11-30", _decided_summary()))
    history = read_history(tmp_path, NAME)
    assert len(history) == 96
    by_date = history.groupby("date")["decision"].agg(lambda s: set(s.dropna()))
    assert by_date.to_dict() == {
        "2026-11-28": set(),
        "2026-11-29": set(),
        "2026-11-30": {"no-ship"},
    }
    latest = history[history["date"] == "2026-11-30"]
    assert latest["decision_reason"].eq(NO_SHIP).all()
    assert list(latest.loc[latest["segment"].isna(), "role"]) == [
        "success", "secondary", "guardrail", "secondary",
    ]  # fmt: skip
    # the earlier files are left as they are; the writer rebuilt the copy in this schema
    assert {date: (_folder(tmp_path) / f"{date}.parquet").read_bytes() for date in old} == old
    manifest = copy_manifest(_folder(tmp_path))
    assert [e.date for e in manifest] == ["2026-11-28", "2026-11-29", "2026-11-30"]
    # pandas' one call over files of both versions: with the schema, every column
    whole = pd.read_parquet(tmp_path / "history", schema=HISTORY_SCHEMA)
    assert list(whole.columns) == list(HISTORY_COLUMNS) and len(whole) == 96
    assert whole.groupby("date")["decision"].count().to_dict() == {
        "2026-11-28": 0,
        "2026-11-29": 0,
        "2026-11-30": 32,
    }


def test_a_file_of_no_versions_schema_is_skipped(tmp_path):
    write_history(tmp_path, NAME, "2026-11-30", _rows("2026-11-30"))
    path = _folder(tmp_path) / "2026-11-29.parquet"
    table = pa.Table.from_pandas(_rows("2026-11-29"), schema=HISTORY_SCHEMA, preserve_index=False)
    pq.write_table(table.drop_columns(["decision"]).replace_schema_metadata(None), path)
    skipped: list[str] = []
    assert list(read_history(tmp_path, NAME, skipped=skipped)["date"].unique()) == ["2026-11-30"]
    assert len(skipped) == 1
    assert skipped[0].startswith(f"{path}: skipped: expected a history file (columns ")


def test_cli_text_shows_each_dates_decision_after_the_date(tmp_path):
    _first_version_store(tmp_path, ["2026-11-29"])
    write_history(tmp_path, NAME, "2026-11-30", _rows("2026-11-30", _decided_summary()))
    done = _cli(NAME, "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "date", "decision", "treatment", "metric", "segment", "control_mean",
        "treatment_mean", "delta", "ci", "p_adjusted", "verdict", "n",
    ]  # fmt: skip
    assert len(lines) == 1 + 64 and len({len(line) for line in lines}) == 1
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]
    assert {(c[0], c[1]) for c in cells} == {("2026-11-29", "-"), ("2026-11-30", "no-ship")}
    assert cells[32][:5] == ["2026-11-30", "no-ship", "reranker", "mrr@10", "overall"]
    done = _cli(NAME, "--json", "--root", str(tmp_path))
    printed = json.loads(done.stdout)
    assert [row["decision"] for row in printed] == [None] * 32 + ["no-ship"] * 32
    assert printed[32]["decision_reason"] == NO_SHIP and printed[32]["role"] == "success"
