"""The pipeline: missing-query policies, inline labels, attribute segments, designs, Holm.

The data are the hand-worked example of the metric definitions: the control finds the
first relevant document of q1, q2, q3 at ranks 1, 3 and 2 (RR 1, 1/3, 1/2), the treatment
at rank 1 each time; q4 has no relevant document at all.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from abrank.analysis import run_experiment
from abrank.config import build_experiment
from abrank.errors import DataError

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
        {"segment": "market=B", "treatment": "new", "metric": metric, "n": 1}
        for metric in ("mrr@10", "ndcg@3")
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
    # 3 queries: the bootstrap is refused; the sign-flip test's estimate moves with the seed
    assert (
        overall_of(other_seed)["p_values"]["permutation"]
        != overall_of(first)["p_values"]["permutation"]
    )
    more = run_experiment(experiment(tmp_path, metrics=["recall@2", "mrr@10", "ndcg@3"])).summary
    # (the shown interval follows the Holm family, which a new metric enlarges)
    for key in ("bootstrap_ci", "p_values", "ci_unadjusted"):
        assert overall_of(more)[key] == overall_of(first)[key]


def overall_of(summary: dict, metric: str = "mrr@10") -> dict:
    (entry,) = [c for c in summary["comparisons"] if c["metric"] == metric and c["segment"] is None]
    return entry


def comparison_of(summary: dict, treatment: str, metric: str = "mrr@10") -> dict:
    (entry,) = [
        c
        for c in summary["comparisons"]
        if c["metric"] == metric and c["treatment"] == treatment and c["segment"] is None
    ]
    return entry


def test_a_comparison_depends_only_on_its_own_two_arms(tmp_path):
    """A second treatment holding a judged query that neither other arm holds (q5) must not
    change control-vs-first: its n, means and intervals are the same with and without it."""
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    (tmp_path / "other.csv").write_text("query_id,doc_id,rank\nq1,b,1\nq1,a,2\nq5,x,1\n")
    grades = {**GRADES, ("q5", "x"): 1}
    alone = run_experiment(experiment(tmp_path)).summary
    (tmp_path / "judgments.tsv").write_text(
        "query_id\tdoc_id\tgrade\n" + "".join(f"{q}\t{d}\t{g}\n" for (q, d), g in grades.items())
    )
    config = {
        "name": "pipeline-test",
        "control": {"name": "old", "path": "control.csv"},
        "treatments": [
            {"name": "new", "path": "treatment.csv"},
            {"name": "other", "path": "other.csv"},
        ],
        "judgments": {"path": "judgments.tsv"},
        "metrics": ["mrr@10", "ndcg@3"],
        "analysis": {"seed": 1, "resamples": 500, "correction": "none"},
    }
    both = run_experiment(build_experiment(config, source="t.yaml", base_dir=tmp_path)).summary
    first, second = overall_of(alone), comparison_of(both, "new")
    for key in (
        "n",
        "control_mean",
        "treatment_mean",
        "delta",
        "ci_unadjusted",
        "p_values",
        "wins",
    ):
        assert second[key] == first[key], key
    assert first["n"] == 3  # q1..q3 (q4 has nothing relevant)
    # the other comparison has its own queries: q1, q2, q3 of the control and q5 (scored 0
    # for the control, which lacks it): control RR (1, 1/3, 1/2, 0), other (1/2, 0, 0, 1)
    other = comparison_of(both, "other")
    assert other["n"] == 4
    assert other["control_mean"] == pytest.approx((1 + 1 / 3 + 1 / 2 + 0) / 4)
    assert other["treatment_mean"] == pytest.approx((1 / 2 + 0 + 0 + 1) / 4)


def test_undefined_values_are_decided_per_metric(tmp_path):
    """Threshold 2: q2's only relevant document has grade 1, so q2 has no MRR but an NDCG."""
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    summary = run_experiment(experiment(tmp_path, relevance_threshold=2)).summary
    mrr, ndcg = overall_of(summary, "mrr@10"), overall_of(summary, "ndcg@3")
    # MRR(rel >= 2) on q1 and q3 only: control (1, 1/2), treatment (1, 1)
    assert mrr["n"] == 2 and mrr["control_mean"] == pytest.approx(0.75)
    assert mrr["treatment_mean"] == pytest.approx(1.0)
    # NDCG@3 on q1, q2, q3. By hand (linear gain, 1/log2(i+1)): q1 control a@1 -> 1,
    # treatment 1; q2 control e@3 -> (1/2) / 1, treatment e@1 -> 1; q3 control f(0)@1, g(3)@2
    # -> (3/log2 3) / 3, treatment g@1 -> 1
    assert ndcg["n"] == 3
    assert ndcg["control_mean"] == pytest.approx((1 + 0.5 + 1 / math.log2(3)) / 3)
    assert ndcg["treatment_mean"] == pytest.approx(1.0)
    undefined = summary["diagnostics"]["undefined"]
    assert undefined == {"policy": "drop", "metrics": {"mrr@10": 2, "ndcg@3": 1}}
    warnings = summary["diagnostics"]["warnings"]
    assert any(w.startswith("mrr@10: undefined on 2 of 4 queries") for w in warnings)


def test_no_relevant_zero_scores_undefined_values_0(tmp_path):
    """no_relevant: zero counts q4 (nothing relevant) as 0 in both arms, as trec_eval does."""
    write_log(tmp_path / "control.csv", CONTROL)
    write_log(tmp_path / "treatment.csv", TREATMENT)
    summary = run_experiment(experiment(tmp_path, no_relevant="zero")).summary
    mrr = overall_of(summary)
    assert mrr["n"] == 4
    assert mrr["control_mean"] == pytest.approx((1 + 1 / 3 + 1 / 2 + 0) / 4)
    assert mrr["treatment_mean"] == pytest.approx(3 / 4)
    assert mrr["ties"] == 2  # q1 and q4
    assert summary["no_relevant"] == "zero"
    assert any("scored 0 (no_relevant: zero)" in w for w in summary["diagnostics"]["warnings"])
    per_query = run_experiment(experiment(tmp_path, no_relevant="zero")).per_query
    assert per_query.set_index(["arm", "query_id"]).loc[("old", "q4"), "mrr@10"] == 0.0


def test_no_relevant_must_be_drop_or_zero(tmp_path):
    from abrank.errors import ConfigError

    with pytest.raises(ConfigError, match=r"no_relevant: expected 'drop' or 'zero', got 'skip'"):
        experiment(tmp_path, no_relevant="skip")
