"""gm_map: MAP's geometric mean as a metric of readouts (trec_eval's gm_map), compared on the
log scale and read as a ratio: by hand, against trec_eval's per-query AP on DL19, against
scipy's paired t interval on the logs, and refused where an online log is averaged."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click_logs import write_experiment
from scipy import stats

from abrank import evaluate
from abrank.cli import main
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.metrics import parse_metric

# q1: control AP 1 (relevant first), treatment AP 1/2 (relevant second)
# q2: control AP 1/2, treatment AP 1
# q3: control AP 0 (no relevant document retrieved), treatment AP 1/3 (third)
# q4: control AP 1/2, treatment AP 1
CONTROL = "query_id,doc_id,rank\nq1,r1,1\nq1,n1,2\nq2,n2,1\nq2,r2,2\nq3,n3,1\nq3,x3,2\n"
CONTROL += "q4,n4,1\nq4,r4,2\n"
TREATMENT = "query_id,doc_id,rank\nq1,n1,1\nq1,r1,2\nq2,r2,1\nq2,n2,2\nq3,n3,1\nq3,x3,2\n"
TREATMENT += "q3,r3,3\nq4,r4,1\nq4,n4,2\n"
JUDGMENTS = "query_id,doc_id,relevance\n" + "".join(
    f"q{q},r{q},1\nq{q},n{q},0\n" for q in range(1, 5)
)
CONTROL_AP = [1.0, 0.5, 0.0, 0.5]
TREATMENT_AP = [0.5, 1.0, 1 / 3, 1.0]


def _geometric(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-5)) for v in values) / len(values))


def _run(tmp_path, metrics: str, capsys) -> dict:
    (tmp_path / "control.csv").write_text(CONTROL)
    (tmp_path / "treatment.csv").write_text(TREATMENT)
    (tmp_path / "judgments.csv").write_text(JUDGMENTS)
    config = tmp_path / "gm.yaml"
    config.write_text(
        "name: gm\ncontrol: {name: old, path: control.csv}\n"
        "treatments: [{name: new, path: treatment.csv}]\njudgments: {path: judgments.csv}\n"
        f"metrics: [{metrics}]\nanalysis: {{seed: 1, resamples: 200}}\n"
    )
    out = tmp_path / "readout"
    code = main(["run", str(config), "--out", str(out), "--format", "json"])
    assert code == 0, capsys.readouterr().err
    return json.loads((out / "summary.json").read_text())


def test_gm_map_by_hand(tmp_path, capsys):
    summary = _run(tmp_path, "map, gm_map", capsys)
    by_metric = {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}
    gm = by_metric["gm_map"]
    control, treatment = _geometric(CONTROL_AP), _geometric(TREATMENT_AP)
    assert gm["control_mean"] == pytest.approx(control, rel=1e-12)
    assert gm["treatment_mean"] == pytest.approx(treatment, rel=1e-12)
    assert gm["delta"] == pytest.approx(treatment - control, rel=1e-12)
    assert gm["relative_lift"] == pytest.approx(treatment / control - 1, rel=1e-12)
    # the paired t interval of the log differences, as a ratio and at the control's level
    logs = np.log(np.maximum(TREATMENT_AP, 1e-5)) - np.log(np.maximum(CONTROL_AP, 1e-5))
    low, high = stats.ttest_rel(
        np.log(np.maximum(TREATMENT_AP, 1e-5)), np.log(np.maximum(CONTROL_AP, 1e-5))
    ).confidence_interval(0.95)
    assert logs.mean() == pytest.approx(math.log(treatment / control), rel=1e-12)
    assert gm["ci_unadjusted"] == pytest.approx(
        [control * math.expm1(low), control * math.expm1(high)], rel=1e-9
    )
    # the test is the log scale's: scipy's paired t on the logs
    expected_p = stats.ttest_rel(
        np.log(np.maximum(TREATMENT_AP, 1e-5)), np.log(np.maximum(CONTROL_AP, 1e-5))
    ).pvalue
    assert gm["p_value"] == pytest.approx(expected_p, rel=1e-9)
    assert any("geometric mean" in note for note in gm["notes"])
    # map, beside it, is the arithmetic mean of the same AP values
    assert by_metric["map"]["control_mean"] == pytest.approx(np.mean(CONTROL_AP), rel=1e-12)
    assert by_metric["map"]["treatment_mean"] == pytest.approx(np.mean(TREATMENT_AP), rel=1e-12)


def test_gm_map_names():
    assert parse_metric("gm_map").name == "gm_map"
    assert parse_metric("GMAP").label == "GM-MAP"
    assert parse_metric("gm_map(rel=2)").rel == 2.0
    assert parse_metric("gm_map(judged)").judged_only


def test_gm_map_is_ap_per_query_and_trec_eval_gm_map_over_queries(shared_data):
    """trec_eval's per-query map_cut_100 of a top-100 run is its AP (four decimals)."""
    folder = shared_data / "trec-dl-passage"
    run = "dl19.bm25-flat.top100"
    qrels = read_trec_qrels(folder / "qrels.dl19-passage.txt")
    values = evaluate(read_trec_run(folder / "runs" / f"{run}.txt"), qrels, ["gm_map", "map"])
    np.testing.assert_array_equal(values["gm_map"].to_numpy(), values["map"].to_numpy())
    expected = {}
    for line in (folder / "expected" / f"{run}.l1.trec_eval.txt").read_text().splitlines():
        name, query, value = line.split()
        if name == "map_cut_100" and query != "all":
            expected[query] = float(value)
    assert len(expected) == len(values) == 43
    for query, value in expected.items():
        assert values.at[query, "gm_map"] == pytest.approx(value, abs=5e-5)


def test_an_online_log_refuses_gm_map(tmp_path, capsys):
    config = write_experiment(tmp_path)
    config.write_text(config.read_text().replace("metrics: [click_rr@3,", "metrics: [gm_map,"))
    code = main(["validate", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert "metrics[0]" in err and "gm_map, a geometric mean over queries" in err
    assert "Traceback" not in err
