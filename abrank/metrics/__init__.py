"""Ranking metrics: the registry of families (:mod:`abrank.metrics.registry`) and the one
parser of names (:mod:`abrank.metrics.names`).

Per-query values are computed by an engine (:mod:`abrank.engines`).
"""

from abrank.metrics.names import GAINS, Metric, parse_metric, parse_metrics
from abrank.metrics.registry import FAMILIES, MetricSpec

__all__ = ["FAMILIES", "GAINS", "Metric", "MetricSpec", "parse_metric", "parse_metrics"]
