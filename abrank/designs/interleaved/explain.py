"""The interleaved readout's explanation tables (:func:`abrank.explain.online_tables.
interleaved_explanation`), made from the log held in memory when it holds at most
:data:`MAX_ROWS` rows (the progress line says when a readout goes without them); on an SQL
engine, the log is read into memory for them
(:func:`abrank.designs.online.explain.from_log_in_memory`)."""

from __future__ import annotations

from typing import Any

from abrank.config import Experiment

MAX_ROWS = 5_000_000
"""The most log rows an interleaved readout makes explanation tables of."""


def with_explanation(
    readout: Any, experiment: Experiment, data: Any, scores: Any, say: Any = None
) -> Any:
    """``readout`` with its ``queries`` and ``rankings`` tables, when the log is in memory
    and holds at most :data:`MAX_ROWS` rows and the per-impression outcomes are at hand;
    as it is otherwise."""
    from abrank.analysis.comparisons import arm_pairs
    from abrank.explain.online_tables import interleaved_explanation
    from abrank.explain.tables import experiment_depth

    say = say or (lambda message: None)
    log = data.log
    if log is None or len(log) == 0 or not scores.outcomes:
        return readout
    if len(log) > MAX_ROWS:
        say(f"no explanation tables: {len(log):,} log rows, more than {MAX_ROWS:,}")
        return readout
    explanation = interleaved_explanation(
        log,
        scores.outcomes,
        arm_pairs(experiment),
        arms=[arm.name for arm in experiment.arms],
        credits=list(experiment.metrics),
        unit=experiment.analysis.unit or "user_id",
        segments=list(experiment.segments.columns),
        depth=experiment_depth(experiment),
    )
    return readout.with_tables(explanation.queries, explanation.rankings)
