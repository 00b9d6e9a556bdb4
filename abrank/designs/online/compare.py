"""The online design's comparisons: per-unit sums compared by
:func:`abrank.analysis.units.compare_units`, the overall ones CUPED-adjusted with the
pre-period covariates the experiment names."""

from __future__ import annotations

from typing import Any

import numpy as np

from abrank.analysis.units import compare_units, valued
from abrank.config import Experiment
from abrank.designs.online.logs import OnlineData

__all__ = ["compare_online"]


def compare_online(
    experiment: Experiment, data: OnlineData, evidence: Any
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison of an online experiment (:func:`compare_units`; with
    numeric metrics of log columns,
    :class:`~abrank.designs.online.numeric_samples.OnlineSamples`),
    the overall ones CUPED-adjusted when ``analysis.covariates`` is given."""

    def covariates(control: str, treatment: str) -> dict:
        return _covariates(experiment, data, evidence, control, treatment)

    adjust = covariates if data.covariates is not None else None
    if experiment.numeric_metrics:  # quantiles compare impression values, not sums
        from abrank.analysis.comparisons import compare_all
        from abrank.designs.online.numeric_samples import OnlineSamples

        return compare_all(experiment, OnlineSamples(experiment, evidence, adjust))
    return compare_units(experiment, evidence, adjust)


def _covariates(
    experiment: Experiment, data: OnlineData, scores: Any, control: str, treatment: str
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
