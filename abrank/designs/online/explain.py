"""The online readout's explanation tables (:func:`abrank.explain.online_tables.
online_explanation`), made from the impressions held in memory when the log holds at most
:data:`MAX_ROWS` rows (the progress line says when a readout goes without them). On an SQL
engine, which leaves the log where it lies, a log of at most that size is read into memory
for the tables once the engine's readout is made (:func:`from_log_in_memory`): the tables
are the memory engine's, and so is every number in them."""

from __future__ import annotations

from typing import Any

from abrank.config import Experiment

MAX_ROWS = 5_000_000
"""The most log rows (all arms together) an online readout makes explanation tables of."""


def with_explanation(
    readout: Any, experiment: Experiment, data: Any, scores: Any, say: Any = None
) -> Any:
    """``readout`` with its ``queries`` and ``rankings`` tables, when every arm's
    impressions are in memory and they hold at most :data:`MAX_ROWS` rows, and some metric
    is a click or judged metric (numeric metrics of log columns are not split by query); as
    it is otherwise."""
    from abrank.explain.online_tables import online_explanation
    from abrank.explain.tables import experiment_depth

    say = say or (lambda message: None)
    frames = {arm.name: data.impressions.get(arm.name) for arm in experiment.arms}
    if any(frame is None or len(frame) == 0 for frame in frames.values()):
        return readout
    if not experiment.ranking_metrics:
        return readout
    rows = sum(len(frame) for frame in frames.values())
    if rows > MAX_ROWS:
        say(f"no explanation tables: {rows:,} log rows, more than {MAX_ROWS:,}")
        return readout
    explanation = online_explanation(
        frames,
        {name: scores.values[name] for name in frames},
        control=experiment.control.name,
        metrics=list(experiment.ranking_metrics),  # numeric metrics have no per-query split
        unit=experiment.analysis.unit or "user_id",
        segments=list(experiment.segments.columns),
        depth=experiment_depth(experiment),
        judgments=data.judgments,
    )
    return readout.with_tables(explanation.queries, explanation.rankings)


def log_rows(inputs: Any) -> int:
    """The rows of the logs a run read (its ``inputs`` entries of the log and arm roles)."""
    return sum(
        int(entry.get("rows", 0))
        for entry in inputs
        if entry.get("role") not in ("covariates", "judgments", "attributes")
    )


def from_log_in_memory(readout: Any, rows: int, say: Any, build: Any) -> Any:
    """``readout`` with the tables ``build()`` makes from the log read into memory (an SQL
    engine's readout), when the log holds at most :data:`MAX_ROWS` rows; as it is
    otherwise, or when the log cannot be read here (the progress line says why)."""
    from abrank.errors import DataError

    if rows > MAX_ROWS:
        say(f"no explanation tables: {rows:,} log rows, more than {MAX_ROWS:,}")
        return readout
    say(f"reading the log into memory for the explanation tables ({rows:,} rows)")
    try:
        return build()
    except (DataError, OSError) as exc:
        say(f"no explanation tables: the log could not be read here ({exc})")
        return readout
