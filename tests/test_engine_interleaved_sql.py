"""Interleaving experiments on the SQL engines: the same credits, counts and readout as memory.

The expected values are the memory engine's (its per-impression outcomes are verified
against a slow per-impression reference in test_interleaved_pipeline.py), recomputed here
per unit from its outcome tables, and on a tiny log worked out by hand. Every SQL engine
is one entry of ``ENGINES``; logs are small and random, built in ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from trees import assert_same_summary

from abrank import run_experiment
from abrank.analysis.engine import choose_engine
from abrank.cli import main
from abrank.config import load_experiment
from abrank.designs.interleaved.outcomes import load_interleaved, score_interleaved
from abrank.designs.interleaved.sql import score_interleaved_sql
from abrank.errors import DataError

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo-interleaving.yaml"

#: The SQL engines under test, by the name ``engine=`` takes.
ENGINES = ["duckdb", "spark"]


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """An SQL engine's name; for spark, with the test session's SparkSession running (the
    engine then runs on it, and leaves it running)."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    return request.param


TEAMS = ("bm25", "reranker", "hybrid")


# --------------------------------------------------------------------------- data


def make_log(
    seed: int,
    *,
    impressions: int = 400,
    users: int = 50,
    teams: tuple[str, ...] = TEAMS[:2],
    click_rate: float = 0.2,
    ids: str = "text",
    dwell_missing: float = 0.2,
) -> pd.DataFrame:
    """A random interleaved log: impressions of 1 to 6 results, each result's team drawn at
    random, clicks at ``click_rate`` (0: every impression a tie), dwell times around 30 s
    (``dwell_missing`` of the clicks without one), the device a property of the impression
    (a user's impressions fall in several segment values), an integer ``slot`` of the
    impression (a second segment column). ``ids``: ``text`` (i0001),
    ``int`` (integers), ``mixed`` (ids of many lengths, some of digits only, some long)."""
    rng = np.random.default_rng(seed)
    length = rng.integers(1, 7, impressions)
    impression = np.repeat(np.arange(impressions), length)
    starts = np.r_[0, np.cumsum(length)[:-1]]
    rank = np.arange(impression.size) - np.repeat(starts, length) + 1
    user = rng.integers(0, users, impressions)
    team = np.asarray(teams)[rng.integers(0, len(teams), impression.size)]
    clicked = rng.random(impression.size) < click_rate * np.where(team == teams[1], 1.4, 1.0)
    dwell = rng.choice([5.0, 29.9, 30.0, 45.0, 120.0], impression.size)
    dwell = np.where(clicked & (rng.random(impression.size) >= dwell_missing), dwell, np.nan)
    if ids == "int":
        impression_ids = (impression * 7919 + 13).astype(np.int64)
        user_ids = (user * 104729 + 5).astype(np.int64)[impression]
    elif ids == "mixed":
        shapes = [lambda i: str(i), lambda i: f"imp-{i}", lambda i: "x" * 60 + f"{i:06d}"]
        impression_ids = np.array([shapes[i % 3](i) for i in impression], dtype=object)
        names = [str(u) if u % 2 else f"user-{u}-" + "é" * (u % 4) for u in range(users)]
        user_ids = np.asarray(names, dtype=object)[user[impression]]
    else:
        impression_ids = np.array([f"i{i:04d}" for i in impression], dtype=object)
        user_ids = np.array([f"u{u:03d}" for u in user], dtype=object)[impression]
    device = np.asarray(["desktop", "mobile", "tablet"])[rng.integers(0, 3, impressions)]
    return pd.DataFrame(
        {
            "impression_id": impression_ids,
            "user_id": user_ids,
            "rank": rank,
            "doc_id": [f"d{i}-{r}" for i, r in zip(impression, rank)],
            "team": team,
            "clicked": clicked.astype(int),
            "dwell": dwell,
            "device": device[impression],
            "slot": (impression % 4).astype(np.int64),
            "query": [f"q{i % 17}" for i in impression],
        }
    )


def write_config(
    folder: Path,
    *,
    log: str = "log.parquet",
    teams: tuple[str, ...] = TEAMS[:2],
    metrics: str = "[clicks, sat_clicks]",
    analysis: str = "design: interleaved, unit: user_id, resamples: 400, seed: 3",
    extra: str = "segments: {columns: [device], min_queries: 5}",
) -> Path:
    treatments = ", ".join(f"{{name: {t}}}" for t in teams[1:])
    text = (
        f"name: sql-interleaving\nlog: {{path: {log}}}\ncontrol: {{name: {teams[0]}}}\n"
        f"treatments: [{treatments}]\nmetrics: {metrics}\nanalysis: {{{analysis}}}\n{extra}\n"
    )
    path = folder / "tdi.yaml"
    path.write_text(text)
    return path


def memory_scores(config: Path):
    experiment = load_experiment(config)
    return score_interleaved(experiment, load_interleaved(experiment))


def sql_scores(config: Path, engine: str):
    experiment = load_experiment(config)
    return score_interleaved_sql(experiment, choose_engine(experiment, engine), lambda m: None)[1]


def as_text(table: pd.DataFrame) -> pd.DataFrame:
    """A counts table with its index as text (the memory engine keeps the ids' type)."""
    index = table.index
    if isinstance(index, pd.MultiIndex):
        levels = [index.get_level_values(i).astype(str) for i in range(index.nlevels)]
        index = pd.MultiIndex.from_arrays(levels, names=index.names)
    else:
        index = pd.Index(index.astype(str), name=index.name)
    return pd.DataFrame(table.to_numpy(dtype=np.int64), index=index, columns=table.columns)


def assert_same_scores(memory, sql) -> None:
    """Per-unit counts (in the same unit order), totals and checks equal."""
    assert list(sql.unit_counts) == list(memory.unit_counts)
    for key, table in memory.unit_counts.items():
        pd.testing.assert_frame_equal(as_text(sql.unit_counts[key]), as_text(table), obj=str(key))
    assert list(sql.segment_counts) == list(memory.segment_counts)
    for column, by in memory.segment_counts.items():
        for key, table in by.items():
            pd.testing.assert_frame_equal(
                as_text(sql.segment_counts[column][key]), as_text(table), obj=f"{column} {key}"
            )
    for name in ("impressions", "units", "clicked", "per_arm", "first_team", "same_lists"):
        assert getattr(sql, name) == getattr(memory, name), name


def outcome_totals(memory) -> dict:
    """W/T/L and credits per (pair, credit) straight from the memory engine's outcomes."""
    out = {}
    for key, table in memory.outcomes.items():
        outcome = table["outcome"].to_numpy()
        out[key] = (
            int((outcome == 1).sum()),
            int((outcome == 0).sum()),
            int((outcome == -1).sum()),
        )
    return out


# --------------------------------------------------------------------------- counts


CASES = {
    "two teams": dict(),
    "ties and no clicks": dict(click_rate=0.03, impressions=300),
    "multileaving": dict(teams=TEAMS),
    "sat clicks with missing dwell": dict(dwell_missing=0.6),
    "integer ids": dict(ids="int"),
    "long and mixed ids": dict(ids="mixed"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_per_unit_counts_equal_the_memory_engines(tmp_path, engine, case):
    options = CASES[case]
    teams = options.get("teams", TEAMS[:2])
    make_log(7, **options).to_parquet(tmp_path / "log.parquet")
    extra = "segments: {columns: [device, slot], min_queries: 5}"
    if len(teams) > 2:
        extra += "\ncomparisons: all-pairs"
    config = write_config(tmp_path, teams=teams, extra=extra)
    memory, sql = memory_scores(config), sql_scores(config, engine)
    assert_same_scores(memory, sql)
    # the counts add up to the memory engine's own per-impression outcomes
    for key, (wins, ties, losses) in outcome_totals(memory).items():
        table = sql.unit_counts[key]
        assert (table["wins"].sum(), table["ties"].sum(), table["losses"].sum()) == (
            wins,
            ties,
            losses,
        )
    if len(teams) > 2:  # all pairs: 3 pairs, 2 credits each
        assert len(sql.unit_counts) == 6
    for table in sql.unit_counts.values():  # an impression without a click is a tie
        impressions = table[["wins", "ties", "losses"]].sum(axis=1)
        assert (table["ties"] >= impressions - table["clicked"]).all()
    if case == "ties and no clicks":
        assert (sql.unit_counts[("reranker", "clicks")]["clicked"] == 0).any()
    assert sql.outcomes and all(t.empty for t in sql.outcomes.values())


def test_counts_by_hand_on_a_tiny_log(tmp_path, engine):
    """Three impressions of two users; the counts worked out by hand."""
    log = pd.DataFrame(
        {
            "impression_id": ["i1"] * 3 + ["i2"] * 2 + ["i3"] * 2,
            "user_id": ["u1"] * 3 + ["u1"] * 2 + ["u2"] * 2,
            "rank": [1, 2, 3, 1, 2, 1, 2],
            "doc_id": list("abcdefg"),
            "team": ["b", "a", "b", "a", "b", "b", "a"],
            "clicked": [1, 1, 1, 0, 0, 0, 1],
            "dwell": [40.0, 50.0, np.nan, np.nan, np.nan, np.nan, 10.0],
        }
    )
    log.to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path, teams=("a", "b"), extra="")
    sql = sql_scores(config, engine)
    # i1: b 2 clicks vs a 1 (win), by sat (b's rank-3 click has no dwell): 1 vs 1 (tie)
    # i2: no click (tie); i3: a clicked (loss), not satisfied (dwell 10): tie
    clicks = sql.unit_counts[("b", "clicks")]
    sat = sql.unit_counts[("b", "sat_clicks")]
    assert list(clicks.index) == ["u1", "u2"]
    assert clicks.to_dict("list") == {
        "wins": [1, 0],
        "ties": [1, 0],
        "losses": [0, 1],
        "clicked": [1, 1],
        "first_control": [1, 0],
        "first_treatment": [1, 1],
    }
    assert sat[["wins", "ties", "losses"]].to_dict("list") == {
        "wins": [0, 0],
        "ties": [2, 1],
        "losses": [0, 0],
    }
    assert (sql.impressions, sql.units, sql.clicked) == (3, 2, 2)
    assert sql.per_arm == {"a": (3, 2), "b": (3, 2)}
    assert sql.first_team == {"a": 1, "b": 2}
    assert sql.same_lists is None


# --------------------------------------------------------------------------- readouts


def test_the_bundled_demo_gives_the_same_summary(engine):
    if not DEMO.exists():
        pytest.skip("experiments/demo-interleaving.yaml is not in this checkout")
    memory = run_experiment(DEMO)
    sql = run_experiment(DEMO, engine=engine)
    assert_same_summary(memory.summary, sql.summary)
    checks = sql.summary["diagnostics"]["interleaving"]
    assert checks["same_lists"] is not None and checks["same_lists"]["compared"] > 0
    assert len(sql.summary["comparisons"]) > 2  # both credits, overall and per device
    pd.testing.assert_frame_equal(memory.unit_values, sql.unit_values)
    assert sql.per_query.empty and list(sql.per_query.columns) == list(memory.per_query.columns)


def test_multileaving_all_pairs_with_segments_and_the_bootstrap(tmp_path, engine):
    """Few units (the bootstrap draws units by index, so their order matters too)."""
    make_log(11, impressions=150, users=25, teams=TEAMS, ids="mixed").to_parquet(
        tmp_path / "log.parquet"
    )
    config = write_config(
        tmp_path,
        teams=TEAMS,
        analysis="design: interleaved, unit: user_id, resamples: 300, seed: 4, "
        "tests: [t, bootstrap], primary_test: bootstrap",
        extra="segments: {columns: [device], min_queries: 5}\ncomparisons: all-pairs",
    )
    memory = run_experiment(config)
    sql = run_experiment(config, engine=engine)
    assert_same_summary(memory.summary, sql.summary)
    assert len(memory.summary["comparisons"]) == 6 * 4  # 3 pairs x 2 credits x (1 + 3 devices)
    pd.testing.assert_frame_equal(memory.unit_values, sql.unit_values)


def test_each_impression_its_own_unit_and_a_csv_log(tmp_path, engine):
    make_log(3, impressions=200, ids="int").to_csv(tmp_path / "log.csv", index=False)
    config = write_config(
        tmp_path,
        log="log.csv",
        analysis="design: interleaved, unit: impression_id, tests: [t]",
    )
    memory, sql = run_experiment(config), run_experiment(config, engine=engine)
    assert_same_summary(memory.summary, sql.summary)
    assert memory.summary["comparisons"][0]["n_units"] == {"all": 200}


def test_a_folder_of_parquet_files_equals_the_single_file(tmp_path, engine):
    log = make_log(5, impressions=300)
    log.to_parquet(tmp_path / "log.parquet")
    parts = tmp_path / "logs"
    for day, ids in enumerate(np.array_split(log["impression_id"].unique(), 3)):
        folder = parts / f"date=2026-01-0{day + 1}"
        folder.mkdir(parents=True)
        log[log["impression_id"].isin(ids)].to_parquet(folder / "part-0.parquet")
    memory = run_experiment(write_config(tmp_path))
    (tmp_path / "folder").mkdir()
    sql = run_experiment(write_config(tmp_path / "folder", log=str(parts)), engine=engine)
    left = {k: v for k, v in memory.summary.items() if k not in ("inputs", "config_path")}
    right = {k: v for k, v in sql.summary.items() if k not in ("inputs", "config_path")}
    assert_same_summary(left, right)
    assert [i["rows"] for i in sql.summary["inputs"]] == [
        int(log["impression_id"].isin(ids).sum())
        for ids in np.array_split(log["impression_id"].unique(), 3)
    ]


def test_a_duckdb_connection_runs_the_interleaved_experiment(tmp_path, engine):
    import duckdb

    make_log(2, impressions=100).to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path, analysis="design: interleaved, unit: user_id, tests: [t]")
    connection = duckdb.connect()
    readout = run_experiment(config, engine=connection)
    assert_same_summary(run_experiment(config).summary, readout.summary)
    assert connection.execute("SELECT 1").fetchone() == (1,)


# --------------------------------------------------------------------------- bad input


def bad_log(**change) -> pd.DataFrame:
    log = pd.DataFrame(
        {
            "impression_id": ["i1", "i1", "i2", "i2", "i3"],
            "user_id": ["u1", "u1", "u2", "u2", "u3"],
            "rank": [1, 2, 1, 2, 1],
            "doc_id": list("abcde"),
            "team": ["a", "b", "b", "a", "a"],
            "clicked": [1, 0, 0, 1, 0],
            "dwell": [40.0, np.nan, np.nan, 10.0, np.nan],
            "device": ["m", "m", "d", "d", "m"],
        }
    )
    for column, (row, value) in change.items():
        log[column] = log[column].astype(object)
        log.loc[row, column] = value
    return log


BAD = [
    (
        dict(team=(2, "c")),
        r"log\.parquet: row 3: team: expected one of the arms \(a, b\), got 'c'",
    ),
    (
        dict(rank=(1, 1)),
        r"log\.parquet: row 2: rank: expected each rank once per impression, got rank 1 again "
        r"in impression 'i1' \(first at row 1\)$",
    ),
    (
        dict(rank=(4, 3)),
        r"log\.parquet: impression 'i3' \(row 5\): rank: expected ranks 1\.\.3, rank 1 is "
        r"missing$",
    ),
    (
        dict(user_id=(1, "u9")),
        r"log\.parquet: row 2: user_id: expected one user_id per impression, got 'u9' in "
        r"impression 'i1', which has 'u1' at row 1$",
    ),
    (
        dict(device=(3, "m")),
        r"log\.parquet: row 4: device: expected one device per impression, got 'm' in "
        r"impression 'i2', which has 'd' at row 3$",
    ),
    (dict(clicked=(3, 7)), r"log\.parquet: row 4: clicked: expected 0, 1, true or false, got 7$"),
    (dict(dwell=(0, -1.0)), r"row 1: dwell: expected a number of seconds >= 0, got -1$"),
    (dict(user_id=(4, None)), r"row 5: user_id: expected a non-empty id, got an empty value$"),
    (dict(team=(4, None)), r"row 5: team: expected a non-empty id, got an empty value$"),
    (dict(device=(4, None)), r"row 5: device: expected a segment value, got an empty value$"),
    (
        dict(team=(slice(None), "a")),
        r"team: expected results from every arm \(a, b\), got none from 'b'",
    ),
]


@pytest.mark.parametrize("change, message", BAD)
def test_bad_rows_and_impressions_name_the_file_row_and_impression(
    tmp_path, engine, change, message
):
    bad_log(**change).to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path, teams=("a", "b"), extra="segments: {columns: [device]}")
    with pytest.raises(DataError, match=message):
        run_experiment(config, engine=engine)


def test_missing_columns_list_the_columns_found(tmp_path, engine):
    bad_log().drop(columns="team").to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path, teams=("a", "b"), extra="")
    with pytest.raises(
        DataError,
        match=r"log\.parquet: expected a team column \(the arm that contributed each result\), "
        r"found columns: impression_id, user_id, rank, doc_id, clicked, dwell, device",
    ):
        run_experiment(config, engine=engine)
    bad_log().drop(columns="dwell").to_parquet(tmp_path / "log.parquet")
    with pytest.raises(DataError, match=r"expected a dwell column \(metrics: sat_clicks"):
        run_experiment(config, engine=engine)
    config = write_config(
        tmp_path, teams=("a", "b"), analysis="design: interleaved, unit: session", extra=""
    )
    with pytest.raises(DataError, match=r"expected a session column \(analysis\.unit\), found"):
        run_experiment(config, engine=engine)
    bad_log().iloc[:0].to_parquet(tmp_path / "log.parquet")
    with pytest.raises(
        DataError,
        match=r"log\.parquet: expected at least one row, got none \(columns: impression_id, "
        r"user_id, rank, doc_id, team, clicked, dwell, device\)",
    ):
        run_experiment(write_config(tmp_path, teams=("a", "b"), extra=""), engine=engine)


def test_a_csv_log_names_the_impression_and_an_impression_in_two_files(tmp_path, engine):
    bad_log(team=(2, "c")).to_csv(tmp_path / "log.csv", index=False)
    config = write_config(tmp_path, log="log.csv", teams=("a", "b"), extra="")
    # line 4 of the file, or its impression where the engine numbers no CSV rows (Spark)
    where = "impression 'i2'" if engine == "spark" else "line 4"
    with pytest.raises(DataError, match=rf"log\.csv: {where}: team: expected one of"):
        run_experiment(config, engine=engine)
    parts = tmp_path / "logs"
    parts.mkdir()
    log = bad_log()
    log.iloc[:1].to_parquet(parts / "a.parquet")
    log.iloc[1:].to_parquet(parts / "b.parquet")
    config = write_config(tmp_path, log="logs", teams=("a", "b"), extra="")
    with pytest.raises(
        DataError, match=r"a\.parquet and .*b\.parquet: impression_id: expected each impression"
    ):
        run_experiment(config, engine=engine)


def test_deep_ranks_beyond_the_bit_check_are_checked_too(tmp_path, engine):
    rank = list(range(1, 71))
    log = pd.DataFrame(
        {
            "impression_id": "i1",
            "user_id": "u1",
            "rank": rank,
            "doc_id": [f"d{r}" for r in rank],
            "team": ["a", "b"] * 35,
            "clicked": 0,
        }
    )
    log.to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path, teams=("a", "b"), metrics="[clicks]", extra="")
    readout = run_experiment(config, engine=engine)
    assert readout.summary["comparisons"][0]["ties"] == 1
    log.loc[69, "rank"] = 65  # 1..69 and 65 again: 70 rows, top rank 69
    log.loc[68, "rank"] = 70
    log.to_parquet(tmp_path / "log.parquet")
    with pytest.raises(
        DataError, match=r"rank: expected each rank once per impression, got rank 65 again in "
        r"impression 'i1'"
    ):
        run_experiment(config, engine=engine)


def test_the_cli_runs_on_an_sql_engine_and_exits_2_on_bad_input(tmp_path, engine, capsys):
    make_log(1, impressions=120).to_parquet(tmp_path / "log.parquet")
    out = tmp_path / "out"
    config = write_config(tmp_path, analysis="design: interleaved, unit: user_id, tests: [t]")
    args = ["run", str(config), "--engine", engine, "--quiet", "--no-history"]
    assert main([*args, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["design"] == "interleaved"
    capsys.readouterr()
    for change, message in [
        (dict(team=(2, "c")), "team: expected one of the arms (a, b), got 'c'"),
        (dict(rank=(1, 1)), "rank: expected each rank once per impression, got rank 1 again"),
        ("no team", "expected a team column (the arm that contributed each result)"),
    ]:
        log = bad_log().drop(columns="team") if change == "no team" else bad_log(**change)
        log.to_parquet(tmp_path / "log.parquet")
        bad = write_config(tmp_path, teams=("a", "b"), extra="")
        code = main(["run", str(bad), "--engine", engine, "--out", str(tmp_path / "bad")])
        err = capsys.readouterr().err
        assert code == 2, err
        assert message in err and "Traceback" not in err
        assert not (tmp_path / "bad").exists()


def test_validate_reads_the_log_on_the_configs_engine_with_the_same_counts(
    tmp_path, engine, capsys
):
    make_log(4, impressions=150).to_parquet(tmp_path / "log.parquet")
    config = write_config(tmp_path)
    assert main(["validate", str(config)]) == 0
    memory = capsys.readouterr().out
    config.write_text(config.read_text() + f"engine: {engine}\n")
    assert main(["validate", str(config)]) == 0
    sql = capsys.readouterr().out
    assert sql.split(": ok: ")[1] == memory.split(": ok: ")[1]
    assert "interleaved log of 150 impressions" in sql


def test_a_comparison_from_per_unit_counts_equals_the_one_from_impressions(tmp_path):
    """compare_interleaved on PreferenceCounts with first_team gives the frame's result."""
    from abrank.interleaving import impression_outcomes
    from abrank.stats import PreferenceCounts, compare_interleaved

    log = make_log(9, impressions=300)
    frame = impression_outcomes(log, control="bm25", treatment="reranker")
    options = dict(unit="user_id", n_resamples=500, seed=1, tests=("t", "bootstrap"))
    expected = compare_interleaved(frame, teams=("bm25", "reranker"), **options)
    codes, _ = pd.factorize(frame["user_id"], sort=False)
    outcome = frame["outcome"].to_numpy()
    counts = PreferenceCounts(
        wins=np.bincount(codes, weights=outcome == 1),
        ties=np.bincount(codes, weights=outcome == 0),
        losses=np.bincount(codes, weights=outcome == -1),
        clicked=np.bincount(codes, weights=frame["clicked"].to_numpy()),
    )
    first = frame["first_team"].value_counts().to_dict()
    result = compare_interleaved(counts, teams=("bm25", "reranker"), first_team=first, **options)
    assert_same_summary(expected.to_dict(), result.to_dict())
    assert result.interleaving["first_team"]["units"] == {
        "bm25": int((frame["first_team"] == "bm25").sum()),
        "reranker": int((frame["first_team"] == "reranker").sum()),
    }
