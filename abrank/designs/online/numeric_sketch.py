"""Sketch quantiles (``approximate: true``) in the online design.

On an SQL engine a quantile metric with ``approximate: true`` is computed by the engine's
sketch where the logs lie (:func:`abrank.engines.column_sketch.sketch_quantiles`: Spark's
``percentile_approx``, rank error at most n / 10,000; DuckDB's ``approx_quantile``, a
t-digest without a stated bound); only per-unit sums and the sketch's quantiles come back,
and the comparison is :func:`abrank.stats.quantile_comparison.compare_quantile_arms` on
them. The memory engine has no sketch: its quantile stays exact, and the comparison's notes
say so. Either way ``diagnostics.numeric_metrics[name].sketch`` says what was used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from abrank.config import Experiment
from abrank.evidence import Evidence
from abrank.metrics.numeric import NumericMetric

__all__ = [
    "NOTE_EXACT",
    "check_sketched",
    "sketch_diagnostics",
    "sketch_note",
    "sketched",
    "with_sketches",
]

NOTE_EXACT = (
    "approximate: true: the memory engine has no sketch, so this quantile is exact (as "
    "without approximate)"
)


def sketched(experiment: Experiment, engine: str) -> dict[str, NumericMetric]:
    """The quantile metrics an SQL ``engine`` computes with its sketch (none in memory)."""
    if engine == "memory":
        return {}
    return {
        name: m
        for name, m in experiment.numeric_metrics.items()
        if m.stat == "quantile" and m.approximate
    }


def sketch_note(sketch: str, bound: str) -> str:
    """The note of a sketched quantile's comparison: the ``sketch`` and its ``bound``."""
    return (
        f"approximate: the quantiles and their intervals' ends are the engine's sketch "
        f"{sketch}: {bound}; sigma_I from the exact per-unit counts at or below the sketch's "
        "quantile; no unit bootstrap"
    )


def sketch_diagnostics(engine: str) -> dict[str, Any]:
    """``diagnostics.numeric_metrics[name].sketch`` of an approximate quantile."""
    from abrank.engines.column_sketch import SPARK_ACCURACY, sketch_bound, sketch_function

    if engine == "memory":
        return {"engine": "memory", "function": None, "accuracy": None, "bound": "exact"}
    return {
        "engine": engine,
        "function": sketch_function(engine),
        "accuracy": SPARK_ACCURACY if engine == "spark" else None,
        "bound": sketch_bound(engine),
    }


def with_sketches(
    experiment: Experiment,
    engine: Any,
    inputs: Any,
    evidence: Evidence,
    dropped: Sequence[str] = (),
) -> Evidence:
    """``evidence`` with the SQL engine's sketches of the approximate quantiles (the extra
    ``numeric_sketches``: per metric a
    :class:`~abrank.engines.column_sketch.SketchedQuantile`) and their counts in
    ``numeric`` (summary.json's ``diagnostics.numeric_metrics``); the units ``dropped``
    (seen in several arms, dropped) are left out as from the per-unit sums."""
    from abrank.analysis.log_columns import column_request
    from abrank.engines.column_sketch import sketch_quantiles

    metrics = sketched(experiment, engine.name)
    if not metrics:
        return evidence
    columns = [str(m.column) for m in metrics.values()]
    request, sources = column_request(experiment, inputs, engine.name, columns)
    found = sketch_quantiles(
        engine,
        sources,
        request,
        "impression_id",
        {name: (str(m.column), float(m.q or 0.0)) for name, m in metrics.items()},
        confidence_level=float(experiment.analysis.confidence_level),
        dropped_units=tuple(sorted(dropped)),
    )
    diagnostics = dict(evidence.extras.get("numeric", {}))
    for name, metric in metrics.items():
        diagnostics[name] = {
            **metric.to_dict(),
            "describes": metric.describe(),
            "impressions": dict(found[name].impressions),
            "missing": dict(found[name].missing),
            "capped_at": None,
            "sketch": sketch_diagnostics(engine.name),
        }
    ordered = {n: diagnostics[n] for n in experiment.numeric_metrics if n in diagnostics}
    return dataclasses.replace(
        evidence, extras={**evidence.extras, "numeric": ordered, "numeric_sketches": found}
    )


def check_sketched(experiment: Experiment, engine: Any, inputs: Any, columns: list[str]) -> None:
    """``abrank validate``'s checks of the log ``columns`` only sketch quantiles read, run
    in the SQL ``engine`` (:func:`abrank.engines.column_sketch.check_sketch_columns`)."""
    from abrank.analysis.log_columns import column_request
    from abrank.engines.column_sketch import check_sketch_columns

    if not columns:
        return
    request, sources = column_request(experiment, inputs, engine.name, columns)
    check_sketch_columns(engine, sources, request, "impression_id")
