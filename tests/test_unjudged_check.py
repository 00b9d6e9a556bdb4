"""The readout's sensitivity check on unjudged documents (``diagnostics.unjudged``).

Hand-made experiments: one where a treatment puts an unjudged document above the relevant
one on every query (a loss as judged, no difference on judged documents only), and one
fully judged (the check does not run).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from abrank.analysis import run_experiment
from abrank.analysis.unjudged import check_reason, judged_only_names
from abrank.cli import main
from abrank.config import build_experiment
from abrank.engines.evaluate import evaluate
from abrank.errors import ConfigError
from abrank.readout.model import Summary
from abrank.render import render_html, render_markdown

N = 40  # queries


def write(tmp_path: Path, *, unjudged_first: bool) -> None:
    """Control ranks each query's relevant document r first, then judged nonrelevant ones;
    the treatment puts an unjudged document u above r (when ``unjudged_first``)."""
    control, treatment, qrels = ["query_id,doc_id,rank"], ["query_id,doc_id,rank"], []
    for i in range(N):
        q = f"q{i:02d}"
        docs = ["r", *(f"n{j}" for j in range(9))]
        qrels += [f"{q} 0 r 1", *(f"{q} 0 n{j} 0" for j in range(9))]
        control += [f"{q},{d},{rank}" for rank, d in enumerate(docs, 1)]
        ranked = ["u", *docs[:9]] if unjudged_first else docs
        treatment += [f"{q},{d},{rank}" for rank, d in enumerate(ranked, 1)]
    (tmp_path / "control.csv").write_text("\n".join(control) + "\n")
    (tmp_path / "treatment.csv").write_text("\n".join(treatment) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")


def experiment(tmp_path: Path, metrics: list[str]):
    config = {
        "name": "unjudged-test",
        "control": {"name": "old", "path": "control.csv"},
        "treatments": [{"name": "new", "path": "treatment.csv"}],
        "judgments": {"path": "qrels.txt"},
        "metrics": metrics,
        "analysis": {"seed": 3, "resamples": 500},
    }
    return build_experiment(config, source="test.yaml", base_dir=tmp_path)


@pytest.mark.parametrize(
    ("judged", "reason"),
    [
        (
            {"a": 0.937, "b": 0.911},
            "judged@10 differs by 2.6 points between arms (a 0.937, b 0.911)",
        ),
        (
            {"a": 0.95, "b": 0.93},  # 2 points exactly: triggers
            "judged@10 differs by 2.0 points between arms (a 0.950, b 0.930)",
        ),
        ({"a": 0.95, "b": 0.935}, None),
        ({"a": 0.89, "b": 0.895}, "judged@10 is below 0.9 (a 0.890, b 0.895)"),
        (
            {"a": 0.99, "b": 0.85, "c": None},
            "judged@10 is below 0.9 (b 0.850); judged@10 differs by 14.0 points between arms "
            "(a 0.990, b 0.850)",
        ),
        ({"a": None, "b": math.nan}, None),
    ],
)
def test_when_the_check_runs(judged, reason):
    assert check_reason(judged) == reason


def test_judged_only_names():
    assert judged_only_names(["mrr@10", "judged@10", "ndcg@5(judged)", "mrr(rel=2)@10"]) == {
        "mrr@10": "mrr@10(judged)",
        "mrr(rel=2)@10": "mrr(rel=2)@10(judged)",
    }


def test_a_verdict_that_depends_on_unjudged_documents(tmp_path):
    write(tmp_path, unjudged_first=True)
    readout = run_experiment(experiment(tmp_path, ["mrr@10", "recall@5", "judged@10"]))
    summary = readout.summary
    check = summary["diagnostics"]["unjudged"]
    # control's top 10 all judged; the treatment's top 10 holds u: 9 of 10
    assert check["judged_at_k"] == {"old": 1.0, "new": pytest.approx(0.9)}
    assert check["triggered"] is True
    assert check["reason"] == "judged@10 differs by 10.0 points between arms (old 1.000, new 0.900)"
    plain = {c["metric"]: c for c in summary["comparisons"]}
    # as judged: MRR 1 -> 1/2 on every query, a loss; recall@5 1 -> 1, no difference
    assert plain["mrr@10"]["delta"] == pytest.approx(-0.5)
    assert plain["mrr@10"]["verdict"] == "loss"
    condensed = {c["metric"]: c for c in check["condensed"]}
    assert list(condensed) == ["mrr@10(judged)", "recall@5(judged)"]  # not judged@10
    assert set(condensed["mrr@10(judged)"]) == set(plain["mrr@10"])  # the same keys
    # judged documents only: u leaves, r is first again in both arms
    assert condensed["mrr@10(judged)"]["control_mean"] == 1.0
    assert condensed["mrr@10(judged)"]["treatment_mean"] == 1.0
    assert condensed["mrr@10(judged)"]["delta"] == 0.0
    assert condensed["mrr@10(judged)"]["verdict"] == "inconclusive"
    assert check["verdicts_changed"] == ["mrr@10"]
    warnings = summary["diagnostics"]["warnings"]
    assert (
        "mrr@10: the verdict depends on unjudged documents: loss as judged, inconclusive on "
        "judged documents only (judged@10 differs by 10.0 points between arms (old 1.000, "
        "new 0.900))"
    ) in warnings
    # the typed summary reads it back, and the report shows both lines and says it
    assert Summary.from_dict(json.loads(json.dumps(summary))).to_dict() == summary
    markdown = render_markdown(readout)
    assert "## Unjudged documents" in markdown
    assert (
        "| MRR@10 | -0.500 | [-0.500, -0.500] | < 0.001 | loss "
        "| +0.000 | [+0.000, +0.000] | 1 | inconclusive |"
    ) in markdown
    assert (
        "This verdict depends on unjudged documents: MRR@10: loss as judged, inconclusive on "
        "judged documents only. This one holds on judged documents only: Recall@5."
    ) in markdown
    html = render_html(readout)
    assert '<section id="unjudged">' in html
    assert "This verdict depends on unjudged documents: MRR@10" in html


def test_condensed_means_are_the_judged_only_values(tmp_path):
    """The condensed comparison's means are evaluate(judged_only=True)'s, arm by arm."""
    import pandas as pd

    write(tmp_path, unjudged_first=True)
    readout = run_experiment(experiment(tmp_path, ["ndcg@3"]))
    (entry,) = readout.summary["diagnostics"]["unjudged"]["condensed"]
    judgments = pd.read_csv(
        tmp_path / "qrels.txt", sep=" ", names=["query_id", "it", "doc_id", "relevance"]
    )
    for arm, key in (("control", "control_mean"), ("treatment", "treatment_mean")):
        rankings = pd.read_csv(tmp_path / f"{arm}.csv")
        values = evaluate(rankings, judgments, ["ndcg@3"], judged_only=True)["ndcg@3(judged)"]
        assert entry[key] == pytest.approx(values.mean())


def test_fully_judged_arms_do_not_trigger_the_check(tmp_path):
    write(tmp_path, unjudged_first=False)
    readout = run_experiment(experiment(tmp_path, ["mrr@10"]))
    check = readout.summary["diagnostics"]["unjudged"]
    assert check == {
        "k": 10,
        "judged_at_k": {"old": 1.0, "new": 1.0},
        "condensed": [],
        "verdicts_changed": [],
        "triggered": False,
        "reason": None,
    }
    assert "Unjudged documents" not in render_markdown(readout)


def test_compare_takes_judged_only_and_warns(tmp_path, capsys):
    write(tmp_path, unjudged_first=True)
    files = [tmp_path / "qrels.txt", tmp_path / "control.csv", tmp_path / "treatment.csv"]
    code = main(["compare", *map(str, files), "-m", "mrr@10", "--json", "--resamples", "200"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [c["metric"] for c in json.loads(out)] == ["mrr@10"]
    code = main(["compare", *map(str, files), "-m", "mrr@10", "--resamples", "200"])
    out, err = capsys.readouterr()
    assert "note: mrr@10: the verdict depends on unjudged documents: loss as judged" in err
    code = main(
        ["compare", *map(str, files), "-J", "-m", "mrr@10", "judged@10", "--json"]
        + ["--resamples", "200"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    comparisons = json.loads(out)
    assert [c["metric"] for c in comparisons] == ["mrr@10(judged)", "judged@10"]
    assert comparisons[0]["delta"] == 0.0


def test_bad_judged_only_metric_in_a_config_exits_2(tmp_path, capsys):
    write(tmp_path, unjudged_first=True)
    files = [tmp_path / "qrels.txt", tmp_path / "control.csv", tmp_path / "treatment.csv"]
    code = main(["compare", *map(str, files), "-m", "mrr@10(judge)"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "metric 'mrr@10(judge)': suffix: expected (judged) after the cutoff" in err


def test_a_config_may_name_judged_only_metrics(tmp_path):
    write(tmp_path, unjudged_first=True)
    readout = run_experiment(experiment(tmp_path, ["mrr@10", "RR(judged)@10"]))
    summary = readout.summary
    assert summary["metrics"] == ["mrr@10", "mrr@10(judged)"]
    assert summary["metric_labels"]["mrr@10(judged)"] == "MRR@10(judged)"
    plain = {c["metric"]: c for c in summary["comparisons"]}
    assert plain["mrr@10(judged)"]["delta"] == 0.0
    # a metric that is judged-only already is not repeated
    condensed = summary["diagnostics"]["unjudged"]["condensed"]
    assert [c["metric"] for c in condensed] == ["mrr@10(judged)"]
    assert condensed[0]["delta"] == 0.0
    with pytest.raises(ConfigError) as info:
        experiment(tmp_path, ["mrr@10", "mrr@10(judge)"])
    assert str(info.value) == (
        "test.yaml: metrics[1]: metric 'mrr@10(judge)': suffix: expected (judged) after the "
        "cutoff (e.g. ndcg@10(judged)), got (judge)"
    )
