"""``abrank serve`` on the demo readout: its JSON and pages against values worked out
independently (pandas over the readout's Parquet files, ``load_readout(folder).query``)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from serve_fixtures import (
    DATED,
    NAME,
    RECORDED_ONLY,
    ROOT,
    build_root,
    get_json,
    request,
    running,
)

from abrank.readout.folder import load_readout

DELTA = "delta:reranker:mrr@10"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = build_root(tmp_path_factory.mktemp("serve"))
    with running(root) as base:
        yield root, base


@pytest.fixture(scope="module")
def queries(served):
    root, _ = served
    return pd.read_parquet(root / NAME / "queries.parquet")


def _missing_query(queries: pd.DataFrame) -> str:
    return str(queries.loc[queries["missing_in"] == "reranker", "query_id"].iloc[0])


def test_the_experiments_list_names_every_readout_with_its_decision(served):
    root, base = served
    status, body = get_json(base, "/api/experiments")
    assert status == 200
    by_name = {item["name"]: item for item in body["experiments"]}
    demo = by_name[NAME]
    summary = json.loads((root / NAME / "summary.json").read_text())
    assert demo["status"] == summary["decision"]["status"] == "no-ship"
    assert demo["main"] == NAME
    assert [r["key"] for r in demo["readouts"]] == [NAME, f"{NAME}@{DATED}"]
    history = pd.read_parquet(root / "history" / NAME)
    assert demo["history_dates"] == sorted(set(history["date"].astype(str)))
    # the undated readout is the run that recorded the latest date; the other date has
    # only its recorded rows
    assert demo["readouts"][0]["recorded"] == history["date"].astype(str).max() != RECORDED_ONLY
    assert demo["history_only_dates"] == [RECORDED_ONLY]
    primary = [
        c for c in summary["comparisons"] if c["segment"] is None and c["metric"] == "mrr@10"
    ]
    assert demo["verdicts"][0]["delta"] == pytest.approx(primary[0]["delta"])


@pytest.mark.parametrize("segment", ["locale:de-DE", "device:tablet", "locale:ja-JP"])
def test_a_segment_filter_counts_what_pandas_counts(served, queries, segment):
    _, base = served
    column, value = segment.split(":")
    status, body = get_json(base, f"/api/experiments/{NAME}/queries?segment={segment}&limit=5")
    assert status == 200
    assert body["total"] == int((queries[column] == value).sum()) > 0
    assert len(body["rows"]) == 5
    assert all(row[column] == value for row in body["rows"])


def test_segment_and_tag_filters_combine(served, queries):
    _, base = served
    path = f"/api/experiments/{NAME}/queries?segment=device:mobile&tag=missing_log&limit=1000"
    status, body = get_json(base, path)
    tagged = queries["tags:reranker"].map(lambda tags: "missing_log" in list(tags))
    expected = queries[(queries["device"] == "mobile") & tagged]
    assert status == 200 and body["total"] == len(expected) > 0
    assert sorted(row["query_id"] for row in body["rows"]) == sorted(expected["query_id"])
    assert all(row["missing_in"] == "reranker" for row in body["rows"])


def test_sorting_by_delta_gives_pandas_extremes_first(served, queries):
    _, base = served
    de = queries[queries["locale"] == "de-DE"]
    _, up = get_json(base, f"/api/experiments/{NAME}/queries?segment=locale:de-DE&sort=delta")
    assert up["rows"][0]["delta"] == de[DELTA].min()
    deltas = [row["delta"] for row in up["rows"]]
    assert deltas == sorted(deltas)
    _, down = get_json(
        base, f"/api/experiments/{NAME}/queries?segment=locale:de-DE&sort=delta&order=desc"
    )
    assert down["rows"][0]["delta"] == de[DELTA].max()
    # a query whose metric is undefined has no delta: it comes last either way
    _, last = get_json(base, f"/api/experiments/{NAME}/queries?sort=delta&offset=1999&limit=1")
    assert last["rows"][0]["delta"] is None
    assert last["total"] == len(queries)


def test_sorting_by_an_arms_value_and_another_metric(served, queries):
    _, base = served
    path = f"/api/experiments/{NAME}/queries?metric=ndcg@10&sort=bm25&order=desc&limit=3"
    _, body = get_json(base, path)
    top = queries.sort_values(["bm25:ndcg@10", "query_id"], ascending=[False, True]).head(3)
    assert [row["query_id"] for row in body["rows"]] == list(top["query_id"])
    assert [row["bm25"] for row in body["rows"]] == list(top["bm25:ndcg@10"])
    assert [row["reranker"] for row in body["rows"]] == list(top["reranker:ndcg@10"])
    assert [row["delta"] for row in body["rows"]] == pytest.approx(
        list(top["delta:reranker:ndcg@10"])
    )


def test_pages_of_the_table_put_together_give_the_whole_sorted_table(served, queries):
    _, base = served
    seen, offset, total = [], 0, None
    while total is None or offset < total:
        query = f"segment=locale:en-US&sort=rbo&limit=250&offset={offset}"
        _, body = get_json(base, f"/api/experiments/{NAME}/queries?{query}")
        total = body["total"]
        seen += [row["query_id"] for row in body["rows"]]
        offset += 250
    en = queries[queries["locale"] == "en-US"].sort_values(
        ["rbo:reranker", "query_id"], na_position="last", kind="stable"
    )
    assert seen == list(en["query_id"])


@pytest.mark.parametrize("metric", [None, "ndcg@10", "recall@20"])
def test_the_query_endpoint_gives_the_readouts_own_query_rows(served, queries, metric):
    root, base = served
    readout = load_readout(root / NAME)
    for qid in ("q00000", _missing_query(queries)):
        suffix = f"?metric={metric}" if metric else ""
        status, body = get_json(base, f"/api/experiments/{NAME}/queries/{qid}{suffix}")
        assert status == 200
        expected = readout.query(qid, metric)
        got = pd.DataFrame(body["rows"], columns=list(expected.columns)).astype(
            {c: np.float64 for c in expected.columns if c != "doc_id"}
        )
        pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_dtype=False)
        row = queries[queries["query_id"] == qid].iloc[0]
        assert body["query"][0]["reranker:mrr@10"] == row["reranker:mrr@10"]
        assert body["query"][0]["missing_in"] == row["missing_in"]
    # contributions of a DCG-family metric sum to the query's delta
    _, body = get_json(base, f"/api/experiments/{NAME}/queries/q00000?metric=ndcg@10")
    total = sum(r["contribution"] for r in body["rows"])
    assert total == pytest.approx(
        queries.set_index("query_id").loc["q00000", "delta:reranker:ndcg@10"]
    )


def test_the_readout_page_shows_headline_report_link_and_filtered_rows(served, queries):
    root, base = served
    status, headers, body = request(base, f"/e/{NAME}?segment=locale:fr-FR&sort=delta&limit=25")
    page = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert f'href="/e/{NAME}/files/report.html"' in page
    assert "no-ship" in page
    links = re.findall(rf'<a class="query" href="/e/{NAME}/q/([^"?]+)', page)
    fr = queries[queries["locale"] == "fr-FR"].sort_values([DELTA, "query_id"], na_position="last")
    assert links == list(fr["query_id"].head(25))
    assert f"{len(fr):,} queries match" in page
    assert 'rel="next"' in page and 'rel="prev"' not in page
    # the queries missing from the treatment's log carry the flag in the table
    missing = int((queries["missing_in"] == "reranker").sum())
    _, _, body = request(base, f"/e/{NAME}?tag=missing_log&limit=100")
    assert html.unescape(body.decode()).count("missing from reranker's log") == missing > 0
    status, _, report = request(base, f"/e/{NAME}/files/report.html")
    assert status == 200 and report == (root / NAME / "report.html").read_bytes()


def test_the_query_page_shows_both_lists_and_the_missing_log_flag(served, queries):
    root, base = served
    qid = _missing_query(queries)
    status, _, body = request(base, f"/e/{NAME}/q/{qid}")
    text = html.unescape(body.decode())
    assert status == 200
    assert "missing from reranker's log" in text
    assert 'data-arm="bm25"' in text
    expected = load_readout(root / NAME).query(qid)
    shown = expected[expected["rank_bm25"].notna()]
    for doc in shown["doc_id"]:
        assert doc in text
    status, _, body = request(base, f"/e/{NAME}/q/q00000")
    text = body.decode()
    assert 'data-arm="bm25"' in text and 'data-arm="reranker"' in text
    grades = re.findall(r'<td class="grade">([^<]+)</td>', text)
    both = load_readout(root / NAME).query("q00000")
    assert len(grades) == int(both["rank_bm25"].notna().sum() + both["rank_reranker"].notna().sum())


def test_the_index_lists_readouts_dates_and_recorded_rows(served):
    _, base = served
    status, _, body = request(base, "/")
    page = body.decode()
    assert status == 200
    assert f'href="/e/{NAME}"' in page and f'href="/e/{NAME}%40{DATED}"' in page
    assert f'href="/h/{NAME}/{RECORDED_ONLY}"' in page
    assert page.count('<svg class="spark"') == 1  # two recorded dates: a trend
    assert '<span class="status no-ship">no-ship</span>' in page
    status, _, dated = request(base, f"/e/{NAME}@{DATED}")
    assert status == 200 and "queries match" in dated.decode()
    status, _, recorded = request(base, f"/h/{NAME}/{RECORDED_ONLY}")
    assert status == 200 and "mrr@10" in recorded.decode()
    assert request(base, f"/h/{NAME}/2020-01-01")[0] == 404


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("metric=map@3", "metric"),
        ("metric=nonsense", "metric"),
        ("sort=score", "sort"),
        ("order=up", "order"),
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=5000", "limit"),
        ("offset=-1", "offset"),
        ("segment=city:Paris", "segment"),
        ("segment=locale", "segment"),
        ("segment=locale:xx-XX", "segment"),
        ("tag=relevant_teleported", "tag"),
        ("treatment=bm25", "treatment"),
        ("colour=blue", "colour"),
    ],
)
def test_bad_parameters_are_400_naming_parameter_expected_and_found(served, query, parameter):
    _, base = served
    status, body = get_json(base, f"/api/experiments/{NAME}/queries?{query}")
    assert status == 400
    assert body["parameter"] == parameter
    found = parameter if parameter == "colour" else query.split("=", 1)[1]
    assert body["expected"] and body["found"] == found
    assert body["error"].startswith(f"{parameter}: expected ")
    # the page says the same, as a page
    status, headers, page = request(base, f"/e/{NAME}?{query}")
    assert status == 400 and headers["Content-Type"].startswith("text/html")
    assert html.escape(body["error"]) in page.decode()


def test_unknown_names_are_404(served):
    _, base = served
    for path in (
        "/e/nope",
        "/e/nope/q/q00000",
        f"/e/{NAME}/q/q99999",
        f"/e/{NAME}@2030-01-01",
        "/api/experiments/nope/queries",
        f"/api/experiments/{NAME}/queries/q99999",
        "/nowhere",
        f"/e/{NAME}/files/nothing.html",
    ):
        status, _, _ = request(base, path)
        assert status == 404, path


def test_the_table_is_read_again_when_its_file_changes(served):
    root, _ = served
    from abrank.serve.query_table import TableCache

    folder = root / NAME
    summary = json.loads((folder / "summary.json").read_text())
    cache = TableCache()
    first = cache.get(folder, lambda: summary)
    assert cache.get(folder, lambda: summary) is first
    stamp = (folder / "queries.parquet").stat().st_mtime_ns + 5_000_000_000
    os.utime(folder / "queries.parquet", ns=(stamp, stamp))
    assert cache.get(folder, lambda: summary) is not first


def _abrank(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "abrank", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_a_missing_reports_dir_is_one_line_and_exit_2(tmp_path):
    done = _abrank("serve", str(tmp_path / "nowhere"), "--port", "0")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"abrank: error: REPORTS_DIR {tmp_path / 'nowhere'}: expected a folder of readouts, "
        "got no such folder"
    ]
    (tmp_path / "file").write_text("x")
    done = _abrank("serve", str(tmp_path / "file"))
    assert done.returncode == 2 and "got a file" in done.stderr and "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _abrank("serve", str(tmp_path), "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"abrank: error: --port {port}: expected a free port on 127.0.0.1, got one in use"
    ]
    done = _abrank("serve", str(tmp_path), "--port", "70000")
    assert done.returncode == 2 and "expected a port number 0-65535, got '70000'" in done.stderr


def test_the_command_serves_until_stopped(served):
    root, _ = served
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "abrank", "serve", str(root), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get_json(f"http://127.0.0.1:{match[1]}", "/api/experiments")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert status == 200 and NAME in [item["name"] for item in body["experiments"]]
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()


def test_a_damaged_query_table_is_a_500_naming_the_file(served, tmp_path):
    root, _ = served
    damaged = tmp_path / "reports"
    shutil.copytree(root / NAME, damaged / "damaged", ignore=shutil.ignore_patterns("20*"))
    (damaged / "damaged" / "queries.parquet").write_bytes(b"PAR1 not really parquet")
    with running(damaged) as base:
        status, body = get_json(base, "/api/experiments/damaged/queries")
        assert status == 500
        assert body["error"].startswith(f"{damaged / 'damaged' / 'queries.parquet'}: expected ")
        status, _, page = request(base, "/e/damaged")
        assert status == 500 and b"queries.parquet: expected the query table" in page
        assert request(base, "/")[0] == 200  # the index still lists it


def test_the_catalog_names_only_readout_folders_and_opens_the_latest_dated_one(tmp_path):
    from abrank.serve.catalog import Catalog

    root = tmp_path / "reports"
    for folder in (
        "daily/2026-01-01",
        "daily/2026-01-03",
        "daily/2026-01-02",
        "plain",
        "history/x",
    ):
        (root / folder).mkdir(parents=True)
        (root / folder / "summary.json").write_text("{}")
    (root / "daily" / "notes").mkdir()  # not a date: not a readout
    (root / "empty").mkdir()  # no summary.json anywhere: not an experiment
    (root / ".hidden").mkdir()
    (root / ".hidden" / "summary.json").write_text("{}")
    (root / "linked").symlink_to(root / "plain")  # a link to a folder is not followed
    catalog = Catalog(root)
    keys = sorted(catalog.readouts())
    assert keys == [
        "daily",
        "daily@2026-01-01",
        "daily@2026-01-02",
        "daily@2026-01-03",
        "plain",
    ]
    assert catalog.find("daily").folder == root / "daily" / "2026-01-03"
    assert catalog.find("plain").date is None
    for name in ("history", "linked", ".hidden", "empty", "daily/2026-01-01", "../reports/plain"):
        assert catalog.find(name) is None, name


def test_the_serve_verb_adds_no_import_to_the_other_verbs():
    script = (
        "import sys; from abrank.cli.parser import build_parser; build_parser(); "
        "print(sorted(m for m in ('pandas', 'duckdb', 'abrank.serve.server') if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr
