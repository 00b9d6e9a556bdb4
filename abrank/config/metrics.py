"""The ``metrics`` and ``primary_metric`` of a config, made canonical.

Each name goes through the experiment's design's parser of metric names (the one parser
of metric spellings, :mod:`abrank.metrics.names`, or an interleaving test's credits); a metric
given twice (in any spelling) is a problem, and the primary metric must be one of them
(default: the first).
"""

from __future__ import annotations

from collections.abc import Callable

from abrank.config.problems import Checks
from abrank.errors import ConfigError


def checked_metrics(
    checks: Checks, metrics: list[str], primary: str | None, metric_name: Callable[[str], str]
) -> tuple[list[str], str | None]:
    """The metrics' canonical names by the design's ``metric_name`` (as given where none
    parses) and the primary metric's (the first metric's by default; as given where it
    does not parse)."""
    canonical: list[str] = []
    for index, name in enumerate(metrics):
        try:
            metric = metric_name(name)
        except ConfigError as exc:
            checks.add(("metrics", index), str(exc))
            continue
        if metric in canonical:
            checks.add(("metrics", index), f"expected each metric once, got {name!r} again")
        canonical.append(metric)
    if primary is None:
        return canonical or metrics, canonical[0] if canonical else None
    try:
        canonical_primary = metric_name(primary)
    except ConfigError as exc:
        checks.add(("primary_metric",), str(exc))
        return canonical or metrics, primary
    if canonical and canonical_primary not in canonical:
        checks.add(
            ("primary_metric",),
            f"expected one of the metrics {canonical}, got {primary!r}",
        )
    return canonical or metrics, canonical_primary
