"""The interleaving demo's generated log: determinism, shape, team-draft lists and its figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

import abrank.demo.interleaving as interleaving_demo
from abrank.cli import main
from abrank.demo import generate_demo
from abrank.demo.interleaving import (
    DEFAULT_INTERLEAVING_SEED,
    INTERLEAVING_LOG_COLUMNS,
    INTERLEAVING_LOG_FILE,
    InterleavingDemo,
    make_interleaving_demo,
    write_interleaving_demo,
)
from abrank.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
LOG_FILE = ROOT / "experiments" / "data" / "demo-interleaving-log.parquet"
START = pd.Timestamp("2026-11-02T00:00:00Z").timestamp()


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return pd.read_parquet(LOG_FILE)


@pytest.fixture(scope="module")
def source():
    """The bundled offline demo, whose two rankings the log interleaves."""
    return generate_demo()


@pytest.fixture(scope="module")
def impressions(log: pd.DataFrame) -> pd.DataFrame:
    """One row per impression, by plain pandas: clicks on each team, satisfied clicks, the
    first result's team."""
    clicks = log[log["clicked"] == 1]
    order = pd.Index(log["impression_id"].unique(), name="impression_id")

    def per_team(rows: pd.DataFrame) -> pd.DataFrame:
        counts = rows.groupby(["impression_id", "team"]).size().unstack(fill_value=0)
        return counts.reindex(index=order, columns=["bm25", "reranker"], fill_value=0)

    frame = pd.DataFrame(index=order)
    both = per_team(clicks)
    sat = per_team(clicks[clicks["dwell"] >= 30])
    frame["bm25"], frame["reranker"] = both["bm25"], both["reranker"]
    frame["sat_bm25"], frame["sat_reranker"] = sat["bm25"], sat["reranker"]
    frame["first_team"] = log[log["rank"] == 1].set_index("impression_id")["team"]
    return frame


def _parquet_writer_matches() -> tuple[bool, str]:
    wrote = pq.ParquetFile(LOG_FILE).metadata.created_by.rsplit(" ", 1)[-1]
    reason = (
        f"{LOG_FILE.name} was written by pyarrow {wrote}; pyarrow {pa.__version__} is installed"
    )
    return wrote == pa.__version__, reason


# --------------------------------------------------------------------------- determinism


def test_committed_log_equals_a_fresh_write_byte_for_byte(tmp_path: Path) -> None:
    (path,) = write_interleaving_demo(tmp_path)
    assert path.name == LOG_FILE.name == INTERLEAVING_LOG_FILE
    same, reason = _parquet_writer_matches()
    if not same:
        pytest.skip(reason)
    assert path.read_bytes() == LOG_FILE.read_bytes(), (
        f"{LOG_FILE.name} drifted from the generator; regenerate with `abrank demo-data`"
    )


def test_committed_log_holds_the_generated_rows_whatever_the_pyarrow(log: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(log, make_interleaving_demo().log)


def test_same_seed_gives_identical_frames_and_bytes_and_another_seed_differs(
    tmp_path: Path,
) -> None:
    options = {"users": 150, "n_queries": 100}
    first = make_interleaving_demo(seed=3, **options)
    pd.testing.assert_frame_equal(first.log, make_interleaving_demo(seed=3, **options).log)
    other = make_interleaving_demo(seed=4, **options)
    assert not first.log["clicked"].equals(other.log["clicked"])
    a = write_interleaving_demo(tmp_path / "a", seed=3, **options)[0]
    b = write_interleaving_demo(tmp_path / "b", seed=3, **options)[0]
    c = write_interleaving_demo(tmp_path / "c", seed=4, **options)[0]
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(a), first.log)


def test_the_committed_file_is_small_and_plain(log: pd.DataFrame) -> None:
    assert LOG_FILE.stat().st_size < 1024 * 1024
    assert pq.ParquetFile(LOG_FILE).metadata.metadata is None  # no pandas or Arrow metadata
    assert list(log.columns) == list(INTERLEAVING_LOG_COLUMNS)
    kinds = {name: str(kind) for name, kind in log.dtypes.items()}
    assert kinds == {
        "impression_id": "str",
        "user_id": "str",
        "query_id": "str",
        "rank": "int64",
        "doc_id": "str",
        "team": "str",
        "clicked": "int8",
        "dwell": "float64",
        "timestamp": "int64",
        "device": "str",
    }


# --------------------------------------------------------------------------- shape


def test_every_impression_shows_ranks_1_to_10_of_distinct_documents_in_one_context(
    log: pd.DataFrame, source
) -> None:
    assert len(log) % 10 == 0
    n = len(log) // 10
    assert (log["rank"].to_numpy() == np.tile(np.arange(1, 11), n)).all()
    ids = log["impression_id"].to_numpy()[::10]
    assert ids.tolist() == [f"i{i:06d}" for i in range(1, n + 1)]
    assert (log.groupby("impression_id").size() == 10).all()
    assert not log.duplicated(["impression_id", "doc_id"]).any()
    context = ["user_id", "query_id", "timestamp", "device"]
    assert (log.groupby("impression_id")[context].nunique() == 1).all().all()
    # numbered in time order within the two weeks; a device per user
    times = log["timestamp"].to_numpy()[::10]
    assert (np.diff(times) >= 0).all()
    assert times.min() >= START and times.max() < START + 14 * 86_400
    assert (log.groupby("user_id")["device"].nunique() == 1).all()
    # 3,000 users of 1 + Poisson(3) impressions: 12,000 expected, sd about 95
    assert log["user_id"].nunique() == 3000
    assert 11_700 <= n <= 12_300
    # queries of the offline demo that both rankers served
    assert set(log["query_id"]) <= set(source.treatment["query_id"]) & set(
        source.control["query_id"]
    )
    assert set(log["team"]) == {"bm25", "reranker"}


def test_the_first_result_comes_from_each_team_about_half_the_time(
    impressions: pd.DataFrame,
) -> None:
    counts = impressions["first_team"].value_counts()
    assert set(counts.index) == {"bm25", "reranker"}
    assert stats.chisquare(counts.to_numpy()).pvalue > 0.001
    # the coin flips are fresh per impression: a popular query's impressions start both ways
    log_queries = impressions.join(
        pd.read_parquet(LOG_FILE, columns=["impression_id", "query_id"])
        .drop_duplicates("impression_id")
        .set_index("impression_id")
    )
    top = log_queries["query_id"].value_counts().index[:5]
    for query in top:
        firsts = log_queries.loc[log_queries["query_id"] == query, "first_team"]
        assert len(firsts) >= 40
        assert 0.25 < (firsts == "reranker").mean() < 0.75


def test_teams_alternate_and_each_teams_results_keep_its_ranking_order(
    log: pd.DataFrame, source
) -> None:
    """Team-draft's invariants on every impression: at every prefix the teams' counts differ
    by at most one, and a team's results appear in the order of its own ranking."""
    lead = (log["team"] == "reranker").astype(int) - (log["team"] == "bm25").astype(int)
    prefix = lead.groupby(log["impression_id"]).cumsum()
    assert prefix.abs().max() == 1
    for team, ranking in (("bm25", source.control), ("reranker", source.treatment)):
        own = log[log["team"] == team].merge(
            ranking[["query_id", "doc_id", "position"]], on=["query_id", "doc_id"], how="left"
        )
        assert own["position"].notna().all()  # every result is in its team's ranking
        steps = own.groupby("impression_id")["position"].diff().dropna()
        assert (steps > 0).all()


def _team_draft(control: list[str], treatment: list[str], first_picks: list[str], depth: int):
    """Team-draft interleaving, one pick at a time (Radlinski, Kurup & Joachims, 2008):
    the team with fewer picks picks next, ``first_picks[j]`` picks first in round ``j`` (when
    both have ``j`` picks); a team picks its highest-ranked document not shown yet."""
    lists = {"bm25": control, "reranker": treatment}
    picks = {"bm25": 0, "reranker": 0}
    shown: list[tuple[str, str]] = []
    while len(shown) < depth:
        if picks["bm25"] != picks["reranker"]:
            team = min(picks, key=picks.get)
        else:
            team = first_picks[picks["bm25"]]
        seen = {doc for doc, _ in shown}
        doc = next(d for d in lists[team] if d not in seen)
        shown.append((doc, team))
        picks[team] += 1
    return shown


def test_a_sample_of_impressions_matches_a_slow_team_draft(log: pd.DataFrame, source) -> None:
    rankings = {
        team: frame.sort_values(["query_id", "position"]).groupby("query_id")["doc_id"].agg(list)
        for team, frame in (("bm25", source.control), ("reranker", source.treatment))
    }
    ids = log["impression_id"].unique()
    sample = np.random.default_rng(0).choice(ids, size=400, replace=False)
    for impression in sample:
        rows = log[log["impression_id"] == impression]
        query = rows["query_id"].iloc[0]
        teams = rows["team"].tolist()
        first_picks = teams[0::2]  # the coin flip of each round, as the log shows it
        expected = _team_draft(
            rankings["bm25"][query], rankings["reranker"][query], first_picks, 10
        )
        assert list(zip(rows["doc_id"], teams, strict=True)) == expected, impression


# --------------------------------------------------------------------------- clicks


def test_clicks_follow_position_and_grade_and_dwell_separates_satisfied_clicks(
    log: pd.DataFrame, source
) -> None:
    assert set(log["clicked"].unique()) == {0, 1}
    clicked = log["clicked"] == 1
    assert log.loc[clicked, "dwell"].notna().all() and log.loc[~clicked, "dwell"].isna().all()
    dwell = log.loc[clicked, "dwell"]
    assert (dwell > 0).all()
    assert 0.4 < (dwell >= 30).mean() < 0.8
    by_rank = log.groupby("rank")["clicked"].mean()
    assert by_rank.loc[1:5].is_monotonic_decreasing  # deeper: about 100 clicks each, noisy
    assert by_rank.loc[1:3].mean() > by_rank.loc[4:6].mean() > by_rank.loc[7:10].mean()
    assert by_rank[1] > 3 * by_rank[10]
    graded = log.merge(source.judgments, on=["query_id", "doc_id"], how="left")
    by_grade = graded.fillna({"grade": 0}).groupby("grade")["clicked"].mean()
    assert by_grade.is_monotonic_increasing and by_grade[3] > 5 * by_grade[0]


# --------------------------------------------------------------------------- figures


def test_the_figures_in_the_module_docstring(impressions: pd.DataFrame, log: pd.DataFrame) -> None:
    """Wins, ties and losses of the reranker by clicks and by satisfied clicks, Δ_AB, the share
    with a click and the first-team count, recomputed from the committed file."""
    n = len(impressions)
    margin = impressions["reranker"] - impressions["bm25"]
    wins, ties, losses = int((margin > 0).sum()), int((margin == 0).sum()), int((margin < 0).sum())
    no_click = int((impressions["reranker"] + impressions["bm25"] == 0).sum())
    sat_margin = impressions["sat_reranker"] - impressions["sat_bm25"]
    sat = [int((sat_margin > 0).sum()), int((sat_margin == 0).sum()), int((sat_margin < 0).sum())]
    delta = (wins + ties / 2) / n - 0.5
    any_click = log.groupby("impression_id")["clicked"].max().mean()
    reranker_first = int((impressions["first_team"] == "reranker").sum())
    assert (n, wins, ties, losses, no_click) == (12_064, 2_615, 8_235, 1_214, 7_587)
    assert sat == [1_884, 9_403, 777]
    assert round(delta, 3) == 0.058
    assert round(any_click, 3) == 0.371
    assert reranker_first == 5_985 and round(reranker_first / n, 3) == 0.496
    assert log["query_id"].nunique() == 1_808
    doc = " ".join(interleaving_demo.__doc__.split())
    for figure in (
        f"{n:,} impressions of {log['query_id'].nunique():,} distinct",
        f"wins {wins:,}, ties {ties:,} ({no_click:,} of them without a click)",
        f"loses {losses:,}, so Δ_AB = ({wins:,} + {ties:,} / 2) / {n:,} − 1/2 = +{delta:.3f}",
        f"wins {sat[0]:,}, ties {sat[1]:,} and loses {sat[2]:,}",
        f"{any_click:.1%} of the impressions have a click",
        f"{reranker_first:,} of them ({reranker_first / n:.1%})",
    ):
        assert figure in doc, figure


def test_the_library_credit_agrees_with_the_plain_pandas_count(
    impressions: pd.DataFrame, log: pd.DataFrame
) -> None:
    from abrank.interleaving import impression_outcomes

    out = impression_outcomes(log, control="bm25", treatment="reranker").set_index("impression_id")
    margin = impressions["reranker"] - impressions["bm25"]
    assert (out["outcome"] == np.sign(margin)).all()
    assert (out["first_team"] == impressions["first_team"]).all()


# --------------------------------------------------------------------------- API and CLI


def test_summary_and_defaults() -> None:
    data = make_interleaving_demo(users=200, n_queries=100, seed=9)
    assert isinstance(data, InterleavingDemo)
    summary = data.to_dict()
    json.dumps(summary)
    first = data.log[data.log["rank"] == 1]
    assert summary["rows"] == len(data.log) == 10 * len(first)
    assert summary["impressions"] == len(first)
    assert summary["first_team"] == first["team"].value_counts().to_dict()
    assert summary["queries_searched"] == data.log["query_id"].nunique()
    assert (summary["seed"], summary["users"], summary["n_queries"]) == (9, 200, 100)
    assert DEFAULT_INTERLEAVING_SEED == 20261202
    assert data.log["user_id"].nunique() == 200


def test_bad_arguments_are_rejected_with_clear_messages(tmp_path: Path) -> None:
    cases = [
        ({"users": 5}, "make_interleaving_demo: users: expected an integer >= 100, got 5"),
        ({"seed": -1}, "make_interleaving_demo: seed: expected a non-negative integer, got -1"),
        (
            {"demo_seed": True},
            "make_interleaving_demo: demo_seed: expected a non-negative integer, got True",
        ),
        ({"n_queries": 3}, "make_interleaving_demo: n_queries: expected an integer >= 10, got 3"),
    ]
    for options, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_interleaving_demo(**options)
        with pytest.raises(ConfigError, match=re.escape(message)):
            write_interleaving_demo(tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_demo_data_verb_passes_seed_and_queries_and_the_log_joins_the_written_rankings(
    tmp_path: Path, capsys
) -> None:
    code = main(
        ["demo-data", "--out", str(tmp_path / "cli"), "--seed", "5", "--queries", "30"]
        + ["--users", "300"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert Path(out.splitlines()[-1]).name == INTERLEAVING_LOG_FILE
    (direct,) = write_interleaving_demo(tmp_path / "api", seed=5, demo_seed=5, n_queries=30)
    written = tmp_path / "cli" / INTERLEAVING_LOG_FILE
    assert written.read_bytes() == direct.read_bytes()
    # every shown result is in the written control or treatment ranking of its query
    shown = pd.read_parquet(written)
    control = pd.read_csv(tmp_path / "cli" / "demo-control.csv.gz")
    treatment = pd.read_json(tmp_path / "cli" / "demo-treatment.jsonl.gz", lines=True)
    treatment = treatment.rename(columns={"qid": "query_id", "doc": "doc_id"})
    pairs = set(zip(control["query_id"], control["doc_id"], strict=True)) | set(
        zip(treatment["query_id"], treatment["doc_id"], strict=True)
    )
    assert set(zip(shown["query_id"], shown["doc_id"], strict=True)) <= pairs
