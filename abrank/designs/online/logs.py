"""Online experiments: impression logs in, per-impression values and per-unit sums out.

Users (or whatever ``analysis.unit`` names) are randomized to arms, so the statistics run
on per-unit sums: for each metric, the sum of its values over the unit's impressions and
how many impressions had a value (DESIGN.md "Clustered inference"). This module reads the
logs, checks the arms against each other, scores every impression (click metrics, and
judged metrics when judgments are given) and aggregates per unit, overall and per
segment; :mod:`abrank.designs.online.compare` compares the arms on those sums.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from abrank._lazy import pandas as pd
from abrank.analysis.load import Progress, impression_reader, load_judgments, shown_files
from abrank.analysis.window import read_window
from abrank.config import Experiment
from abrank.errors import DataError
from abrank.evidence import Evidence
from abrank.inputs import Inputs, arm_key, display_path, resolve_inputs


@dataclasses.dataclass(frozen=True)
class OnlineData:
    """An online experiment's inputs: each arm's impressions (canonical frames), the
    judgments and pre-period covariates when given, and the units seen in several arms."""

    impressions: dict[str, pd.DataFrame]
    judgments: pd.DataFrame | None
    covariates: pd.DataFrame | None  # index unit; columns impressions and metrics
    mixed: Any  # abrank.io.MixedUnits, before any were dropped
    dropped_units: int
    inputs: list[dict[str, Any]]
    paths: dict[str, str]  # arm -> the log it was read from, as shown in messages
    #: Waits until every ``inputs`` entry has its sha256 (an SQL engine's run fills them
    #: from a thread started with the engine's statements); the readout calls it first.
    fingerprinted: Callable[[], None] = lambda: None


@dataclasses.dataclass(frozen=True)
class OnlineScores:
    """Per-impression values and per-unit sums of every arm.

    ``values[arm]`` is indexed by impression_id with one column per metric (NaN where a
    judged metric has no value) plus the unit and segment columns; ``sums[arm]`` holds the
    per-unit sums overall and ``segment_sums[column][arm]`` per (segment value, unit).
    """

    values: dict[str, pd.DataFrame]
    sums: dict[str, pd.DataFrame]
    segment_sums: dict[str, dict[str, pd.DataFrame]]
    units: dict[str, int]
    impressions: dict[str, int]
    ctr_by_rank: pd.DataFrame  # arm, rank, impressions, clicks, ctr
    undefined: dict[str, int]  # judged metric -> impressions without a value (all arms)


def load_online(
    experiment: Experiment,
    say: Progress | None = None,
    *,
    inputs: Inputs | None = None,
    columns: tuple[str, ...] = (),
) -> OnlineData:
    """Read the impression logs (one ``log:`` split by its arm column, or a file per arm),
    the judgments and the covariates of the run's ``inputs`` (resolved from
    ``experiment`` when not given); check the arms; drop mixed units if asked. Of the
    logs, only the columns that the metrics, the unit and the segments read are loaded
    (:func:`needed_columns`), and ``doc_id`` and ``query`` (when the log has it) for the
    explanation tables (:mod:`abrank.designs.online.explain`), and ``columns`` besides (a
    design's own, such as a logged ``propensity``)."""
    from abrank.io import check_arms, drop_units, split_log

    say = say or (lambda message: None)
    resolved = inputs if inputs is not None else resolve_inputs(experiment)
    unit = experiment.analysis.unit or "user_id"
    names = [arm.name for arm in experiment.arms]
    # doc_id and query besides: the explanation tables read them
    keep = list(dict.fromkeys([*needed_columns(experiment), "doc_id", "query", *columns]))
    read_files: list[dict[str, Any]] = []

    order = ("impression_id", "rank")
    if experiment.log is not None:
        log = experiment.log
        source = resolved["log.path"]
        files = source.files
        say(f"loading the log ({shown_files(files)})")
        frame, sizes = read_window(
            impression_reader(
                log,
                [*keep, "arm"],
                experiment.segments.columns,
                files=source,
                numeric=numeric_columns(experiment),
            ),
            files,
            key="impression_id",
            order=order,
            what="impression",
        )
        read_files += [source.entry(file, rows) for file, rows in sizes]
        # messages name the file as the reader's do: as the config resolved its path
        frames = split_log(frame, names, path=str(files[0]))
        paths = {name: str(files[0]) for name in names}
    else:
        frames, paths = {}, {}
        for index, arm in enumerate(experiment.arms):
            source = resolved[arm_key(index)]
            files = source.files
            say(f"loading {arm.name} ({shown_files(files)})")
            frames[arm.name], sizes = read_window(
                impression_reader(
                    arm,
                    keep,
                    experiment.segments.columns,
                    files=source,
                    numeric=numeric_columns(experiment),
                ),
                files,
                key="impression_id",
                order=order,
                what="impression",
            )
            read_files += [source.entry(file, rows) for file, rows in sizes]
            paths[arm.name] = str(files[0])
    for column in [unit, *experiment.segments.columns]:
        for name, frame in frames.items():
            if column not in frame.columns:
                key = "analysis.unit" if column == unit else "segments.columns"
                found = whole_frame(experiment, name, paths[name]).columns
                raise DataError(
                    f"{paths[name]}: {key}: expected a column {column!r}, "
                    f"found columns: {', '.join(map(str, found))}"
                )
    mixed = check_arms(frames, paths, unit=unit)
    dropped = 0
    if mixed.count and experiment.analysis.mixed_units == "drop":
        frames = drop_units(frames, mixed.units, unit=unit)
        dropped = int(mixed.count)

    judgments = load_judgments(experiment, resolved, say, read_files)
    covariates = load_covariates(experiment, resolved, unit, say, read_files)
    return OnlineData(frames, judgments, covariates, mixed, dropped, read_files, paths)


def load_covariates(
    experiment: Experiment,
    inputs: Inputs,
    unit: str,
    say: Progress,
    read: list[dict[str, Any]],
) -> pd.DataFrame | None:
    """The pre-period table of ``analysis.covariates`` (None without one); its ``inputs``
    entry is appended to ``read``."""
    from abrank.io.covariates import read_covariates

    config = experiment.analysis.covariates
    if config is None:
        return None
    source = inputs["analysis.covariates.path"]
    say(f"loading covariates ({display_path(source.file)})")
    covariates = read_covariates(
        source.file,
        unit=unit,
        metrics=experiment.metrics,
        format=source.format,
        sep=config.sep,
        decimal=config.decimal,
    )
    read.append(source.entry(source.file, len(covariates)))
    return covariates


def needed_columns(experiment: Experiment) -> list[str]:
    """The impression columns an experiment reads besides impression_id, rank and clicked
    (the ``keep`` of :func:`abrank.io.read_impressions`): the unit and segment columns,
    ``dwell`` for satisfied clicks, ``doc_id`` and ``query`` for judged metrics, the
    columns of numeric metrics."""
    from abrank.metrics import parse_metric

    metrics = [parse_metric(name) for name in experiment.ranking_metrics]
    wanted = [experiment.analysis.unit or "user_id", *experiment.segments.columns]
    wanted += numeric_columns(experiment)
    if any(m.is_click and m.family == "sat_ctr" for m in metrics):
        wanted.append("dwell")
    if any(not m.is_click for m in metrics):
        wanted += ["doc_id", "query"]
    return list(dict.fromkeys(wanted))


def numeric_columns(experiment: Experiment) -> list[str]:
    """The log columns that the numeric metrics read (by the log's names), each once."""
    return list(dict.fromkeys(c for m in experiment.numeric_metrics.values() for c in m.columns))


def whole_frame(experiment: Experiment, arm: str, path: str) -> pd.DataFrame:
    """An arm's impressions with every column of its log's first file ``path``
    (:func:`load_online` loads the columns the metrics read only). For messages about a
    missing column, which list the columns found: this reads the log again, and runs only
    on the way to that error."""
    from abrank.io import split_log

    source = experiment.log or next(a for a in experiment.arms if a.name == arm)
    frame = impression_reader(source)(path)
    if experiment.log is None:
        return frame
    names = [a.name for a in experiment.arms]
    return split_log(frame, names, path=str(experiment.log.path))[arm]


def score_online(experiment: Experiment, data: OnlineData) -> OnlineScores:
    """Every arm's per-impression values and per-unit sums (overall and per segment)."""
    from abrank.engines.clicks import (
        ImpressionIndex,
        ctr_by_rank,
        judged_inputs,
        score_impressions,
        unit_sums,
    )
    from abrank.engines.evaluate import evaluate
    from abrank.metrics import parse_metric

    metrics = [parse_metric(name) for name in experiment.ranking_metrics]
    clicks = [m for m in metrics if m.is_click]
    judged = [m for m in metrics if not m.is_click]
    if judged and data.judgments is None:
        raise DataError(
            f"metrics {', '.join(m.name for m in judged)}: expected a `judgments` file for "
            "judged metrics on an online log, got none (or use click metrics only)"
        )
    unit = experiment.analysis.unit or "user_id"
    segments = list(experiment.segments.columns)
    values: dict[str, pd.DataFrame] = {}
    sums: dict[str, pd.DataFrame] = {}
    segment_sums: dict[str, dict[str, pd.DataFrame]] = {column: {} for column in segments}
    rank_tables = []
    undefined = {m.name: 0 for m in judged}
    needed = [c for c in needed_columns(experiment) if c not in numeric_columns(experiment)]
    for name, frame in data.impressions.items():
        if any(column not in frame.columns for column in needed):
            # so that the error lists every column
            frame = whole_frame(experiment, name, data.paths[name])
        index = ImpressionIndex.of(frame)  # coded once for the scores and every sum
        parts = []
        if clicks:
            sat_dwell = experiment.analysis.sat_dwell
            parts.append(score_impressions(frame, clicks, sat_dwell=sat_dwell, index=index))
        if judged and data.judgments is not None:  # (judged metrics have judgments: above)
            rankings, judgments = judged_inputs(frame, data.judgments)
            try:
                scored = evaluate(
                    rankings,
                    judgments,
                    judged,
                    rel_level=experiment.relevance_threshold,
                    gain=experiment.gain,
                    depth=experiment.depth,
                )
            except DataError as exc:  # name the log: the frames are the log's impressions
                raise DataError(f"{data.paths[name]}: judged metrics: {exc}") from None
            if experiment.no_relevant == "zero":
                scored = scored.fillna(0.0)
            parts.append(scored)
        if parts:
            table = parts[0] if len(parts) == 1 else pd.concat(parts, axis=1)
        else:  # numeric metrics only: they are read by abrank.designs.online.numeric
            table = pd.DataFrame(index=index.labels())
        if judged:  # judged metrics have values for the impressions of judged queries only
            table = table.reindex(index.labels())
        table.index.name = "impression_id"
        for metric in judged:
            undefined[metric.name] += int(table[metric.name].isna().sum())
        table = table[[m.name for m in metrics]]
        attributes = frame[[unit, *[c for c in segments if c != unit]]].take(index.head)
        attributes.index = table.index
        values[name] = pd.concat([table, attributes], axis=1)
        sums[name] = unit_sums(frame, table, unit=unit, index=index)
        for column in segments:
            segment_sums[column][name] = unit_sums(frame, table, unit=unit, by=column, index=index)
        rank_tables.append(ctr_by_rank(frame).assign(arm=name))
    ranks = pd.concat(rank_tables, ignore_index=True)
    ranks = ranks[["arm", *[c for c in ranks.columns if c != "arm"]]]
    return OnlineScores(
        values=values,
        sums=sums,
        segment_sums=segment_sums,
        units={name: int(len(table)) for name, table in sums.items()},
        impressions={name: int(len(table)) for name, table in values.items()},
        ctr_by_rank=ranks,
        undefined=undefined,
    )


def online_evidence(experiment: Experiment, data: OnlineData, scores: OnlineScores) -> Evidence:
    """The online design's evidence: every arm's per-unit sums (overall and per segment),
    the files read, and as extras the per-impression values (``values``, empty from an SQL
    engine), the CTR by rank, the units seen in several arms (``mixed``) and the judged
    metrics' impressions without a value (``undefined``) and the dwell of a satisfied
    click (``sat_dwell``)."""
    return Evidence(
        unit=experiment.analysis.unit or "user_id",
        sums=scores.sums,
        segment_sums=scores.segment_sums,
        inputs=tuple(data.inputs),
        extras={
            "values": scores.values,
            "ctr_by_rank": scores.ctr_by_rank,
            "mixed": data.mixed,
            "undefined": scores.undefined,
            "sat_dwell": float(experiment.analysis.sat_dwell),
        },
    )
