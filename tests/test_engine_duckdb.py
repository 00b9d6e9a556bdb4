"""The DuckDB engine: online click sums equal to the memory engine's, and its errors."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click_logs import (
    CONFIG,
    METRICS,
    ROOT,
    assert_same_sums,
    bad_log,
    make_log,
    memory_sums,
    sums_on,
    write_experiment,
)
from trees import assert_same_summary

import abrank
from abrank import engines
from abrank.analysis import run_experiment
from abrank.cli import main
from abrank.config import load_experiment, parse_experiment
from abrank.engines.clicks import score_impressions, unit_sums
from abrank.engines.sql.duckdb import DuckDBBackend
from abrank.errors import ConfigError, DataError
from abrank.io import read_impressions
from abrank.metrics import parse_metric

duckdb = pytest.importorskip("duckdb")


def sql_sums(path: Path, metrics, **options):
    return sums_on(DuckDBBackend(), path, metrics, **options)


@pytest.mark.parametrize("string_ids", [False, True])
def test_per_unit_sums_equal_the_memory_engines(tmp_path, string_ids):
    path = tmp_path / "log.parquet"
    make_log(string_ids=string_ids).to_parquet(path)
    result = sql_sums(path, METRICS, segments=("device",))
    expected = memory_sums(path, METRICS)
    by_device = memory_sums(path, METRICS, by="device")
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])
        assert_same_sums(by_device[arm], result.segment_sums["device"][arm])
    assert result.mixed.count == 0
    assert result.file_rows == {str(path): len(make_log(string_ids=string_ids))}


def test_a_nan_dwell_in_parquet_is_a_missing_dwell_as_on_the_memory_engine(tmp_path):
    """A float column's NaN (written as NaN, not as null) is a missing dwell: not a
    satisfied click. DuckDB takes a Parquet column's statistics, which leave NaN out, for
    proof that it holds none, and folded ISNAN to false: NaN, larger than any number in
    DuckDB, then counted as a dwell of more than 30 seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = make_log(impressions=600)
    table = pa.Table.from_pandas(log.drop(columns="dwell"), preserve_index=False)
    dwell = pa.array(log["dwell"].to_numpy(), from_pandas=False)  # NaN stays NaN
    assert dwell.null_count == 0 and int(np.isnan(log["dwell"]).sum()) > 100
    path = tmp_path / "log.parquet"
    pq.write_table(table.append_column("dwell", dwell), path)
    result = sql_sums(path, ["sat_ctr@3", "sat_ctr"])
    expected = memory_sums(path, ["sat_ctr@3", "sat_ctr"])
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])


def test_a_csv_log_keeps_ids_as_written_and_equals_the_memory_engine(tmp_path):
    log = make_log(impressions=800)
    log["user_id"] = "00" + log["user_id"].astype(str)  # leading zeros: text ids, not ints
    log["dwell"] = log["dwell"].astype(object)
    clicked = log["clicked"].to_numpy() == 1
    log.loc[clicked, "dwell"] = [
        ["nan", "NaN", 40.0, 5.0][i % 4] for i in range(clicked.sum())
    ]  # nan: missing
    path = tmp_path / "log.csv"
    log.to_csv(path, index=False)
    assert (log["dwell"] == "NaN").sum() > 10 and (log["dwell"] == 40.0).sum() > 10
    result = sql_sums(path, METRICS, fmt="csv")
    expected = memory_sums(path, METRICS)
    for arm in ("a", "b"):
        assert result.sums[arm].index[0].startswith("00")
        assert_same_sums(expected[arm], result.sums[arm])


def test_values_by_hand_on_a_tiny_log(tmp_path):
    # impression 1 (user u): clicks at ranks 2 and 3, dwell 40 then missing;
    # impression 2 (user u): no click; impression 3 (user v, arm b): click at 1, dwell 10
    frame = pd.DataFrame(
        {
            "impression_id": [1, 1, 1, 2, 2, 3],
            "user_id": ["u", "u", "u", "u", "u", "v"],
            "rank": [1, 2, 3, 1, 2, 1],
            "doc_id": ["d"] * 6,
            "clicked": [0, 1, 1, 0, 0, 1],
            "dwell": [np.nan, 40.0, np.nan, np.nan, np.nan, 10.0],
            "arm": ["a"] * 5 + ["b"],
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    result = sql_sums(path, ["click_rr@10", "ctr@1", "clicks@3", "abandonment", "sat_ctr@2"])
    a = result.sums["a"].loc["u"]
    assert a["impressions"] == 2
    assert a["click_rr@10"] == pytest.approx(0.5)  # 1/2 + 0
    assert a["ctr@1"] == 0
    assert a["clicks@3"] == 2
    assert a["abandonment"] == 1
    assert a["sat_ctr@2"] == 1  # rank 2, dwell 40 >= 30
    b = result.sums["b"].loc["v"]
    assert (b["click_rr@10"], b["ctr@1"], b["sat_ctr@2"]) == (1.0, 1.0, 0.0)
    ranks = result.ctr_by_rank
    assert ranks[ranks["arm"] == "a"][["rank", "impressions", "clicks"]].values.tolist() == [
        [1, 2, 0],
        [2, 2, 1],
        [3, 1, 1],
    ]


def test_deep_ranks_beyond_the_bit_check_are_checked_too(tmp_path):
    rank = list(range(1, 71))
    frame = pd.DataFrame(
        {
            "impression_id": [1] * 70 + [2] * 70,
            "user_id": ["u"] * 70 + ["v"] * 70,
            "rank": rank + rank[:65] + [66, 66, 68, 69, 70],  # 66 twice, 67 missing
            "doc_id": ["d"] * 140,
            "clicked": [0] * 140,
            "arm": ["a"] * 70 + ["b"] * 70,
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(
        DataError,
        match=r"log.parquet: row 137: rank: expected each rank once per impression, got rank 66 "
        r"again in impression '2' \(first at row 136\)$",
    ):
        sql_sums(path, ["ctr@3"])
    frame.loc[frame.index[-5:], "rank"] = [66, 67, 68, 69, 70]
    frame.to_parquet(path)
    result = sql_sums(path, ["click_rr"])
    assert result.sums["b"]["impressions"].tolist() == [1]


def test_a_shallow_rank_twice_with_a_deep_rank_missing_is_refused(tmp_path):
    """The pass over the log leaves out the count of ranks within 62: an impression deeper
    than that with a shallow rank twice and a deep rank missing (n = the top rank, every
    shallow rank seen) is found by the check of deep logs, with the memory engine's
    message."""
    rank = list(range(1, 71))
    frame = pd.DataFrame(
        {
            "impression_id": [1] * 70 + [2] * 70,
            "user_id": ["u"] * 70 + ["v"] * 70,
            "rank": rank + rank[:62] + [5] + rank[63:],  # 5 twice, 63 missing
            "doc_id": ["d"] * 140,
            "clicked": [0] * 140,
            "arm": ["a"] * 70 + ["b"] * 70,
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    # rows 71..140 are impression 2: rank 5 at row 75, again at row 71 + 62 = 133
    expected = (
        f"{path}: row 133: rank: expected each rank once per impression, got rank 5 again "
        "in impression '2' (first at row 75)"
    )
    with pytest.raises(DataError) as on_duckdb:
        sql_sums(path, ["ctr@3"])
    with pytest.raises(DataError) as on_memory:
        read_impressions(path)
    assert str(on_duckdb.value) == str(on_memory.value) == expected


def refused_alike(frame: pd.DataFrame, tmp_path: Path) -> str:
    """The DataError that DuckDB's click sums and the memory engine's reader both raise on
    ``frame`` (as a Parquet log): the same message, returned."""
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(DataError) as on_duckdb:
        sql_sums(path, ["ctr@3"])
    with pytest.raises(DataError) as on_memory:
        read_impressions(path)
    assert str(on_duckdb.value) == str(on_memory.value)
    return str(on_duckdb.value)


@pytest.mark.parametrize(
    ("tail", "what"),
    [
        (list(range(66, 70)) + [75], "a deep rank skipped: 70 rows, top rank 75"),
        (list(range(67, 72)), "a deep rank skipped after 65: 70 rows, top rank 71"),
    ],
)
def test_a_deep_impression_whose_top_rank_is_not_its_count_is_refused(tmp_path, tail, what):
    """The pass over the log reads an impression's top rank from its count of rows: a
    deep impression whose ranks are distinct but not 1..n is found by the check of deep
    logs, with the memory engine's message."""
    del what
    rank = list(range(1, 71))
    second = rank[:65] + tail
    frame = pd.DataFrame(
        {
            "impression_id": [1] * 70 + [2] * len(second),
            "user_id": ["u"] * 70 + ["v"] * len(second),
            "rank": rank + second,
            "doc_id": ["d"] * (70 + len(second)),
            "clicked": [0] * (70 + len(second)),
            "arm": ["a"] * 70 + ["b"] * len(second),
        }
    )
    message = refused_alike(frame, tmp_path)
    assert "impression '2'" in message


@pytest.mark.parametrize("bad", ["rank", "clicked"])
def test_a_bad_cell_in_a_shallow_impression_is_found_by_the_one_pass(tmp_path, bad):
    """A bad cell sets its own bit of the pass's rank bits: the impression is refused with
    the memory engine's message naming the row."""
    frame = pd.DataFrame(
        {
            "impression_id": [1, 1, 1, 2, 2],
            "user_id": ["u", "u", "u", "v", "v"],
            "rank": [1.0, 2.0, 3.0, 1.0, 2.0],
            "doc_id": ["d"] * 5,
            "clicked": [0.0, 1.0, 0.0, 0.0, 1.0],
            "arm": ["a", "a", "a", "b", "b"],
        }
    )
    frame.loc[2, bad] = np.nan
    message = refused_alike(frame, tmp_path)
    assert "row 3" in message


def test_a_bad_cell_in_a_deep_impression_is_found_from_the_rows(tmp_path):
    """The pass's bits see ranks 1..62 only: a bad cell of an impression deeper than that,
    whose other rows show every shallow rank, is found by the rows' own check, with the
    memory engine's message."""
    rank = list(range(1, 71))
    frame = pd.DataFrame(
        {
            "impression_id": [1] * 70 + [2] * 70,
            "user_id": ["u"] * 70 + ["v"] * 70,
            "rank": [float(r) for r in rank + rank],
            "doc_id": ["d"] * 140,
            "clicked": [0.0] * 140,
            "arm": ["a"] * 70 + ["b"] * 70,
        }
    )
    frame.loc[135, "clicked"] = np.nan  # impression 2, rank 66
    message = refused_alike(frame, tmp_path)
    assert "row 136" in message


@pytest.mark.parametrize("ranks", [[1, 2, 3], [1, 2, 1], [2, 3, 1]])
def test_an_impression_in_both_of_two_arms_is_refused(tmp_path, ranks):
    """The arm of two rides on the pass's bits (a bit for a row of each arm): an
    impression with rows of both is refused as on the memory engine, however its ranks
    split between them."""
    frame = pd.DataFrame(
        {
            "impression_id": [1, 1, 1, 2, 2],
            "user_id": ["u", "u", "u", "v", "v"],
            "rank": [*ranks, 1, 2],
            "doc_id": ["d"] * 5,
            "clicked": [0, 1, 0, 0, 1],
            "arm": ["a", "a", "b", "b", "b"],
        }
    )
    assert "impression '1'" in refused_alike(frame, tmp_path)


def test_three_arms_sum_as_on_the_memory_engine_and_an_impression_in_two_is_named(tmp_path):
    """Two arms are told apart by one SUM of their codes in the pass over the log; three
    by MIN and MAX: the same sums, and the same message for an impression in two arms."""
    log = make_log(impressions=600)
    log["arm"] = np.array(["a", "b", "c"])[log["impression_id"].to_numpy() % 3]
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    names = ["click_rr@10", "ctr@3", "abandonment"]
    metrics = tuple(parse_metric(m) for m in names)
    result = sql_sums(path, names, arms=("a", "b", "c"))
    memory = read_impressions(path)
    for arm in ("a", "b", "c"):
        frame = memory[memory["arm"] == arm].drop(columns="arm").reset_index(drop=True)
        values = score_impressions(frame, metrics, sat_dwell=30)
        assert_same_sums(unit_sums(frame, values, unit="user_id"), result.sums[arm])
    # the second row of the first impression (arm of code 0) moved to arm c (code 2)
    first = int(log["impression_id"].iloc[0])
    second = log.index[log["impression_id"] == first][1]
    log.loc[second, "arm"] = "c"
    log.to_parquet(path)
    with pytest.raises(DataError) as on_duckdb:
        sql_sums(path, names, arms=("a", "b", "c"))
    with pytest.raises(DataError) as on_memory:
        read_impressions(path)
    assert str(on_duckdb.value) == str(on_memory.value)
    assert str(on_duckdb.value).startswith(
        f"{path}: row {second + 1}: arm: expected one arm per impression, got 'c' in "
        f"impression '{first}', which has '{log.loc[log.index[0], 'arm']}'"
    )


def rows_by_rank(frame: pd.DataFrame) -> list[list]:
    """The CTR by rank counted the obvious way: the log's rows grouped by (arm, rank)."""
    counted = frame.groupby(["arm", "rank"])["clicked"].agg(["size", "sum"]).reset_index()
    return [[a, int(r), int(n), int(c)] for a, r, n, c in counted.itertuples(index=False)]


@pytest.mark.parametrize("depth", [10, 62, 63, 80])
def test_the_ctr_by_rank_counts_the_rows_at_each_rank(tmp_path, depth):
    """From the impressions' clicked-rank bits (tops up to 62), or from the rows (deeper):
    the same counts as grouping the rows by (arm, rank)."""
    rng = np.random.default_rng(depth)
    tops = rng.integers(1, depth + 1, size=300)
    tops[0] = depth
    rank = np.concatenate([np.arange(1, t + 1) for t in tops])
    impression = np.repeat(np.arange(len(tops)), tops)
    frame = pd.DataFrame(
        {
            "impression_id": impression,
            "user_id": impression % 37,
            "rank": rank,
            "doc_id": "d",
            "clicked": (rng.random(len(rank)) < 0.3 / np.sqrt(rank)).astype(int),
            "arm": np.where(impression % 37 % 2 == 0, "a", "b"),
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    # cutoffs within 62: the first click read from the clicked-rank bits, also on deep logs
    metrics = ["click_rr@10", "ctr@3", "ctr@62"]
    result = sql_sums(path, metrics)
    ranks = result.ctr_by_rank
    found = ranks[["arm", "rank", "impressions", "clicks"]].values.tolist()
    assert found == rows_by_rank(frame)
    np.testing.assert_allclose(ranks["ctr"], ranks["clicks"] / ranks["impressions"])
    expected = memory_sums(path, metrics)
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])


def test_the_ctr_by_rank_leaves_out_dropped_units(tmp_path):
    frame = pd.DataFrame(
        {
            "impression_id": [1, 1, 2, 2, 3, 3, 3, 4],
            "user_id": ["u", "u", "v", "v", "v", "v", "v", "w"],
            "rank": [1, 2, 1, 2, 1, 2, 3, 1],
            "doc_id": ["d"] * 8,
            "clicked": [1, 0, 0, 1, 1, 1, 1, 0],
            "arm": ["a", "a", "a", "a", "b", "b", "b", "b"],  # v in both arms
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    result = sql_sums(path, ["ctr@1"], drop_mixed=True)
    assert result.dropped_units == 1
    kept = frame[frame["user_id"] != "v"]
    found = result.ctr_by_rank[["arm", "rank", "impressions", "clicks"]].values.tolist()
    assert found == rows_by_rank(kept)


# --------------------------------------------------------------------------- bad input


def test_missing_columns_and_arms_are_named(tmp_path):
    path = tmp_path / "log.parquet"
    bad_log().drop(columns="clicked").to_parquet(path)
    with pytest.raises(
        DataError,
        match=r"log.parquet: expected a clicked column .*found columns: impression_id, user_id",
    ):
        sql_sums(path, ["ctr@1"])
    bad_log().drop(columns="dwell").to_parquet(path)
    with pytest.raises(DataError, match=r"metric sat_ctr@2: expected a dwell column"):
        sql_sums(path, ["sat_ctr@2"])
    bad_log().assign(arm="a").to_parquet(path)
    with pytest.raises(DataError, match=r"arm: expected rows for every arm, got none for 'b'"):
        sql_sums(path, ["ctr@1"])
    bad_log().drop(columns="arm").to_parquet(path)
    with pytest.raises(
        DataError, match=r"expected an arm column \(its values the arm names a, b\)"
    ):
        sql_sums(path, ["ctr@1"])


def test_a_memory_limit_the_log_does_not_fit_in_is_a_message(tmp_path):
    rows = 400_000
    frame = pd.DataFrame(
        {
            "impression_id": np.arange(rows) // 4,
            "user_id": np.arange(rows) // 8,
            "rank": np.arange(rows) % 4 + 1,
            "doc_id": np.zeros(rows, dtype=np.int64),
            "clicked": np.arange(rows) % 3 == 0,
            "arm": np.where(np.arange(rows) // 8 % 2 == 0, "a", "b"),
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    with pytest.raises(
        DataError,
        match=r"log.parquet: engine duckdb: expected the aggregation to fit in engine.memory_limit 10MB, got out of memory",
    ):
        sums_on(DuckDBBackend(options={"memory_limit": "10MB"}), path, ["ctr@3"])


# --------------------------------------------------------------------------- experiments


@pytest.fixture(scope="module")
def log_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("engine")
    make_log(impressions=2500).to_parquet(folder / "log.parquet")
    return folder


def test_an_integer_segment_column_keeps_its_values_on_duckdb(tmp_path):
    """slot=1, not slot=1.0: the other grouping sets' NULLs must not make the column float."""
    log = make_log(impressions=800)
    log["slot"] = (log["user_id"] % 3).astype("int64")
    log.to_parquet(tmp_path / "log.parquet")
    config = tmp_path / "exp.yaml"
    config.write_text(
        CONFIG.replace("LOG", "log.parquet").replace("columns: [device]", "columns: [slot]")
    )
    memory = run_experiment(config)
    sql = run_experiment(config, engine="duckdb")
    segments = [c["segment"] for c in sql.summary["comparisons"] if c["segment"]]
    assert sorted(set(segments)) == ["slot=0", "slot=1", "slot=2"]
    assert_same_summary(memory.summary, sql.summary)


def test_an_experiment_gives_the_same_summary_on_both_engines(log_folder):
    config = write_experiment(log_folder)
    memory = run_experiment(config)
    sql = run_experiment(config, engine="duckdb")
    assert_same_summary(memory.summary, sql.summary)
    # the fingerprints, read in a thread after the engine's statements, are the files'
    expected = hashlib.sha256((log_folder / "log.parquet").read_bytes()).hexdigest()
    assert [entry["sha256"] for entry in sql.summary["inputs"]] == [expected]
    assert len(sql.summary["comparisons"]) == 15  # 5 metrics, overall and per device
    assert sql.per_query.empty  # only per-unit sums left the engine
    pd.testing.assert_frame_equal(memory.ctr_by_rank, sql.ctr_by_rank)
    pd.testing.assert_frame_equal(memory.unit_values, sql.unit_values)


def test_covariates_on_duckdb_give_the_memory_engines_summary_and_fingerprints(
    log_folder, tmp_path
):
    """The covariates' inputs entry follows the logs' (whose fingerprints are read in a
    thread on an SQL engine): the same summary, inputs in the same order, each file's
    sha256."""
    log = read_impressions(log_folder / "log.parquet")
    users = np.sort(log["user_id"].astype(str).unique())
    rng = np.random.default_rng(11)
    pre = pd.DataFrame(
        {
            "user_id": users,
            "impressions": rng.integers(1, 5, users.size),
            "click_rr@3": rng.random(users.size),
        }
    )
    pre.to_csv(tmp_path / "pre.csv", index=False)
    (tmp_path / "log.parquet").write_bytes((log_folder / "log.parquet").read_bytes())
    config = write_experiment(tmp_path)
    config.write_text(
        config.read_text().replace(
            "  resamples: 300\n", "  resamples: 300\n  covariates: {path: pre.csv}\n"
        )
    )
    memory = run_experiment(config)
    sql = run_experiment(config, engine="duckdb")
    assert_same_summary(memory.summary, sql.summary)
    files = [tmp_path / "log.parquet", tmp_path / "pre.csv"]
    expected = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    assert [entry["sha256"] for entry in sql.summary["inputs"]] == expected


def test_a_hive_partitioned_glob_gives_the_single_files_comparisons(log_folder, tmp_path):
    log = read_impressions(log_folder / "log.parquet").astype({"impression_id": str})
    log["impression_id"] = log["impression_id"].astype(int)
    log["user_id"] = log["user_id"].astype(str).astype(int)
    for day, part in enumerate(np.array_split(np.sort(log["impression_id"].unique()), 3)):
        folder = tmp_path / "logs" / f"date=2024-05-0{day + 1}"
        folder.mkdir(parents=True)
        log[log["impression_id"].isin(part)].to_parquet(folder / "part-0.parquet")
    glob = write_experiment(tmp_path, "logs/date=*/part-*.parquet", "engine: duckdb\n")
    whole = run_experiment(write_experiment(log_folder), engine="duckdb").summary
    parts = run_experiment(glob).summary
    assert_same_summary(whole["comparisons"], parts["comparisons"])
    assert len(parts["inputs"]) == 3  # a fingerprint and the rows of each file read
    assert sum(entry["rows"] for entry in parts["inputs"]) == len(log)
    assert parts["inputs"][0]["path"].endswith("date=2024-05-01/part-0.parquet")
    folder = write_experiment(tmp_path, "logs", "engine: duckdb\n")  # the folder itself
    assert_same_summary(whole["comparisons"], run_experiment(folder).summary["comparisons"])


def test_the_bundled_online_demo_gives_the_same_summary_on_duckdb():
    experiment = load_experiment(ROOT / "experiments" / "demo-online.yaml")
    fewer = experiment.analysis.model_copy(update={"resamples": 500})
    experiment = experiment.model_copy(update={"analysis": fewer})
    memory = run_experiment(experiment)
    sql = run_experiment(experiment, engine="duckdb")
    assert_same_summary(memory.summary, sql.summary)
    assert sql.summary["diagnostics"]["srm"] == memory.summary["diagnostics"]["srm"]


def test_mixed_units_are_counted_and_dropped_as_on_the_memory_engine(tmp_path):
    log = make_log(impressions=1500)
    users = log[log["user_id"] % 2 == 0].groupby("user_id")["impression_id"].agg(["min", "nunique"])
    users = users[users["nunique"] > 1].head(3)  # 3 users of arm a with several impressions
    log.loc[log["impression_id"].isin(users["min"]), "arm"] = "b"  # one of each seen in b
    log.to_parquet(tmp_path / "log.parquet")
    for policy in ("warn", "drop"):
        config = (
            write_experiment(tmp_path)
            .read_text()
            .replace("  resamples: 300\n", f"  resamples: 300\n  mixed_units: {policy}\n")
        )
        (tmp_path / "exp.yaml").write_text(config)
        memory = run_experiment(tmp_path / "exp.yaml").summary
        sql = run_experiment(tmp_path / "exp.yaml", engine="duckdb").summary
        assert memory["diagnostics"]["mixed_units"]["count"] == 3
        assert_same_summary(memory, sql)


def test_a_duckdb_connection_runs_the_experiment_and_stays_usable(log_folder):
    connection = duckdb.connect()
    readout = run_experiment(write_experiment(log_folder), engine=connection)
    assert readout.summary["arms"][0]["units"] > 0
    assert connection.execute("SELECT 41 + 1").fetchone() == (42,)
    views = connection.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()
    assert views == (0,)


# --------------------------------------------------------------------------- choices


def test_the_engine_in_the_config_is_a_name_or_a_mapping(tmp_path):
    (tmp_path / "log.parquet").write_bytes(b"")
    base = CONFIG.replace("LOG", "log.parquet")
    text = base + "engine: {name: duckdb, memory_limit: 2GB, threads: 2, temp_directory: /tmp/x}\n"
    experiment = parse_experiment(text, base_dir=tmp_path)
    assert experiment.engine.to_dict() == {
        "name": "duckdb",
        "memory_limit": "2GB",
        "threads": 2,
        "temp_directory": "/tmp/x",
    }
    assert parse_experiment(base + "engine: duckdb\n", base_dir=tmp_path).engine.name == "duckdb"
    assert parse_experiment(base, base_dir=tmp_path).engine.name == "memory"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "engine: duckbd",
            r"line 13: engine.name: expected 'memory', 'duckdb' or 'spark', got 'duckbd'",
        ),
        (
            "engine: {name: duckdb, memory_limit: lots}",
            r"engine.memory_limit: expected a size such as '500MB' or '2GB', got 'lots'",
        ),
        (
            "engine: {name: memory, threads: 2}",
            r"engine: expected options for engine duckdb \(threads\), not for engine memory",
        ),
        (
            "engine: {name: duckdb, thread: 2}",
            r"engine.thread: unknown key; did you mean 'threads'\?",
        ),
    ],
)
def test_bad_engine_configs_name_the_line_and_the_field(tmp_path, line, message):
    (tmp_path / "log.parquet").write_bytes(b"")
    with pytest.raises(ConfigError, match=message):
        parse_experiment(CONFIG.replace("LOG", "log.parquet") + line + "\n", base_dir=tmp_path)


def test_an_engine_that_cannot_run_the_experiment_is_refused(log_folder, tmp_path, monkeypatch):
    # (offline experiments run on duckdb: tests/test_engine_judged_sql.py)
    with (
        monkeypatch.context() as patch,
        pytest.raises(
            ConfigError,
            match=r"engine: expected an engine this version runs \(memory: .*; duckdb: offline experiments on judged metrics, online experiments on click metrics, interleaving experiments\), got 'spark', which is not available yet",
        ),
    ):
        patch.setitem(engines.SUPPORTED, "spark", ())  # an engine that runs nothing yet
        run_experiment(write_experiment(log_folder), engine="spark")
    with pytest.raises(
        ConfigError, match=r"engine: expected one of memory, duckdb, spark, got 'sqlite'"
    ):
        run_experiment(write_experiment(log_folder), engine="sqlite")
    (tmp_path / "logs").mkdir()
    make_log(impressions=200).to_parquet(tmp_path / "logs" / "part-0.parquet")
    with pytest.raises(
        ConfigError,
        match=r"log.path: expected a file for engine memory, got .*a glob or folder of files \(engines duckdb and spark read those\)",
    ):
        run_experiment(write_experiment(tmp_path, "logs/*.parquet"))


def test_an_engine_that_is_not_installed_names_what_to_install(log_folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb now fails
    with pytest.raises(
        ConfigError,
        match=r"engine: duckdb: expected the duckdb package to be installed, got it missing \(pip install 'abrank\[duckdb\]'",
    ):
        run_experiment(write_experiment(log_folder), engine="duckdb")


def test_the_cli_runs_on_duckdb_and_exits_2_on_bad_input(log_folder, tmp_path, capsys):
    out = tmp_path / "out"
    config = write_experiment(log_folder)
    assert (
        main(
            ["run", str(config), "--engine", "duckdb", "--out", str(out), "--quiet", "--no-history"]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["comparisons"][0]["metric"] == "click_rr@3"
    capsys.readouterr()
    bad = tmp_path / "bad"
    bad.mkdir()
    bad_log(rank=(1, 5)).to_parquet(bad / "log.parquet")
    code = main(
        ["run", str(write_experiment(bad)), "--engine", "duckdb", "--out", str(bad / "out")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "log.parquet: impression '1' (row 1): rank: expected ranks 1..5, rank 2 is missing" in err
    )
    assert "Traceback" not in err
    assert not (bad / "out").exists()


def test_the_package_exposes_run_experiment_with_an_engine():
    import inspect

    assert "engine" in inspect.signature(abrank.run_experiment).parameters


def test_validate_reads_a_duckdb_experiment_with_the_same_counts(log_folder, tmp_path, capsys):
    config = write_experiment(log_folder)
    assert main(["validate", str(config)]) == 0
    memory = capsys.readouterr().out
    text = config.read_text() + "engine: duckdb\n"
    (tmp_path / "log.parquet").symlink_to(log_folder / "log.parquet")
    (tmp_path / "exp.yaml").write_text(text)
    assert main(["validate", str(tmp_path / "exp.yaml")]) == 0
    sql = capsys.readouterr().out
    assert sql.split(": ok: ")[1] == memory.split(": ok: ")[1]
    assert "impressions" in sql


ARM_FILES = """\
name: arm-files
control: {name: a, path: a.parquet}
treatments: [{name: b, path: b.csv}]
metrics: [click_rr@3, ctr@2]
analysis: {design: independent, unit: user_id, resamples: 200}
"""


def test_arms_in_files_of_different_formats_and_id_types(tmp_path):
    log = make_log(impressions=1200)
    log[log["arm"] == "a"].drop(columns="arm").to_parquet(tmp_path / "a.parquet")  # int ids
    log[log["arm"] == "b"].drop(columns="arm").to_csv(tmp_path / "b.csv", index=False)
    (tmp_path / "exp.yaml").write_text(ARM_FILES)
    memory = run_experiment(tmp_path / "exp.yaml").summary
    sql = run_experiment(tmp_path / "exp.yaml", engine="duckdb").summary
    assert_same_summary(memory, sql)
    first = log[log["impression_id"] == log["impression_id"].iloc[0]]
    pd.concat([log[log["arm"] == "b"], first]).drop(columns="arm").to_csv(
        tmp_path / "b.csv", index=False
    )
    with pytest.raises(DataError) as on_memory:
        run_experiment(tmp_path / "exp.yaml")
    with pytest.raises(DataError) as on_duckdb:
        run_experiment(tmp_path / "exp.yaml", engine="duckdb")
    impression = str(first["impression_id"].iloc[0])
    assert (
        str(on_duckdb.value)
        == str(on_memory.value)
        == (
            f"{tmp_path / 'a.parquet'} (arm 'a') and {tmp_path / 'b.csv'} (arm 'b'): impression_id: "
            f"expected each impression in one arm, got 1 in more than one, e.g. {impression!r}"
        )
    )


def test_a_dated_glob_reads_the_dates_files_and_a_missing_date_is_skipped(tmp_path, capsys):
    log = make_log(impressions=900)
    days = np.where(log["impression_id"] % 2 == 0, "2024-05-01", "2024-05-02")
    for day in ("2024-05-01", "2024-05-02"):
        folder = tmp_path / "logs" / f"date={day}"
        folder.mkdir(parents=True)
        log[days == day].to_parquet(folder / "part-0.parquet")
    config = write_experiment(tmp_path, '"logs/date={date}/*.parquet"', "engine: duckdb\n")
    one_day = run_experiment(config, date="2024-05-02").summary
    assert one_day["arms"][0]["queries"] + one_day["arms"][1]["queries"] == int(
        log[days == "2024-05-02"]["impression_id"].nunique()
    )
    args = ["run", str(config), "--date", "2024-05-03", "--missing", "skip", "--no-history"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 99
    assert "does not exist yet" in capsys.readouterr().err
