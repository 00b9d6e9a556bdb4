"""The interleaving path on an SQL engine: the log read where it lies, per-unit counts back.

:func:`score_interleaved_sql` is :func:`abrank.designs.interleaved.outcomes.load_interleaved` and
:func:`~abrank.designs.interleaved.outcomes.score_interleaved` on an SQL engine: the credits, the
outcomes and their per-unit counts are computed by the definition of
:mod:`abrank.engines.sql.interleaved`, and come back in the same
:class:`~abrank.designs.interleaved.outcomes.InterleavedData` /
:class:`~abrank.designs.interleaved.outcomes.InterleavedScores` shapes, so that
:func:`~abrank.designs.interleaved.outcomes.compare_interleaved_arms` and the readout run
unchanged. What stays in Python is what is small: the source rankings (read by the
usual readers, for the agreement depth per query that the engine joins to the
impressions) and the fingerprints of the files read.

Only per-unit counts leave the engine, so the outcome tables hold their columns and no
rows: per_query.csv of an interleaving readout on an SQL engine has no per-impression
rows, as for the online path.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from abrank.analysis.comparisons import arm_pairs
from abrank.analysis.engine import EngineChoice, fingerprints_meanwhile, sql_log_files
from abrank.analysis.load import Progress, shown_files
from abrank.config import Experiment
from abrank.designs.interleaved.evidence import counts_evidence
from abrank.designs.interleaved.outcomes import (
    InterleavedData,
    InterleavedScores,
    SameLists,
    agreement_depth,
    source_rankings,
)
from abrank.engines.sql import open_backend
from abrank.inputs import Inputs, resolve_inputs
from abrank.interleaving.checks import FixedLists

__all__ = ["score_interleaved_sql"]

#: The columns of an outcome table besides the unit and the segments, in the memory
#: engine's order (:data:`abrank.interleaving.credit.OUTCOME_COLUMNS`).
_OUTCOME = ("treatment_credit", "control_credit", "outcome", "clicked", "first_team")


def score_interleaved_sql(
    experiment: Experiment, choice: EngineChoice, say: Progress, *, inputs: Inputs | None = None
) -> tuple[InterleavedData, InterleavedScores]:
    """The interleaving experiment's inputs and per-unit counts, computed by an SQL engine,
    from the run's ``inputs`` (resolved from ``experiment`` when not given)."""
    from abrank.engines.sql.interleaved import InterleavedRequest, interleaved_aggregates
    from abrank.engines.sql.sources import LogSource

    resolved = inputs if inputs is not None else resolve_inputs(experiment)
    config = experiment.log
    assert config is not None  # the config requires it for the interleaved design
    unit = experiment.analysis.unit or "user_id"
    log = resolved["log.path"]
    sources = []
    for path in log.paths:
        files, fmt = sql_log_files(log, path, choice.name)
        sources.append(
            LogSource(
                files=tuple(files),
                format=fmt,
                label=str(path),
                columns=config.columns.mapping(),
                sep=config.sep,
                decimal=config.decimal,
            )
        )
    rankings, ranking_inputs = source_rankings(experiment, resolved, say)
    pairs = arm_pairs(experiment)
    request = InterleavedRequest(
        arms=tuple(arm.name for arm in experiment.arms),
        pairs=tuple((pair.control, pair.treatment) for pair in pairs),
        credits=tuple(experiment.metrics),
        unit=unit,
        segments=tuple(experiment.segments.columns),
        sat_dwell=float(experiment.analysis.sat_dwell),
        agreement=_agreement(experiment, rankings),
    )
    files = [file for source in sources for file in source.files]
    say(f"crediting clicks to teams on {choice.name} ({shown_files(files)})")
    # the fingerprints read the files while the engine reads them too
    with fingerprints_meanwhile((log, file) for file in files):
        backend = open_backend(choice.name, choice.options, choice.connection)
        try:
            result = interleaved_aggregates(backend, sources, request)
        finally:
            backend.close()
    read = [log.entry(file, result.file_rows.get(file, 0)) for file in files]
    data = InterleavedData(pd.DataFrame(), rankings, read + ranking_inputs, sources[0].label)
    names = {(pair.control, pair.treatment): pair.name for pair in pairs}
    keys = {key: (names[key[:2]], key[2]) for key in result.counts}
    ids = ["impression_id"] + ([unit] if unit != "impression_id" else [])
    columns = [*ids, *_OUTCOME, *[c for c in experiment.segments.columns if c not in ids]]
    empty = pd.DataFrame(columns=columns)
    same = None
    if result.same_lists is not None:
        compared, alike, unmatched = result.same_lists
        same = SameLists(compared=compared, same=alike, unmatched=unmatched)
    scores = InterleavedScores(
        outcomes={name: empty for name in keys.values()},
        impressions=result.impressions,
        units=result.units,
        clicked=result.clicked,
        per_arm=result.per_arm,
        first_team=result.first_team,
        same_lists=same,
        fixed_lists=None if result.fixed_lists is None else FixedLists(*result.fixed_lists),
        evidence=counts_evidence(
            unit,
            {keys[key]: table for key, table in result.counts.items()},
            {
                column: {keys[key]: table for key, table in by.items()}
                for column, by in result.segment_counts.items()
            },
        ),
    )
    return data, scores


def _agreement(experiment: Experiment, rankings: dict[str, pd.DataFrame]) -> pa.Table | None:
    """Per query both the control's and the first treatment's source rankings hold, the
    leading ranks they share (:func:`~abrank.designs.interleaved.outcomes.agreement_depth`), as
    the memory path's same-list check compares them; None without both rankings."""
    control = experiment.control.name
    other = next((t.name for t in experiment.treatments if t.name in rankings), None)
    if control not in rankings or other is None:
        return None
    depth = agreement_depth(rankings[control], rankings[other])
    return pa.table(
        {
            "query": pa.array(depth.index.astype(str), pa.string()),
            "depth": pa.array(depth.to_numpy(dtype=float), pa.float64()),
        }
    )
