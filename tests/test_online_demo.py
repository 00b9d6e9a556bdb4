"""The online demo generator: determinism, the committed files, the log's shape and its figures.

The figures (click_rr@10 per arm, users in both arms, pre-period coverage and correlation,
the CUPED variance reduction) are recomputed here by plain pandas over the committed files,
independently of the generator's own code.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from abrank.cli import main
from abrank.demo.online import (
    DEFAULT_ONLINE_SEED,
    LOG_COLUMNS,
    PRE_COLUMNS,
    OnlineDemo,
    make_online_demo,
    write_log_parquet,
    write_online_demo,
)
from abrank.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "data"
LOG_FILE = DATA / "demo-online-log.parquet"
PRE_FILE = DATA / "demo-online-pre.csv.gz"
START = pd.Timestamp("2026-11-02T00:00:00Z").timestamp()


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return pd.read_parquet(LOG_FILE)


@pytest.fixture(scope="module")
def pre() -> pd.DataFrame:
    return pd.read_csv(PRE_FILE)


@pytest.fixture(scope="module")
def impressions(log: pd.DataFrame) -> pd.DataFrame:
    """One row per impression: its arm, user, device and click metrics, by plain pandas."""
    ordered = log.sort_values(["impression_id", "rank"])
    clicks = ordered[ordered["clicked"] == 1]
    first_click = clicks.groupby("impression_id")["rank"].min()
    top3 = clicks[clicks["rank"] <= 3].groupby("impression_id").size()
    long = clicks[clicks["dwell"] >= 30].groupby("impression_id").size()
    frame = ordered.groupby("impression_id")[["user_id", "arm", "device"]].first()
    frame["click_rr@10"] = (1.0 / first_click).reindex(frame.index, fill_value=0.0)
    frame["ctr@3"] = (top3.reindex(frame.index, fill_value=0) > 0).astype(float)
    frame["abandonment"] = (~frame.index.isin(first_click.index)).astype(float)
    frame["sat_ctr@10"] = (long.reindex(frame.index, fill_value=0) > 0).astype(float)
    return frame


def _parquet_writer_matches() -> tuple[bool, str]:
    created_by = pq.ParquetFile(LOG_FILE).metadata.created_by
    wrote = created_by.rsplit(" ", 1)[-1]
    reason = (
        f"{LOG_FILE.name} was written by pyarrow {wrote}; pyarrow {pa.__version__} is installed"
    )
    return wrote == pa.__version__, reason


# --------------------------------------------------------------------------- the committed files


def test_committed_pre_table_equals_a_fresh_generation(tmp_path: Path) -> None:
    log_path, pre_path = write_online_demo(tmp_path)
    assert [log_path.name, pre_path.name] == [LOG_FILE.name, PRE_FILE.name]
    assert pre_path.read_bytes() == PRE_FILE.read_bytes(), (
        f"{PRE_FILE.name} drifted from the generator; regenerate with `abrank demo-data`"
    )
    same, reason = _parquet_writer_matches()
    if not same:
        pytest.skip(reason)
    assert log_path.read_bytes() == LOG_FILE.read_bytes(), (
        f"{LOG_FILE.name} drifted from the generator; regenerate with `abrank demo-data`"
    )


def test_committed_log_holds_the_generated_rows_whatever_the_pyarrow(log: pd.DataFrame) -> None:
    """Where the Parquet bytes cannot be compared, the rows still can."""
    fresh = make_online_demo().log
    expected = fresh.assign(device=fresh["device"].astype(str), arm=fresh["arm"].astype(str))
    pd.testing.assert_frame_equal(
        log.astype({"device": str, "arm": str}), expected, check_dtype=False
    )


def test_committed_files_are_small_and_plain() -> None:
    assert LOG_FILE.stat().st_size + PRE_FILE.stat().st_size < 4 * 1024 * 1024
    metadata = pq.ParquetFile(LOG_FILE).metadata
    assert metadata.metadata is None  # no pandas (or Arrow schema) metadata
    header = PRE_FILE.read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[3] & 0x08 == 0  # no file name stored
    assert header[4:8] == b"\x00\x00\x00\x00"  # MTIME = 0


def test_same_seed_gives_identical_frames_and_bytes_and_another_seed_differs(
    tmp_path: Path,
) -> None:
    first = make_online_demo(users=400, seed=3)
    again = make_online_demo(users=400, seed=3)
    pd.testing.assert_frame_equal(first.log, again.log)
    pd.testing.assert_frame_equal(first.pre, again.pre)
    other = make_online_demo(users=400, seed=4)
    assert not first.log["clicked"].equals(other.log["clicked"])
    for format in ("parquet", "csv.gz"):
        a = write_online_demo(tmp_path / "a", users=400, seed=3, format=format)
        b = write_online_demo(tmp_path / "b", users=400, seed=3, format=format)
        c = write_online_demo(tmp_path / "c", users=400, seed=4, format=format)
        for x, y, z in zip(a, b, c, strict=True):
            assert x.read_bytes() == y.read_bytes(), x.name
            assert x.read_bytes() != z.read_bytes(), x.name


def test_both_log_formats_hold_the_frame(tmp_path: Path) -> None:
    data = make_online_demo(users=300, seed=8)
    parquet_log, _ = write_online_demo(tmp_path / "p", users=300, seed=8)
    text_log, pre_path = write_online_demo(tmp_path / "t", users=300, seed=8, format="csv.gz")
    assert parquet_log.name == "demo-online-log.parquet"
    assert text_log.name == "demo-online-log.csv.gz"
    expected = data.log.astype({"device": str, "arm": str})
    from_parquet = pd.read_parquet(parquet_log)
    assert list(from_parquet.columns) == list(LOG_COLUMNS)
    assert pq.ParquetFile(parquet_log).schema_arrow.field("user_id").type == pa.int64()
    pd.testing.assert_frame_equal(from_parquet.astype({"device": str, "arm": str}), expected)
    from_text = pd.read_csv(text_log)
    pd.testing.assert_frame_equal(
        from_text.astype({"device": str, "arm": str}), expected, check_dtype=False
    )
    # Not clicked: the dwell field is empty in the text.
    with gzip.open(text_log, "rt") as handle:
        header, first = handle.readline(), handle.readline()
    assert header.strip() == ",".join(LOG_COLUMNS)
    fields = first.strip().split(",")
    assert (fields[5] == "") == (fields[4] == "0")
    pd.testing.assert_frame_equal(pd.read_csv(pre_path), data.pre)


# --------------------------------------------------------------------------- shape


def test_users_impressions_and_arms(log: pd.DataFrame, impressions: pd.DataFrame) -> None:
    assert list(log.columns) == list(LOG_COLUMNS)
    assert log["user_id"].nunique() == 20_000
    assert 115_000 <= len(impressions) <= 125_000
    assert set(log["arm"]) == {"bm25", "reranker"}
    # A binomial 50/50 split: close to half, not exactly half.
    users = impressions.groupby("arm")["user_id"].nunique()
    assert users["bm25"] != users["reranker"]
    assert abs(users["bm25"] / 20_000 - 0.5) < 0.012  # about 3 standard errors
    # About 0.2% of the users appear in both arms.
    arms_per_user = impressions.groupby("user_id")["arm"].nunique()
    assert 0.001 <= (arms_per_user == 2).mean() <= 0.003


def test_every_impression_has_ranks_1_to_10_and_one_context(log: pd.DataFrame) -> None:
    ordered = log.sort_values(["impression_id", "rank"])
    assert len(log) % 10 == 0
    assert (ordered["rank"].to_numpy() == np.tile(np.arange(1, 11), len(log) // 10)).all()
    assert (ordered.groupby("impression_id").size() == 10).all()
    assert not log.duplicated(["impression_id", "doc_id"]).any()
    context = ["user_id", "timestamp", "query", "device", "arm"]
    assert (log.groupby("impression_id")[context].nunique() == 1).all().all()
    # A device per user; impressions are numbered in time order within the two weeks.
    assert (log.groupby("user_id")["device"].nunique() == 1).all()
    firsts = ordered[ordered["rank"] == 1]
    assert firsts["timestamp"].is_monotonic_increasing
    assert firsts["impression_id"].tolist() == list(range(1, len(firsts) + 1))
    assert firsts["timestamp"].min() >= START and firsts["timestamp"].max() < START + 14 * 86_400


def test_clicks_and_dwell(log: pd.DataFrame) -> None:
    assert set(log["clicked"].unique()) == {0, 1}
    clicked = log["clicked"] == 1
    assert log.loc[clicked, "dwell"].notna().all()
    assert log.loc[~clicked, "dwell"].isna().all()
    dwell = log.loc[clicked, "dwell"]
    assert (dwell > 0).all()
    # sat_dwell 30 s separates long clicks from short ones: both kinds are common.
    assert 0.4 < (dwell >= 30).mean() < 0.8
    # The position-based model: the click rate falls with the rank.
    by_rank = log.groupby("rank")["clicked"].mean()
    assert by_rank.is_monotonic_decreasing
    assert by_rank[1] > 3 * by_rank[10]


def test_device_shares_are_skewed(impressions: pd.DataFrame) -> None:
    shares = impressions.groupby("user_id")["device"].first().value_counts(normalize=True)
    assert shares["mobile"] == pytest.approx(0.58, abs=0.02)
    assert shares["desktop"] == pytest.approx(0.33, abs=0.02)
    assert shares["tablet"] == pytest.approx(0.09, abs=0.01)


# --------------------------------------------------------------------------- figures


def test_the_reranker_lifts_click_rr_at_10_by_about_8_percent(impressions: pd.DataFrame) -> None:
    means = impressions.groupby("arm")[["click_rr@10", "ctr@3", "abandonment", "sat_ctr@10"]].mean()
    lift = means.loc["reranker", "click_rr@10"] / means.loc["bm25", "click_rr@10"] - 1
    assert 0.06 <= lift <= 0.10
    assert 0.25 < means.loc["bm25", "click_rr@10"] < 0.40
    assert means.loc["reranker", "ctr@3"] > means.loc["bm25", "ctr@3"]
    assert means.loc["reranker", "abandonment"] < means.loc["bm25", "abandonment"]
    assert means.loc["reranker", "sat_ctr@10"] > means.loc["bm25", "sat_ctr@10"]


def test_pre_period_covers_most_users_and_predicts_their_behaviour(
    pre: pd.DataFrame, impressions: pd.DataFrame
) -> None:
    assert list(pre.columns) == list(PRE_COLUMNS)
    assert pre["user_id"].is_unique and pre["user_id"].is_monotonic_increasing
    assert pre["impressions"].min() >= 1
    assert pre[["click_rr@10", "ctr@3", "abandonment"]].apply(lambda c: c.between(0, 1)).all().all()
    users = impressions.groupby("user_id")["click_rr@10"].mean()
    assert set(pre["user_id"]) <= set(users.index)
    coverage = len(pre) / len(users)
    assert 0.80 <= coverage <= 0.85
    # Everyone was on production before: the pre-period mean is near the control arm's.
    control = impressions.loc[impressions["arm"] == "bm25", "click_rr@10"].mean()
    pre_mean = np.average(pre["click_rr@10"], weights=pre["impressions"])
    assert pre_mean == pytest.approx(control, abs=0.03)
    # The same latent propensity drives both periods.
    joined = pre.set_index("user_id").join(users.rename("period"), how="inner")
    assert joined["click_rr@10"].corr(joined["period"]) > 0.4


def test_cuped_on_the_pre_period_removes_a_fifth_to_two_fifths_of_the_variance(
    pre: pd.DataFrame, impressions: pd.DataFrame
) -> None:
    """Regression adjustment of each user's mean on the pre-period mean, new users at the mean."""
    users = impressions.groupby("user_id").agg(period=("click_rr@10", "mean"), arm=("arm", "first"))
    covariate = pre.set_index("user_id")["click_rr@10"].reindex(users.index)
    users["pre"] = covariate.fillna(covariate.mean())
    for _, arm in users.groupby("arm"):
        y, x = arm["period"].to_numpy(), arm["pre"].to_numpy()
        theta = np.cov(y, x)[0, 1] / np.var(x, ddof=1)
        reduction = 1 - np.var(y - theta * x, ddof=1) / np.var(y, ddof=1)
        assert 0.18 <= reduction <= 0.40


# --------------------------------------------------------------------------- API and CLI


def test_summary_and_defaults() -> None:
    data = make_online_demo(users=500, seed=2)
    assert isinstance(data, OnlineDemo)
    summary = data.to_dict()
    json.dumps(summary)
    first = data.log[data.log["rank"] == 1]
    assert summary["rows"] == len(data.log) == 10 * len(first)
    assert summary["impressions"] == len(first)
    assert summary["impressions_per_arm"] == first["arm"].astype(str).value_counts().to_dict()
    assert (
        summary["users_per_arm"]
        == first.groupby("arm", observed=True)["user_id"].nunique().to_dict()
    )
    assert summary["pre_users"] == len(data.pre)
    assert (summary["seed"], summary["users"]) == (2, 500)
    assert DEFAULT_ONLINE_SEED == 20261201
    # impressions_per_user sets the mean (the benchmark's 5 per user).
    five = make_online_demo(users=4000, seed=2, impressions_per_user=5)
    assert five.to_dict()["impressions"] / 4000 == pytest.approx(5, abs=0.2)


def test_the_log_alone_is_the_same_log_and_writes_at_any_zstd_level(tmp_path: Path) -> None:
    full = make_online_demo(users=600, seed=6)
    alone = make_online_demo(users=600, seed=6, pre_period=False)
    pd.testing.assert_frame_equal(alone.log, full.log)
    assert alone.pre.empty and list(alone.pre.columns) == list(PRE_COLUMNS)
    assert len(full.pre) > 0
    fast = write_log_parquet(tmp_path / "fast.parquet", full.log, compression_level=1)
    small = write_log_parquet(tmp_path / "small.parquet", full.log)
    for path in (fast, small):
        read = pd.read_parquet(path).astype({"device": str, "arm": str})
        pd.testing.assert_frame_equal(read, full.log.astype({"device": str, "arm": str}))
    assert fast.read_bytes() != small.read_bytes()


def test_bad_arguments_are_rejected_with_clear_messages(tmp_path: Path) -> None:
    cases = [
        ({"users": 5}, "make_online_demo: users: expected an integer >= 100, got 5"),
        ({"seed": -1}, "make_online_demo: seed: expected a non-negative integer, got -1"),
        (
            {"impressions_per_user": 0.5},
            "make_online_demo: impressions_per_user: expected a number from 1 to 1000, got 0.5",
        ),
    ]
    for options, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            make_online_demo(**options)
    with pytest.raises(
        ConfigError,
        match=re.escape("write_online_demo: format: expected one of parquet, csv.gz, got 'xml'"),
    ):
        write_online_demo(tmp_path, format="xml")
    assert not any(tmp_path.iterdir())


def test_demo_data_verb_writes_the_online_demo_too(tmp_path: Path, capsys) -> None:
    code = main(["demo-data", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    names = [Path(line).name for line in out.splitlines()]
    # the offline demo's files (and its machine labels) come first, then the online ones
    assert [name for name in names if "online" in name or "interleaving" in name] == [
        "demo-online-log.parquet",
        "demo-online-pre.csv.gz",
        "demo-interleaving-log.parquet",
    ]
    assert names[:3] == ["demo-control.csv.gz", "demo-treatment.jsonl.gz", "demo-judgments.tsv"]
    for name in names:
        if name.endswith(".parquet") and not _parquet_writer_matches()[0]:
            continue
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


def test_demo_data_verb_passes_users_and_seed_and_rejects_too_few_users(
    tmp_path: Path, capsys
) -> None:
    code = main(
        [
            "demo-data",
            "--out",
            str(tmp_path / "cli"),
            "--users",
            "300",
            "--seed",
            "5",
            "--queries",
            "20",
        ]
    )
    assert code == 0, capsys.readouterr().err
    direct = write_online_demo(tmp_path / "api", users=300, seed=5)
    for path in direct:
        assert (tmp_path / "cli" / path.name).read_bytes() == path.read_bytes(), path.name
    capsys.readouterr()
    code = main(["demo-data", "--out", str(tmp_path / "bad"), "--users", "5"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip() == "abrank: error: --users: expected a whole number >= 100, got 5"
    assert not (tmp_path / "bad").exists()
