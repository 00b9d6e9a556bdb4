"""The online design on an SQL engine: the logs read where they lie, per-unit sums back.

:func:`score_online_sql` is :func:`~abrank.designs.online.logs.load_online` and
:func:`~abrank.designs.online.logs.score_online` on DuckDB or Spark: only the per-unit sums
come back, in the same :class:`~abrank.designs.online.logs.OnlineData` /
:class:`~abrank.designs.online.logs.OnlineScores` shapes, so that the comparisons and the
readout run unchanged. What stays in Python is what is small: the covariates table, the
fingerprints of the files read.
"""

from __future__ import annotations

import dataclasses

from abrank._lazy import import_in_background
from abrank._lazy import pandas as pd
from abrank.analysis.engine import EngineChoice, fingerprints_in_background, log_sources
from abrank.analysis.load import Progress, shown_files
from abrank.config import Experiment
from abrank.designs.online.logs import OnlineData, OnlineScores, load_covariates
from abrank.inputs import Inputs, resolve_inputs

__all__ = ["score_online_sql"]

#: The click metric an aggregation of numeric metrics only counts with (its sums dropped).
COUNTING = "clicks@1"
#: What the comparisons of per-unit sums and the readout import (SciPy's root finders
#: among them), imported while the engine works.
COMPARING = (
    "pandas",
    "abrank.stats.clustered",
    "abrank.analysis.unit_readout",
    "abrank.designs.online.compare",
    "abrank.designs.online.explain",
)


def score_online_sql(
    experiment: Experiment, choice: EngineChoice, say: Progress, *, inputs: Inputs | None = None
) -> tuple[OnlineData, OnlineScores]:
    """The online inputs and per-unit sums of every arm, computed by an SQL engine, from
    the run's ``inputs`` (resolved from ``experiment`` when not given)."""
    from abrank.engines.sql import open_backend
    from abrank.engines.sql.clicks import ClickRequest, click_aggregates
    from abrank.metrics import parse_metric

    resolved = inputs if inputs is not None else resolve_inputs(experiment)
    names = [arm.name for arm in experiment.arms]
    unit = experiment.analysis.unit or "user_id"
    sources = log_sources(experiment, resolved, choice.name)
    files = [file for source, _ in sources for file in source.files]
    say(f"aggregating on {choice.name} ({shown_files(files)})")
    metrics = tuple(parse_metric(m) for m in experiment.ranking_metrics)
    # numeric metrics only: the aggregation still counts units and impressions, with one
    # click metric whose sums are then left out
    counted = metrics or (parse_metric(COUNTING),)
    request = ClickRequest(
        metrics=counted,
        arms=tuple(names),
        unit=unit,
        segments=tuple(experiment.segments.columns),
        sat_dwell=experiment.analysis.sat_dwell,
        drop_mixed=experiment.analysis.mixed_units == "drop",
    )
    backend = open_backend(choice.name, choice.options, choice.connection)
    # while the engine works: the comparisons' modules import (once the backend's own are
    # in), and the fingerprints read the files in what time the engine leaves (the
    # readout waits for them)
    import_in_background(*COMPARING)
    logs = [(log, file) for source, log in sources for file in source.files]
    hashed = fingerprints_in_background(logs)
    try:
        result = click_aggregates(backend, [s for s, _ in sources], request)
    finally:
        backend.close()
    if not metrics:
        result = dataclasses.replace(
            result,
            sums={arm: t.drop(columns=[COUNTING]) for arm, t in result.sums.items()},
            segment_sums={
                column: {arm: t.drop(columns=[COUNTING]) for arm, t in by_arm.items()}
                for column, by_arm in result.segment_sums.items()
            },
        )
    entries = [
        log.entry(file, result.file_rows.get(file, 0), fingerprint=False) for log, file in logs
    ]

    def fingerprinted() -> None:
        hashed()
        for entry, (log, file) in zip(entries, logs, strict=True):
            entry["sha256"] = log.sha256(file)

    read = list(entries)  # the covariates' entry (fingerprinted) follows the logs'
    covariates = load_covariates(experiment, resolved, unit, say, read)
    paths = {name: next(s.label for s, _ in sources if s.arm in (None, name)) for name in names}
    data = OnlineData(
        impressions={name: pd.DataFrame() for name in names},
        judgments=None,
        covariates=covariates,
        mixed=result.mixed,
        dropped_units=result.dropped_units,
        inputs=read,
        paths=paths,
        fingerprinted=fingerprinted,
    )
    columns = [
        *experiment.ranking_metrics,
        unit,
        *[c for c in experiment.segments.columns if c != unit],
    ]
    empty = pd.DataFrame(columns=columns, index=pd.Index([], name="impression_id", dtype="str"))
    scores = OnlineScores(
        values={name: empty for name in names},
        sums=result.sums,
        segment_sums=result.segment_sums,
        units={name: int(len(t)) for name, t in result.sums.items()},
        impressions={name: int(t["impressions"].sum()) for name, t in result.sums.items()},
        ctr_by_rank=result.ctr_by_rank,
        undefined={},
    )
    return data, scores
