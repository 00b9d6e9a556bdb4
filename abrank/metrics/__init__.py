"""Ranking metrics: one registry of names and one parser (:mod:`abrank.metrics.names`).

Per-query values are computed by an engine (:mod:`abrank.engines`).
"""

from abrank.metrics.names import FAMILIES, GAINS, Metric, parse_metric, parse_metrics

__all__ = ["FAMILIES", "GAINS", "Metric", "parse_metric", "parse_metrics"]
