"""Machine-labelled judgments end to end: the config's sources and their errors (exit 2),
the three estimates of a run against runs on each kind of label alone, the summary's
fields, the report section and the headline notes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank import run_experiment
from abrank.cli import main
from abrank.demo import generate_demo
from abrank.demo.machine_labels import favoured_documents, human_sample, machine_labels
from abrank.stats.ppi import ppi_mean

CONFIG = """\
name: ml
control: {{path: control.csv}}
treatments:
  - {{name: reranker, path: treatment.csv{uses}}}
judgments:
{judgments}
metrics: [ndcg@10, mrr@10]
analysis:
  seed: 3
  resamples: 200
{analysis}"""

SOURCES = """\
  - {path: human.tsv, kind: human}
  - {path: machine.tsv, kind: machine, model: gpt-4o-mini}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A small demo (300 queries): human labels on 20% of its queries, biased machine labels
    on every judged document, and the machine-filled judgments merged by hand."""
    folder = tmp_path_factory.mktemp("ml")
    demo = generate_demo(seed=5, n_queries=300)
    for name, frame in (("control", demo.control), ("treatment", demo.treatment)):
        frame.rename(columns={"position": "rank"}).to_csv(folder / f"{name}.csv", index=False)
    favoured = favoured_documents(demo.control, demo.treatment)
    machine = machine_labels(demo.judgments, seed=6, favoured=favoured, bias=0.3)
    human = human_sample(demo.judgments, share=0.2, seed=7)
    human.to_csv(folder / "human.tsv", sep="\t", index=False)
    machine.to_csv(folder / "machine.tsv", sep="\t", index=False)
    judged = pd.MultiIndex.from_frame(human[["query_id", "doc_id"]])
    rest = machine.loc[~pd.MultiIndex.from_frame(machine[["query_id", "doc_id"]]).isin(judged)]
    pd.concat([human, rest]).to_csv(folder / "filled.tsv", sep="\t", index=False)
    return folder


def config(
    folder: Path, name: str, *, judgments: str = SOURCES, analysis: str = "", uses: str = ""
) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(CONFIG.format(judgments=judgments, analysis=analysis, uses=uses))
    return path


def overall(readout, metric: str):
    return next(c for c in readout.model.comparisons if c.metric == metric and c.segment is None)


@pytest.fixture(scope="module")
def runs(folder: Path) -> dict:
    """The run with both kinds, and runs on the human, filled and machine labels alone."""
    alone = {
        kind: run_experiment(config(folder, kind, judgments=f"  path: {kind}.tsv\n"))
        for kind in ("human", "filled", "machine")
    }
    both = run_experiment(config(folder, "both", uses=", uses_model: gpt-4o"))
    return {"both": both, **alone}


def test_the_human_and_filled_estimates_are_the_runs_on_those_labels_alone(runs):
    both = overall(runs["both"], "ndcg@10")
    for kind in ("human", "filled"):
        alone = overall(runs[kind], "ndcg@10")
        estimate = both.estimates[kind]
        assert estimate["delta"] == pytest.approx(alone.delta, abs=1e-12)
        assert estimate["ci"] == pytest.approx(list(alone.ci), abs=1e-12)
        assert estimate["p_value"] == pytest.approx(alone.p_value, abs=1e-12)
        assert (estimate["verdict"], estimate["n"]) == (alone.verdict, alone.n)


def test_the_ppi_estimate_is_ppi_on_the_per_query_deltas_and_the_readouts_own(runs):
    def deltas(readout) -> pd.Series:
        table = readout.per_query.pivot(index="query_id", columns="arm", values="ndcg@10")
        return table["reranker"] - table["control"]

    human, machine = deltas(runs["human"]).dropna(), deltas(runs["machine"])
    f = machine.reindex(human.index).fillna(0.0)
    rest = machine.drop(deltas(runs["human"]).index, errors="ignore").dropna()
    expected = ppi_mean(human.to_numpy(), f.to_numpy(), rest.to_numpy())
    both = overall(runs["both"], "ndcg@10")
    assert both.estimates["ppi"]["delta"] == pytest.approx(expected.estimate, abs=1e-12)
    assert both.delta == pytest.approx(expected.estimate, abs=1e-12)  # the default: ppi
    assert (both.primary_test, both.ci_method, both.n) == ("ppi", "ppi", human.size)
    assert both.estimates["ppi"]["n_unlabelled"] == rest.size
    # the interval at the nominal level, before the correction widened it
    assert both.ci_unadjusted == pytest.approx(expected.ci(0.95), abs=1e-12)


def test_the_summary_reports_agreement_per_arm_and_tau(runs, folder):
    labels = runs["both"].model.diagnostics.machine_labels
    human = pd.read_csv(folder / "human.tsv", sep="\t")
    machine = pd.read_csv(folder / "machine.tsv", sep="\t")
    pairs = human.merge(machine, on=["query_id", "doc_id"], suffixes=("_h", "_m"))
    assert labels.overlap == len(pairs)
    assert labels.mean_difference == pytest.approx((pairs["grade_m"] - pairs["grade_h"]).mean())
    assert sum(map(sum, labels.confusion["counts"])) == len(pairs)
    assert set(labels.per_arm) == {"control", "reranker"}
    assert labels.per_arm["reranker"]["overlap"] < labels.overlap
    assert -1.0 <= labels.tau <= 1.0
    assert (labels.estimate, labels.model) == ("ppi", "gpt-4o-mini")
    assert labels.human_queries == human["query_id"].nunique()


def test_the_chosen_estimate_gives_the_comparisons_own_figures(folder):
    readout = run_experiment(
        config(folder, "filled-chosen", analysis="  judgments_estimate: filled\n")
    )
    comp = overall(readout, "ndcg@10")
    assert comp.delta == pytest.approx(comp.estimates["filled"]["delta"], abs=1e-15)
    assert comp.primary_test == "t"
    assert readout.model.diagnostics.machine_labels.estimate == "filled"


def test_outputs_warn_of_a_shared_family_and_show_the_section(runs, folder, tmp_path, capsys):
    warnings = runs["both"].model.diagnostics.warnings
    assert any("uses 'gpt-4o', of the family 'gpt'" in w for w in warnings)
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                str(config(folder, "both", uses=", uses_model: gpt-4o")),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["diagnostics"]["machine_labels"]) >= {
        "overlap",
        "kappa_linear",
        "kappa_quadratic",
        "confusion",
        "mean_difference",
        "per_arm",
        "tau",
    }
    first = summary["comparisons"][0]
    assert set(first["estimates"]) == {"human", "filled", "ppi"}
    assert set(first["estimates"]["ppi"]) >= {"delta", "ci", "p_value", "verdict", "n"}
    from abrank import load_readout

    back = load_readout(out).model
    assert back.diagnostics.machine_labels == runs["both"].model.diagnostics.machine_labels
    assert back.comparisons[0].estimates == json.loads(json.dumps(first["estimates"]))
    report = (out / "report.md").read_text()
    assert "## Machine-labelled judgments" in report
    assert "Δ (prediction-powered)" in report


def test_the_model_name_is_escaped_in_the_report(folder, tmp_path):
    judgments = SOURCES.replace("model: gpt-4o-mini", "model: '<b>judge</b>'")
    out = tmp_path / "escaped"
    assert (
        main(["run", str(config(folder, "esc", judgments=judgments)), "--out", str(out), "--quiet"])
        == 0
    )
    markdown = (out / "report.md").read_text()
    section = markdown.split("## Machine-labelled judgments", 1)[1].split("\n## ", 1)[0]
    assert "judge" in section and "<b>judge</b>" not in section
    # (the config itself is quoted in a code block, where it is shown as written)
    assert "<b>judge</b>" not in (out / "report.html").read_text()


def test_a_readout_without_machine_labels_has_no_estimates(runs):
    comp = overall(runs["human"], "ndcg@10")
    assert comp.estimates is None
    assert "estimates" not in comp.to_dict()
    assert runs["human"].model.diagnostics.machine_labels is None


def test_the_unjudged_check_counts_machine_labelled_documents_as_judged(runs):
    judged = runs["both"].model.diagnostics.judged_at_k.arms
    assert judged == pytest.approx(runs["filled"].model.diagnostics.judged_at_k.arms)
    # the judged-only repetition is made with the readout's estimate, like for like
    check = runs["both"].model.diagnostics.unjudged
    assert check.triggered
    assert {c.primary_test for c in check.condensed} == {"ppi"}
    assert all(set(c.estimates) == {"human", "filled", "ppi"} for c in check.condensed)


# --------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    ("judgments", "analysis", "expected"),
    [
        (
            "  - {path: human.tsv, kind: human}\n  - {path: machine.tsv, kind: robot}\n",
            "",
            "judgments[1].kind: expected 'human' or 'machine', got 'robot'",
        ),
        (
            "  - {path: human.tsv}\n  - {path: machine.tsv, kind: human}\n",
            "",
            "judgments[1].kind: expected one source of kind human, got another at judgments[1]",
        ),
        (
            "  - {path: machine.tsv, kind: machine}\n",
            "",
            "judgments: expected one source of kind human",
        ),
        (
            "  - {path: human.tsv}\n  - {path: machine.tsv, kind: machine}\n  - {path: filled.tsv, kind: machine}\n",
            "",
            "judgments[2].kind: expected at most one source of kind machine",
        ),
        (
            "  {path: machine.tsv, kind: machine}\n",
            "",
            "judgments.kind: expected human for a single judgments source",
        ),
        (
            "  - {path: human.tsv}\n  - {path: nowhere.tsv, kind: machine}\n",
            "",
            "judgments[1].path: expected an existing file, got 'nowhere.tsv'",
        ),
        (
            SOURCES,
            "  judgments_estimate: both\n",
            "analysis.judgments_estimate: expected 'human', 'filled' or 'ppi', got 'both'",
        ),
        (
            "  path: human.tsv\n",
            "  judgments_estimate: ppi\n",
            "analysis.judgments_estimate: expected a judgments source of kind machine",
        ),
        (
            "  - {path: human.tsv, model: gpt-4o}\n  - {path: machine.tsv, kind: machine}\n",
            "",
            "judgments[0].model: expected no model for a human source, got 'gpt-4o'",
        ),
        (
            SOURCES,
            "  design: independent\n",
            "analysis.design: expected paired with a judgments source of kind machine",
        ),
    ],
)
def test_a_bad_judgments_config_exits_2_naming_the_field(
    folder, capsys, judgments, analysis, expected
):
    path = config(folder, "bad", judgments=judgments, analysis=analysis)
    out = folder / "never"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
    assert not out.exists()
    assert main(["validate", str(path)]) == 2


def test_a_bad_machine_labels_file_exits_2_naming_it(folder, capsys, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("control.csv", "treatment.csv", "human.tsv"):
        (bad / name).write_bytes((folder / name).read_bytes())
    (bad / "machine.tsv").write_text("query_id\tdoc_id\tgrade\nq00001\td1\tgood\n")
    path = config(bad, "bad-file")
    assert main(["run", str(path), "--out", str(bad / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "machine.tsv" in err and "line 2" in err and "'good'" in err
    assert "Traceback" not in err and not (bad / "out").exists()


def test_the_old_single_form_still_means_human_labels(folder):
    readout = run_experiment(
        config(folder, "single", judgments="  {path: human.tsv, kind: human}\n")
    )
    assert overall(readout, "ndcg@10").estimates is None
    assert np.isfinite(overall(readout, "ndcg@10").delta)


# --------------------------------------------------------------------------- the bundled demo

DEMO = Path(__file__).resolve().parent.parent / "experiments" / "demo-machine-labels.yaml"


def test_the_bundled_demo_data_is_the_generators(tmp_path):
    from abrank.demo.machine_labels import MACHINE_LABEL_FILES, write_machine_label_demo

    written = write_machine_label_demo(tmp_path)
    for path, name in zip(written, MACHINE_LABEL_FILES, strict=True):
        assert path.read_bytes() == (DEMO.parent / "data" / name).read_bytes(), name


def test_the_bundled_demo_shows_the_three_estimates_side_by_side(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["run", str(DEMO), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    labels = summary["diagnostics"]["machine_labels"]
    assert (labels["human_queries"], labels["machine_queries"]) == (200, 2000)
    for comp in summary["comparisons"]:
        assert comp["delta"] == comp["estimates"]["ppi"]["delta"]
        assert comp["estimates"]["filled"]["n"] > 5 * comp["estimates"]["human"]["n"]
    # the labeller favours the reranker's documents and is off by one 30% of the time
    assert labels["mean_difference"] > 0.1
    assert (
        labels["per_arm"]["reranker"]["mean_difference"]
        > labels["per_arm"]["bm25"]["mean_difference"]
    )
    changed = {entry["metric"] for entry in labels["verdicts_changed"]}
    for metric in changed:
        assert f"{metric}: the verdict depends on the labels" in printed.err + printed.out
    assert "family 'minilm'" in printed.err + printed.out


def test_an_online_experiment_refuses_machine_labels(folder):
    from abrank.config import load_experiment
    from abrank.errors import ConfigError

    (folder / "log.csv").write_text("user_id,impression_id,query,doc_id,rank,clicked,arm\n")
    path = folder / "online.yaml"
    path.write_text(
        "name: online-ml\n"
        "control: {name: a}\n"
        "treatments: [{name: b}]\n"
        "log: {path: log.csv}\n"
        "judgments:\n"
        "  - {path: human.tsv}\n"
        "  - {path: machine.tsv, kind: machine}\n"
        "metrics: [ctr@3]\n"
        "analysis: {unit: user_id}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert "line 7: judgments[1].kind: expected human: this experiment's design reads no " in str(
        info.value
    )
