"""Metrics summarised by a geometric mean (gm_map): compared on the log scale, read as ratios.

trec_eval's gm_map is exp(mean(ln(max(AP, 0.00001)))): it weighs the hard queries, where a
ranker's AP is small, as much as the easy ones. The honest paired test of two such means
is the test of the mean difference of the logs, whose interval is one of the log of their
ratio. So the per-query values of a geometric family (:attr:`MetricSpec.geometric`) enter
the comparisons as ``ln(max(value, 0.00001))`` (:func:`log_values`), and each finished
comparison (adjusted, oriented) is turned back into the metric's own units
(:func:`geometric_comparison`): the arms' means become their geometric means G_c and G_t,
the lift exp(Δ) − 1 with the interval exp(ci) − 1, and Δ and every interval of it the lift
and its interval times G_c, so that Δ = G_t − G_c and the interval excludes 0 exactly when
the test rejects. p-values, effect size and verdict are the log-scale test's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from abrank.metrics.registry import FAMILIES, GEOMETRIC_FLOOR
from abrank.stats.results import Comparison, Levels

__all__ = ["GEOMETRIC_NOTE", "geometric_comparison", "is_geometric", "log_values"]

#: The note every geometric comparison carries (how to read its numbers).
GEOMETRIC_NOTE = (
    "geometric mean: tested on ln(max(value, 0.00001)) per query; the arms' values are "
    "their geometric means, the lift their ratio minus 1, and the change and its interval "
    "the lift's times the control's geometric mean"
)


def is_geometric(metric: str) -> bool:
    """Whether the metric named ``metric`` (a canonical name) is summarised geometrically
    (False for a name that is not a metric family's, such as a design's own metric)."""
    from abrank.errors import ConfigError
    from abrank.metrics import parse_metric

    try:
        family = parse_metric(metric).family
    except ConfigError:
        return False
    return bool(FAMILIES[family].geometric)


def log_values(values: pd.Series) -> pd.Series:
    """``ln(max(value, 0.00001))`` per query, NaN (undefined) kept."""
    floored = np.maximum(values.to_numpy(dtype=np.float64), GEOMETRIC_FLOOR)
    return pd.Series(np.log(floored), index=values.index, name=values.name)


def _scaled(base: float) -> Callable[[Any], Any]:
    """A log-scale change (or interval) as a change in the metric's units: base (e^x - 1)."""

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, tuple | list):
            return tuple(base * math.expm1(float(v)) for v in value)
        return base * math.expm1(float(value))

    return convert


def _ratio(value: Any) -> Any:
    """A log-scale change (or interval) as a lift: e^x - 1."""
    return _scaled(1.0)(value)


def _levels(levels: Levels | None, base: float) -> Levels | None:
    """The comparison's intervals at other levels, in the metric's units (the relative ones
    from the log-scale primary interval)."""
    if levels is None:
        return None
    primary, mde = levels.primary, levels.mde
    scaled = _scaled(base)
    return Levels(
        primary=lambda level: scaled(primary(level)),
        relative=lambda level: _ratio(primary(level)),
        mde=lambda alpha: None if mde(alpha) is None else scaled(mde(alpha)),
        relative_bootstrap=None,
    )


def geometric_comparison(comp: Comparison) -> Comparison:
    """A comparison of mean logs as a comparison of geometric means (module text)."""
    if not (math.isfinite(comp.control_mean) and math.isfinite(comp.treatment_mean)):
        return comp
    base = math.exp(comp.control_mean)
    scaled = _scaled(base)
    deltas = comp.resampled_deltas
    return dataclasses.replace(
        comp,
        control_mean=base,
        treatment_mean=math.exp(comp.treatment_mean),
        delta=scaled(comp.delta),
        relative_lift=_ratio(comp.delta),
        ci=scaled(comp.ci),
        bootstrap_ci=scaled(comp.bootstrap_ci),
        ci_unadjusted=scaled(comp.ci_unadjusted),
        relative_ci=_ratio(comp.ci),
        relative_ci_bootstrap=_ratio(comp.bootstrap_ci),
        mde=scaled(comp.mde),
        resampled_deltas=None if deltas is None else base * np.expm1(deltas),
        levels=_levels(comp.levels, base),
        notes=(*comp.notes, GEOMETRIC_NOTE),
    )
