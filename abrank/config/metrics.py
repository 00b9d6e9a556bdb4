"""The ``metrics`` and ``primary_metric`` of a config, made canonical.

Each name goes through the one parser of metric spellings (:mod:`abrank.metrics.names`),
or, in an interleaving test, names a credit (:mod:`abrank.config.interleaved`); a metric
given twice (in any spelling) is a problem, and the primary metric must be one of them
(default: the first).
"""

from __future__ import annotations

from abrank.config.interleaved import credit_name, credit_problem
from abrank.config.problems import Checks
from abrank.errors import ConfigError


def metric_name(name: str, interleaved: bool) -> str:
    """The canonical name of a metric (a credit of the interleaved design); ConfigError
    saying why when ``name`` names none."""
    from abrank.metrics import parse_metric

    if not interleaved:
        return parse_metric(name).name
    credit = credit_name(name)
    if credit is None:
        raise ConfigError(credit_problem(name))
    return credit


def checked_metrics(
    checks: Checks, metrics: list[str], primary: str | None, *, interleaved: bool
) -> tuple[list[str], str | None]:
    """The metrics' canonical names (as given where none parses) and the primary metric's
    (the first metric's by default; as given where it does not parse)."""
    canonical: list[str] = []
    for index, name in enumerate(metrics):
        try:
            metric = metric_name(name, interleaved)
        except ConfigError as exc:
            checks.add(("metrics", index), str(exc))
            continue
        if metric in canonical:
            checks.add(("metrics", index), f"expected each metric once, got {name!r} again")
        canonical.append(metric)
    if primary is None:
        return canonical or metrics, canonical[0] if canonical else None
    try:
        canonical_primary = metric_name(primary, interleaved)
    except ConfigError as exc:
        checks.add(("primary_metric",), str(exc))
        return canonical or metrics, primary
    if canonical and canonical_primary not in canonical:
        checks.add(
            ("primary_metric",),
            f"expected one of the metrics {canonical}, got {primary!r}",
        )
    return canonical or metrics, canonical_primary
