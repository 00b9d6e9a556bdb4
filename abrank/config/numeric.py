"""Numeric metrics of log columns in a config's ``metrics`` (DESIGN.md "Numeric and quantile
metrics from log columns").

A ``metrics`` mapping with a ``stat`` or a ``column`` (``{name: latency_p95, column:
latency_ms, stat: quantile, q: 0.95, direction: lower}``) is a numeric metric: its name is
the config's own, so it does not go through the parser of ranking metric names; it is
checked here (:func:`abrank.metrics.numeric.parse_numeric`, with the config's line numbers)
and kept by name in :attr:`abrank.config.Experiment.numeric_metrics`. It may have a role
like any metric; a numeric mapping without ``role`` or ``nim`` gives the config no roles.
Only the online design reads log columns per impression: another design refuses them.
"""

from __future__ import annotations

from typing import Any

from abrank.config.problems import Checks
from abrank.errors import ConfigError
from abrank.metrics.numeric import NumericMetric, is_numeric_entry, parse_numeric

__all__ = ["checked_numeric", "role_entries"]


def checked_numeric(
    checks: Checks, entries: dict[int, dict], design: str
) -> dict[str, NumericMetric]:
    """The numeric metrics of the ``metrics`` mappings ``entries`` (by index) by name;
    problems (a bad key, a name that is a ranking metric's, a design that has no log
    columns) go to ``checks``."""
    from abrank.metrics import parse_metric

    found: dict[str, NumericMetric] = {}
    for index, entry in sorted(entries.items()):
        if not is_numeric_entry(entry):
            continue
        loc = ("metrics", index)
        metric, problems = parse_numeric(entry)
        for key, message in problems:
            checks.add((*loc, key) if key else loc, message)
        if metric is None:
            continue
        try:
            parse_metric(metric.name)
        except ConfigError:
            pass
        else:
            checks.add(
                (*loc, "name"),
                f"expected a name of your own for a numeric metric, got {metric.name!r}, "
                "which names a ranking metric",
            )
            continue
        if design != "online":
            checks.add(
                loc,
                f"expected a numeric metric only in an online A/B test (a log of impressions "
                f"with its columns), got {metric.name!r} in an experiment of the {design} design",
            )
            continue
        found[metric.name] = metric
    return found


def role_entries(entries: dict[int, dict]) -> dict[int, dict]:
    """The ``metrics`` mappings that give a role: every ranking metric's mapping, and a
    numeric metric's when it has ``role`` or ``nim`` (its numeric keys left out)."""
    from abrank.metrics.numeric import NUMERIC_KEYS

    out: dict[int, dict[str, Any]] = {}
    for index, entry in entries.items():
        if not is_numeric_entry(entry):
            out[index] = entry
        elif "role" in entry or "nim" in entry:
            out[index] = {k: v for k, v in entry.items() if k not in NUMERIC_KEYS}
    return out
