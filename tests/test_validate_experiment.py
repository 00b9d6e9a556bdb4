"""``abrank.validate_experiment``: the inputs opened and counted as ``abrank validate`` does.

Each fixture is small enough to count by hand; the expected counts are written beside it.
A bad input raises the very error that the command reports with exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import abrank
from abrank.analysis.validate import ArmInputs, ValidationResult, validate_experiment
from abrank.cli import main
from abrank.errors import ConfigError, DataError

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ["memory", "duckdb"]

# control: q1, q2, q3 (3 queries); treatment: q1, q2 (2 queries, q3 missing);
# judgments: q1, q2 (grade 0 still judged) and q4 (in no ranking): 3 judged queries
CONTROL = "query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq2,c,1\nq3,d,1\n"
TREATMENT = "query_id,doc_id,rank\nq1,b,1\nq1,a,2\nq2,c,1\n"
JUDGMENTS = "query_id\tdoc_id\tgrade\nq1\ta\t1\nq2\tc\t0\nq4\tx\t2\n"
OFFLINE = """name: tiny
control: {{name: old, path: {control}}}
treatments: [{{name: new, path: treatment.csv}}]
judgments: {{path: judgments.tsv}}
metrics: [mrr@10, ndcg@10]
"""

# bm25: impressions i1, i2 (user u1) and i3 (u2): 3 impressions, 2 users;
# rr: i4 (u3), i5 (u4), i6 (u2): 3 impressions, 3 users; u2 is in both arms
ONLINE_LOG = """impression_id,user_id,rank,doc_id,clicked,arm
i1,u1,1,d1,1,bm25
i1,u1,2,d2,0,bm25
i2,u1,1,d1,0,bm25
i3,u2,1,d3,0,bm25
i4,u3,1,d1,1,rr
i5,u4,1,d2,0,rr
i5,u4,2,d1,1,rr
i6,u2,1,d3,1,rr
"""
ONLINE = """name: ab
log: {path: online.csv}
control: {name: bm25}
treatments: [{name: rr}]
metrics: [click_rr@10, ctr@3]
analysis: {design: independent, unit: user_id}
"""

# impressions i1..i4 of users u1 (i1, i2), u2 (i3), u3 (i4): 4 impressions, 3 users;
# bm25 contributed to i1, i3, i4 (3 impressions), rr to i1, i2 (2)
INTERLEAVED_LOG = """impression_id,user_id,rank,doc_id,team,clicked
i1,u1,1,d1,bm25,1
i1,u1,2,d2,rr,0
i2,u1,1,d3,rr,0
i2,u1,2,d4,rr,1
i3,u2,1,d5,bm25,0
i3,u2,2,d6,bm25,0
i4,u3,1,d7,bm25,1
"""
INTERLEAVED = """name: tdi
log: {path: inter.csv}
control: {name: bm25}
treatments: [{name: rr}]
metrics: [clicks]
analysis: {design: interleaved, unit: user_id}
"""


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def offline(tmp_path: Path) -> Path:
    write(
        tmp_path,
        {
            "control.csv": CONTROL,
            "treatment.csv": TREATMENT,
            "judgments.tsv": JUDGMENTS,
            "tiny.yaml": OFFLINE.format(control="control.csv"),
        },
    )
    return tmp_path / "tiny.yaml"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_offline_experiment_counts_each_arms_queries_and_the_judged_ones(offline, engine):
    result = validate_experiment(offline, engine=engine)
    assert result == ValidationResult(
        config=str(offline),
        experiment="tiny",
        kind="offline",
        metrics=("mrr@10", "ndcg@10"),
        engine=engine,
        arms=(ArmInputs("old", queries=3), ArmInputs("new", queries=2)),
        judged_queries=3,
    )
    assert result.found == "old (3 queries), new (2 queries); 3 judged queries; metrics mrr@10, ndcg@10"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_online_experiment_counts_impressions_units_and_mixed_units(tmp_path, engine):
    write(tmp_path, {"online.csv": ONLINE_LOG, "ab.yaml": ONLINE})
    result = validate_experiment(tmp_path / "ab.yaml", engine=engine)
    assert (result.kind, result.engine, result.unit) == ("online", engine, "user_id")
    assert result.arms == (
        ArmInputs("bm25", impressions=3, units=2),
        ArmInputs("rr", impressions=3, units=3),
    )
    assert result.mixed_units == 1
    assert result.judged_queries is None and result.impressions is None
    assert result.found == (
        "bm25 (3 impressions, 2 user_id values), rr (3 impressions, 3 user_id values); "
        "1 user_id values in more than one arm; metrics click_rr@10, ctr@3"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_an_interleaved_experiment_counts_the_log_and_each_teams_impressions(tmp_path, engine):
    write(tmp_path, {"inter.csv": INTERLEAVED_LOG, "tdi.yaml": INTERLEAVED})
    result = validate_experiment(tmp_path / "tdi.yaml", engine=engine)
    assert (result.kind, result.impressions, result.units, result.unit) == (
        "interleaved",
        4,
        3,
        "user_id",
    )
    assert result.arms == (ArmInputs("bm25", impressions=3), ArmInputs("rr", impressions=2))
    assert result.found == (
        "interleaved log of 4 impressions, 3 user_id values; teams bm25 (3 impressions), "
        "rr (2 impressions); credits clicks"
    )


def test_the_result_is_json_safe_and_the_command_prints_its_line(offline, capsys):
    result = validate_experiment(offline)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["arms"] == [
        {"name": "old", "queries": 3, "impressions": None, "units": None},
        {"name": "new", "queries": 2, "impressions": None, "units": None},
    ]
    assert (data["judged_queries"], data["engine"], data["checked"]) == (3, "memory", True)
    assert data["found"] == result.found
    assert main(["validate", str(offline)]) == 0
    assert capsys.readouterr().out == f"{offline}: ok: tiny: {result.found}\n"
    assert result.line() == f"{offline}: ok: tiny: {result.found}"


def test_an_experiment_object_is_validated_as_its_config_file(offline):
    experiment = abrank.load_experiment(offline)
    assert validate_experiment(experiment) == validate_experiment(offline)
    assert abrank.validate_experiment is validate_experiment
    assert "validate_experiment" in dir(abrank)


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_data_raises_the_error_the_command_reports_with_exit_2(offline, engine, capsys):
    (offline.parent / "bad.csv").write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,x\n")
    config = offline.parent / "bad.yaml"
    config.write_text(OFFLINE.format(control="bad.csv"))
    with pytest.raises(DataError) as caught:
        validate_experiment(config, engine=engine)
    assert str(caught.value) == f"{offline.parent / 'bad.csv'}: line 3: rank: expected a number, got 'x'"
    assert main(["validate", str(config), "--engine", engine]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"abrank: error: {caught.value}\n"


def test_a_bad_engine_name_is_a_config_error(offline):
    with pytest.raises(ConfigError, match=r"engine: expected one of .*got 'memroy'"):
        validate_experiment(offline, engine="memroy")


def test_a_dated_config_is_checked_for_a_date_and_only_as_a_config_without_one(tmp_path):
    for day, control in (("2026-03-01", CONTROL), ("2026-03-02", "query_id,doc_id,rank\nq1,a,1\n")):
        (tmp_path / day).mkdir()
        write(tmp_path / day, {"control.csv": control, "treatment.csv": TREATMENT})
    (tmp_path / "judgments.tsv").write_text(JUDGMENTS)
    config = tmp_path / "dated.yaml"
    config.write_text(
        OFFLINE.replace("tiny", "dated")
        .format(control="'{date}/control.csv'")
        .replace("path: treatment.csv", "path: '{date}/treatment.csv'")
    )
    undated = validate_experiment(config)
    assert (undated.checked, undated.engine, undated.arms) == (False, None, ())
    assert undated.found == "dated config (give --date to check its files)"
    # the second day's control holds q1 only
    second = validate_experiment(config, date="2026-03-02")
    assert (second.date, second.arms[0], second.judged_queries) == (
        "2026-03-02",
        ArmInputs("old", queries=1),
        3,
    )
    with pytest.raises(DataError) as caught:
        validate_experiment(config, date="2026-03-03")
    assert str(caught.value) == (
        f"{tmp_path / '2026-03-03' / 'control.csv'}: control.path: expected the input of "
        "2026-03-03, got no such file (--missing skip exits 99 instead)"
    )


def test_the_bundled_interleaving_demo_counts_its_log(capsys):
    # the committed log's figures (abrank.demo.interleaving): 12,064 impressions of 3,000
    # users; each team's impressions counted here from the file itself
    log = pd.read_parquet(ROOT / "experiments" / "data" / "demo-interleaving-log.parquet")
    per_team = log.groupby("team", observed=True)["impression_id"].nunique()
    result = validate_experiment(ROOT / "experiments" / "demo-interleaving.yaml")
    assert (result.impressions, result.units) == (12_064, 3_000)
    assert {arm.name: arm.impressions for arm in result.arms} == {
        team: int(n) for team, n in per_team.items()
    }
    assert [arm.name for arm in result.arms] == ["bm25", "reranker"]
