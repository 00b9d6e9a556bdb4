"""Comparing the arms of an online experiment on per-unit sums (clustered inference).

Every metric x pair of arms, overall and per segment, is compared with
:func:`abrank.stats.compare_clustered_metrics` on the units' sums (the delta method, with
the unit-level bootstrap and label permutation as second opinions), CUPED-adjusted when
the experiment names pre-period covariates; p-values are adjusted per family as for the
offline designs. The sample-ratio check tests the units per arm against the expected split.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.analysis.comparisons import ArmPair, compare_all, done, test_options
from abrank.config import Experiment
from abrank.designs.online.logs import OnlineData, OnlineScores, unit_columns, valued

if TYPE_CHECKING:  # abrank.stats is imported when a comparison is made
    from abrank.stats import Comparison, SampleRatioCheck, UnitSums


def compare_online(
    experiment: Experiment, data: OnlineData, scores: OnlineScores
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison on per-unit sums, overall and per segment, with
    adjusted p-values (the overall ones one family, the segment ones another), and the
    segment comparisons skipped for having fewer than ``segments.min_queries`` units
    (:func:`~abrank.analysis.comparisons.compare_all`)."""
    return compare_all(experiment, UnitSamples(experiment, data, scores))


class UnitSamples:
    """The online design's samples for the comparison loop: each arm's per-unit sums of a
    metric (numerator, denominator), overall and per segment value; the overall
    comparisons CUPED-adjusted when the experiment names pre-period covariates."""

    def __init__(self, experiment: Experiment, data: OnlineData, scores: OnlineScores):
        self.experiment = experiment
        self.data = data
        self.scores = scores
        self.options = dict(unit=experiment.analysis.unit, **test_options(experiment))

    def metrics(self) -> list[str]:
        return list(self.experiment.metrics)

    def overall(self, pair: ArmPair, metric: str) -> tuple:
        sums = self.scores.sums
        return _sums(sums[pair.control], metric), _sums(sums[pair.treatment], metric)

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        found = []
        for column, by_arm in self.scores.segment_sums.items():
            values = sorted(
                set(by_arm[pair.control].index.get_level_values(0).astype(str))
                | set(by_arm[pair.treatment].index.get_level_values(0).astype(str))
            )
            found += [(f"{column}={value}", (column, value)) for value in values]
        return found

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> tuple:
        column, value = key
        by_arm = self.scores.segment_sums[column]
        return tuple(
            _sums(_level(by_arm[arm], value), metric) for arm in (pair.control, pair.treatment)
        )

    def size(self, samples: tuple) -> int:
        control, treatment = samples
        return min(control.numerator.size, treatment.numerator.size)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        covariates = None
        if segment is None:
            covariates = _covariates(
                self.experiment, self.data, self.scores, pair.control, pair.treatment
            )
        controls = {metric: c for metric, (c, _) in samples.items()}
        treatments = {metric: t for metric, (_, t) in samples.items()}
        return done(
            lambda: _compare(controls, treatments, pair.name, segment, covariates, self.options)
        )

    def lower_is_better(self, metric: str) -> bool:
        from abrank.metrics import parse_metric

        return parse_metric(metric).lower_is_better


def sample_ratio(experiment: Experiment, scores: OnlineScores) -> SampleRatioCheck:
    """The sample-ratio-mismatch check of the units per arm against the expected split."""
    from abrank.stats import sample_ratio_mismatch

    return sample_ratio_mismatch(
        scores.units, experiment.analysis.expected_split, alpha=experiment.analysis.srm_alpha
    )


def _compare(
    controls: dict[str, UnitSums],
    treatments: dict[str, UnitSums],
    treatment: str,
    segment: str | None,
    covariates: dict[str, tuple[UnitSums, UnitSums]] | None,
    options: dict[str, Any],
) -> list[Comparison]:
    from abrank.stats import compare_clustered_metrics

    return compare_clustered_metrics(
        controls,
        treatments,
        covariates=covariates or None,
        treatment_name=treatment,
        segment=segment,
        **options,
    )


def _sums(table: pd.DataFrame, metric: str) -> UnitSums:
    from abrank.stats import UnitSums

    numerator, denominator = unit_columns(table, metric)
    return UnitSums(numerator=numerator, denominator=denominator)


def _level(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """The per-unit sums of one segment value (rows of the first index level)."""
    keys = table.index.get_level_values(0).astype(str)
    return table[keys == value].droplevel(0)


def _covariates(
    experiment: Experiment, data: OnlineData, scores: OnlineScores, control: str, treatment: str
) -> dict:
    """Per metric with a pre-period column, each arm's pre-period sums over the units of
    its comparison (in the order of their sums; a unit without pre-period data has 0 / 0)."""
    from abrank.stats import UnitSums

    table = data.covariates
    if table is None:
        return {}
    out = {}
    for metric in experiment.metrics:
        if metric not in table.columns:
            continue
        pair = []
        for arm in (control, treatment):
            sums = scores.sums[arm]
            units = sums.index[valued(sums, metric) > 0].astype(str)
            pre = table.reindex(units)
            mean = pre[metric].to_numpy(dtype=np.float64)
            weight = pre["impressions"].to_numpy(dtype=np.float64)
            known = np.isfinite(mean) & np.isfinite(weight) & (weight > 0)
            weight = np.where(known, weight, 0.0)
            pair.append(UnitSums(np.where(known, mean, 0.0) * weight, weight))
        out[metric] = tuple(pair)
    return out
