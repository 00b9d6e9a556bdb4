"""The offline readout's explanation tables (:mod:`abrank.explain.tables`).

On the memory engine they are made from the arms' rankings as loaded. On an SQL engine
(DuckDB, Spark) the rankings stay where the files lie: the engine selects each arm's top
``depth`` rows of every judged query in trec_eval's order with their grades, and the
per-query normalisers (:meth:`abrank.designs.offline.sql.SqlOffline.explanation_inputs`),
and only those come back to be made into the same tables. Either way a readout above
:data:`MAX_ROWS` ranking rows goes without them (the progress line says so)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from abrank.config import Experiment
from abrank.io.subtopics import collapse_frame

MAX_ROWS = 50_000_000
"""The most ranking rows (all arms together; on an SQL engine, the most its top lists can
hold) an offline readout makes explanation tables of. Not for time (about 6 s for 20
million rows, benchmarks/bench_explain.py) but for memory: building the tables takes
about 100 bytes per row beyond the loaded rankings (2 GB for 100,000 queries x 100
results x 2 arms), so at this limit about 5 GB more, on top of rankings that fill several
gigabytes themselves; a larger readout goes without them rather than risk the machine's
memory."""


@dataclasses.dataclass(frozen=True)
class ExplanationInputs:
    """What the tables are made of (:func:`abrank.explain.tables.offline_explanation`):
    each arm's rankings and the judgments; or, from an SQL engine, each arm's top rows
    with their grades (no judgments) and the per-query normalisers of the metrics."""

    rankings: dict[str, pd.DataFrame]
    judgments: pd.DataFrame | None
    normalisers: dict[str, pd.Series] | None = None


def sql_explanation_inputs(
    experiment: Experiment, score: Any, scored: Any, say: Any = None
) -> ExplanationInputs | None:
    """The tables' inputs selected in the SQL engine behind ``score`` (None on the memory
    engine, and for a readout whose top lists could hold more than :data:`MAX_ROWS` rows).
    Called while the engine's connection is open."""
    from abrank.designs.offline.sql import explanation_source
    from abrank.explain.tables import experiment_depth

    source = explanation_source(score)
    if source is None:
        return None
    depth = experiment_depth(experiment)
    rows = depth * len(scored.universe) * len(experiment.arms)
    if rows > MAX_ROWS:
        if say is not None:
            say(f"no explanation tables: up to {rows:,} ranking rows, more than {MAX_ROWS:,}")
        return None
    if say is not None:
        say(f"selecting each arm's top {depth} per query on {source.engine}")
    rankings, normalisers = source.explanation_inputs(experiment, depth)
    return ExplanationInputs(rankings, None, normalisers)


def with_explanation(
    readout: Any,
    experiment: Experiment,
    data: Any,
    scored: Any,
    say: Any = None,
    inputs: ExplanationInputs | None = None,
) -> Any:
    """``readout`` with its ``queries`` and ``rankings`` tables, made of ``inputs`` (an
    SQL engine's) or of the arms' rankings in memory when they hold at most
    :data:`MAX_ROWS` rows; as it is otherwise."""
    from abrank.analysis.summarise import missing_in_column
    from abrank.explain.tables import experiment_depth, offline_explanation

    if inputs is None:
        if not data.rankings or any(len(frame) == 0 for frame in data.rankings.values()):
            return readout
        rows = sum(len(frame) for frame in data.rankings.values())
        if rows > MAX_ROWS:
            if say is not None:
                say(f"no explanation tables: {rows:,} ranking rows, more than {MAX_ROWS:,}")
            return readout
        # one grade per (query, doc): subtopic judgments' highest (abrank.io.subtopics)
        inputs = ExplanationInputs(dict(data.rankings), collapse_frame(data.judgments))
    explanation = offline_explanation(
        {arm.name: inputs.rankings[arm.name] for arm in experiment.arms},
        inputs.judgments,
        {arm.name: scored.values[arm.name] for arm in experiment.arms},
        data.segments,
        missing_in_column(experiment, scored),
        control=experiment.control.name,
        metrics=list(experiment.metrics),
        threshold=experiment.relevance_threshold,
        gain=experiment.gain,
        normalisers=inputs.normalisers,
        depth=experiment_depth(experiment),
    )
    return readout.with_tables(explanation.queries, explanation.rankings)
