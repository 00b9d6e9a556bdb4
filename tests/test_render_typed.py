"""The renderers read the typed summary: a saved summary converts strictly, a hand-built
one leniently (missing keys filled, NumPy scalars kept), and both entry kinds render alike."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from abrank.readout.model import ArmSummary, ComparisonSummary, Summary
from abrank.readout.typed import as_comparison, as_summary, lenient_record
from abrank.render import headline_line, headline_lines

GOLDEN_SUMMARY = Path(__file__).parent / "golden" / "demo-summary.json"

PARTIAL_COMPARISON = {
    "metric": "mrr@10",
    "treatment": "t",
    "segment": None,
    "n": np.int64(4),
    "control_mean": 0.5,
    "treatment_mean": 0.75,
    "delta": 0.25,
    "relative_lift": 0.5,
    "ci": [0.125, 0.375],
    "p_value": 0.0004,
    "wins": np.int64(3),
    "ties": np.int64(1),
    "losses": np.int64(0),
    "verdict": "win",
    "confidence_level": 0.95,
    "note_for_notebook": "kept",
}
PARTIAL_SUMMARY = {
    "arms": [
        {"name": "c", "label": "Control", "role": "control"},
        {"name": "t", "label": "Treat", "role": "treatment"},
    ],
    "metric_labels": {"mrr@10": "MRR@10"},
    "comparisons": [PARTIAL_COMPARISON],
    "run_date": "2026-12-01",
}


def test_a_partial_comparison_reads_leniently_with_missing_keys_filled():
    comp = as_comparison(PARTIAL_COMPARISON)
    assert isinstance(comp, ComparisonSummary)
    assert comp.ci == (0.125, 0.375)  # a list becomes the model's tuple
    assert comp.n == 4 and isinstance(comp.n, np.int64)  # kept as given
    assert comp.design == "paired" and comp.primary_test == "t"  # the renderers' defaults
    assert comp.p_adjusted is None and comp.correction is None and comp.mde is None
    assert comp.ci_agrees is True and comp.notes == ()  # the fields' own defaults
    assert comp.extra == {"note_for_notebook": "kept"}


def test_a_partial_summary_reads_its_records_and_keeps_unnamed_keys():
    summary = as_summary(PARTIAL_SUMMARY)
    assert summary.arms == (
        ArmSummary("c", "Control", "control", None),  # type: ignore[arg-type]
        ArmSummary("t", "Treat", "treatment", None),  # type: ignore[arg-type]
    )
    assert summary.control == "c"
    assert isinstance(summary.comparisons[0], ComparisonSummary)
    assert summary.experiment is None and summary.diagnostics is None
    assert summary.extra == {"run_date": "2026-12-01"}


def test_a_lenient_record_of_something_else_than_an_object_has_no_values():
    arm = lenient_record(ArmSummary, None)
    assert arm == ArmSummary(None, None, None, None)  # type: ignore[arg-type]


def test_the_headline_of_a_partial_summary_is_worked_out_from_its_fields():
    # 0.5 -> 0.75 is +0.250 (+50.0%); the relative CI is missing, so it has no finite bounds;
    # no correction, so the raw p-value of the t-test shows; 95% from confidence_level.
    assert headline_lines(PARTIAL_SUMMARY) == [
        "MRR@10  0.500 → 0.750  +0.250 (+50.0%)  95% CI [+0.125, +0.375] / unbounded"
        "  p < 0.001 (t)  n = 4  W/T/L 3/1/0  → Treat wins"
    ]


def test_a_saved_summary_converts_strictly_and_renders_as_its_dict():
    saved = json.loads(GOLDEN_SUMMARY.read_text(encoding="utf-8"))
    summary = as_summary(saved)
    assert summary == Summary.from_dict(saved)
    assert as_summary(summary) is summary  # a Summary is used as it is
    assert headline_lines(summary) == headline_lines(saved)
    comp = summary.comparisons[0]
    assert headline_line(summary, comp) == headline_line(saved, saved["comparisons"][0])
