"""The counterfactual design's samples for the one comparison loop: each unit's linearised
value of a metric, paired across the logging arm and a candidate.

An arm's estimate is a ratio of per-unit sums, R = sum M_u / sum D_u. Its delta-method
linearisation x_u = n (M_u - R D_u) / sum D + R has mean R exactly, and the paired t-test
of x_t - x_c over the n units is the delta method's test of the paired difference of two
such ratios on the same units (Deng, Knoblich & Lu, KDD 2018): so the paired statistics
(:func:`abrank.stats.compare_metrics`, the offline design's) serve the counterfactual
comparisons unchanged, with their permutation and bootstrap second opinions on the units.

Harvested propensities are estimated too: the variance their bootstrap replicates give the
delta (data held fixed) is added by widening both arms' deviations by the same factor
sqrt(1 + var_propensities / var_units), which leaves the means and the pairing as they are
and multiplies the paired difference's variance by exactly that factor squared.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

import numpy as np
import pandas as pd

from abrank import workers
from abrank.analysis.comparisons import ArmPair, test_settings
from abrank.config import Experiment
from abrank.evidence import ROWS, Evidence

__all__ = ["CounterfactualSamples", "linearised"]


def linearised(sums: pd.DataFrame, metric: str) -> pd.Series:
    """Each unit's linearised value of ``metric`` (mean: the arm's ratio estimate)."""
    numerator = sums[metric].to_numpy(dtype=np.float64)
    denominator = sums[ROWS].to_numpy(dtype=np.float64)
    total = float(denominator.sum())
    ratio = float(numerator.sum()) / total
    n = numerator.size
    return pd.Series(
        n * (numerator - ratio * denominator) / total + ratio, index=sums.index, name=metric
    )


def _widened(values: pd.Series, factor: float) -> pd.Series:
    """``values`` with their deviations from their mean multiplied by ``factor``."""
    mean = float(values.mean())
    return mean + (values - mean) * factor


class CounterfactualSamples:
    """Each candidate against the logging arm, on the linearised values of the same units."""

    def __init__(self, experiment: Experiment, evidence: Evidence):
        self.experiment = experiment
        self.evidence = evidence
        self.options = dict(design="paired", settings=test_settings(experiment))

    def metrics(self) -> list[str]:
        return list(self.experiment.metrics)

    def overall(self, pair: ArmPair, metric: str) -> tuple[pd.Series, pd.Series]:
        """Both arms' linearised values, their spread around the arm's estimate widened
        by the pair's ``inflation`` (the propensities' share of the delta's variance)."""
        sums = self.evidence.sums
        factor = self.evidence.extras.get("inflation", {}).get(metric, {}).get(pair.treatment, 1.0)
        control = linearised(sums[pair.control], metric)
        treatment = linearised(sums[pair.treatment], metric)
        return _widened(control, factor), _widened(treatment, factor)

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        return []

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> tuple:
        raise KeyError(key)  # no segments (the design refuses segment columns)

    def size(self, samples: tuple[pd.Series, pd.Series]) -> int:
        return int(samples[0].size)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        from abrank.stats import compare_metrics

        controls = {metric: c for metric, (c, _) in samples.items()}
        treatments = {metric: t for metric, (_, t) in samples.items()}
        return workers.start_comparison(
            compare_metrics,
            controls,
            treatments,
            cost=sum(len(v) for v in controls.values()),
            treatment_name=pair.name,
            segment=segment,
            **self.options,
        )

    def lower_is_better(self, metric: str) -> bool:
        from abrank.metrics import parse_metric

        return parse_metric(metric).lower_is_better
