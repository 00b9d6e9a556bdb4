"""Explanation tables of click readouts (abrank.explain.online_tables): online A/B and
interleaving. Tiny handmade logs whose every number is worked out by hand in the comments,
and the bundled demos, whose tables are checked against the readout's own means and the
logs' row counts (recomputed here by plain pandas)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.analysis import write_readout
from abrank.errors import ConfigError
from abrank.readout import load_readout

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- online by hand

# Arm a (control), arm b; three results per impression; metrics click_rr@3, ctr@2, clicks@3.
#   imp 1  u1  a  cats   x y z   click y         rr 1/2  ctr@2 1  clicks 1
#   imp 2  u1  a  cats   x y z   no click        rr 0    ctr@2 0  clicks 0
#   imp 3  u2  a  dogs   p q r   clicks p, r     rr 1    ctr@2 1  clicks 2
#   imp 4  u3  b  cats   z x w   click z         rr 1    ctr@2 1  clicks 1
#   imp 5  u4  b  cats   x z w   click w         rr 1/3  ctr@2 0  clicks 1
#   imp 6  u4  b  birds  k l m   no click        rr 0    ctr@2 0  clicks 0
ONLINE_ROWS = [
    (1, "u1", "a", "cats", "xyz", "y"),
    (2, "u1", "a", "cats", "xyz", ""),
    (3, "u2", "a", "dogs", "pqr", "pr"),
    (4, "u3", "b", "cats", "zxw", "z"),
    (5, "u4", "b", "cats", "xzw", "w"),
    (6, "u4", "b", "birds", "klm", ""),
]

ONLINE_CONFIG = """\
name: explain-online
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
metrics: [click_rr@3, ctr@2, clicks@3]
analysis: {design: independent, unit: user_id, resamples: 200, seed: 1}
"""


def _online_log(query: bool = True) -> pd.DataFrame:
    rows = [
        {
            "impression_id": imp,
            "user_id": user,
            "arm": arm,
            **({"query": text} if query else {}),
            "rank": rank,
            "doc_id": doc,
            "clicked": int(doc in clicked),
        }
        for imp, user, arm, text, docs, clicked in ONLINE_ROWS
        for rank, doc in enumerate(docs, start=1)
    ]
    return pd.DataFrame(rows)


def _run(tmp_path: Path, log: pd.DataFrame, config: str, **kwargs) -> abrank.Readout:
    log.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(config)
    return abrank.run_experiment(tmp_path / "exp.yaml", **kwargs)


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    folder = tmp_path_factory.mktemp("online")
    readout = _run(folder, _online_log(), ONLINE_CONFIG)
    write_readout(readout, folder / "readout", formats=("json", "csv"))
    return readout, folder / "readout"


def test_online_queries_by_hand(online):
    readout, _ = online
    metrics = ["click_rr@3", "ctr@2", "clicks@3"]
    assert list(readout.queries.columns) == [
        "query_id",
        "impressions:a",
        "units:a",
        "impressions:b",
        "units:b",
        *[f"{arm}:{m}" for arm in ("a", "b") for m in metrics],
        *[f"delta:b:{m}" for m in metrics],
        "missing_in",
        "undefined",
        "tags:b",
    ]
    queries = readout.queries.set_index("query_id")
    assert list(queries.index) == ["birds", "cats", "dogs"]
    cats, dogs, birds = queries.loc["cats"], queries.loc["dogs"], queries.loc["birds"]
    # cats: a shows it twice to u1, b twice to u3 and u4
    assert (cats["impressions:a"], cats["units:a"]) == (2, 1)
    assert (cats["impressions:b"], cats["units:b"]) == (2, 2)
    assert cats["a:click_rr@3"] == pytest.approx((1 / 2 + 0) / 2, abs=1e-15)
    assert cats["b:click_rr@3"] == pytest.approx((1 + 1 / 3) / 2, abs=1e-15)
    assert cats["delta:b:click_rr@3"] == pytest.approx(2 / 3 - 1 / 4, abs=1e-15)
    assert (cats["a:ctr@2"], cats["b:ctr@2"], cats["delta:b:ctr@2"]) == (0.5, 0.5, 0.0)
    assert (cats["a:clicks@3"], cats["b:clicks@3"], cats["delta:b:clicks@3"]) == (0.5, 1.0, 0.5)
    assert cats["missing_in"] == "" and cats["undefined"] == ""
    # more clicks in b's top 3 per impression; b's click on w (never shown by a) entered;
    # a's click on y (never shown by b) dropped
    assert list(cats["tags:b"]) == [
        "clicks_gained_top",
        "clicked_doc_entered",
        "clicked_doc_dropped",
    ]
    # dogs: a only
    assert (dogs["impressions:a"], dogs["impressions:b"], dogs["units:b"]) == (1, 0, 0)
    assert (dogs["a:click_rr@3"], dogs["a:ctr@2"], dogs["a:clicks@3"]) == (1.0, 1.0, 2.0)
    assert np.isnan(dogs["b:click_rr@3"]) and np.isnan(dogs["delta:b:clicks@3"])
    assert dogs["missing_in"] == "b" and dogs["undefined"] == "click_rr@3;ctr@2;clicks@3"
    assert list(dogs["tags:b"]) == ["clicked_doc_dropped", "missing_log"]
    # birds: b only, nothing clicked
    assert birds["missing_in"] == "a" and list(birds["tags:b"]) == ["missing_log"]
    assert (birds["b:click_rr@3"], birds["b:clicks@3"]) == (0.0, 0.0)
    # every impression is in one row
    assert queries[["impressions:a", "impressions:b"]].to_numpy().sum() == len(ONLINE_ROWS)


def test_online_rankings_by_hand(online):
    readout, _ = online
    rankings = readout.rankings
    assert list(rankings.columns) == [
        "arm",
        "query_id",
        "doc_id",
        "rank",
        "impressions",
        "clicks",
        "ctr",
        "grade",
    ]
    rows = [
        tuple(r)
        for r in rankings[
            ["arm", "query_id", "doc_id", "rank", "impressions", "clicks"]
        ].itertuples(index=False)
    ]
    assert rows == [
        ("a", "cats", "x", 1.0, 2, 0),
        ("a", "cats", "y", 2.0, 2, 1),
        ("a", "cats", "z", 3.0, 2, 0),
        ("a", "dogs", "p", 1.0, 1, 1),
        ("a", "dogs", "q", 2.0, 1, 0),
        ("a", "dogs", "r", 3.0, 1, 1),
        ("b", "birds", "k", 1.0, 1, 0),
        ("b", "birds", "l", 2.0, 1, 0),
        ("b", "birds", "m", 3.0, 1, 0),
        # x at ranks 2 and 1, z at 1 and 2: mean rank 1.5 each (ties by doc id)
        ("b", "cats", "x", 1.5, 2, 0),
        ("b", "cats", "z", 1.5, 2, 1),
        ("b", "cats", "w", 3.0, 2, 1),
    ]
    np.testing.assert_array_equal(rankings["ctr"], rankings["clicks"] / rankings["impressions"])
    assert rankings["grade"].isna().all()  # no judgments
    assert rankings["impressions"].sum() == len(_online_log())  # depth 3: every row


def test_online_query_view_and_refusals(online):
    readout, _ = online
    view = readout.query("cats")
    assert list(view["doc_id"]) == ["x", "y", "z", "w"]  # by a's rank, then b's
    assert view["rank_a"].tolist()[:3] == [1.0, 2.0, 3.0] and np.isnan(view["rank_a"][3])
    assert view["rank_b"].tolist()[0] == 1.5 and np.isnan(view["rank_b"][1])
    assert view["clicks_a"].tolist() == [0, 1, 0, 0]
    assert view["clicks_b"].tolist() == [0, 0, 1, 1]
    assert view["impressions_b"].tolist() == [2, 0, 2, 2]
    assert np.isnan(view["ctr_b"][1]) and view["ctr_b"][3] == 0.5
    with pytest.raises(ConfigError, match="expected a query of the readout"):
        readout.query("fish")
    with pytest.raises(ConfigError, match="no per-document contribution"):
        readout.query("cats", "click_rr@3")
    with pytest.raises(ConfigError, match="expected an offline readout of judged metrics"):
        readout.explain("click_rr@3")


def test_online_tables_are_written_and_read_back(online):
    readout, folder = online
    assert (folder / "queries.parquet").is_file() and (folder / "rankings.parquet").is_file()
    loaded = load_readout(folder)
    pd.testing.assert_frame_equal(loaded.rankings, readout.rankings, check_dtype=False)
    columns = [c for c in readout.queries.columns if not c.startswith("tags:")]
    pd.testing.assert_frame_equal(
        loaded.queries[columns], readout.queries[columns], check_dtype=False
    )
    assert [list(t) for t in loaded.queries["tags:b"]] == list(readout.queries["tags:b"])
    pd.testing.assert_frame_equal(loaded.query("cats"), readout.query("cats"))


def test_online_log_without_a_query_column_has_a_row_per_unit(tmp_path):
    readout = _run(tmp_path, _online_log(query=False), ONLINE_CONFIG)
    queries = readout.queries.set_index("user_id")
    assert "query_id" not in readout.queries.columns
    assert list(queries.index) == ["u1", "u2", "u3", "u4"]
    # each unit's mean over its impressions: the unit's M_u / D_u
    assert queries["a:click_rr@3"].tolist()[:2] == [0.25, 1.0]
    assert queries["b:click_rr@3"].tolist()[2] == 1.0
    assert queries["b:click_rr@3"].tolist()[3] == pytest.approx((1 / 3 + 0) / 2, abs=1e-15)
    assert queries["impressions:b"].tolist() == [0, 0, 1, 2]
    assert queries["missing_in"].tolist() == ["b", "b", "a", "a"]
    assert all(len(tags) == 0 for tags in queries["tags:b"])  # arms never share a unit
    assert readout.rankings.columns[1] == "user_id"
    # u4 saw k l m (birds) and x z w (cats): by b's mean rank, ties in the table's order
    assert readout.query("u4")["doc_id"].tolist() == ["k", "x", "l", "z", "m", "w"]


def test_online_grades_come_from_the_judgments(tmp_path):
    pd.DataFrame(
        {"query_id": ["cats", "cats", "dogs"], "doc_id": ["w", "y", "p"], "relevance": [2, 1, 1]}
    ).to_csv(tmp_path / "qrels.csv", index=False)
    config = ONLINE_CONFIG.replace(
        "metrics: [click_rr@3, ctr@2, clicks@3]",
        "judgments: {path: qrels.csv}\nmetrics: [mrr@3, click_rr@3]",
    )
    readout = _run(tmp_path, _online_log(), config)
    graded = readout.rankings.dropna(subset=["grade"])
    got = sorted(zip(graded["arm"], graded["query_id"], graded["doc_id"], graded["grade"]))
    assert got == [("a", "cats", "y", 1.0), ("a", "dogs", "p", 1.0), ("b", "cats", "w", 2.0)]
    queries = readout.queries.set_index("query_id")
    # mrr@3: a's cats show y (relevant) at rank 2 twice, b's show w at rank 3 twice
    assert queries.loc["cats", "a:mrr@3"] == pytest.approx(0.5, abs=1e-15)
    assert queries.loc["cats", "b:mrr@3"] == pytest.approx(1 / 3, abs=1e-15)
    # birds has no judgment: no mrr@3 on b's impression of it, a click_rr@3 of 0
    assert np.isnan(queries.loc["birds", "b:mrr@3"]) and queries.loc["birds", "b:click_rr@3"] == 0
    assert queries.loc["birds", "undefined"] == "mrr@3;click_rr@3"  # a never showed it
    assert queries.loc["cats", "undefined"] == ""


def test_the_memory_engine_only_and_the_size_limit(tmp_path, monkeypatch):
    from abrank.designs.online import explain

    monkeypatch.setattr(explain, "MAX_ROWS", 10)
    said: list[str] = []
    readout = _run(tmp_path, _online_log(), ONLINE_CONFIG, progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert any("no explanation tables: 18 log rows, more than 10" in line for line in said)


# --------------------------------------------------------------------------- interleaving by hand

# Team a (control), team b; credit: clicks.
#   imp 1  u1  cats   x(a) y(b) z(a)   click x          a 1  b 0  loss
#   imp 2  u2  cats   w(b) x(a) y(b)   clicks w x y     a 1  b 2  win
#   imp 3  u2  cats   x(a) w(b)        no click         tie
#   imp 4  u3  dogs   p(b) q(a)        click p          a 0  b 1  win
#   imp 5  u3  birds  k(a)             no click         tie (team b shows nothing)
INTERLEAVED_ROWS = [
    (1, "u1", "cats", ["xa", "yb", "za"], "x"),
    (2, "u2", "cats", ["wb", "xa", "yb"], "wxy"),
    (3, "u2", "cats", ["xa", "wb"], ""),
    (4, "u3", "dogs", ["pb", "qa"], "p"),
    (5, "u3", "birds", ["ka"], ""),
]

INTERLEAVED_CONFIG = """\
name: explain-interleaved
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
metrics: [clicks]
analysis: {design: interleaved, unit: user_id, resamples: 200, seed: 1}
"""


def _interleaved_log() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "impression_id": imp,
                "user_id": user,
                "query": text,
                "rank": rank,
                "doc_id": shown[0],
                "team": shown[1],
                "clicked": int(shown[0] in clicked),
            }
            for imp, user, text, results, clicked in INTERLEAVED_ROWS
            for rank, shown in enumerate(results, start=1)
        ]
    )


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interleaved")
    readout = _run(folder, _interleaved_log(), INTERLEAVED_CONFIG)
    write_readout(readout, folder / "readout", formats=("json", "csv"))
    return readout, folder / "readout"


def test_interleaved_queries_by_hand(interleaved):
    readout, _ = interleaved
    assert list(readout.queries.columns) == [
        "query_id",
        "impressions",
        "units",
        "clicked",
        "impressions:a",
        "impressions:b",
        "a:clicks",
        "b:clicks",
        "wins:b:clicks",
        "ties:b:clicks",
        "losses:b:clicks",
        "delta:b:clicks",
        "missing_in",
        "undefined",
        "tags:b",
    ]
    queries = readout.queries.set_index("query_id")
    assert list(queries.index) == ["birds", "cats", "dogs"]
    cats, dogs, birds = queries.loc["cats"], queries.loc["dogs"], queries.loc["birds"]
    assert (cats["impressions"], cats["units"], cats["clicked"]) == (3, 2, 2)
    assert (cats["impressions:a"], cats["impressions:b"]) == (3, 3)
    assert (cats["wins:b:clicks"], cats["ties:b:clicks"], cats["losses:b:clicks"]) == (1, 1, 1)
    assert cats["delta:b:clicks"] == pytest.approx((1 + 1 / 2) / 3 - 1 / 2, abs=1e-15)
    assert cats["a:clicks"] == pytest.approx(2 / 3) and cats["b:clicks"] == pytest.approx(2 / 3)
    assert cats["missing_in"] == "" and list(cats["tags:b"]) == []
    assert (dogs["wins:b:clicks"], dogs["delta:b:clicks"], dogs["b:clicks"]) == (1, 0.5, 1.0)
    assert list(dogs["tags:b"]) == ["won"]
    assert (birds["impressions:a"], birds["impressions:b"], birds["missing_in"]) == (1, 0, "b")
    assert birds["delta:b:clicks"] == 0.0
    assert list(birds["tags:b"]) == ["no_click", "missing_log"]
    assert queries["impressions"].sum() == len(INTERLEAVED_ROWS)
    assert (queries["undefined"] == "").all()


def test_interleaved_rankings_by_hand(interleaved):
    readout, folder = interleaved
    rows = [
        tuple(r)
        for r in readout.rankings[
            ["arm", "query_id", "doc_id", "rank", "impressions", "clicks"]
        ].itertuples(index=False)
    ]
    assert rows == [
        ("a", "birds", "k", 1.0, 1, 0),
        ("a", "cats", "x", pytest.approx(4 / 3), 3, 2),  # ranks 1, 2, 1
        ("a", "cats", "z", 3.0, 1, 0),
        ("a", "dogs", "q", 2.0, 1, 0),
        ("b", "cats", "w", 1.5, 2, 1),
        ("b", "cats", "y", 2.5, 2, 1),
        ("b", "dogs", "p", 1.0, 1, 1),
    ]
    assert readout.rankings["impressions"].sum() == len(_interleaved_log())
    view = readout.query("cats")
    assert view["doc_id"].tolist() == ["x", "z", "w", "y"]
    assert view["clicks_a"].tolist() == [2, 0, 0, 0] and view["clicks_b"].tolist() == [0, 0, 1, 1]
    with pytest.raises(ConfigError, match="expected an offline readout"):
        readout.explain()
    loaded = load_readout(folder)
    pd.testing.assert_frame_equal(loaded.rankings, readout.rankings, check_dtype=False)
    assert loaded.queries["query_id"].tolist() == readout.queries["query_id"].tolist()


# --------------------------------------------------------------------------- the demos


@pytest.fixture(scope="module")
def online_demo(tmp_path_factory):
    readout = abrank.run_experiment(ROOT / "experiments" / "demo-online.yaml")
    folder = tmp_path_factory.mktemp("demo") / "online"
    write_readout(readout, folder, formats=("json", "csv"))
    return readout, folder


def test_the_online_demo_tables_add_up_to_the_log_and_the_means(online_demo):
    readout, folder = online_demo
    log = pd.read_parquet(ROOT / "experiments" / "data" / "demo-online-log.parquet")
    queries, rankings = readout.queries, readout.rankings
    impressions = log.groupby("arm")["impression_id"].nunique()
    # rows per (query, device): every impression in exactly one of them
    assert not queries.duplicated(["query_id", "device"]).any()
    for arm in ("bm25", "reranker"):
        assert queries[f"impressions:{arm}"].sum() == impressions[arm]
        # the rankings keep the top 100 (abandonment has no cutoff): every shown result
        assert (
            rankings.loc[rankings["arm"] == arm, "impressions"].sum() == (log["arm"] == arm).sum()
        )
        assert (
            rankings.loc[rankings["arm"] == arm, "clicks"].sum()
            == log.loc[log["arm"] == arm, "clicked"].sum()
        )
    # per query means, weighted by impressions, give each arm's overall mean
    overall = {c["metric"]: c for c in readout.summary["comparisons"] if c["segment"] is None}
    for metric in ("click_rr@10", "ctr@3", "abandonment", "clicks@10"):
        for arm, key in (("bm25", "control_mean"), ("reranker", "treatment_mean")):
            weights = queries[f"impressions:{arm}"]
            shown = weights > 0
            mean = (queries.loc[shown, f"{arm}:{metric}"] * weights[shown]).sum() / weights.sum()
            assert mean == pytest.approx(overall[metric][key], rel=1e-12)
    # a query's clicks at rank 1 from plain pandas, for one query of each arm
    query = queries["query_id"].iloc[0]
    rows = log[log["query"].astype(str) == query]
    clicks = rows.groupby(["arm", rows["doc_id"].astype(str)])["clicked"].sum()
    mine = rankings[rankings["query_id"] == query].set_index(["arm", "doc_id"])["clicks"]
    assert mine.sort_index().to_dict() == clicks.sort_index().to_dict()
    lacked = queries[queries["missing_in"] != ""]
    assert all("missing_log" in tags for tags in lacked["tags:reranker"])
    loaded = load_readout(folder)
    pd.testing.assert_frame_equal(loaded.rankings, rankings, check_dtype=False)
    assert loaded.queries["query_id"].tolist() == queries["query_id"].tolist()


def test_the_interleaving_demo_tables_add_up_to_the_comparison():
    readout = abrank.run_experiment(ROOT / "experiments" / "demo-interleaving.yaml")
    queries = readout.queries
    for credit in ("clicks", "sat_clicks"):
        got = next(
            c
            for c in readout.summary["comparisons"]
            if c["segment"] is None and c["metric"] == credit
        )
        counts = [queries[f"{name}:reranker:{credit}"].sum() for name in ("wins", "ties", "losses")]
        assert counts == [got["wins"], got["ties"], got["losses"]]
    log = pd.read_parquet(ROOT / "experiments" / "data" / "demo-interleaving-log.parquet")
    assert queries["impressions"].sum() == log["impression_id"].nunique()
    assert readout.rankings["impressions"].sum() == len(log)
    per_team = log.groupby("team")["clicked"].sum()
    assert readout.rankings.groupby("arm")["clicks"].sum().to_dict() == per_team.to_dict()


# --------------------------------------------------------------------------- variants


def test_an_sql_engine_gives_the_memory_engines_tables(tmp_path):
    """DuckDB leaves the log where it lies; a log within the size limit is read into
    memory for the tables, which are then the memory engine's."""
    pytest.importorskip("duckdb")
    said: list[str] = []
    (tmp_path / "memory").mkdir()
    (tmp_path / "duck").mkdir()
    memory = _run(tmp_path / "memory", _online_log(), ONLINE_CONFIG)
    duck = _run(
        tmp_path / "duck", _online_log(), ONLINE_CONFIG, engine="duckdb", progress=said.append
    )
    assert any("reading the log into memory for the explanation tables" in x for x in said)
    pd.testing.assert_frame_equal(duck.queries, memory.queries)
    pd.testing.assert_frame_equal(duck.rankings, memory.rankings)


def test_an_sql_engine_above_the_limit_goes_without_the_tables(tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    from abrank.designs.online import explain

    monkeypatch.setattr(explain, "MAX_ROWS", 5)
    said: list[str] = []
    readout = _run(tmp_path, _online_log(), ONLINE_CONFIG, engine="duckdb", progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert any("no explanation tables: 18 log rows, more than 5" in line for line in said)
    with pytest.raises(ConfigError, match="expected its explanation tables"):
        readout.query("cats")


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("design", ["online", "interleaved"])
def test_a_run_without_explanation_has_no_tables_and_the_same_summary(
    tmp_path, online, interleaved, design, engine
):
    pytest.importorskip("duckdb")
    log, config, explained = {
        "online": (_online_log(), ONLINE_CONFIG, online[0]),
        "interleaved": (_interleaved_log(), INTERLEAVED_CONFIG, interleaved[0]),
    }[design]
    said: list[str] = []
    readout = _run(tmp_path, log, config, engine=engine, explain=False, progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert not any("explanation tables" in line for line in said)  # the log not read again
    where = {"inputs", "config_path", "engine"}  # the folder and the engine that ran it
    assert {k: v for k, v in readout.summary.items() if k not in where} == {
        k: v for k, v in explained.summary.items() if k not in where
    }


def test_the_interleaving_demo_on_duckdb_has_the_memory_engines_tables():
    pytest.importorskip("duckdb")
    config = ROOT / "experiments" / "demo-interleaving.yaml"
    memory = abrank.run_experiment(config)
    duck = abrank.run_experiment(config, engine="duckdb")
    pd.testing.assert_frame_equal(duck.queries, memory.queries)
    pd.testing.assert_frame_equal(duck.rankings, memory.rankings)


def test_per_arm_files_give_the_same_tables_as_one_log(tmp_path, online):
    readout, _ = online
    log = _online_log()
    for arm in ("a", "b"):
        log[log["arm"] == arm].drop(columns="arm").to_csv(tmp_path / f"{arm}.csv", index=False)
    config = ONLINE_CONFIG.replace("log: {path: log.csv}\n", "").replace(
        "control: {name: a}\ntreatments: [{name: b}]",
        "control: {name: a, path: a.csv}\ntreatments: [{name: b, path: b.csv}]",
    )
    (tmp_path / "exp.yaml").write_text(config)
    split = abrank.run_experiment(tmp_path / "exp.yaml")
    pd.testing.assert_frame_equal(split.rankings, readout.rankings)
    pd.testing.assert_frame_equal(split.queries, readout.queries)


def test_interleaving_with_three_teams_and_a_segment(tmp_path):
    # the log of the hand-made test, team c in impression 5 (birds) and a device per user
    log = _interleaved_log()
    log.loc[log["impression_id"] == 5, "team"] = "c"
    log["device"] = log["user_id"].map({"u1": "mobile", "u2": "desktop", "u3": "mobile"})
    config = INTERLEAVED_CONFIG.replace(
        "treatments: [{name: b}]", "treatments: [{name: b}, {name: c}]\ncomparisons: all-pairs"
    ).replace("metrics: [clicks]", "metrics: [clicks]\nsegments: {columns: [device]}")
    readout = _run(tmp_path, log, config)
    queries = readout.queries.set_index("query_id")
    assert list(queries.columns[-1:]) == ["device"]
    assert queries.loc["cats", "device"].tolist() == ["desktop", "mobile"]  # u2, then u1
    # cats on desktop (u2): imp 2 won by b, imp 3 tied; on mobile (u1): imp 1 lost
    desktop = queries[queries["device"] == "desktop"].loc["cats"]
    assert (desktop["wins:b:clicks"], desktop["ties:b:clicks"], desktop["losses:b:clicks"]) == (
        1,
        1,
        0,
    )
    assert desktop["delta:b:clicks"] == pytest.approx(0.25)
    # against a, c (which showed nothing for cats) lost imp 2, whose click on x was a's
    assert desktop["missing_in"] == "c" and list(desktop["tags:c"]) == ["lost", "missing_log"]
    assert (desktop["wins:c:clicks"], desktop["losses:c:clicks"]) == (0, 1)
    birds = queries.loc["birds"]
    assert (birds["impressions:a"], birds["impressions:c"], birds["missing_in"]) == (0, 1, "a;b")
    assert list(birds["tags:c vs b"]) == ["no_click", "missing_log"]
    assert {"delta:c:clicks", "delta:c vs b:clicks", "c:clicks"} <= set(queries.columns)
    assert list(dict.fromkeys(readout.rankings["arm"])) == ["a", "b", "c"]


def test_an_interleaved_log_without_a_query_column_has_a_row_per_unit(tmp_path):
    readout = _run(tmp_path, _interleaved_log().drop(columns="query"), INTERLEAVED_CONFIG)
    queries = readout.queries.set_index("user_id")
    assert list(queries.index) == ["u1", "u2", "u3"]
    # u2: imp 2 won, imp 3 tied; u3: imp 4 won, imp 5 tied
    assert queries["wins:b:clicks"].tolist() == [0, 1, 1]
    assert queries["ties:b:clicks"].tolist() == [0, 1, 1]
    assert queries["delta:b:clicks"].tolist() == [-0.5, 0.25, 0.25]
    assert readout.rankings.columns[1] == "user_id"
    assert readout.query("u3")["doc_id"].tolist() == ["k", "q", "p"]


def test_the_interleaved_size_limit(tmp_path, monkeypatch):
    from abrank.designs.interleaved import explain

    monkeypatch.setattr(explain, "MAX_ROWS", 5)
    said: list[str] = []
    readout = _run(tmp_path, _interleaved_log(), INTERLEAVED_CONFIG, progress=said.append)
    assert readout.queries is None and readout.rankings is None
    assert any("no explanation tables: 11 log rows, more than 5" in line for line in said)


def test_per_unit_rows_equal_the_engines_per_unit_sums(tmp_path):
    from abrank.engines.clicks import score_impressions, unit_sums
    from abrank.io import read_impressions

    rng = np.random.default_rng(4)
    impressions, users = 400, 60
    length = rng.integers(1, 6, impressions)
    impression = np.repeat(np.arange(impressions), length)
    rank = np.arange(impression.size) - np.repeat(np.cumsum(length) - length, length) + 1
    user = rng.integers(0, users, impressions)
    log = pd.DataFrame(
        {
            "impression_id": impression,
            "user_id": user[impression],
            "arm": np.where(user[impression] % 2 == 0, "a", "b"),
            "rank": rank,
            "doc_id": rng.integers(0, 30, impression.size),
            "clicked": (rng.random(impression.size) < 0.3 / rank).astype(int),
        }
    )
    readout = _run(tmp_path, log, ONLINE_CONFIG)
    queries = readout.queries.set_index("user_id")
    metrics = ["click_rr@3", "ctr@2", "clicks@3"]
    for arm in ("a", "b"):
        frame = read_impressions(tmp_path / "log.csv")
        frame = frame[frame["arm"] == arm].drop(columns="arm").reset_index(drop=True)
        sums = unit_sums(frame, score_impressions(frame, metrics), unit="user_id")
        mine = queries[queries[f"impressions:{arm}"] > 0]
        assert sorted(mine.index) == sorted(sums.index)
        for metric in metrics:
            expected = (sums[metric] / sums["impressions"]).reindex(mine.index)
            np.testing.assert_allclose(mine[f"{arm}:{metric}"], expected, rtol=1e-15, atol=0)
        assert (
            mine[f"impressions:{arm}"].tolist() == sums["impressions"].reindex(mine.index).tolist()
        )
