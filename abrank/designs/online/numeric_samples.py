"""The online design's samples for the comparison loop when it has numeric metrics of log
columns: per-unit sums for every metric but the quantiles
(:class:`~abrank.analysis.units.UnitSamples`: the click metrics and the numeric means, sums
and ratios, whose sums :func:`abrank.designs.online.numeric.with_numeric` added), and for a
quantile metric each arm's impression values and units
(:func:`abrank.designs.online.numeric.quantile_values`), compared by
:func:`abrank.stats.quantile_comparison.compare_quantile_arms`. Each arm's values are sorted
once per column (and segment value), for every quantile of that column.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

import numpy as np

from abrank.analysis.comparisons import ArmPair, done
from abrank.analysis.units import UnitSamples
from abrank.config import Experiment
from abrank.designs.online.numeric import ArmColumns, quantile_values, segment_mask
from abrank.errors import DataError
from abrank.evidence import Evidence

__all__ = [
    "QUANTILE_RESAMPLES",
    "OnlineSamples",
    "QuantileSample",
    "quantile_resamples",
]


@dataclasses.dataclass(frozen=True)
class QuantileSample:
    """One arm's values of a quantile metric (finite, capped) and their units (None: each
    value a unit's own), and the prepared arm of :mod:`abrank.stats.quantile` (None when
    there is no value)."""

    values: np.ndarray
    units: np.ndarray | None
    arm: Any = None

    @property
    def n_units(self) -> int:
        return int(self.arm.n_units) if self.arm is not None else 0

    def to_dict(self) -> dict[str, Any]:
        """Sizes, JSON-safe: values and units."""
        return {"values": int(self.values.size), "units": self.n_units}


QUANTILE_RESAMPLES = 2_000
"""At most this many unit-bootstrap resamples for a quantile's second opinion: each one
re-reads every impression (10,000 would take seconds per comparison on the demo), and a
percentile interval's ends move by a fraction of its SE's noise beyond 2,000."""


def quantile_resamples(settings: Any, segment: str | None) -> int:
    """The bootstrap resamples of a quantile comparison: the configured number, at most
    :data:`QUANTILE_RESAMPLES`, for the overall comparisons only (none without the
    ``bootstrap`` test, none per segment: there the delta method stands alone)."""
    if segment is not None or "bootstrap" not in settings.tests:
        return 0
    return int(min(settings.n_resamples, QUANTILE_RESAMPLES))


class OnlineSamples:
    """The online design's samples for the comparison loop: per-unit sums for every metric
    (:class:`~abrank.analysis.units.UnitSamples`, the numeric means, sums and ratios among
    them), and for a quantile metric each arm's impression values and units, compared by
    :func:`~abrank.stats.quantile_comparison.compare_quantile_arms`."""

    def __init__(self, experiment: Experiment, evidence: Evidence, covariates: Any = None):
        self.experiment = experiment
        self.sums = UnitSamples(experiment, evidence, covariates)
        self.arms: Mapping[str, ArmColumns] = evidence.extras.get("numeric_columns", {})
        self.quantiles = {
            name: m for name, m in experiment.numeric_metrics.items() if m.stat == "quantile"
        }
        # prepared (sorted) arms, shared by the quantiles of one column: p50, p95, p99 of
        # latency sort each arm's latencies once
        self.prepared: dict[tuple, QuantileSample] = {}
        # approximate quantiles an SQL engine's sketch computed (numeric_sketch.with_sketches)
        self.sketches: Mapping[str, Any] = evidence.extras.get("numeric_sketches", {})

    def metrics(self) -> list[str]:
        return list(self.experiment.metrics)

    def _pair(self, pair: ArmPair, metric: str, keep: Any) -> tuple:
        from abrank.stats.quantile import quantile_arm

        spec = self.quantiles[metric]
        if metric in self.sketches:
            found = self.sketches[metric]
            by_arm = found.overall if keep is None else found.segments.get(tuple(keep), {})
            empty = np.empty(0)
            return tuple(
                QuantileSample(empty, None, by_arm.get(arm))
                for arm in (pair.control, pair.treatment)
            )
        out = []
        for arm in (pair.control, pair.treatment):
            key = (arm, spec.column, spec.level, spec.cap, keep)
            if key not in self.prepared:
                columns = self.arms[arm]
                mask = None if keep is None else segment_mask(columns, *keep)
                values, units, _ = quantile_values(spec, columns, mask)
                prepared = quantile_arm(values, units) if values.size else None
                self.prepared[key] = QuantileSample(values, units, prepared)
            out.append(self.prepared[key])
        return tuple(out)

    def overall(self, pair: ArmPair, metric: str) -> tuple:
        if metric in self.quantiles:
            return self._pair(pair, metric, None)
        return self.sums.overall(pair, metric)

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        return self.sums.segments(pair)

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> tuple:
        if metric in self.quantiles:
            return self._pair(pair, metric, key)
        return self.sums.in_segment(pair, metric, key)

    def size(self, samples: tuple) -> int:
        control, treatment = samples
        if isinstance(control, QuantileSample):
            return min(control.n_units, treatment.n_units)
        return self.sums.size(samples)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        sums = {m: s for m, s in samples.items() if m not in self.quantiles}
        found: dict[str, Any] = {}
        if sums:
            for comparison in self.sums.start(sums, pair, segment).result():
                found[comparison.metric] = comparison
        for metric, (control, treatment) in samples.items():
            if metric in self.quantiles:
                found[metric] = self._quantile(metric, control, treatment, pair, segment)
        return done(lambda: [found[m] for m in samples])

    def _quantile(
        self,
        metric: str,
        control: QuantileSample,
        treatment: QuantileSample,
        pair: ArmPair,
        segment: str | None,
    ) -> Any:
        from abrank.analysis.comparisons import test_settings
        from abrank.designs.online.numeric_sketch import NOTE_EXACT, sketch_note
        from abrank.stats.quantile_comparison import compare_quantile_arms
        from abrank.stats.quantile_sketch import SketchArm

        spec = self.quantiles[metric]
        settings = test_settings(self.experiment)
        unit = self.experiment.analysis.unit or "user_id"
        for arm, sample in ((pair.control, control), (pair.treatment, treatment)):
            if sample.arm is None:
                where = f" in {segment}" if segment is not None else ""
                raise DataError(
                    f"{metric}: expected a value of {spec.column} in arm {arm}{where}, got none "
                    "(every impression's value is missing)"
                )
        notes: tuple[str, ...] = ()
        if spec.approximate:
            if isinstance(control.arm, SketchArm):
                notes = (sketch_note(control.arm.sketch, control.arm.bound),)
            else:
                notes = (NOTE_EXACT,)
        return compare_quantile_arms(
            control.arm,
            treatment.arm,
            float(spec.q or 0.0),
            unit=unit,
            per_unit=spec.level == "unit",
            alpha=settings.alpha,
            confidence_level=settings.confidence_level,
            n_resamples=quantile_resamples(settings, segment),
            seed=settings.seed,
            metric=metric,
            treatment_name=pair.name,
            segment=segment,
            primary_test=settings.primary_test,
            sequential_tuning=settings.sequential_tuning,
            notes=notes,
        )

    def lower_is_better(self, metric: str) -> bool:
        spec = self.experiment.numeric_metrics.get(metric)
        if spec is not None:
            return spec.lower_is_better
        return self.sums.lower_is_better(metric)
