"""Numeric and quantile metrics of log columns (``{name, column, stat, ...}`` in ``metrics``)
end to end on the online design: the config's checks, the values every stat computes on a
log small enough to check by hand, the quantile comparison equal to
:func:`abrank.stats.quantile.compare_quantiles` on the same log, missing values counted
and reported, bad input refused with exit 2 naming the file and row, and the engines that
do not run them refusing them by name."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.cli import main
from abrank.config import load_experiment
from abrank.errors import ConfigError
from abrank.render import md_escape, render_markdown
from abrank.stats import compare_clustered
from abrank.stats.quantile import quantile_arm
from abrank.stats.quantile_bootstrap import compare_quantiles
from abrank.stats.quantile_comparison import compare_quantile_arms
from abrank.stats.unit_sums import UnitSums

HEAD = """\
name: numeric
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
analysis: {design: independent, unit: user_id, resamples: 200}
"""


def _config(folder: Path, metrics: str, extra: str = "", name: str = "exp.yaml") -> Path:
    path = folder / name
    path.write_text(HEAD + f"metrics:\n{metrics}\n" + extra)
    return path


# --------------------------------------------------------------------------- a log by hand

#  impression, user, arm, latency, revenue, clicks (one row per impression; latency_ms also
#  repeated on a second row of impression 1, revenue missing on impression 6)
HAND = [
    (1, "u1", "a", 100.0, 2.0, 1),
    (2, "u1", "a", 300.0, 0.0, 0),
    (3, "u2", "a", 200.0, 4.0, 2),
    (4, "u3", "a", 400.0, 1.0, 1),
    (5, "u4", "b", 150.0, 3.0, 1),
    (6, "u4", "b", 250.0, None, 1),
    (7, "u5", "b", 350.0, 6.0, 2),
    (8, "u6", "b", 450.0, 0.0, 0),
    (9, "u6", "b", 550.0, 5.0, 1),
]


def _hand_log(folder: Path) -> None:
    rows = []
    for impression, user, arm, latency, revenue, clicks in HAND:
        rows.append(
            dict(
                impression_id=impression,
                user_id=user,
                rank=1,
                doc_id=f"d{impression}",
                clicked=int(clicks > 0),
                latency_ms=latency,
                revenue=revenue,
                n_clicks=clicks,
                arm=arm,
            )
        )
    rows.append({**rows[0], "rank": 2, "doc_id": "d0", "clicked": 0, "revenue": None})
    pd.DataFrame(rows).to_csv(folder / "log.csv", index=False)


HAND_METRICS = """\
  - ctr@1
  - {name: latency_mean, column: latency_ms, stat: mean, direction: lower}
  - {name: revenue_per_user, column: revenue, stat: sum, direction: higher}
  - {name: revenue_per_click, stat: ratio, numerator: revenue, denominator: n_clicks,
     direction: higher}
  - {name: latency_user_mean, column: latency_ms, stat: mean, level: unit, direction: lower}
  - {name: latency_p50, column: latency_ms, stat: quantile, q: 0.5, direction: lower}"""


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hand")
    _hand_log(folder)
    readout = abrank.run_experiment(_config(folder, HAND_METRICS))
    overall = {c["metric"]: c for c in readout.summary["comparisons"] if c["segment"] is None}
    return readout, overall


def test_mean_sum_and_ratio_are_the_hand_computed_values(hand):
    _, comps = hand
    # mean latency per impression (impression 1 counted once though it has two rows)
    assert comps["latency_mean"]["control_mean"] == pytest.approx(250.0)  # 1000 / 4
    assert comps["latency_mean"]["treatment_mean"] == pytest.approx(350.0)  # 1750 / 5
    # revenue per user: a u1 2, u2 4, u3 1; b u4 3 (impression 6 missing), u5 6, u6 5
    assert comps["revenue_per_user"]["control_mean"] == pytest.approx(7.0 / 3)
    assert comps["revenue_per_user"]["treatment_mean"] == pytest.approx(14.0 / 3)
    # revenue per click: a 7 / 4; b leaves impression 6 out (no revenue): 14 / 4
    assert comps["revenue_per_click"]["control_mean"] == pytest.approx(7.0 / 4)
    assert comps["revenue_per_click"]["treatment_mean"] == pytest.approx(14.0 / 4)
    # per unit: a u1 200, u2 200, u3 400; b u4 200, u5 350, u6 500
    assert comps["latency_user_mean"]["control_mean"] == pytest.approx(800.0 / 3)
    assert comps["latency_user_mean"]["treatment_mean"] == pytest.approx(1050.0 / 3)
    assert comps["latency_p50"]["control_mean"] == pytest.approx(250.0)
    assert comps["latency_p50"]["treatment_mean"] == pytest.approx(350.0)


def test_a_mean_is_the_clustered_comparison_of_its_per_unit_sums(hand):
    _, comps = hand
    control = UnitSums(np.array([400.0, 200.0, 400.0]), np.array([2.0, 1.0, 1.0]))
    treatment = UnitSums(np.array([400.0, 350.0, 1000.0]), np.array([2.0, 1.0, 2.0]))
    expected = compare_clustered(control, treatment, n_resamples=200, seed=0, unit="user_id")
    got = comps["latency_mean"]
    assert got["delta"] == pytest.approx(expected.delta, abs=1e-9)
    assert got["ci_unadjusted"] == pytest.approx(list(expected.ci), abs=1e-9)
    assert got["p_values"]["t"] == pytest.approx(expected.p_values["t"], abs=1e-12)
    assert got["n_units"] == {"control": 3, "treatment": 3}


def test_missing_values_are_counted_and_reported(hand):
    readout, _ = hand
    numeric = readout.summary["diagnostics"]["numeric_metrics"]
    assert numeric["revenue_per_user"]["missing"] == {"a": 0, "b": 1}
    assert numeric["revenue_per_user"]["impressions"] == {"a": 4, "b": 4}
    assert numeric["latency_p50"]["missing"] == {"a": 0, "b": 0}
    assert numeric["revenue_per_click"]["describes"] == "revenue / n_clicks per impression"
    warning = (
        "revenue_per_user: no value of revenue on 1 impressions (a 0 of 4, b 1 of 5), left "
        "out of its comparisons"
    )
    assert warning in readout.summary["diagnostics"]["warnings"]
    assert md_escape(warning) in render_markdown(readout)


def test_a_quantile_comparison_is_one_comparison_record(hand):
    _, comps = hand
    comp = comps["latency_p50"]
    assert comp["ci_method"] == (
        "delta method on the quantile's influence function, clustered by user_id"
    )
    assert comp["unit"] == "user_id" and comp["n_units"] == {"control": 3, "treatment": 3}
    assert comp["n_control"] == 4 and comp["n_treatment"] == 5
    assert comp["quantile"]["q"] == 0.5
    assert comp["verdict"] in ("win", "loss", "inconclusive")


# --------------------------------------------------------------------------- a larger log


def _latency_log(folder: Path, users: int = 400, seed: int = 3, slower: float = 1.08) -> Path:
    rng = np.random.default_rng(seed)
    counts = 1 + rng.poisson(4, size=users)
    owner = np.repeat(np.arange(users), counts)
    arm = np.where(owner % 2 == 0, "a", "b")
    level = rng.normal(0, 0.4, size=users)[owner]
    latency = np.exp(5 + level + rng.normal(0, 0.5, size=owner.size))
    latency = np.round(np.where(arm == "b", latency * slower, latency), 3)
    frame = pd.DataFrame(
        {
            "impression_id": np.arange(owner.size),
            "user_id": owner,
            "rank": 1,
            "doc_id": "d",
            "clicked": rng.integers(0, 2, size=owner.size),
            "latency_ms": latency,
            "device": np.where(owner % 3 == 0, "mobile", "desktop"),
            "arm": arm,
        }
    )
    frame.to_parquet(folder / "log.parquet", index=False)
    return folder / "log.parquet"


LATENCY = """\
  - {name: ctr@1, role: success}
  - ctr@2
  - {name: latency_p95, column: latency_ms, stat: quantile, q: 0.95, direction: lower,
     role: guardrail, nim: 20%}
  - {name: latency_p50, column: latency_ms, stat: quantile, q: 0.5, direction: lower}"""


@pytest.fixture(scope="module")
def latency(tmp_path_factory):
    folder = tmp_path_factory.mktemp("latency")
    _latency_log(folder)
    path = _config(folder, LATENCY, "segments: {columns: [device]}\n")
    text = path.read_text().replace("log.csv", "log.parquet")
    path.write_text(text)
    return folder, abrank.run_experiment(path)


def test_the_readouts_quantile_is_compare_quantiles_on_the_same_log(latency):
    folder, readout = latency
    log = pd.read_parquet(folder / "log.parquet")
    a, b = log[log["arm"] == "a"], log[log["arm"] == "b"]
    # units as text: the readout codes user ids in byte order, so the bootstrap draws the
    # same units
    (expected,) = compare_quantiles(
        a["latency_ms"],
        a["user_id"].astype(str),
        b["latency_ms"],
        b["user_id"].astype(str),
        0.95,
        n_resamples=200,
        seed=0,
        metric="latency_p95",
        treatment_name="b",
    )
    comp = next(
        c
        for c in readout.summary["comparisons"]
        if c["metric"] == "latency_p95" and c["segment"] is None
    )
    assert comp["control_mean"] == pytest.approx(np.quantile(a["latency_ms"], 0.95), abs=1e-9)
    assert comp["control_mean"] == pytest.approx(expected.control.point, abs=1e-9)
    assert comp["treatment_mean"] == pytest.approx(expected.treatment.point, abs=1e-9)
    assert comp["delta"] == pytest.approx(expected.delta, abs=1e-9)
    assert comp["ci"] == pytest.approx(list(expected.ci), abs=1e-9)
    assert comp["p_value"] == pytest.approx(expected.p_value, abs=1e-12)
    assert comp["relative_ci"] == pytest.approx(list(expected.relative_ci), abs=1e-9)
    assert comp["bootstrap_ci"] == pytest.approx(list(expected.bootstrap_ci), abs=1e-9)
    assert comp["quantile"]["naive_ci"] == pytest.approx(list(expected.naive_ci), abs=1e-9)
    assert comp["role"] == "guardrail" and comp["decision_checks"]["direction"] == "lower"
    # lower is better: a significant increase is the treatment's loss
    assert comp["verdict"] == ("loss" if comp["p_value"] < 0.05 else "inconclusive")


def test_the_quantile_in_a_segment_is_its_impressions_quantile(latency):
    folder, readout = latency
    log = pd.read_parquet(folder / "log.parquet")
    mobile = log[log["device"] == "mobile"]
    comp = next(
        c
        for c in readout.summary["comparisons"]
        if c["metric"] == "latency_p50" and c["segment"] == "device=mobile"
    )
    a, b = mobile[mobile["arm"] == "a"], mobile[mobile["arm"] == "b"]
    (expected,) = compare_quantiles(
        a["latency_ms"], a["user_id"], b["latency_ms"], b["user_id"], 0.5
    )
    assert comp["delta"] == pytest.approx(expected.delta, abs=1e-9)
    assert comp["ci_unadjusted"] == pytest.approx(list(expected.ci), abs=1e-9)
    assert comp["bootstrap_ci"] is None  # the bootstrap runs on the overall comparisons


def test_the_decision_reads_the_quantile_guardrail(latency):
    _, readout = latency
    decision = readout.summary["decision"]
    (guardrail,) = decision["guardrails"]
    assert guardrail["metric"] == "latency_p95" and guardrail["margin"] == "+20%"
    assert "latency_p95" in render_markdown(readout)


def test_after_holm_a_quantiles_interval_is_redrawn_at_the_adjusted_level(tmp_path):
    _latency_log(tmp_path, slower=1.15)
    metrics = """\
  - ctr@1
  - ctr@2
  - {name: latency_p50, column: latency_ms, stat: quantile, q: 0.5, direction: lower}"""
    path = _config(tmp_path, metrics)
    path.write_text(path.read_text().replace("log.csv", "log.parquet"))
    readout = abrank.run_experiment(path)
    comp = next(c for c in readout.summary["comparisons"] if c["metric"] == "latency_p50")
    assert comp["correction"] == "holm" and comp["p_adjusted"] > comp["p_value"]
    assert comp["ci_level"] > 0.95
    log = pd.read_parquet(tmp_path / "log.parquet")
    a, b = log[log["arm"] == "a"], log[log["arm"] == "b"]
    (again,) = compare_quantiles(
        a["latency_ms"],
        a["user_id"],
        b["latency_ms"],
        b["user_id"],
        0.5,
        confidence_level=comp["ci_level"],
    )
    assert comp["ci"] == pytest.approx(list(again.ci), abs=1e-9)
    assert comp["ci_unadjusted"] != comp["ci"]


def test_a_unit_level_quantile_is_the_quantile_of_the_units_means():
    rng = np.random.default_rng(1)
    values = rng.lognormal(size=(2, 300))
    control, treatment = quantile_arm(values[0]), quantile_arm(values[1])
    comp = compare_quantile_arms(control, treatment, 0.9, unit="user_id", per_unit=True)
    (expected,) = compare_quantiles(values[0], None, values[1], None, 0.9)
    assert comp.delta == pytest.approx(expected.delta, abs=1e-12)
    assert comp.ci == pytest.approx(expected.ci, abs=1e-12)
    assert comp.ci_method.endswith("per unit (each unit one value)")
    assert comp.mde is not None and comp.mde > 0


def test_cap_winsorizes_per_arm(tmp_path):
    _hand_log(tmp_path)
    metrics = "  - {name: latency_mean, column: latency_ms, stat: mean, direction: lower, cap: 0.5}"
    summary = abrank.run_experiment(_config(tmp_path, metrics)).summary
    comp = summary["comparisons"][0]
    # a: 100 200 300 400, capped at its median 250 -> 100 250 200 250; b capped at 350
    assert comp["control_mean"] == pytest.approx((100 + 250 + 200 + 250) / 4)
    assert comp["treatment_mean"] == pytest.approx((150 + 250 + 350 + 350 + 350) / 5)
    assert summary["diagnostics"]["numeric_metrics"]["latency_mean"]["capped_at"] == {
        "a": 250.0,
        "b": 350.0,
    }


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            "{name: lat, column: latency_ms, stat: median, direction: lower}",
            "metrics[0].stat: expected one of mean, sum, ratio, quantile, got 'median'",
        ),
        (
            "{name: lat, column: latency_ms, stat: quantile, q: 95, direction: lower}",
            "metrics[0].q: expected a number from 0 to 1 (0.95 for p95), got 95",
        ),
        (
            "{name: lat, column: latency_ms, stat: quantile, q: 0.95}",
            "metrics[0].direction: expected higher or lower (which way is better for a "
            "numeric metric), got None",
        ),
        (
            "{name: lat, column: latency_ms, stat: sum, level: impression, direction: higher}",
            "metrics[0].level: expected unit for stat: sum",
        ),
        (
            "{name: lat, stat: ratio, numerator: revenue, direction: higher}",
            "metrics[0].denominator: expected a column name, got None",
        ),
        (
            "{name: lat, column: latency_ms, stat: mean, direction: lower, cap: 1.5}",
            "metrics[0].cap: expected a quantile above 0 and below 1 (0.99), got 1.5",
        ),
        (
            "{name: ctr, column: latency_ms, stat: mean, direction: lower}",
            "metrics[0].name: expected a name of your own for a numeric metric, got 'ctr'",
        ),
        (
            "{name: lat, column: latency_ms, stat: mean, direction: lower, colour: red}",
            "metrics[0].colour: unknown key",
        ),
        (
            "{name: lat, column: latency_ms, stat: mean, direction: lower, approximate: true}",
            "metrics[0].approximate: expected approximate only with stat: quantile",
        ),
        (
            "{name: lat, column: latency_ms, stat: quantile, q: 0.5, level: unit, "
            "direction: lower, approximate: true}",
            "metrics[0].approximate: expected approximate only at level: impression",
        ),
        (
            "{name: lat, column: latency_ms, stat: quantile, q: 0.5, cap: 0.99, "
            "direction: lower, approximate: true}",
            "metrics[0].approximate: expected approximate without cap",
        ),
        (
            "{name: lat, column: latency_ms, stat: quantile, q: 0.5, direction: lower, "
            "approximate: yes please}",
            "metrics[0].approximate: expected true or false, got 'yes please'",
        ),
    ],
)
def test_a_bad_numeric_metric_is_named_with_its_line(tmp_path, capsys, entry, expected):
    _hand_log(tmp_path)
    path = _config(tmp_path, f"  - {entry}")
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    assert expected in str(caught.value)
    assert "line 7" in str(caught.value)
    assert main(["validate", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_numeric_metric_in_an_offline_experiment_is_refused(tmp_path):
    (tmp_path / "a.tsv").write_text("q1\tQ0\td1\t1\t1.0\trun\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    path = tmp_path / "offline.yaml"
    path.write_text(
        "name: offline1\ncontrol: {name: a, path: a.tsv, format: trec}\n"
        "treatments: [{name: b, path: a.tsv, format: trec}]\n"
        "judgments: {path: qrels, format: qrels}\n"
        "metrics: [mrr, {name: lat, column: latency_ms, stat: mean, direction: lower}]\n"
    )
    with pytest.raises(ConfigError, match=r"expected a numeric metric only in an online A/B"):
        load_experiment(path)


def _run_exit(tmp_path: Path, capsys, log: pd.DataFrame, metrics: str) -> str:
    log.to_csv(tmp_path / "log.csv", index=False)
    path = _config(tmp_path, metrics)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _small_log() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "impression_id": [1, 2, 3, 4],
            "user_id": [1, 2, 3, 4],
            "rank": 1,
            "doc_id": "d",
            "clicked": [0, 1, 0, 1],
            "latency_ms": ["10", "12", "slow", "9"],
            "arm": ["a", "b", "a", "b"],
        }
    )


P95 = "  - {name: p95, column: latency_ms, stat: quantile, q: 0.95, direction: lower}"


def test_a_column_that_is_not_numeric_names_the_file_and_the_first_bad_row(tmp_path, capsys):
    err = _run_exit(tmp_path, capsys, _small_log(), P95)
    assert f"{tmp_path / 'log.csv'}: line 4: latency_ms: expected a number, got 'slow'" in err


def test_two_values_in_one_impression_are_refused(tmp_path, capsys):
    log = _small_log().assign(latency_ms=[10.0, 12.0, 11.0, 9.0])
    log = pd.concat([log, log.iloc[[0]].assign(rank=2, latency_ms=13.0)], ignore_index=True)
    err = _run_exit(tmp_path, capsys, log, P95)
    assert "latency_ms: expected one value per impression" in err
    assert "got 10 and 13 in impression 1" in err


def test_a_missing_column_lists_the_columns_found(tmp_path, capsys):
    log = _small_log().drop(columns="latency_ms")
    err = _run_exit(tmp_path, capsys, log, P95)
    assert "metrics: expected a column 'latency_ms'" in err
    assert "found columns: impression_id, user_id, rank, doc_id, clicked" in err


def _same(memory: dict, other: dict) -> None:
    assert len(memory["comparisons"]) == len(other["comparisons"])
    for a, b in zip(memory["comparisons"], other["comparisons"], strict=True):
        assert (a["metric"], a["segment"]) == (b["metric"], b["segment"])
        for key in ("control_mean", "treatment_mean", "delta", "p_value"):
            assert b[key] == pytest.approx(a[key], abs=1e-9, nan_ok=True), (a["metric"], key)
        # statsmodels' power solver stops at its tolerance: sums added in another order
        # move its MDE in the 6th digit
        assert b["mde"] == pytest.approx(a["mde"], rel=1e-5), a["metric"]
        for key in ("ci", "relative_ci", "bootstrap_ci"):
            if a[key] is None:
                assert b[key] is None
            else:
                assert b[key] == pytest.approx(a[key], abs=1e-9), (a["metric"], key)
    assert memory["diagnostics"]["numeric_metrics"] == other["diagnostics"]["numeric_metrics"]


def _engines_config(tmp_path: Path) -> Path:
    """The latency log with missing values and a revenue column, and a config of every
    stat, segments by device."""
    _latency_log(tmp_path)
    frame = pd.read_parquet(tmp_path / "log.parquet")
    frame.loc[frame.index[::7], "latency_ms"] = np.nan  # missing values, counted alike
    frame["revenue"] = np.where(frame["clicked"] == 1, frame["latency_ms"] / 100, 0.0)
    frame.to_parquet(tmp_path / "log.parquet", index=False)
    metrics = (
        LATENCY
        + """
  - {name: latency_capped, column: latency_ms, stat: mean, direction: lower, cap: 0.9}
  - {name: revenue_per_click, stat: ratio, numerator: revenue, denominator: clicked,
     direction: higher}
  - {name: revenue_per_user, column: revenue, stat: sum, direction: higher}"""
    )
    path = _config(tmp_path, metrics, "segments: {columns: [device]}\n")
    path.write_text(path.read_text().replace("log.csv", "log.parquet"))
    return path


def test_duckdb_gives_the_memory_engines_numeric_comparisons(tmp_path):
    path = _engines_config(tmp_path)
    memory = abrank.run_experiment(path).summary
    duckdb = abrank.run_experiment(path, engine="duckdb").summary
    _same(memory, duckdb)
    assert memory["diagnostics"]["numeric_metrics"]["latency_p95"]["missing"]["a"] > 0


def test_spark_gives_the_memory_engines_numeric_comparisons(tmp_path, spark):
    path = _engines_config(tmp_path)
    _same(abrank.run_experiment(path).summary, abrank.run_experiment(path, engine=spark).summary)


def test_two_values_in_one_impression_are_refused_on_duckdb(tmp_path, capsys):
    log = _small_log().assign(latency_ms=[10.0, 12.0, 11.0, 9.0])
    log = pd.concat([log, log.iloc[[0]].assign(rank=2, latency_ms=13.0)], ignore_index=True)
    log.to_csv(tmp_path / "log.csv", index=False)
    path = _config(tmp_path, P95, "engine: duckdb\n")
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "latency_ms: expected one value per impression" in err
    assert "got 10 and 13 in impression 1" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- sketches

SKETCHED = """\
  - ctr@1
  - {name: latency_p95, column: latency_ms, stat: quantile, q: 0.95, direction: lower,
     approximate: true}
  - {name: latency_p50, column: latency_ms, stat: quantile, q: 0.5, direction: lower,
     approximate: true}
  - {name: latency_mean, column: latency_ms, stat: mean, direction: lower}"""


def _sketched_config(tmp_path: Path, metrics: str = SKETCHED) -> Path:
    """The latency log (1,946 impressions of 400 users) with missing latencies, segments by
    device, and approximate quantiles."""
    _latency_log(tmp_path)
    frame = pd.read_parquet(tmp_path / "log.parquet")
    frame.loc[frame.index[::11], "latency_ms"] = np.nan
    frame.to_parquet(tmp_path / "log.parquet", index=False)
    path = _config(tmp_path, metrics, "segments: {columns: [device]}\n")
    path.write_text(path.read_text().replace("log.csv", "log.parquet"))
    return path


def test_the_memory_engine_computes_an_approximate_quantile_exactly(tmp_path):
    exact = abrank.run_experiment(
        _sketched_config(tmp_path, SKETCHED.replace("approximate: true", "approximate: false"))
    ).summary
    sketched = abrank.run_experiment(_sketched_config(tmp_path)).summary
    for a, b in zip(exact["comparisons"], sketched["comparisons"], strict=True):
        assert (a["metric"], a["segment"]) == (b["metric"], b["segment"])
        for key in ("control_mean", "treatment_mean", "delta", "ci", "p_value", "bootstrap_ci"):
            assert b[key] == a[key], (b["metric"], key)
        if b["metric"].startswith("latency_p"):
            assert any("the memory engine has no sketch" in n for n in b["notes"])
    sketch = sketched["diagnostics"]["numeric_metrics"]["latency_p95"]["sketch"]
    assert sketch == {"engine": "memory", "function": None, "accuracy": None, "bound": "exact"}


def _within_ranks(approximate: float, values: np.ndarray, q: float, ranks: float) -> bool:
    """Whether ``approximate`` lies between the order statistics of ``values`` (1-based
    ranks) q n - ranks and q n + ranks, one rank of slack for the rank conventions."""
    ordered = np.sort(values)
    n = ordered.size
    low = max(0, math.floor(q * n - ranks) - 2)
    high = min(n - 1, math.ceil(q * n + ranks))
    return bool(ordered[low] <= approximate <= ordered[high])


def _check_sketched(tmp_path: Path, summary: dict, exact: dict, ranks: float) -> None:
    """The approximate comparisons of ``summary`` against the exact ones of ``exact``: each
    arm's quantile within ``ranks`` of the exact order statistic, the interval close."""
    log = pd.read_parquet(tmp_path / "log.parquet").dropna(subset=["latency_ms"])
    assert len(log) > 1500 and log["user_id"].nunique() > 350
    pairs = zip(exact["comparisons"], summary["comparisons"], strict=True)
    checked = 0
    for a, b in pairs:
        assert (a["metric"], a["segment"]) == (b["metric"], b["segment"])
        if not b["metric"].startswith("latency_p"):
            assert b["delta"] == pytest.approx(a["delta"], abs=1e-9)
            continue
        q = float(b["quantile"]["q"])
        rows = log
        if b["segment"] is not None:
            column, value = b["segment"].split("=")
            rows = log[log[column] == value]
        for arm, key in (("a", "control_mean"), ("b", "treatment_mean")):
            values = rows.loc[rows["arm"] == arm, "latency_ms"].to_numpy()
            assert _within_ranks(b[key], values, q, ranks), (b["metric"], b["segment"], arm)
        if b["segment"] is None:  # the interval: as the exact one, to the sketch's ranks
            width = a["ci"][1] - a["ci"][0]
            assert b["ci"] == pytest.approx(a["ci"], abs=0.05 * width), b["metric"]
            assert b["p_value"] == pytest.approx(a["p_value"], abs=0.03), b["metric"]
        assert b["bootstrap_ci"] is None and b["n_units"] == a["n_units"]
        if b["ci_level"] > 0.95:  # Holm's level: the sketch read again, a wider interval
            low, high = b["ci_unadjusted"]
            assert b["ci"][0] < low and b["ci"][1] > high
        checked += 1
    assert any(c["ci_level"] > 0.95 for c in summary["comparisons"] if c["segment"] is None)
    assert checked == 6
    assert (
        summary["diagnostics"]["numeric_metrics"]["latency_mean"]
        == exact["diagnostics"]["numeric_metrics"]["latency_mean"]
    )
    for name in ("latency_p50", "latency_p95"):
        mine = summary["diagnostics"]["numeric_metrics"][name]
        theirs = exact["diagnostics"]["numeric_metrics"][name]
        assert (mine["impressions"], mine["missing"]) == (theirs["impressions"], theirs["missing"])
        assert mine["missing"]["a"] > 0


def test_spark_sketch_quantiles_are_within_their_rank_bound(tmp_path, spark):
    exact = abrank.run_experiment(
        _sketched_config(tmp_path, SKETCHED.replace("approximate: true", "approximate: false"))
    ).summary
    path = _sketched_config(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--engine", "spark", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    n = max(summary["diagnostics"]["numeric_metrics"]["latency_p95"]["impressions"].values())
    _check_sketched(tmp_path, summary, exact, n / 10_000)
    comp = next(c for c in summary["comparisons"] if c["metric"] == "latency_p95")
    (note,) = [n for n in comp["notes"] if n.startswith("approximate")]
    assert "percentile_approx (accuracy 10,000)" in note and "at most n / 10,000" in note
    sketch = summary["diagnostics"]["numeric_metrics"]["latency_p95"]["sketch"]
    assert sketch["engine"] == "spark" and sketch["accuracy"] == 10_000
    assert "n / 10,000" in sketch["bound"]


def test_duckdb_sketch_quantiles_say_that_duckdb_states_no_bound(tmp_path):
    exact = abrank.run_experiment(
        _sketched_config(tmp_path, SKETCHED.replace("approximate: true", "approximate: false"))
    ).summary
    summary = abrank.run_experiment(_sketched_config(tmp_path), engine="duckdb").summary
    # no stated bound: checked here against 1% of the values' ranks
    n = max(summary["diagnostics"]["numeric_metrics"]["latency_p95"]["impressions"].values())
    _check_sketched(tmp_path, summary, exact, 0.01 * n)
    comp = next(c for c in summary["comparisons"] if c["metric"] == "latency_p50")
    assert any("DuckDB states no error bound" in n for n in comp["notes"])
    sketch = summary["diagnostics"]["numeric_metrics"]["latency_p50"]["sketch"]
    assert sketch["function"] == "approx_quantile (t-digest)" and sketch["accuracy"] is None
    from abrank.render.glossary import numeric_meaning

    meaning = numeric_meaning(summary["diagnostics"]["numeric_metrics"]["latency_p50"])
    assert meaning.endswith(
        "The quantile is the engine's sketch approx_quantile (t-digest) (DuckDB states no "
        "error bound for its t-digest)."
    )


def test_the_demo_reports_its_latency_guardrail():
    summary_path = Path(__file__).resolve().parent.parent / "experiments" / "demo-online.yaml"
    experiment = load_experiment(summary_path)
    spec = experiment.numeric_metrics["latency_p95"]
    assert (spec.column, spec.stat, spec.q, spec.direction) == (
        "latency_ms",
        "quantile",
        0.95,
        "lower",
    )
    assert experiment.metric_roles["latency_p95"].role == "guardrail"
    assert json.dumps(spec.to_dict())
    assert not math.isnan(spec.q or math.nan)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_validate_checks_the_numeric_columns_on_the_runs_engine(tmp_path, capsys, engine):
    _small_log().drop(columns="latency_ms").to_csv(tmp_path / "log.csv", index=False)
    path = _config(tmp_path, P95)
    assert main(["validate", str(path), "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert "expected a column 'latency_ms'" in err and "Traceback" not in err
    _small_log().to_csv(tmp_path / "log.csv", index=False)
    assert main(["validate", str(path), "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'log.csv'}: line 4: latency_ms: expected a number, got 'slow'" in err


def test_a_quantile_without_any_value_in_an_arm_is_named(tmp_path, capsys):
    log = _small_log().assign(latency_ms=[np.nan, 12.0, np.nan, 9.0])
    err = _run_exit(tmp_path, capsys, log, P95)
    assert "p95: expected a value of latency_ms in arm a, got none" in err


def test_a_sequential_readout_gives_a_quantile_its_confidence_sequence():
    from abrank.stats.sequential import ConfidenceSequence, SequenceTuning

    rng = np.random.default_rng(2)
    units = rng.integers(0, 500, size=(2, 3000))
    values = rng.lognormal(size=(2, 3000)) * np.array([[1.0], [1.1]])
    control, treatment = quantile_arm(values[0], units[0]), quantile_arm(values[1], units[1])
    fixed = compare_quantile_arms(control, treatment, 0.95, unit="user_id")
    always = compare_quantile_arms(
        control, treatment, 0.95, unit="user_id", primary_test="sequential"
    )
    assert always.primary_test == "sequential" and always.delta == fixed.delta
    assert always.ci_method.startswith("confidence sequence (delta method on the quantile's")
    assert always.p_values["t"] == fixed.p_value
    n = control.n_units + treatment.n_units
    se = fixed.extra["quantile"]["se"]
    rho = SequenceTuning.of(None, 0.95).rho_at(n)
    sequence = ConfidenceSequence(fixed.delta, n, n * se**2, rho)
    assert always.ci == pytest.approx(sequence.interval(0.95), abs=1e-12)
    assert always.p_value == pytest.approx(sequence.p_value, abs=1e-15)
    assert always.ci[1] - always.ci[0] > fixed.ci[1] - fixed.ci[0]
    assert always.mde is not None and always.mde > fixed.mde


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_an_infinite_value_is_refused_with_its_row(tmp_path, capsys, engine):
    log = _small_log().assign(latency_ms=[10.0, 12.0, np.inf, 9.0])
    log.to_parquet(tmp_path / "log.parquet", index=False)
    path = _config(tmp_path, P95, f"engine: {engine}\n")
    path.write_text(path.read_text().replace("log.csv", "log.parquet"))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 'log.parquet'}: row 3: latency_ms: expected a finite number, got 'inf'" in err
    )


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_log_per_arm_reads_each_arms_column(tmp_path, engine):
    _latency_log(tmp_path)
    log = pd.read_parquet(tmp_path / "log.parquet")
    for arm in ("a", "b"):
        log[log["arm"] == arm].drop(columns="arm").to_csv(tmp_path / f"{arm}.csv", index=False)
    path = tmp_path / "arms.yaml"
    path.write_text(
        "name: arms\ncontrol: {name: a, path: a.csv}\ntreatments: [{name: b, path: b.csv}]\n"
        "analysis: {design: independent, unit: user_id, resamples: 200}\n"
        f"engine: {engine}\n"
        "metrics:\n  - ctr@1\n"
        "  - {name: p90, column: latency_ms, stat: quantile, q: 0.9, direction: lower}\n"
    )
    comp = next(
        c for c in abrank.run_experiment(path).summary["comparisons"] if c["metric"] == "p90"
    )
    a, b = log[log["arm"] == "a"], log[log["arm"] == "b"]
    (expected,) = compare_quantiles(
        a["latency_ms"], a["user_id"], b["latency_ms"], b["user_id"], 0.9
    )
    assert comp["delta"] == pytest.approx(expected.delta, abs=1e-9)
    assert comp["ci_unadjusted"] == pytest.approx(list(expected.ci), abs=1e-9)  # before Holm


def test_the_planner_sizes_a_test_with_a_quantile_guardrail(latency):
    from abrank.planner.rule import plan_for_rule

    folder, readout = latency
    plan = plan_for_rule(load_experiment(folder / "exp.yaml"))
    (entry,) = [m for m in plan.to_dict()["metrics"] if m["metric"] == "latency_p95"]
    comp = next(
        c
        for c in readout.summary["comparisons"]
        if c["metric"] == "latency_p95" and c["segment"] is None
    )
    assert entry["role"] == "guardrail"
    assert entry["se"] == pytest.approx(comp["quantile"]["se"], rel=1e-6)


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_sketchs_per_unit_counts_are_exact_against_its_quantile(tmp_path, request, engine):
    from abrank.analysis.engine import EngineChoice, log_sources
    from abrank.engines.column_sketch import sketch_quantiles
    from abrank.engines.column_sums import ColumnRequest
    from abrank.inputs import resolve_inputs

    connection = request.getfixturevalue("spark") if engine == "spark" else None
    experiment = load_experiment(_sketched_config(tmp_path))
    sources = [s for s, _ in log_sources(experiment, resolve_inputs(experiment), engine)]
    found = sketch_quantiles(
        EngineChoice(engine, {}, connection),
        sources,
        ColumnRequest(("latency_ms",), ("a", "b"), "user_id", ("device",)),
        "impression_id",
        {"p90": ("latency_ms", 0.9)},
        confidence_level=0.95,
    )["p90"]
    log = pd.read_parquet(tmp_path / "log.parquet")
    for arm in ("a", "b"):
        mine = log[log["arm"] == arm]
        assert found.missing[arm] == int(mine["latency_ms"].isna().sum())
        for key, sketch in [(None, found.overall[arm])] + [
            (value, found.segments[("device", value)][arm]) for value in ("desktop", "mobile")
        ]:
            rows = mine if key is None else mine[mine["device"] == key]
            rows = rows.dropna(subset=["latency_ms"])
            by_unit = rows.groupby(rows["user_id"].astype(str))["latency_ms"]
            below = by_unit.apply(lambda v, p=sketch.point: int((v <= p).sum()))
            assert sketch.below.tolist() == below.sort_index().tolist()
            assert sketch.counts.tolist() == by_unit.size().sort_index().tolist()
            if engine == "spark":  # Greenwald-Khanna returns an order statistic
                assert sketch.point in set(rows["latency_ms"])
            assert sketch.grid_values.tolist() == sorted(sketch.grid_values.tolist())
            low, high = sketch.at(0.89), sketch.at(0.91)
            assert low <= sketch.point <= high


def test_a_sketch_leaves_out_the_dropped_mixed_units(tmp_path):
    path = _sketched_config(tmp_path)
    frame = pd.read_parquet(tmp_path / "log.parquet")
    leaked = frame[frame["user_id"].isin([0, 1])].copy()  # users 0 and 1 in both arms
    leaked["arm"] = leaked["arm"].map({"a": "b", "b": "a"})
    leaked["impression_id"] += 100_000
    pd.concat([frame, leaked]).to_parquet(tmp_path / "log.parquet", index=False)
    path.write_text(
        path.read_text().replace("resamples: 200}", "resamples: 200, mixed_units: drop}")
    )
    memory = abrank.run_experiment(path).summary
    duckdb = abrank.run_experiment(path, engine="duckdb").summary
    for name in ("latency_p95", "latency_mean"):
        mine, theirs = (s["diagnostics"]["numeric_metrics"][name] for s in (duckdb, memory))
        assert (mine["impressions"], mine["missing"]) == (theirs["impressions"], theirs["missing"])
    comp = next(c for c in duckdb["comparisons"] if c["metric"] == "latency_p95")
    assert comp["n_units"] == {"control": 199, "treatment": 198}


@pytest.mark.parametrize("verb", ["run", "validate"])
def test_a_sketch_quantiles_column_is_checked_in_duckdb(tmp_path, capsys, verb):
    sketched = P95.replace("direction: lower}", "direction: lower, approximate: true}")
    path = _config(tmp_path, sketched, "engine: duckdb\n")
    out = ["--out", str(tmp_path / "out")] if verb == "run" else []
    _small_log().drop(columns="latency_ms").to_csv(tmp_path / "log.csv", index=False)
    assert main([verb, str(path), *out]) == 2
    err = capsys.readouterr().err
    assert "expected a column 'latency_ms'" in err and "Traceback" not in err
    _small_log().to_csv(tmp_path / "log.csv", index=False)
    assert main([verb, str(path), *out]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'log.csv'}: line 4: latency_ms: expected a number, got 'slow'" in err
    log = _small_log().assign(latency_ms=[10.0, 12.0, 11.0, 9.0])
    log = pd.concat([log, log.iloc[[0]].assign(rank=2, latency_ms=13.0)], ignore_index=True)
    log.to_csv(tmp_path / "log.csv", index=False)
    assert main([verb, str(path), *out]) == 2
    err = capsys.readouterr().err
    assert "latency_ms: expected one value per impression" in err
    assert "got 10 and 13 in impression 1" in err and "Traceback" not in err
