"""One comparison record: what ``abrank.compare`` returns, what summary.json's
``comparisons`` hold, what a readout reads back and what the history copies are the one
class :class:`abrank.stats.Comparison`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import abrank
from abrank.history.rows import DERIVED_COLUMNS, record_columns
from abrank.history.schema import HISTORY_COLUMNS
from abrank.readout.model import ComparisonSummary, Summary
from abrank.stats import Comparison, compare_clustered
from abrank.stats.unit_sums import UnitSums

#: history columns that hold the readout's own facts, the same on each of its rows
READOUT_COLUMNS = {
    "experiment",
    "date",
    "sequential",
    "srm_p_value",
    "srm_alarm",
    "decision",
    "decision_reason",
    "window",
    "window_start",
    "stale",
    "config_sha256",
    "inputs_sha256",
    "abrank_version",
    "run_time",
}


def test_the_readout_holds_the_record_itself() -> None:
    assert ComparisonSummary is Comparison
    hints = Summary.__dataclass_fields__["comparisons"].type
    assert "ComparisonSummary" in str(hints)


def test_every_history_column_comes_from_the_record_or_the_readout() -> None:
    record = set(Comparison.saved_fields())
    assert set(record_columns()) <= record
    assert set(HISTORY_COLUMNS) == set(record_columns()) | set(DERIVED_COLUMNS) | READOUT_COLUMNS
    # what is copied is copied under the record's own name
    for name in ("control_mean", "delta", "p_value", "p_adjusted", "verdict", "n", "unit"):
        assert name in record_columns()


def test_a_comparison_without_a_p_value_round_trips_with_nan() -> None:
    # one query per arm: no p-value, no effect size (NaN), written as null
    got = abrank.compare([0.5], [1.0], metric="mrr@10", n_resamples=200)
    saved = got.to_dict()
    assert saved["p_value"] is None and saved["effect_size"] is None
    text = json.dumps(saved, allow_nan=False)
    back = Comparison.from_dict(json.loads(text), "comparison")
    assert math.isnan(back.p_value) and math.isnan(back.effect_size)
    assert back.delta == pytest.approx(0.5, abs=1e-15)
    assert back.to_dict() == saved
    assert back.resampled_deltas is None and back.levels is None


def test_saved_keeps_the_json_values_and_drops_the_resamples() -> None:
    rng = np.random.default_rng(5)
    control = UnitSums(rng.poisson(3.0, 80).astype(float), np.full(80, 5.0))
    treatment = UnitSums(rng.poisson(3.4, 90).astype(float), np.full(90, 5.0))
    got = compare_clustered(control, treatment, metric="ctr@3", n_resamples=300)
    saved = got.saved(control="A", treatment_arm="B")
    assert saved.resampled_deltas is None
    assert saved.control == "A" and saved.treatment_arm == "B"
    keys = list(got.to_dict())
    at = keys.index("cuped") + 1
    assert list(saved.to_dict()) == [*keys[:at], "control", "treatment_arm", *keys[at:]]
    # the two arms are written only for a comparison between two treatments
    assert "control" not in got.to_dict() and "treatment_arm" not in got.to_dict()
    expected = dict(got.to_dict(), control="A", treatment_arm="B")
    assert saved.to_dict() == {k: expected[k] for k in saved.to_dict()}
    assert set(saved.to_dict()) == set(expected)
    # by hand: the arms' ratios of sums
    ratio_c = control.numerator.sum() / control.denominator.sum()
    ratio_t = treatment.numerator.sum() / treatment.denominator.sum()
    assert saved.delta == pytest.approx(ratio_t - ratio_c, abs=1e-12)
    assert saved.n_units == {"control": 80, "treatment": 90}


def test_keys_the_record_does_not_name_are_kept_in_extra() -> None:
    got = abrank.compare([0.2, 0.4, 0.6], [0.3, 0.6, 0.7], metric="ndcg@10", n_resamples=200)
    saved = dict(got.to_dict(), note_from_a_newer_version="kept")
    back = Comparison.from_dict(saved, "comparison")
    assert back.extra == {"note_from_a_newer_version": "kept"}
    assert back.to_dict() == saved
