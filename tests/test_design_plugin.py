"""A design defined here, outside abrank, runs end to end with no edit inside abrank/.

The design compares the arms on the mean of a numeric log column per row, clustered on the
unit (``analysis.design: unit-mean``): it is registered with
:func:`abrank.designs.register`, and a config selecting it is validated, run on the memory
and DuckDB engines, compared, summarised and written (summary.json, the reports) by
abrank's own stages. The expected means and deltas are worked out by hand from the log
below.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import abrank
from abrank.analysis.log_columns import column_evidence
from abrank.analysis.unit_readout import build_unit_readout
from abrank.analysis.units import compare_units, sample_ratio
from abrank.designs import DESIGNS, DesignBase, register
from abrank.errors import ConfigError, DataError


class UnitMean(DesignBase):
    """The mean of a log column (a metric named as the column) per row, clustered on the
    unit; lower is better (a latency)."""

    name = "unit-mean"
    engines = ("memory", "duckdb")

    def run(self, experiment: Any, inputs: Any, say: Any, engine: Any) -> Any:
        evidence = column_evidence(experiment, inputs, engine, say=say)
        comparisons, too_small = compare_units(experiment, evidence, lower_is_better=True)
        srm = sample_ratio(experiment, evidence)
        return build_unit_readout(experiment, evidence, comparisons, too_small, srm)


# user, arm, country, latency (ms); u4's second row has no latency
LOG = """\
user_id,arm,country,latency_ms
u1,A,US,100
u1,A,US,120
u2,A,US,200
u3,A,UK,150
u3,A,UK,150
u3,A,UK,180
u4,A,UK,90
u4,A,UK,
u5,B,US,80
u5,B,US,100
u6,B,US,120
u7,B,UK,110
u7,B,UK,90
u7,B,UK,100
u8,B,UK,70
"""

# by hand: A: 100+120+200+150+150+180+90 = 990 over 7 valued rows; B: 670 over 7
CONTROL_MEAN = 990 / 7
TREATMENT_MEAN = 670 / 7
# US: A 420/3, B 300/3; UK: A 570/4, B 370/4
SEGMENT_DELTAS = {"country=UK": 370 / 4 - 570 / 4, "country=US": 300 / 3 - 420 / 3}


@pytest.fixture
def design():
    registered = register(UnitMean())
    yield registered
    DESIGNS.remove(registered.name)


def _config(tmp_path: Path, log: str = LOG, extra: str = "") -> Path:
    (tmp_path / "latency.csv").write_text(log)
    config = tmp_path / "latency.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            name: latency
            log: {path: latency.csv}
            control: {name: A}
            treatments: [{name: B}]
            metrics: [latency_ms]
            analysis: {design: unit-mean, unit: user_id, resamples: 500, seed: 3}
            segments: {columns: [country], min_queries: 2}
            """
        )
        + extra
    )
    return config


def test_the_registry_holds_the_built_in_designs_and_the_one_added(design):
    assert {"offline", "online", "interleaved"} <= set(DESIGNS)
    assert DESIGNS["unit-mean"] is design
    assert DESIGNS.added() == ["unit-mean"]


def test_a_config_selects_the_added_design(design, tmp_path):
    experiment = abrank.load_experiment(_config(tmp_path))
    assert DESIGNS.of(experiment) is design
    assert experiment.metrics == ["latency_ms"]  # the design's metric names: columns


def test_an_unknown_design_names_the_added_ones(design, tmp_path):
    config = _config(tmp_path)
    config.write_text(config.read_text().replace("design: unit-mean", "design: unit-man"))
    with pytest.raises(ConfigError) as caught:
        abrank.load_experiment(config)
    assert "analysis.design: expected 'paired', 'independent', 'interleaved', 'counterfactual' or 'unit-mean', got 'unit-man'" in str(caught.value)


def test_without_registering_the_design_the_config_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="analysis.design: expected 'paired', 'independent', 'interleaved' or 'counterfactual', got 'unit-mean'"):
        abrank.load_experiment(_config(tmp_path))


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_the_added_design_runs_on_each_engine(design, tmp_path, engine):
    readout = abrank.run_experiment(_config(tmp_path), engine=engine)
    summary = readout.summary
    assert summary["design"] == "unit-mean"
    assert summary["engine"] == engine
    assert {a["name"]: (a["units"], a["impressions"]) for a in summary["arms"]} == {
        "A": (4, 8),
        "B": (4, 7),
    }
    (overall,) = [c for c in summary["comparisons"] if c["segment"] is None]
    assert overall["metric"] == "latency_ms"
    assert overall["control_mean"] == pytest.approx(CONTROL_MEAN, rel=1e-12)
    assert overall["treatment_mean"] == pytest.approx(TREATMENT_MEAN, rel=1e-12)
    assert overall["delta"] == pytest.approx(TREATMENT_MEAN - CONTROL_MEAN, rel=1e-12)
    low, high = overall["ci"]
    assert low < overall["delta"] < high
    segments = {c["segment"]: c["delta"] for c in summary["comparisons"] if c["segment"]}
    assert segments == pytest.approx(SEGMENT_DELTAS, rel=1e-12)
    files = [(Path(i["path"]).name, i["rows"]) for i in summary["inputs"]]
    assert files == [("latency.csv", 15)]


def test_memory_and_duckdb_give_the_same_numbers(design, tmp_path):
    config = _config(tmp_path)
    memory = abrank.run_experiment(config, engine="memory").summary
    duckdb = abrank.run_experiment(config, engine="duckdb").summary
    for a, b in zip(memory["comparisons"], duckdb["comparisons"], strict=True):
        for key in ("delta", "control_mean", "treatment_mean", "p_value"):
            assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-12)
        assert a["ci"] == pytest.approx(b["ci"], rel=1e-10)


def test_an_engine_the_design_does_not_name_is_refused(design, tmp_path):
    with pytest.raises(ConfigError, match="engine: spark: expected one of the engines that run the unit-mean design"):
        abrank.run_experiment(_config(tmp_path), engine="spark")


def test_the_command_line_writes_the_readout(design, tmp_path, capsys):
    from abrank.cli import main

    out = tmp_path / "reports"
    code = main(["run", str(_config(tmp_path)), "--out", str(out), "--quiet"])
    assert code == 0
    (found,) = out.rglob("summary.json")
    folder = found.parent
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["design"] == "unit-mean"
    report = (folder / "report.md").read_text()
    assert "latency_ms" in report
    assert (folder / "report.html").exists()


def test_a_design_written_to_the_four_argument_run_runs_without_explanation(
    design, tmp_path, capsys
):
    """``explain=False`` (``abrank run --format json``) reaches only the designs whose run
    takes it; this one's run is called as it was written."""
    from abrank.cli import main

    config = _config(tmp_path)
    explained = abrank.run_experiment(config)
    assert abrank.run_experiment(config, explain=False).summary == explained.summary
    out = tmp_path / "json-only"
    assert main(["run", str(config), "--out", str(out), "--quiet", "--format", "json"]) == 0
    assert json.loads((out / "summary.json").read_text())["design"] == "unit-mean"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_cell_that_is_not_a_number_names_its_line(design, tmp_path, engine):
    config = _config(tmp_path, LOG.replace("u6,B,US,120", "u6,B,US,fast"))
    with pytest.raises(DataError) as caught:
        abrank.run_experiment(config, engine=engine)
    message = str(caught.value)
    assert "latency.csv: line 12: latency_ms: expected a number, got 'fast'" in message


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_an_arm_not_in_the_config_names_its_line(design, tmp_path, engine):
    config = _config(tmp_path, LOG.replace("u8,B,UK,70", "u8,C,UK,70"))
    with pytest.raises(DataError) as caught:
        abrank.run_experiment(config, engine=engine)
    assert "latency.csv: line 16: arm: expected one of the arms (A, B), got 'C'" in str(caught.value)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_missing_column_lists_the_columns_found(design, tmp_path, engine):
    config = _config(tmp_path, LOG.replace("latency_ms", "latency"))
    with pytest.raises(DataError) as caught:
        abrank.run_experiment(config, engine=engine)
    assert "expected a column 'latency_ms', found columns: user_id, arm, country, latency" in str(caught.value)


def test_the_command_line_exits_2_on_bad_input_and_writes_nothing(design, tmp_path, capsys):
    from abrank.cli import main

    out = tmp_path / "reports"
    config = _config(tmp_path, LOG.replace("u6,B,US,120", "u6,B,US,fast"))
    assert main(["run", str(config), "--out", str(out)]) == 2
    assert "expected a number, got 'fast'" in capsys.readouterr().err
    assert not out.exists() or not any(out.rglob("summary.json"))


def test_validate_opens_the_log(design, tmp_path):
    result = abrank.validate_experiment(_config(tmp_path))
    assert result.kind == "unit-mean"
    assert [arm.name for arm in result.arms] == ["A", "B"]
