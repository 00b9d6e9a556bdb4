"""The Spark engine (local mode): online click sums equal to the memory engine's, and its errors.

One SparkSession serves the whole test session (the ``spark`` fixture of conftest.py). Without pyspark or a
Java runtime the Spark tests are skipped locally, and fail in CI (``CI=true``), which
installs both.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click_logs import (
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

from abrank.analysis import run_experiment
from abrank.cli import main
from abrank.config import load_experiment, parse_experiment
from abrank.engines.sql import open_backend
from abrank.errors import ConfigError
from abrank.io import read_impressions
from abrank.metrics import parse_metric


def spark_sums(spark, path: Path, metrics, **options):
    from abrank.engines.sql.spark import SparkBackend

    return sums_on(SparkBackend(spark), path, metrics, **options)


# --------------------------------------------------------------------------- sums


@pytest.mark.parametrize("string_ids", [False, True])
def test_per_unit_and_segment_sums_equal_the_memory_engines(spark, tmp_path, string_ids):
    path = tmp_path / "log.parquet"
    log = make_log(string_ids=string_ids)
    log.to_parquet(path)
    result = spark_sums(spark, path, METRICS, segments=("device",))
    expected = memory_sums(path, METRICS)
    by_device = memory_sums(path, METRICS, by="device")
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])
        assert_same_sums(by_device[arm], result.segment_sums["device"][arm])
    assert result.file_rows == {str(path): len(log)}  # the path as given, not a file: URI
    shown = log.groupby(["arm", "rank"]).size()
    assert result.ctr_by_rank.set_index(["arm", "rank"])["impressions"].to_dict() == shown.to_dict()


def test_units_come_back_in_the_byte_order_of_their_utf8_text(spark, tmp_path):
    # binary order, not a locale's nor Java's UTF-16 order: 'B' < 'b' < 'e' < 'é' < 'ｚ' < '😀'
    units = ["😀", "b", "ｚ", "é", "B", "10", "9", "e"]
    frame = pd.DataFrame(
        {
            "impression_id": range(len(units)),
            "user_id": units,
            "rank": 1,
            "doc_id": "d",
            "clicked": 1,
            "arm": ["a", "b"] * 4,
        }
    )
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    result = spark_sums(spark, path, ["ctr@1"])
    expected = memory_sums(path, ["ctr@1"])
    for arm in ("a", "b"):
        mine = frame.loc[frame["arm"] == arm, "user_id"].tolist()
        assert list(result.sums[arm].index) == sorted(mine, key=lambda u: u.encode("utf-8"))
        assert_same_sums(expected[arm], result.sums[arm])


def test_a_csv_log_equals_the_memory_engine_and_a_bad_cell_names_the_file(spark, tmp_path):
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
    result = spark_sums(spark, path, METRICS, fmt="csv")
    expected = memory_sums(path, METRICS)
    for arm in ("a", "b"):
        assert result.sums[arm].index[0].startswith("00")
        assert_same_sums(expected[arm], result.sums[arm])


def test_csv_files_of_different_headers_are_read_by_column_name(spark, tmp_path):
    from abrank.engines.sql.clicks import ClickRequest, LogSource, click_aggregates
    from abrank.engines.sql.spark import SparkBackend

    log = make_log(impressions=600)
    log.to_csv(tmp_path / "whole.csv", index=False)
    first = log["impression_id"] % 2 == 0
    log[first].to_csv(tmp_path / "part-0.csv", index=False)
    log[~first][log.columns[::-1]].to_csv(tmp_path / "part-1.csv", index=False)  # reversed
    files = (str(tmp_path / "part-0.csv"), str(tmp_path / "part-1.csv"))
    request = ClickRequest(metrics=(parse_metric("click_rr@3"),), arms=("a", "b"))
    backend = SparkBackend(spark)
    try:
        result = click_aggregates(backend, [LogSource(files, "csv", "parts")], request)
    finally:
        backend.close()
    expected = memory_sums(tmp_path / "whole.csv", ["click_rr@3"])
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])
    assert result.file_rows == {files[0]: int(first.sum()), files[1]: int((~first).sum())}


# --------------------------------------------------------------------------- experiments


@pytest.fixture(scope="module")
def log_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spark")
    make_log(impressions=2500).to_parquet(folder / "log.parquet")
    return folder


def test_the_bundled_online_demo_gives_one_summary_on_memory_duckdb_and_spark(spark):
    experiment = load_experiment(ROOT / "experiments" / "demo-online.yaml")
    fewer = experiment.analysis.model_copy(update={"resamples": 500})
    experiment = experiment.model_copy(update={"analysis": fewer})
    memory = run_experiment(experiment).summary
    duckdb = run_experiment(experiment, engine="duckdb").summary
    on_spark = run_experiment(experiment, engine="spark")
    assert_same_summary(memory, duckdb)
    assert_same_summary(memory, on_spark.summary)
    assert on_spark.per_query.empty  # only per-unit sums left the engine
    assert len(on_spark.summary["comparisons"]) > 5


def test_hive_folders_and_globs_give_the_single_files_comparisons(spark, log_folder, tmp_path):
    log = read_impressions(log_folder / "log.parquet")
    log["impression_id"] = log["impression_id"].astype(int)
    log["user_id"] = log["user_id"].astype(int)
    for day, part in enumerate(np.array_split(np.sort(log["impression_id"].unique()), 3)):
        folder = tmp_path / "logs" / f"date=2024-05-0{day + 1}"
        folder.mkdir(parents=True)
        log[log["impression_id"].isin(part)].to_parquet(folder / "part-0.parquet")
    whole = run_experiment(write_experiment(log_folder)).summary  # the memory engine
    glob = run_experiment(
        write_experiment(tmp_path, "logs/date=*/part-*.parquet", "engine: spark\n")
    ).summary
    assert_same_summary(whole["comparisons"], glob["comparisons"])
    assert [entry["rows"] for entry in glob["inputs"]] == [
        int(len(pd.read_parquet(p))) for p in sorted((tmp_path / "logs").rglob("*.parquet"))
    ]
    assert glob["inputs"][0]["path"].endswith("date=2024-05-01/part-0.parquet")
    folder = write_experiment(tmp_path, "logs", "engine: spark\n")  # the folder itself
    assert_same_summary(whole["comparisons"], run_experiment(folder).summary["comparisons"])


def test_hive_partitions_become_columns_and_files_keep_their_names(spark, tmp_path, monkeypatch):
    from abrank.engines.sql.clicks import LogSource

    root = tmp_path / "my logs+%[1]é"  # a space, '+', '%', glob characters, non-ASCII
    for day in ("2024-05-01", "2024-05-02"):
        (root / f"date={day}").mkdir(parents=True)
        bad_log().to_parquet(root / f"date={day}" / "part 0+[x].parquet")
    absolute = sorted(str(p) for p in root.rglob("*.parquet"))
    monkeypatch.chdir(tmp_path)
    relative = [str(Path(p).relative_to(tmp_path)) for p in absolute]
    backend = open_backend("spark", {}, spark)
    try:
        for i, files in enumerate((absolute, relative)):
            columns = backend.register(
                f"abrank_test_{i}", LogSource(tuple(files), "parquet", "logs")
            )
            rows = backend.run(
                "SELECT `date`, abrank_file, COUNT(*) AS n, MAX(abrank_row) AS last "
                f"FROM abrank_test_{i} GROUP BY `date`, abrank_file ORDER BY abrank_file"
            ).to_pylist()
            assert ("date", "other") in columns and ("clicked", "int") in columns
            assert [str(r["date"]) for r in rows] == ["2024-05-01", "2024-05-02"]
            assert [(r["abrank_file"], r["n"], r["last"]) for r in rows] == [
                (f, 4, 3) for f in files
            ]
    finally:
        backend.close()
    assert [t.name for t in spark.catalog.listTables() if t.isTemporary] == []


def test_mixed_units_are_dropped_as_on_the_memory_engine_on_a_session_passed_in(spark, tmp_path):
    log = make_log(impressions=1500)
    users = log[log["user_id"] % 2 == 0].groupby("user_id")["impression_id"].agg(["min", "nunique"])
    users = users[users["nunique"] > 1].head(3)  # 3 users of arm a with several impressions
    log.loc[log["impression_id"].isin(users["min"]), "arm"] = "b"  # one of each seen in b
    log.to_parquet(tmp_path / "log.parquet")
    config = write_experiment(tmp_path)
    config.write_text(
        config.read_text().replace("  resamples: 300\n", "  resamples: 300\n  mixed_units: drop\n")
    )
    memory = run_experiment(config).summary
    on_spark = run_experiment(config, engine=spark).summary  # the session, used as it is
    assert memory["diagnostics"]["mixed_units"]["count"] == 3
    assert_same_summary(memory, on_spark)
    assert spark.sql("SELECT 41 + 1 AS n").collect()[0]["n"] == 42  # still running
    assert [t.name for t in spark.catalog.listTables() if t.isTemporary] == []  # views dropped


def test_the_cli_runs_on_spark_and_exits_2_on_bad_input(spark, log_folder, tmp_path, capsys):
    out = tmp_path / "out"
    config = write_experiment(log_folder)
    args = ["run", str(config), "--engine", "spark", "--out", str(out), "--quiet", "--no-history"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    memory = run_experiment(config).summary
    assert summary["comparisons"][0]["metric"] == "click_rr@3"
    assert summary["comparisons"][0]["delta"] == pytest.approx(memory["comparisons"][0]["delta"])
    assert (out / "report.html").exists()
    capsys.readouterr()
    bad = tmp_path / "bad"
    bad.mkdir()
    bad_log(rank=(1, 5)).to_parquet(bad / "log.parquet")
    code = main(["run", str(write_experiment(bad)), "--engine", "spark", "--out", str(bad / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "log.parquet: impression '1' (row 1): rank: expected ranks 1..5, rank 2 is missing" in err
    )
    assert "Traceback" not in err
    assert not (bad / "o").exists()


# --------------------------------------------------------------------------- lines


def test_lines_are_numbered_within_their_file_across_splits(spark, tmp_path, monkeypatch):
    from abrank.engines.sql.spark import SparkBackend

    texts = {
        "a.run": "".join(f"q{i} Q0 d{i} {i} 1.5 run\n" for i in range(300)),
        "b.run": "q1 Q0 x 1 2 run\n\nq2 Q0 y 1 2 run\n",  # an empty line is a line too
        "c.run": "last line without a newline",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    files = ["a.run", str(tmp_path / "b.run"), "c.run"]  # relative and absolute, as given
    backend = SparkBackend(spark)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1000")  # a.run: 8 splits
    try:
        backend.register_lines("abrank_test_lines", files)
        got = backend.run(
            "SELECT abrank_file, abrank_row, line FROM abrank_test_lines "
            "ORDER BY abrank_file, abrank_row"
        ).to_pylist()
        splits = backend.run(
            "SELECT COUNT(DISTINCT _metadata.file_block_start) AS n FROM text.`"
            + str(tmp_path / "a.run")
            + "`"
        ).to_pylist()[0]["n"]
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
        backend.close()
    assert splits > 1  # the numbering is checked across splits of one file
    expected = [
        (given, i, line)
        for given in files
        for i, line in enumerate(texts[Path(given).name].splitlines())
    ]
    assert sorted((r["abrank_file"], r["abrank_row"], r["line"]) for r in got) == sorted(expected)


# --------------------------------------------------------------------------- choices


def test_a_local_session_gets_half_the_memory_unless_told():
    """Spark's own 1 GB driver is all a local session's tasks may hold: abrank's default is
    half of the machine's memory; memory_limit or spark_conf say otherwise; a cluster's
    driver is left to the cluster."""
    from abrank.engines.sql.spark_session import session_settings

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    half = f"{total // 2 // 2**20}m"
    assert session_settings({})["spark.driver.memory"] == half
    assert session_settings({"master": "local[2]"})["spark.driver.memory"] == half
    assert session_settings({"memory_limit": "2GiB"})["spark.driver.memory"] == "2048m"
    told = session_settings({"spark_conf": {"spark.driver.memory": "3g"}})
    assert told["spark.driver.memory"] == "3g"
    assert "spark.driver.memory" not in session_settings({"master": "spark://host:7077"})
    assert session_settings({"master": "local[3]"})["spark.sql.shuffle.partitions"] == "12"


def test_a_local_session_hashes_a_join_side_up_to_a_sixteenth_of_its_memory():
    """256 MiB at most; 2 GiB of driver memory gives 128 MiB; spark_conf says otherwise;
    a cluster keeps Spark's own threshold."""
    from abrank.engines.sql.spark_session import session_settings

    key = "spark.sql.autoBroadcastJoinThreshold"
    assert session_settings({"memory_limit": "8GiB"})[key] == "256m"
    assert session_settings({"memory_limit": "2GiB"})[key] == "128m"
    assert session_settings({"memory_limit": "2GiB", "spark_conf": {key: "-1"}})[key] == "-1"
    assert key not in session_settings({"master": "spark://host:7077", "memory_limit": "2GiB"})


def test_spark_options_in_the_config(tmp_path):
    from abrank.engines.sql.spark_session import driver_memory, local_cores

    (tmp_path / "log.parquet").write_bytes(b"")
    base = write_experiment(tmp_path).read_text()
    text = base + (
        'engine: {name: spark, master: "local[4]", memory_limit: 2GiB,'
        " spark_conf: {spark.sql.shuffle.partitions: 8}}\n"
    )
    engine = parse_experiment(text, base_dir=tmp_path).engine
    assert engine.to_dict() == {
        "name": "spark",
        "memory_limit": "2GiB",
        "master": "local[4]",
        "spark_conf": {"spark.sql.shuffle.partitions": 8},
    }
    assert parse_experiment(base + "engine: spark\n", base_dir=tmp_path).engine.options == {}
    assert driver_memory("2GiB") == "2048m"
    assert driver_memory("1GB") == "954m"  # 10**9 bytes
    assert driver_memory("1.5 GiB") == "1536m"
    assert (local_cores("local"), local_cores("local[3]"), local_cores("local[2,4]")) == (1, 3, 2)
    assert local_cores("local[*]") == os.cpu_count()
    assert local_cores("spark://host:7077") is None and local_cores("yarn") is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "engine: {name: spark, master: locale}",
            r"engine.master: expected a Spark master such as 'local\[\*\]', .*got 'locale'",
        ),
        (
            "engine: {name: spark, spark_conf: {shuffle.partitions: 4}}",
            r"engine.spark_conf: expected Spark settings whose names start with 'spark.'.*not 'shuffle.partitions'",
        ),
        (
            "engine: {name: spark, threads: 2}",
            r"engine: expected options for engine duckdb \(threads\), not for engine spark",
        ),
        (
            "engine: {name: duckdb, master: local}",
            r"engine: expected options for engine spark \(master\), not for engine duckdb",
        ),
        (
            "engine: {name: spark, memory_limit: 1GB, spark_conf: {spark.driver.memory: 2g}}",
            r"engine: expected memory_limit or spark_conf's spark.driver.memory",
        ),
    ],
)
def test_bad_spark_options_name_the_key(tmp_path, line, message):
    (tmp_path / "log.parquet").write_bytes(b"")
    with pytest.raises(ConfigError, match=message):
        parse_experiment(write_experiment(tmp_path).read_text() + line + "\n", base_dir=tmp_path)


def test_a_missing_pyspark_names_the_extra_to_install(log_folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now fails
    with pytest.raises(
        ConfigError,
        match=r"engine: spark: expected the pyspark package to be installed, got it missing \(pip install 'abrank\[spark\]'\)",
    ):
        run_experiment(write_experiment(log_folder), engine="spark")


def test_a_missing_java_runtime_is_named(monkeypatch):
    pytest.importorskip("pyspark")
    from abrank.engines.sql.spark_session import start_session

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(
        ConfigError,
        match=r"engine: spark: expected a Java runtime \(17 or later: e.g. Debian's openjdk-17-jre-headless\) on the PATH or in JAVA_HOME",
    ):
        start_session({"master": "local[1]"})


def test_only_sql_engines_have_backends():
    with pytest.raises(
        ConfigError, match=r"engine: expected an SQL engine \(duckdb, spark\), got 'memory'"
    ):
        open_backend("memory")


def test_a_session_already_running_is_used_from_any_thread_and_not_stopped(spark):
    import threading

    from abrank.engines.sql.spark import SparkBackend

    found = {}

    def open_and_close() -> None:
        backend = SparkBackend(options={"master": "local[1]"})
        found["own"] = backend.own
        found["answer"] = backend.run("SELECT 6 * 7 AS n").to_pylist()[0]["n"]
        backend.close()

    thread = threading.Thread(target=open_and_close)
    thread.start()
    thread.join()
    assert found == {"own": False, "answer": 42}
    assert spark.sql("SELECT 1 AS n").collect()[0]["n"] == 1  # still running


# --------------------------------------------------------------------------- kept relations


def test_without_ctes_puts_each_cte_where_it_is_read():
    """By hand: a CTE read by a later CTE and by the query (under its own name and an
    alias), and a CTE inside a subquery; a statement without CTEs stays as it is."""
    from abrank.engines.sql.spark import without_ctes

    sql = "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT b.x, c.x FROM b JOIN a AS c ON c.x = b.x"
    assert without_ctes(sql) == (
        "SELECT b.x, c.x FROM (SELECT x FROM (SELECT 1 AS x) AS a) AS b "
        "JOIN (SELECT 1 AS x) AS c ON c.x = b.x"
    )
    nested = "SELECT * FROM (WITH r AS (SELECT 2 AS y) SELECT y FROM r WHERE r.y > 1) AS t"
    assert without_ctes(nested) == (
        "SELECT * FROM (SELECT y FROM (SELECT 2 AS y) AS r WHERE r.y > 1) AS t"
    )
    assert without_ctes("SELECT with_column FROM t") == "SELECT with_column FROM t"


def test_a_kept_relation_made_of_ctes_is_read_from_what_spark_kept(spark):
    """A statement with CTEs of its own reads a relation kept from a statement of CTEs
    from Spark's cache, not by computing it again: the plan reads the kept rows and its
    values are the kept ones."""
    from abrank.engines.sql.spark import SparkBackend

    backend = SparkBackend(spark)
    spark.range(100).createOrReplaceTempView("abrank_test_source")
    backend.materialize(
        "abrank_test_kept",
        "WITH a AS (SELECT id, id % 7 AS g FROM abrank_test_source) "
        "SELECT g, COUNT(*) AS n FROM a GROUP BY g",
    )
    try:
        reader = spark.sql("WITH other AS (SELECT 1 AS one) SELECT g, n FROM abrank_test_kept")
        plan = reader._jdf.queryExecution().executedPlan().toString()
        above = plan.split("InMemoryRelation")[0]
        assert "InMemoryTableScan" in above and "Range" not in above and "Aggregate" not in above
        got = {row["g"]: row["n"] for row in reader.collect()}
        assert got == {g: len(range(g, 100, 7)) for g in range(7)}
    finally:
        backend.drop("abrank_test_kept")


def test_a_parquet_ranking_is_scanned_again_and_its_pairs_counted_where_numbered(spark, tmp_path):
    """Spark keeps no copy of a Parquet ranking's parsed rows (each statement scans the
    columns it reads) but keeps a CSV one's; and the pairs left to the numbering are
    counted on the kept numbered rows, which sit by query already: the plan moves no row
    between partitions (no Exchange below the per-pair aggregate)."""
    from abrank.engines.sql.judged import score_arm_sql
    from abrank.engines.sql.rankings import TableSource, open_judgments, open_rankings
    from abrank.engines.sql.spark import SparkBackend

    frame = pd.DataFrame({"qid": ["1", "1", "2"], "docid": ["a", "b", "a"], "rank": [1, 2, 1]})
    frame.to_parquet(tmp_path / "run.parquet")
    frame.to_csv(tmp_path / "run.csv", index=False)
    (tmp_path / "q.qrels").write_text("1 0 a 1\n2 0 a 1\n")
    backend = SparkBackend(spark)
    try:
        parquet = TableSource((str(tmp_path / "run.parquet"),), "parquet", "run")
        opened = open_rankings(backend, "abrank_scan_0", parquet, later=True)
        assert "abrank_scan_0_rows" not in backend.cached
        csv = TableSource((str(tmp_path / "run.csv"),), "csv", "run")
        open_rankings(backend, "abrank_scan_1", csv, later=True)
        assert "abrank_scan_1_rows" in backend.cached
        qrels = TableSource((str(tmp_path / "q.qrels"),), "qrels", "q")
        judged = open_judgments(backend, "abrank_scan_q", qrels)
        kept = "abrank_scan_numbered"
        scores = score_arm_sql(
            backend, opened.sql, judged.sql, ["mrr"], ranked_by="rank", keep=kept
        )
        assert scores.values["mrr"].to_dict() == {"1": 1.0, "2": 1.0}
        pairs = spark.sql(
            f"SELECT query_id, doc_id FROM {kept} GROUP BY query_id, doc_id HAVING COUNT(*) > 1"
        )
        plan = pairs._jdf.queryExecution().executedPlan().toString()
        assert "Exchange" not in plan.split("InMemoryRelation")[0]
    finally:
        backend.close()


def test_kept_judgments_are_spread_by_query_so_grouping_them_moves_no_row(spark, tmp_path):
    """The judgments' parsed rows are kept hash-partitioned on query_id: their checks,
    the per-query counts and the ideal orderings group or number by query and read them
    without an Exchange (a shuffle of every judgment) above the kept rows."""
    from abrank.engines.sql.rankings import TableSource, open_judgments
    from abrank.engines.sql.spark import SparkBackend

    (tmp_path / "q.qrels").write_text("1 0 a 1\n1 0 b 0\n2 0 a 2\n3 0 c 1\n")
    backend = SparkBackend(spark)
    try:
        judged = open_judgments(
            backend, "abrank_spread_q", TableSource((str(tmp_path / "q.qrels"),), "qrels", "q")
        )
        assert "abrank_spread_q_rows" in backend.cached
        for sql in (
            f"SELECT query_id, doc_id, COUNT(*) AS n FROM {judged.sql} AS j "
            "GROUP BY query_id, doc_id",
            f"SELECT query_id, MAX(relevance) AS top FROM {judged.sql} AS j GROUP BY query_id",
            "SELECT query_id, ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY relevance DESC) "
            f"AS pos FROM {judged.sql} AS j",
        ):
            frame = spark.sql(sql)
            plan = frame._jdf.queryExecution().executedPlan().toString()
            assert "Exchange" not in plan.split("InMemoryRelation")[0], sql
        got = spark.sql(
            f"SELECT query_id, MAX(relevance) AS top FROM {judged.sql} AS j GROUP BY query_id"
        )
        assert {r["query_id"]: r["top"] for r in got.collect()} == {"1": 1.0, "2": 2.0, "3": 1.0}
    finally:
        backend.close()
