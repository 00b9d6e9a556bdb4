"""Ranking metrics: the registry of families (:mod:`abrank.metrics.registry`) and the one
parser of names (:mod:`abrank.metrics.names`).

Per-query values are computed by an engine (:mod:`abrank.engines`).
"""

from abrank.metrics.names import GAINS, Metric, as_judged_only, parse_metric, parse_metrics
from abrank.metrics.registry import FAMILIES, MetricSpec

__all__ = [
    "FAMILIES",
    "GAINS",
    "Metric",
    "MetricSpec",
    "as_judged_only",
    "parse_metric",
    "parse_metrics",
]
