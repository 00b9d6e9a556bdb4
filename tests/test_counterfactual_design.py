"""The counterfactual design end to end on small simulated logs: its verdicts, the support
rule, given propensities, and every refused input (exit 2 through the CLI, the message
naming the field or file)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.cli import main
from abrank.demo.click_world import make_world
from abrank.errors import ConfigError, DataError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def world_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cf-world")
    rng = np.random.default_rng(8)
    world = make_world(rng, queries=60, pool=30)
    log = world.log(rng, 6000, {"A": 0.5, "B": 0.5})
    log.to_csv(folder / "log.csv", index=False)
    shown = [set(a) | set(b) for a, b in zip(world.lists["A"], world.lists["B"], strict=True)]
    # a better ranker within what was logged: the shown documents by alpha, top 10
    good = []
    for q, seen in enumerate(shown):
        docs = sorted(seen, key=lambda d: -world.alpha[q, d])[:10]
        good += [(str(q), str(q * 1000 + d), r + 1) for r, d in enumerate(docs)]
    pd.DataFrame(good, columns=["query_id", "doc_id", "rank"]).to_csv(
        folder / "good.csv", index=False
    )
    # half of each top 10 unlogged: five of A's documents, then five no log showed
    rows = []
    for q, seen in enumerate(shown):
        unseen = [d for d in range(world.alpha.shape[1]) if d not in seen][:5]
        docs = [*world.lists["A"][q][:5], *unseen]
        assert len(unseen) == 5
        rows += [(str(q), str(q * 1000 + d), r + 1) for r, d in enumerate(docs)]
    pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"]).to_csv(
        folder / "half.csv", index=False
    )
    return folder, world


CONFIG = """\
name: cf-test
log: {path: log.csv}
control: {name: A}
treatments: [{name: B}]
candidates:
  - {name: good, path: good.csv}
  - {name: half, path: half.csv}
metrics: [click_rr@10, clicks@10]
analysis: {design: counterfactual, unit: user_id, propensity_resamples: 10, resamples: 300}
"""


def _write(folder: Path, text: str = CONFIG, name: str = "cf.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_candidate_half_unlogged_gets_the_support_warning_and_no_verdict(world_files):
    folder, _ = world_files
    summary = abrank.run_experiment(_write(folder)).summary
    verdicts = {(c["treatment"], c["metric"]): c["verdict"] for c in summary["comparisons"]}
    assert verdicts[("half", "click_rr@10")] == "unsupported"
    assert verdicts[("half", "clicks@10")] == "unsupported"
    assert verdicts[("good", "click_rr@10")] in ("win", "loss", "inconclusive")
    support = summary["diagnostics"]["support"]
    assert support["half"] == pytest.approx(0.5)
    assert support["good"] == 0.0
    assert any(
        w.startswith("half: 50.0% of its top-10 results were never shown")
        for w in summary["diagnostics"]["warnings"]
    )


def test_given_propensities_are_used_as_stated(world_files):
    folder, world = world_files
    given = ", ".join(f"{r + 1}: {v:.6f}" for r, v in enumerate(world.examination))
    text = CONFIG.replace("analysis:", f"propensities: {{{given}}}\nanalysis:")
    summary = abrank.run_experiment(_write(folder, text, "given.yaml")).summary
    ranks = summary["diagnostics"]["propensities"]
    assert [r["estimate"] for r in ranks] == pytest.approx(list(world.examination), abs=1e-6)
    assert summary["diagnostics"]["propensity_fit"]["source"] == "given"
    # given propensities have no noise of their own: the interval is the units' alone
    entry = summary["diagnostics"]["estimates"]["click_rr@10"]["snips"]["good"]
    assert entry["se_propensities"] == 0.0
    low, high = entry["ci"]
    assert (high - low) / 2 == pytest.approx(1.959963984540054 * entry["se_units"], rel=1e-9)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("analysis: {", "propensities: {0: 1.0, 1: 0.5}\nanalysis: {"),
            "propensities: expected ranks 1, 2, ... up to the deepest with none missing, got 0, 1",
        ),
        (
            ("analysis: {", "propensities: {1: 1.0, 2: 1.5}\nanalysis: {"),
            "propensities[2]: expected a propensity in (0, 1], got 1.5",
        ),
        (
            ("propensity_resamples: 10", "propensity_resamples: 10, max_unsupported: 1.5"),
            "analysis.max_unsupported",
        ),
        (
            ("metrics: [click_rr@10, clicks@10]", "metrics: [abandonment]"),
            "metrics[0]: expected a click metric the position-based model predicts (click_rr@k, ctr@k, clicks@k), got 'abandonment'",
        ),
        (
            (
                "candidates:\n  - {name: good, path: good.csv}\n  - {name: half, path: half.csv}\n",
                "",
            ),
            "candidates: expected at least one candidate ranking",
        ),
        (("unit: user_id, ", ""), "analysis.unit: expected the unit the logs cluster on"),
    ],
)
def test_bad_config_is_refused_with_exit_2(world_files, capsys, change, expected):
    folder, _ = world_files
    old, new = change
    assert old in CONFIG
    config = _write(folder, CONFIG.replace(old, new), "bad.yaml")
    with pytest.raises(ConfigError) as caught:
        abrank.load_experiment(config)
    assert expected in str(caught.value)
    assert main(["run", str(config), "--out", str(folder / "never")]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert not (folder / "never").exists()


def test_a_log_without_the_query_column_is_refused(world_files, capsys):
    folder, _ = world_files
    log = pd.read_csv(folder / "log.csv").drop(columns="query")
    log.to_csv(folder / "noquery.csv", index=False)
    config = _write(folder, CONFIG.replace("log.csv", "noquery.csv"), "noquery.yaml")
    with pytest.raises(DataError, match=r"noquery.csv: query: expected a `query` column"):
        abrank.run_experiment(config)
    assert main(["run", str(config), "--out", str(folder / "never")]) == 2
    assert "found columns: impression_id" in capsys.readouterr().err


def test_a_candidate_file_of_unknown_format_is_refused(world_files, capsys):
    folder, _ = world_files
    (folder / "cand.xyz").write_text("what is this\x00\x01")
    text = CONFIG.replace("path: good.csv}", "path: cand.xyz}")
    config = _write(folder, text, "fmt.yaml")
    assert main(["run", str(config), "--out", str(folder / "never")]) == 2
    err = capsys.readouterr().err
    assert "cand.xyz" in err and "Traceback" not in err
    assert main(["validate", str(config)]) == 2  # validate opens the candidates too
    assert "cand.xyz" in capsys.readouterr().err


def test_validate_reads_the_logs_as_run_does(world_files, capsys):
    folder, _ = world_files
    assert main(["validate", str(_write(folder))]) == 0
    assert ": ok: cf-test: A (" in capsys.readouterr().out


def test_the_summary_record_is_every_designs(world_files, tmp_path):
    folder, _ = world_files
    out = tmp_path / "out"
    assert main(["run", str(_write(folder)), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    comparison = summary["comparisons"][0]
    for key in (
        "metric",
        "treatment",
        "n",
        "control_mean",
        "treatment_mean",
        "delta",
        "ci",
        "p_value",
        "p_adjusted",
        "verdict",
    ):
        assert key in comparison
    assert [a["name"] for a in summary["arms"]] == ["A", "good", "half"]
    assert summary["tests"] == ["t"]
    text = CONFIG.replace("resamples: 300", "resamples: 300, tests: [t, permutation]")
    asked = abrank.load_experiment(_write(folder, text, "tests.yaml"))
    assert asked.analysis.tests == ["t", "permutation"]
    assert (out / "per_query.csv").exists()


def test_simulate_takes_the_examination_harvested_from_a_log(world_files, tmp_path, capsys):
    folder, world = world_files
    log_config = _write(
        folder,
        CONFIG.replace("propensity_resamples: 10", "propensity_resamples: 0"),
        "harvest.yaml",
    )
    offline = ROOT / "experiments" / "demo-reranker.yaml"
    out = tmp_path / "plan"
    args = [
        "simulate",
        str(offline),
        "--propensities-from",
        str(log_config),
        "--users",
        "50",
        "100",
    ]
    assert main([*args, "--simulations", "20", "--out", str(out)]) == 0
    plan = json.loads((out / "simulation.json").read_text())
    harvested = abrank.run_experiment(log_config).summary["diagnostics"]["propensities"]
    assert plan["click_model"]["examination"] == pytest.approx(
        [r["estimate"] for r in harvested], rel=1e-12
    )
    # 6,000 impressions of two rankers: within 0.1 of the simulated 1 / rank
    assert plan["click_model"]["examination"] == pytest.approx(list(world.examination), abs=0.1)
    assert "examination by rank harvested from" in capsys.readouterr().out


def test_simulate_refuses_harvested_examination_for_the_cascade(world_files, tmp_path, capsys):
    folder, _ = world_files
    offline = ROOT / "experiments" / "demo-reranker.yaml"
    args = [
        "simulate",
        str(offline),
        "--propensities-from",
        str(_write(folder)),
        "--click-model",
        "cascade",
    ]
    assert main([*args, "--out", str(tmp_path / "plan")]) == 2
    assert "--propensities-from: expected the pbm click model" in capsys.readouterr().err


def test_given_propensities_must_cover_every_logged_rank(world_files, capsys):
    folder, _ = world_files
    text = CONFIG.replace("analysis:", "propensities: {1: 1.0, 2: 0.5, 3: 0.3}\nanalysis:")
    config = _write(folder, text, "short.yaml")
    assert main(["run", str(config), "--out", str(folder / "never")]) == 2
    assert (
        "propensities: expected a value for every logged rank 1..10, got ranks 1..3"
        in capsys.readouterr().err
    )


def test_a_logged_propensity_column_gives_the_same_estimates_as_the_same_values_given(world_files):
    folder, world = world_files
    log = pd.read_csv(folder / "log.csv")
    log["propensity"] = world.examination[log["rank"] - 1]
    log.to_csv(folder / "with-propensity.csv", index=False)
    column = CONFIG.replace("log.csv", "with-propensity.csv").replace(
        "analysis:", "propensities: column\nanalysis:"
    )
    given = ", ".join(f"{r + 1}: {float(v)!r}" for r, v in enumerate(world.examination))
    stated = CONFIG.replace("analysis:", f"propensities: {{{given}}}\nanalysis:")
    by_column = abrank.run_experiment(_write(folder, column, "column.yaml")).summary
    by_value = abrank.run_experiment(_write(folder, stated, "stated.yaml")).summary
    assert by_column["diagnostics"]["propensity_fit"]["source"] == "column"
    for a, b in zip(by_column["comparisons"], by_value["comparisons"], strict=True):
        assert a["delta"] == pytest.approx(b["delta"], rel=1e-12)
        assert a["ci"] == pytest.approx(b["ci"], rel=1e-12)


def test_a_propensity_column_out_of_range_is_refused(world_files, capsys):
    folder, _ = world_files
    log = pd.read_csv(folder / "log.csv")
    log["propensity"] = 1.5
    log.to_csv(folder / "bad-propensity.csv", index=False)
    text = CONFIG.replace("log.csv", "bad-propensity.csv").replace(
        "analysis:", "propensities: column\nanalysis:"
    )
    assert (
        main(["run", str(_write(folder, text, "badcol.yaml")), "--out", str(folder / "never")]) == 2
    )
    err = capsys.readouterr().err
    assert (
        "bad-propensity.csv: propensity: expected a number in (0, 1] on every row, got '1.5'" in err
    )
