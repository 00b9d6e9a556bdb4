"""The evidence of numeric log columns: each arm's per-unit sums of columns of its logs.

What a design that compares the arms on the mean of a log column per unit (latency per
impression, revenue per row) asks the chosen engine for: the experiment's logs (one
``log:`` whose arm column names each row's arm, or a log per arm; every date of a
window) summed per ``analysis.unit`` and per segment value by
:func:`abrank.engines.column_sums.column_sums`, with the files read as the readout's
``inputs`` (path, sha256, rows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from abrank.analysis.engine import EngineChoice, log_sources
from abrank.analysis.load import Progress, shown_files
from abrank.config import Experiment
from abrank.evidence import Evidence
from abrank.inputs import Inputs

__all__ = ["column_evidence", "column_request"]


def column_evidence(
    experiment: Experiment,
    inputs: Inputs,
    engine: EngineChoice,
    columns: Sequence[str] | None = None,
    say: Progress | None = None,
) -> Evidence:
    """Per arm, the per-unit sums of the log ``columns`` (default: the experiment's
    metrics, each a column) over the units of ``analysis.unit``, overall and per segment
    column; computed by ``engine`` from the run's resolved ``inputs``."""
    from abrank.engines.column_sums import ColumnRequest, column_sums

    sources = log_sources(experiment, inputs, engine.name)
    if say is not None:
        files = [file for source, _ in sources for file in source.files]
        say(f"summing per unit on {engine.name} ({shown_files(files)})")
    request = ColumnRequest(
        columns=tuple(columns if columns is not None else experiment.metrics),
        arms=tuple(str(arm.name) for arm in experiment.arms),
        unit=experiment.analysis.unit or "user_id",
        segments=tuple(experiment.segments.columns),
    )
    evidence = column_sums(engine, [source for source, _ in sources], request)
    rows = {entry["file"]: entry["rows"] for entry in evidence.inputs}
    read = tuple(
        log.entry(file, rows.get(file, 0)) for source, log in sources for file in source.files
    )
    return dataclasses.replace(evidence, inputs=read)


def column_request(
    experiment: Experiment, inputs: Inputs, engine: str, columns: Sequence[str]
) -> tuple[Any, list[Any]]:
    """The request of the log ``columns`` of numeric metrics (every arm, per unit of
    ``analysis.unit``, per segment column but the unit) and the log sources that an SQL
    ``engine`` reads it from: a :class:`~abrank.engines.column_sums.ColumnRequest` and the
    :class:`~abrank.engines.sql.sources.LogSource` of each log."""
    from abrank.engines.column_sums import ColumnRequest

    unit = experiment.analysis.unit or "user_id"
    request = ColumnRequest(
        columns=tuple(dict.fromkeys(columns)),
        arms=tuple(str(arm.name) for arm in experiment.arms),
        unit=unit,
        segments=tuple(c for c in experiment.segments.columns if c != unit),
    )
    return request, [source for source, _ in log_sources(experiment, inputs, engine)]
