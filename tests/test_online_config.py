"""The online keys of an experiment config, and the alerts of --fail-on."""

from __future__ import annotations

import pytest

from abrank.analysis.alerts import ALERTS, fired_alerts, parse_alerts
from abrank.config import parse_experiment
from abrank.errors import ConfigError


@pytest.fixture()
def folder(tmp_path):
    for name in ("log.csv", "a.csv", "b.csv", "pre.csv"):
        (tmp_path / name).write_text("x\n1\n")
    return tmp_path


def _config(body: str, folder) -> object:
    return parse_experiment(body, source="exp.yaml", base_dir=folder)


ONLINE = """\
name: online
log: {path: log.csv}
control: {name: bm25}
treatments: [{name: reranker}]
metrics: [mrr@10]
analysis:
  design: independent
  unit: user_id
"""


def test_an_online_config_resolves_the_log_and_keeps_its_keys(folder):
    experiment = _config(
        ONLINE
        + "  sat_dwell: 45\n  expected_split: {bm25: 2, reranker: 1}\n"
        + "  covariates: {path: pre.csv}\n  mixed_units: drop\n",
        folder,
    )
    assert experiment.online
    assert experiment.log.path == str(folder / "log.csv")
    assert experiment.control.path is None
    assert experiment.analysis.unit == "user_id"
    assert experiment.analysis.sat_dwell == 45
    assert experiment.analysis.expected_split == {"bm25": 2, "reranker": 1}
    assert experiment.analysis.covariates.path == str(folder / "pre.csv")
    assert experiment.analysis.mixed_units == "drop"
    assert experiment.analysis.srm_alpha == 0.001


def test_an_offline_config_is_not_online(folder):
    experiment = _config(
        "name: x\ncontrol: {path: a.csv}\ntreatments: [{path: b.csv}]\nmetrics: [mrr@10]\n",
        folder,
    )
    assert not experiment.online
    assert experiment.analysis.unit is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            ONLINE.replace("control: {name: bm25}", "control: {name: bm25, path: a.csv}"),
            "line 3: control.path: expected no path: the experiment's `log` holds every arm",
        ),
        (
            ONLINE.replace("log: {path: log.csv}\n", ""),
            "line 2: control: path: expected the arm's log file (or one `log:` for every arm)",
        ),
        (
            ONLINE.replace("  unit: user_id\n", ""),
            "analysis.unit: expected the randomization unit of the online log",
        ),
        (
            ONLINE.replace("design: independent", "design: paired"),
            "analysis.design: expected independent with analysis.unit",
        ),
        (
            ONLINE + "  expected_split: {bm25: 0.5, treatment: 0.5}\n",
            "analysis.expected_split: expected a share for each arm (bm25, reranker), got bm25, "
            "treatment",
        ),
        (
            ONLINE + "  expected_split: {bm25: 0, reranker: 1}\n",
            "analysis.expected_split.bm25: expected a share > 0, got 0",
        ),
        (
            ONLINE.replace("  unit: user_id\n", "") + "  covariates: {path: pre.csv}\n",
            "analysis.covariates: expected analysis.unit beside covariates",
        ),
        (ONLINE + "  covariates: {path: nope.csv}\n", "expected an existing file, got 'nope.csv'"),
        (ONLINE + "  mixed_units: keep\n", "analysis.mixed_units: expected 'warn' or 'drop'"),
        (ONLINE + "  srm_alpha: 2\n", "analysis.srm_alpha: expected less than 1"),
        (ONLINE + "  unti: user_id\n", "unknown key; did you mean 'unit'?"),
    ],
)
def test_bad_online_keys_are_named_with_their_line(folder, body, expected):
    with pytest.raises(ConfigError) as error:
        _config(body, folder)
    assert expected in str(error.value)
    assert "exp.yaml" in str(error.value)


def test_fail_on_names_are_checked():
    assert parse_alerts(["srm,loss", "srm"]) == ("srm", "loss")
    with pytest.raises(ConfigError, match="--fail-on: expected alerts among srm, loss"):
        parse_alerts(["srm,stalee"])
    assert set(ALERTS) >= {"srm", "loss", "inconclusive"}


def _summary(verdicts, alarm):
    comparisons = [
        {"metric": metric, "treatment": "b", "segment": segment, "verdict": verdict}
        for metric, segment, verdict in verdicts
    ]
    srm = {"alarm": alarm, "p_value": 1e-6 if alarm else 0.4, "alpha": 0.001}
    return {"primary_metric": "m1", "comparisons": comparisons, "diagnostics": {"srm": srm}}


def test_alerts_fire_on_what_they_name_only():
    summary = _summary(
        [("m1", None, "inconclusive"), ("m2", None, "loss"), ("m1", "device=x", "loss")], True
    )
    assert fired_alerts(summary, ["srm"]) == ["srm: sample ratio mismatch (p = 1e-06 < 0.001)"]
    assert fired_alerts(summary, ["loss"]) == ["loss: m2 (b): loss"]  # not the segment's
    assert fired_alerts(summary, ["inconclusive"]) == ["inconclusive: m1 (b): inconclusive"]
    quiet = _summary([("m1", None, "win"), ("m2", None, "win")], False)
    assert fired_alerts(quiet, ["srm", "loss", "inconclusive"]) == []


def test_an_unknown_analysis_key_lists_the_statistics_keys_then_the_online_keys(folder):
    # the order of the README's config reference: the keys of every design, then those of
    # impression logs, then those of counterfactual evaluation
    with pytest.raises(ConfigError) as info:
        _config(ONLINE + "  colour: red\n", folder)
    assert str(info.value) == (
        "exp.yaml: line 9: analysis.colour: unknown key (known keys: design, "
        "missing_queries, alpha, confidence_level, primary_test, tests, sequential, "
        "sequential_tuning, resamples, correction, segment_correction, seed, "
        "judgments_estimate, unit, sat_dwell, covariates, expected_split, srm_alpha, "
        "mixed_units, max_unsupported, estimator, propensity_resamples)"
    )


def test_a_covariates_line_reports_its_path_before_the_missing_unit(folder):
    # two problems on line 8: the covariates' path comes first, then the online keys' own
    body = ONLINE.replace("  unit: user_id\n", "  covariates: {path: nowhere.csv}\n")
    with pytest.raises(ConfigError) as info:
        _config(body, folder)
    missing = (folder / "nowhere.csv").resolve()
    assert str(info.value).splitlines() == [
        "exp.yaml: 3 problems in the config:",
        "exp.yaml: line 6: analysis.unit: expected the randomization unit of the online log "
        "(e.g. user_id, or impression_id when impressions were randomized), got none",
        "exp.yaml: line 8: analysis.covariates.path: expected an existing file, got "
        f"'nowhere.csv' ({missing} does not exist)",
        "exp.yaml: line 8: analysis.covariates: expected analysis.unit beside covariates, "
        "got no unit",
    ]
