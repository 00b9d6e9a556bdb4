"""The counterfactual design on DuckDB gives the memory engine's numbers: every number of
summary.json's ``comparisons`` and ``diagnostics`` (propensities, support, estimates,
weights, clipping, the PBM check) within 1e-9, on the bundled demo and on small simulated
logs (one log with an arm column, a log per arm in two formats, a logged propensity
column); and a bad log is refused with exit 2 and the memory engine's message."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from abrank.cli import main
from abrank.demo.click_world import make_world

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "data"
DEMO = ROOT / "experiments" / "demo-counterfactual.yaml"

CONFIG = """\
name: cf-engines
log: {path: log.csv}
control: {name: A}
treatments: [{name: B}]
candidates:
  - {name: best, path: best.csv}
  - {name: half, path: half.csv}
metrics: [click_rr@10, ctr@3, clicks@10]
analysis: {design: counterfactual, unit: user_id, propensity_resamples: 10}
"""


#: The minimum detectable effect is a root found to scipy's ``brentq`` ``xtol=1e-5``
#: (:func:`abrank.stats.fast.ttest_effect_size`): the last bit of a multiplicity-adjusted
#: alpha (0.01 or 0.010000000000000002, as the p-values' rounding orders the steps) moves
#: it by up to that tolerance, so it is compared to 1e-5.
LOOSER = {"mde": 1e-5}


def differences(a: Any, b: Any, path: str = "", tolerance: float = 1e-9) -> list[str]:
    """Where two JSON values differ: other keys, lengths, texts, or numbers further apart
    than ``tolerance`` (relative beyond 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [
            d
            for key in a
            for d in differences(a[key], b[key], f"{path}.{key}", LOOSER.get(key, tolerance))
        ]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} against {len(b)} items"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]", tolerance)
        ]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        if math.isnan(a) and math.isnan(b):
            return []
        close = abs(a - b) <= tolerance * max(1.0, abs(a))
        return [] if close else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def summaries(config: Path, tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """summary.json of a run on memory and of one on duckdb."""
    out = []
    for engine in ("memory", "duckdb"):
        folder = tmp / f"out-{engine}"
        assert main(["run", str(config), "--engine", engine, "--out", str(folder), "--quiet"]) == 0
        out.append(json.loads((folder / "summary.json").read_text()))
    return out[0], out[1]


def assert_same_numbers(memory: dict[str, Any], duckdb: dict[str, Any]) -> None:
    for key in ("comparisons", "diagnostics"):
        assert memory[key], key
        assert differences(memory[key], duckdb[key], key) == []


def test_the_comparison_sees_a_difference_beyond_1e9():
    assert differences({"a": [1.0, "x"]}, {"a": [1.0 + 1e-12, "x"]}) == []
    assert differences({"a": [1.0]}, {"a": [1.0 + 1e-8]}) == [".a[0]: 1.0 != 1.00000001"]
    assert differences({"a": 1}, {"b": 1}) == [": keys ['a', 'b']"]
    assert differences({"mde": 0.1}, {"mde": 0.1 + 1e-7}) == []


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small simulated click log of rankers A and B, a candidate within what was logged
    and one half unlogged."""
    folder = tmp_path_factory.mktemp("cf-engines")
    rng = np.random.default_rng(21)
    world = make_world(rng, queries=40, pool=25)
    log = world.log(rng, 3000, {"A": 0.5, "B": 0.5})
    log.to_csv(folder / "log.csv", index=False)
    shown = [set(a) | set(b) for a, b in zip(world.lists["A"], world.lists["B"], strict=True)]
    best, half = [], []
    for q, seen in enumerate(shown):
        docs = sorted(seen, key=lambda d: -world.alpha[q, d])[:10]
        best += [(str(q), str(q * 1000 + d), r + 1) for r, d in enumerate(docs)]
        unseen = [d for d in range(world.alpha.shape[1]) if d not in seen][:5]
        # A's top five reversed (a top 3 of its own: a candidate whose top k is the logging
        # arm's has a zero delta, whose t statistic is rounding noise), then five unlogged
        mixed = [*world.lists["A"][q][:5][::-1], *unseen]
        half += [(str(q), str(q * 1000 + d), r + 1) for r, d in enumerate(mixed)]
    for name, rows in (("best", best), ("half", half)):
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder, world, log


def write(folder: Path, text: str, name: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_one_log_with_an_arm_column_gives_the_same_numbers(world, tmp_path):
    folder, _, _ = world
    memory, duckdb = summaries(write(folder, CONFIG, "one.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)
    assert duckdb["diagnostics"]["support"]["half"] == pytest.approx(0.5)


def test_a_log_per_arm_gives_the_same_numbers(world, tmp_path):
    folder, _, log = world
    log[log["arm"] == "A"].drop(columns="arm").to_parquet(folder / "a.parquet")
    log[log["arm"] == "B"].drop(columns="arm").to_csv(folder / "b.csv", index=False)
    text = CONFIG.replace("log: {path: log.csv}\n", "").replace(
        "control: {name: A}\ntreatments: [{name: B}]",
        "control: {name: A, path: a.parquet}\ntreatments: [{name: B, path: b.csv}]",
    )
    memory, duckdb = summaries(write(folder, text, "per-arm.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)


def test_a_logged_propensity_column_gives_the_same_numbers(world, tmp_path):
    folder, world_, log = world
    log = log.assign(propensity=world_.examination[log["rank"] - 1])
    log.to_csv(folder / "with-propensity.csv", index=False)
    text = CONFIG.replace("log.csv", "with-propensity.csv").replace(
        "analysis:", "propensities: column\nanalysis:"
    )
    memory, duckdb = summaries(write(folder, text, "column.yaml"), tmp_path)
    assert duckdb["diagnostics"]["propensity_fit"]["source"] == "column"
    assert_same_numbers(memory, duckdb)


def test_a_glob_of_files_on_duckdb_gives_the_one_files_numbers(world, tmp_path):
    """DuckDB reads a log's glob (here the log cut in two Parquet files by impression), as
    for an online test; the memory engine reads the one file."""
    folder, _, log = world
    parts = tmp_path / "parts"
    parts.mkdir()
    first = log["impression_id"] <= log["impression_id"].median()
    log[first].to_parquet(parts / "part-0.parquet", index=False)
    log[~first].to_parquet(parts / "part-1.parquet", index=False)
    log.to_parquet(tmp_path / "whole.parquet", index=False)
    for name in ("best.csv", "half.csv"):
        (tmp_path / name).symlink_to(folder / name)
    outs = []
    for engine, path in (("memory", "whole.parquet"), ("duckdb", "parts/*.parquet")):
        config = write(tmp_path, CONFIG.replace("log.csv", path), f"{engine}.yaml")
        out = tmp_path / f"out-{engine}"
        assert main(["run", str(config), "--engine", engine, "--out", str(out), "--quiet"]) == 0
        outs.append(json.loads((out / "summary.json").read_text()))
    assert_same_numbers(*outs)
    assert len(outs[1]["inputs"]) == 4  # the two parts and the candidates


def test_units_dropped_for_being_in_two_arms_give_the_same_numbers(world, tmp_path):
    folder, _, log = world
    log = log.copy()
    users = log.loc[log["arm"] == "A", "user_id"].unique()[:5]
    shown = log.loc[log["arm"] == "B", "impression_id"].unique()[:5]
    for user, impression in zip(users, shown, strict=True):
        log.loc[log["impression_id"] == impression, "user_id"] = user
    log.to_csv(folder / "mixed.csv", index=False)
    text = CONFIG.replace("log.csv", "mixed.csv").replace(
        "unit: user_id,", "unit: user_id, mixed_units: drop,"
    )
    memory, duckdb = summaries(write(folder, text, "mixed.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)
    kept = log[~log["user_id"].isin(users)]
    assert duckdb["diagnostics"]["logged_arms"] == {
        arm: int(kept.loc[kept["arm"] == arm, "impression_id"].nunique()) for arm in ("A", "B")
    }


@pytest.mark.slow
def test_the_demo_gives_the_same_numbers_on_both_engines(tmp_path):
    if not (DATA / "demo-online-log.parquet").is_file():
        pytest.skip("the demo's data is not written (abrank demo-data)")
    text = DEMO.read_text().replace("data/", f"{DATA}/")
    text = text.replace("propensity_resamples: 100", "propensity_resamples: 10")
    memory, duckdb = summaries(write(tmp_path, text, "demo.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)


def refusals(capsys, config: Path, folder: Path) -> list[str]:
    """The error message of validate and run on each engine (each exits 2, writes nothing)."""
    messages = []
    for engine in ("memory", "duckdb"):
        for command in ("validate", "run"):
            args = [command, str(config), "--engine", engine]
            out = folder / f"never-{engine}"
            code = main([*args, "--out", str(out)] if command == "run" else args)
            err = capsys.readouterr().err
            assert code == 2 and "Traceback" not in err
            assert not out.exists()
            messages.append(err.strip().splitlines()[-1])
    return messages


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda log: log.drop(columns="query"),
            "bad.csv: query: expected a `query` column (the query text or id that candidate "
            "rankings are keyed by), found columns: impression_id, user_id, rank, doc_id, "
            "clicked",
        ),
        (
            lambda log: log.assign(clicked=log["clicked"].where(log.index != 7, 2)),
            "bad.csv: line 9: clicked: expected 0, 1, true or false, got 2",
        ),
        (
            lambda log: log.assign(query=log["query"].astype(object).where(log.index != 4, None)),
            "bad.csv: query: expected a query on every row, got empty values",
        ),
        (
            lambda log: log.assign(propensity=np.where(log.index == 3, 1.5, 0.5)),
            "bad.csv: propensity: expected a number in (0, 1] on every row, got '1.5'",
        ),
    ],
    ids=["no-query-column", "bad-click", "empty-query", "propensity-out-of-range"],
)
def test_a_bad_log_gets_the_same_refusal_on_both_engines(world, tmp_path, capsys, change, expected):
    folder, _, log = world
    change(log.copy()).to_csv(tmp_path / "bad.csv", index=False)
    for name in ("best.csv", "half.csv"):
        (tmp_path / name).symlink_to(folder / name)
    text = CONFIG.replace("log.csv", "bad.csv")
    if "propensity" in expected:
        text = text.replace("analysis:", "propensities: column\nanalysis:")
    messages = refusals(capsys, write(tmp_path, text, "bad.yaml"), tmp_path)
    assert len(set(messages)) == 1, messages
    assert expected in messages[0]


def test_one_logged_ranker_whose_lists_vary_is_enough(world, tmp_path):
    """A ranker that shuffles its lists (here: A's and B's impressions all logged as A's)
    is the only logged arm: the config needs no treatment, both engines give the same
    numbers, and the propensities are the two-arm config's (the same logged rows)."""
    folder, _, log = world
    log.assign(arm="A").to_csv(folder / "one-ranker.csv", index=False)
    text = CONFIG.replace("log.csv", "one-ranker.csv").replace("treatments: [{name: B}]\n", "")
    memory, duckdb = summaries(write(folder, text, "one-ranker.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)
    assert duckdb["diagnostics"]["logged_arms"] == {"A": int(log["impression_id"].nunique())}
    two = tmp_path / "two"
    assert main(["run", str(write(folder, CONFIG, "two.yaml")), "--out", str(two), "--quiet"]) == 0
    both = json.loads((two / "summary.json").read_text())["diagnostics"]["propensities"]
    assert differences(memory["diagnostics"]["propensities"], both) == []


def test_one_logged_ranker_with_fixed_lists_needs_given_propensities(world, tmp_path, capsys):
    folder, world_, log = world
    log[log["arm"] == "A"].to_csv(folder / "fixed.csv", index=False)
    text = CONFIG.replace("log.csv", "fixed.csv").replace("treatments: [{name: B}]\n", "")
    config = write(folder, text, "fixed.yaml")
    for engine in ("memory", "duckdb"):
        args = ["run", str(config), "--engine", engine, "--out", str(tmp_path / "never")]
        assert main(args) == 2
        assert "propensities: harvest: expected a (query, document) shown at rank" in (
            capsys.readouterr().err
        )
    given = ", ".join(f"{r + 1}: {float(v)!r}" for r, v in enumerate(world_.examination))
    stated = text.replace("analysis:", f"propensities: {{{given}}}\nanalysis:")
    memory, duckdb = summaries(write(folder, stated, "fixed-given.yaml"), tmp_path)
    assert_same_numbers(memory, duckdb)
    assert memory["diagnostics"]["propensity_fit"]["source"] == "given"


def test_planning_a_rule_for_one_logged_ranker_is_refused(world, tmp_path, capsys):
    folder, _, log = world
    log.assign(arm="A").to_csv(folder / "one-ranker.csv", index=False)
    text = (
        CONFIG.replace("log.csv", "one-ranker.csv")
        .replace("treatments: [{name: B}]\n", "")
        .replace(
            "metrics: [click_rr@10, ctr@3, clicks@10]",
            "metrics: [{name: click_rr@10, role: success}]",
        )
    )
    config = write(folder, text, "one-ranker-rule.yaml")
    assert main(["simulate", str(config), "--out", str(tmp_path / "plan")]) == 2
    err = capsys.readouterr().err
    assert "treatments: expected a treatment to plan the decision rule for, got none" in err
    assert "Traceback" not in err


def test_other_designs_still_need_a_treatment(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("query_id,doc_id,rank\nq1,a,1\n")
    (tmp_path / "x.yaml").write_text(
        "name: x\ncontrol: {name: a, path: a.csv}\nmetrics: [mrr@10]\n"
    )
    assert main(["validate", str(tmp_path / "x.yaml")]) == 2
    assert (
        "line 1: treatments: expected at least one treatment arm ({name, path}, or {name} "
        "beside a log:), got none" in capsys.readouterr().err
    )


def test_spark_gives_the_same_numbers_and_refusals(world, tmp_path, capsys, spark):
    """The same definitions run on Spark (the test session's SparkSession): the numbers of
    a log with an arm column and a logged propensity column, and a log without ``query``
    refused with the memory engine's message."""
    folder, world_, log = world
    log.assign(propensity=world_.examination[log["rank"] - 1]).to_csv(
        folder / "spark-log.csv", index=False
    )
    text = CONFIG.replace("log.csv", "spark-log.csv").replace(
        "analysis:", "propensities: column\nanalysis:"
    )
    config = write(folder, text, "spark.yaml")
    outs = []
    for engine in ("memory", "spark"):
        out = tmp_path / f"out-{engine}"
        assert main(["run", str(config), "--engine", engine, "--out", str(out), "--quiet"]) == 0
        outs.append(json.loads((out / "summary.json").read_text()))
    assert_same_numbers(*outs)
    log.drop(columns="query").to_csv(folder / "spark-noquery.csv", index=False)
    config = write(folder, CONFIG.replace("log.csv", "spark-noquery.csv"), "spark-bad.yaml")
    messages = []
    for engine in ("memory", "spark"):
        out = tmp_path / f"never-{engine}"
        assert main(["run", str(config), "--engine", engine, "--out", str(out)]) == 2
        messages.append(capsys.readouterr().err.strip().splitlines()[-1])
        assert not out.exists()
    assert messages[0] == messages[1]
    assert "spark-noquery.csv: query: expected a `query` column" in messages[0]
