"""Comparing arms on per-unit sums (clustered inference), for every design whose evidence
is per-unit sums (:class:`abrank.evidence.Evidence`: online A/B tests, and designs added
from outside abrank).

Every metric x pair of arms, overall and per segment, is compared with
:func:`abrank.stats.compare_clustered_metrics` on the units' sums (the delta method, with
the unit-level bootstrap and label permutation as second opinions), CUPED-adjusted when
the design gives pre-period covariates; the loop, families and orientation are
:func:`~abrank.analysis.comparisons.compare_all`'s. The sample-ratio check tests the units
per arm against the expected split.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.analysis.comparisons import ArmPair, compare_all, done, test_settings
from abrank.config import Experiment

if TYPE_CHECKING:  # abrank.stats is imported when a comparison is made
    from abrank.stats import Comparison, SampleRatioCheck, UnitSums

__all__ = [
    "UnitSamples",
    "compare_units",
    "sample_ratio",
    "unit_columns",
    "unit_means",
    "valued",
]


def compare_units(
    experiment: Experiment,
    evidence: Any,
    covariates: Callable[[str, str], dict] | None = None,
    *,
    lower_is_better: bool | Callable[[str], bool] | None = None,
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison on per-unit sums, overall and per segment, with
    adjusted p-values (the overall ones one family, the segment ones another), and the
    segment comparisons skipped for having fewer than ``segments.min_queries`` units
    (:func:`~abrank.analysis.comparisons.compare_all`). ``lower_is_better`` says of a
    metric whether a decrease is the treatment's win (a bool for every metric; default: the
    metric's own direction, :func:`abrank.metrics.parse_metric`)."""
    samples = UnitSamples(experiment, evidence, covariates, lower_is_better=lower_is_better)
    return compare_all(experiment, samples)


class UnitSamples:
    """A design's samples for the comparison loop when its evidence is per-unit sums
    (:class:`abrank.evidence.Evidence`): each arm's sums of a metric (numerator,
    denominator), overall and per segment value. ``covariates(control, treatment)`` gives
    the pre-period sums that CUPED adjusts the overall comparisons with (per metric, the
    pair's :class:`~abrank.stats.UnitSums`; none by default)."""

    def __init__(
        self,
        experiment: Experiment,
        evidence: Any,
        covariates: Callable[[str, str], dict] | None = None,
        *,
        lower_is_better: bool | Callable[[str], bool] | None = None,
    ):
        self.experiment = experiment
        self.scores = evidence
        self.covariates = covariates
        self.direction = lower_is_better
        self.options = dict(unit=experiment.analysis.unit, settings=test_settings(experiment))

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
        if segment is None and self.covariates is not None:
            covariates = self.covariates(pair.control, pair.treatment)
        controls = {metric: c for metric, (c, _) in samples.items()}
        treatments = {metric: t for metric, (_, t) in samples.items()}
        return done(
            lambda: _compare(controls, treatments, pair.name, segment, covariates, self.options)
        )

    def lower_is_better(self, metric: str) -> bool:
        from abrank.metrics import parse_metric

        if isinstance(self.direction, bool):
            return self.direction
        if self.direction is not None:
            return self.direction(metric)
        return parse_metric(metric).lower_is_better


def sample_ratio(experiment: Experiment, evidence: Any) -> SampleRatioCheck:
    """The sample-ratio-mismatch check of the units per arm against the expected split."""
    from abrank.stats import sample_ratio_mismatch

    return sample_ratio_mismatch(
        evidence.units, experiment.analysis.expected_split, alpha=experiment.analysis.srm_alpha
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


def valued(sums: pd.DataFrame, metric: str) -> np.ndarray:
    """Per unit of a per-unit sums frame, how many of its impressions have a value of
    ``metric``: the ``<metric>:n`` column where the metric can be undefined, else every
    impression of the unit."""
    counts = f"{metric}:n"
    column = sums[counts] if counts in sums.columns else sums["impressions"]
    return column.to_numpy(dtype=np.float64)


def unit_columns(sums: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator) of one metric from a per-unit sums frame, over the units
    with at least one value of it."""
    numerator = sums[metric].to_numpy(dtype=np.float64)
    denominator = valued(sums, metric)
    keep = denominator > 0
    return numerator[keep], denominator[keep]


def unit_means(scores: Any, metric: str) -> pd.DataFrame:
    """Each unit's mean of ``metric`` per arm (columns arm, value): the per-user
    distribution the readout charts."""
    parts = []
    for name, sums in scores.sums.items():
        numerator, denominator = unit_columns(sums, metric)
        parts.append(pd.DataFrame({"arm": name, "value": numerator / denominator}))
    return pd.concat(parts, ignore_index=True)
