"""The pipeline: missing-query policies, inline labels, attribute segments, designs, Holm.

The data are the hand-worked example of the metric definitions: the control finds the
first relevant document of q1, q2, q3 at ranks 1, 3 and 2 (RR 1, 1/3, 1/2), the treatment
at rank 1 each time; q4 has no relevant document at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from abrank.config import build_experiment
from abrank.errors import DataError
from abrank.pipeline import run_experiment

CONTROL = [
    ("q1", "a", 1),
    ("q1", "b", 2),
    ("q2", "c", 1),
    ("q2", "d", 2),
    ("q2", "e", 3),
    ("q3", "f", 1),
    ("q3", "g", 2),
    ("q4", "h", 1),
]
TREATMENT = [
    ("q1", "a", 1),
    ("q1", "b", 2),
    ("q2", "e", 1),
    ("q2", "c", 2),
    ("q2", "d", 3),
    ("q3", "g", 1),
    ("q3", "f", 2),
    ("q4", "h", 1),
]
GRADES = {("q1", "a"): 2, ("q2", "e"): 1, ("q3", "g"): 3, ("q3", "f"): 0, ("q4", "h"): 0}


def write_log(path: Path, rows, *, inline: bool = False, drop: str | None = None) -> Path:
    header = "query_id,doc_id,rank" + (",relevance" if inline else "")
    lines = [header]
    for q, d, r in rows:
        if q == drop:
            continue
        label = GRADES.get((q, d), "") if inline else None
        lines.append(f"{q},{d},{r}" + (f",{label}" if inline else ""))
    path.write_text("\n".join(lines) + "\n")
    return path


def experiment(tmp_path: Path, *, judgments: bool = True, **overrides):
    if judgments:
        text = "query_id\tdoc_id\tgrade\n" + "".join(
            f"{q}\t{d}\t{g}\n" for (q, d), g in GRADES.items()
        )
        (tmp_path / "judgments.tsv").write_text(text)
    config = {
        "name": "pipeline-test",
        "control": {"name": "old", "path": "control.csv"},
        "treatments": [{"name": "new", "path": "treatment.csv"}],
        "metrics": ["mrr@10", "ndcg@3"],
        "analysis": {"seed": 1, "resamples": 500},
        **({"judgments": {"path": "judgments.tsv"}} if judgments else {}),
        **overrides,
    }
    return build_experiment(config, source="test.yaml", base_dir=tmp_path)


def overall(readout, metric: str = "mrr@10") -> dict:
    return overall_of(readout.summary, metric)


def test_missing_query_policies(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT, drop="q3")

    zero = overall(run_experiment(experiment(tmp_path)))
    assert zero["n"] == 3
    assert zero["control_mean"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert zero["treatment_mean"] == pytest.approx((1 + 1 + 0) / 3)  # q3 scored 0

    drop = overall(run_experiment(experiment(tmp_path, analysis={"missing_queries": "drop"})))
    assert drop["n"] == 2
    assert drop["control_mean"] == pytest.approx((1 + 1 / 3) / 2)
    assert drop["treatment_mean"] == pytest.approx(1.0)

    with pytest.raises(DataError) as info:
        run_experiment(experiment(tmp_path, analysis={"missing_queries": "error"}))
    assert (
        "treatment.csv: expected every analysed query (analysis.missing_queries: error), got 1 missing: 'q3'"
        in str(info.value)
    )


def test_missing_queries_are_counted_in_the_diagnostics(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT, drop="q3")
    diagnostics = run_experiment(experiment(tmp_path)).summary["diagnostics"]
    assert diagnostics["missing"] == {"old": 0, "new": 1}
    assert diagnostics["matched"] == 3 and diagnostics["analysed_queries"] == 4
    assert diagnostics["without_relevant"] == 1
    assert "new: 1 analysed queries are missing from its log (scored 0)" in diagnostics["warnings"]


def test_labels_carried_by_the_logs(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL, inline=True)
    write_log(tmp_path / "treatment.csv", TREATMENT, inline=True)
    readout = run_experiment(experiment(tmp_path, judgments=False))
    mrr = overall(readout)
    assert mrr["control_mean"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert mrr["treatment_mean"] == pytest.approx(1.0)
    # NDCG@3 of q3 for the control: grade 3 at rank 2 over the ideal grade 3 at rank 1.
    per_query = readout.per_query.set_index(["arm", "query_id"])
    assert per_query.loc[("old", "q3"), "ndcg@3"] == pytest.approx(1 / 1.584962500721156)


def test_logs_without_labels_need_judgments(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    with pytest.raises(DataError) as info:
        run_experiment(experiment(tmp_path, judgments=False))
    assert (
        "expected a relevance column in the log or a `judgments` file in the config, got neither"
        in str(info.value)
    )


def test_segments_from_an_attributes_file(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    (tmp_path / "attributes.csv").write_text("query_id,market\nq1,A\nq2,A\nq3,B\nq4,B\n")
    readout = run_experiment(
        experiment(
            tmp_path,
            segments={
                "columns": ["market"],
                "min_queries": 2,
                "attributes": {"path": "attributes.csv"},
            },
        )
    )
    segments = {
        c["segment"]: c
        for c in readout.summary["comparisons"]
        if c["metric"] == "mrr@10" and c["segment"]
    }
    assert list(segments) == ["market=A"]  # market B holds q3 only (q4 has nothing relevant)
    assert segments["market=A"]["control_mean"] == pytest.approx((1 + 1 / 3) / 2)
    assert readout.summary["segments"]["too_small"] == [
        {"segment": "market=B", "treatment": "new", "n": 1}
    ]
    assert readout.per_query.set_index(["arm", "query_id"]).loc[("new", "q3"), "market"] == "B"
    assert [i["role"] for i in readout.summary["inputs"]] == [
        "control",
        "treatment",
        "judgments",
        "attributes",
    ]


def test_independent_design_compares_the_arms_as_samples(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT, drop="q1")
    mrr = overall(run_experiment(experiment(tmp_path, analysis={"design": "independent"})))
    assert mrr["design"] == "independent"
    assert (mrr["n_control"], mrr["n_treatment"]) == (3, 2)  # no zero-filling across arms
    assert mrr["treatment_mean"] == pytest.approx(1.0)


def test_holm_adjusts_across_metrics_and_treatments(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    write_log(tmp_path / "treatment2.csv", CONTROL)  # identical to the control
    readout = run_experiment(
        experiment(
            tmp_path,
            treatments=[
                {"name": "new", "path": "treatment.csv"},
                {"name": "same", "path": "treatment2.csv"},
            ],
        )
    )
    family = [c for c in readout.summary["comparisons"] if c["segment"] is None]
    assert len(family) == 4
    raw = sorted(c["p_value"] for c in family)
    # Holm by hand: p_(i) * (m - i + 1), made monotone, capped at 1.
    expected, running = [], 0.0
    for i, p in enumerate(raw):
        running = max(running, min(1.0, p * (len(raw) - i)))
        expected.append(running)
    assert sorted(c["p_adjusted"] for c in family) == pytest.approx(expected)
    assert any(c["p_adjusted"] > c["p_value"] for c in family)


def test_same_seed_same_numbers_and_adding_a_metric_changes_no_other(tmp_path):
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    first = run_experiment(experiment(tmp_path)).summary
    again = run_experiment(experiment(tmp_path)).summary
    assert first == again
    other_seed = run_experiment(experiment(tmp_path), seed=8).summary
    assert other_seed["seed"] == 8
    assert overall_of(other_seed)["bootstrap_ci"] != overall_of(first)["bootstrap_ci"]
    more = run_experiment(experiment(tmp_path, metrics=["recall@2", "mrr@10", "ndcg@3"])).summary
    for key in ("bootstrap_ci", "relative_ci", "p_values", "ci"):
        assert overall_of(more)[key] == overall_of(first)[key]


def overall_of(summary: dict, metric: str = "mrr@10") -> dict:
    (entry,) = [c for c in summary["comparisons"] if c["metric"] == metric and c["segment"] is None]
    return entry
