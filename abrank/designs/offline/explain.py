"""The offline readout's explanation tables (:mod:`abrank.explain.tables`), made where the
arms' rankings are held in memory (the memory engine; an SQL engine leaves them where the
files lie, and its readout has no such tables yet) and hold at most :data:`MAX_ROWS` rows:
the tables join the arms' lists on their id strings, which costs about a second per
100,000 rows, so larger readouts go without them (the progress line says so) until the
joins run on integer codes."""

from __future__ import annotations

import dataclasses
from typing import Any

from abrank.config import Experiment

MAX_ROWS = 1_000_000
"""The most ranking rows (all arms together) an offline readout makes explanation tables of."""


def with_explanation(
    readout: Any, experiment: Experiment, data: Any, scored: Any, say: Any = None
) -> Any:
    """``readout`` with its ``queries`` and ``rankings`` tables, when every arm's rankings
    are in memory and they hold at most :data:`MAX_ROWS` rows; as it is otherwise."""
    from abrank.analysis.summarise import missing_in_column
    from abrank.explain.tables import offline_explanation

    if not data.rankings or any(len(frame) == 0 for frame in data.rankings.values()):
        return readout
    rows = sum(len(frame) for frame in data.rankings.values())
    if rows > MAX_ROWS:
        if say is not None:
            say(f"no explanation tables: {rows:,} ranking rows, more than {MAX_ROWS:,}")
        return readout
    explanation = offline_explanation(
        {arm.name: data.rankings[arm.name] for arm in experiment.arms},
        data.judgments,
        {arm.name: scored.values[arm.name] for arm in experiment.arms},
        data.segments,
        missing_in_column(experiment, scored),
        control=experiment.control.name,
        metrics=list(experiment.metrics),
        threshold=experiment.relevance_threshold,
        gain=experiment.gain,
    )
    model = readout.model
    out = dataclasses.replace(readout, queries=explanation.queries, rankings=explanation.rankings)
    vars(out)["model"] = model  # the summary did not change
    return out
