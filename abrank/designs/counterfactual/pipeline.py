"""The counterfactual design's stages before the comparisons: read and code the logs, find
the propensities, read the candidates, build the evidence and the per-query table, and
gather the diagnostics (the PBM check among them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.config import Experiment
from abrank.config.arms import ArmConfig
from abrank.designs.counterfactual.estimate import (
    CandidateInput,
    MetricSpec,
    counterfactual_evidence,
)
from abrank.designs.counterfactual.logs import CodedLogs, candidate_lists, code_logs
from abrank.errors import DataError
from abrank.evidence import Evidence
from abrank.stats.ips import attractiveness, list_sums
from abrank.stats.pbm_check import pbm_check
from abrank.stats.propensity import PropensityEstimate, given_propensities, harvest_propensities

__all__ = ["Prepared", "counterfactual_inputs", "diagnostics_of", "read_logs"]


@dataclass(frozen=True)
class Prepared:
    """What the comparisons and the readout read: the experiment whose treatments are the
    candidates (``scored``), the coded logs, the propensities, the evidence, the
    candidates' inputs, the per-query table and the PBM check."""

    scored: Experiment
    logs: CodedLogs
    propensities: PropensityEstimate
    evidence: Evidence
    candidates: list[CandidateInput]
    per_query: pd.DataFrame
    check: Any
    metrics: list[MetricSpec]
    logged: dict[str, dict[str, int]]


def metric_specs(experiment: Experiment) -> list[MetricSpec]:
    """Each metric's family and cut-off (the config checks allowed only PBM click metrics)."""
    from abrank.metrics import parse_metric

    specs = []
    for name in experiment.metrics:
        metric = parse_metric(name)
        specs.append(MetricSpec(metric.name, metric.family, int(metric.k or 0)))
    return specs


def read_logs(
    experiment: Experiment, inputs: Any, say: Any, engine: Any = None
) -> tuple[Any, CodedLogs]:
    """The logged arms read as an online test's (the propensity column too when the config
    says so), coded across arms: in memory, or by the SQL engine ``engine`` (an
    :class:`~abrank.analysis.engine.EngineChoice`; :mod:`abrank.designs.counterfactual.sql`)."""
    from abrank.designs.online.logs import load_online

    if engine is not None and engine.name != "memory":
        from abrank.designs.counterfactual.sql import code_logs_sql

        return code_logs_sql(experiment, inputs, engine, say)
    extra = ("propensity",) if experiment.propensities == "column" else ()
    data = load_online(experiment, say, inputs=inputs, columns=extra)
    unit = experiment.analysis.unit or "user_id"
    if extra:
        for name, frame in data.impressions.items():
            if "propensity" not in frame.columns:
                raise DataError(
                    f"{data.paths[name]}: propensities: column: expected a `propensity` "
                    f"column, found columns: {', '.join(map(str, frame.columns))}"
                )
            raw = frame["propensity"]
            numbers = (
                raw if raw.dtype.kind == "f" else pd.to_numeric(raw.astype(str), errors="coerce")
            )
            values = numbers.to_numpy(dtype=np.float64)
            bad = ~np.isfinite(values) | (values <= 0) | (values > 1)
            if bad.any():
                found = raw.iloc[int(np.flatnonzero(bad)[0])]
                raise DataError(
                    f"{data.paths[name]}: propensity: expected a number in (0, 1] on every "
                    f"row, got {str(found)!r}"
                )
            frame["propensity"] = values
    say("coding the logs")
    return data, code_logs(data.impressions, experiment.control.name, unit, data.paths)


def propensities_of(
    experiment: Experiment, logs: CodedLogs, deepest: int, say: Any
) -> PropensityEstimate:
    """The propensities of ranks 1..the logs' deepest: harvested, from the log's column
    (mean per rank) or as given; a DataError where a needed rank has none."""
    config = experiment.propensities
    analysis = experiment.analysis
    depth = logs.max_rank
    if deepest > depth:
        raise DataError(
            f"metrics: expected cut-offs within the logged lists' depth ({depth}), got a "
            f"metric at {deepest}"
        )
    if isinstance(config, dict):
        if len(config) < depth:
            raise DataError(
                f"propensities: expected a value for every logged rank 1..{depth}, got ranks "
                f"1..{len(config)}"
            )
        return given_propensities(np.array([config[r] for r in range(1, depth + 1)]))
    rows = logs.rows
    if config == "column":
        values = logs.propensity
        assert values is not None  # read_logs checked the column: numbers in (0, 1]
        means = np.bincount(rows.rank - 1, values, depth) / np.maximum(
            np.bincount(rows.rank - 1, minlength=depth), 1
        )
        return given_propensities(means, source="column")
    say(f"harvesting propensities ({analysis.propensity_resamples} unit-bootstrap replicates)")
    found = harvest_propensities(
        rows.pair,
        rows.rank,
        rows.clicked,
        rows.unit,
        max_rank=depth,
        resamples=analysis.propensity_resamples,
        seed=analysis.seed,
        confidence_level=analysis.confidence_level,
    )
    missing = [int(r) for r in found.ranks if not np.isfinite(found.estimate[r - 1])]
    if missing:
        raise DataError(
            f"propensities: harvest: expected a (query, document) shown at rank {missing[0]} and "
            "at another rank by some ranker, got none: the logs cannot tell how often that "
            "rank is examined (give `propensities:` per rank instead)"
        )
    return found


def read_candidate(experiment: Experiment, index: int, inputs: Any) -> pd.DataFrame:
    """Candidate ``index``'s rankings frame (query_id, doc_id, rank), read as an arm's."""
    from abrank.io import read_rankings

    candidate = experiment.candidates[index]
    source = inputs[f"candidates[{index}].path"]
    return read_rankings(
        source.file,
        format=source.format,
        columns=candidate.columns.mapping(),
        duplicates=candidate.duplicates or experiment.duplicates,
        sep=candidate.sep,
        decimal=candidate.decimal,
    )


def counterfactual_inputs(
    experiment: Experiment, inputs: Any, say: Any, engine: Any = None
) -> Prepared:
    """Everything before the comparisons (the logs read by ``engine``, memory by default)."""
    data, logs = read_logs(experiment, inputs, say, engine)
    specs = metric_specs(experiment)
    deepest = max(spec.k for spec in specs)
    propensities = propensities_of(experiment, logs, deepest, say)
    candidates = []
    for index, candidate in enumerate(experiment.candidates):
        source = inputs[f"candidates[{index}].path"]
        say(f"reading candidate {candidate.name}")
        rankings = read_candidate(experiment, index, inputs)
        lists, counts = candidate_lists(logs, rankings, deepest)
        candidates.append(CandidateInput(candidate.name, lists, counts))
        data.inputs.append(source.entry(source.file, len(rankings)))
    say("estimating the candidates' metrics")
    unit = experiment.analysis.unit or "user_id"
    evidence = counterfactual_evidence(
        logs,
        experiment.control.name,
        candidates,
        propensities.estimate,
        specs,
        estimator=experiment.analysis.estimator,
        unit=unit,
        level=experiment.analysis.confidence_level,
        inputs=tuple(data.inputs),
        draws=propensities.draws,
    )
    scored = experiment.model_copy(
        update={
            "treatments": [
                ArmConfig(name=c.name, label=c.label or c.name) for c in experiment.candidates
            ]
        }
    )
    say("checking the position-based model")
    rows = logs.rows
    alpha, _ = attractiveness(rows, propensities.estimate, "snips")
    expected = propensities.estimate[rows.rank - 1] * alpha[rows.pair]
    check = pbm_check(rows.impression, rows.rank, rows.clicked, expected, rows.unit)
    logged = {
        "impressions": {
            name: int((logs.arm_of_impression == index).sum())
            for index, name in enumerate(logs.arms)
        },
        "units": {
            name: int(np.unique(rows.unit[logs.arm_of_impression[rows.impression] == index]).size)
            for index, name in enumerate(logs.arms)
        },
    }
    per_query = per_query_table(experiment, logs, candidates, propensities.estimate, specs)
    return Prepared(
        scored, logs, propensities, evidence, candidates, per_query, check, specs, logged
    )


def per_query_table(
    experiment: Experiment,
    logs: CodedLogs,
    candidates: list[CandidateInput],
    propensity: np.ndarray,
    specs: list[MetricSpec],
) -> pd.DataFrame:
    """per_query.csv: one row per (arm, logged query) with the logging arm's impressions of
    it, each metric's plug-in estimate and the candidate's unsupported share of its top k."""
    rows = logs.rows
    per_query = logs.logger_impressions_per_query()
    estimator = experiment.analysis.estimator
    deepest = max(spec.k for spec in specs)
    parts = []
    control: dict[str, Any] = {"arm": experiment.control.name, "query": logs.queries.astype(str)}
    control["impressions"] = per_query.astype(np.int64)
    query_of = rows.query[: logs.n_logger]
    ones = np.ones(logs.n_logger)
    index = np.where(rows.logger, np.arange(rows.logger.size), -1)
    for spec in specs:
        values = list_sums(
            rows, logs.logger_lists, ones, index, propensity, spec.family, spec.k, estimator
        ).per_list
        total = np.bincount(query_of, values, len(logs.queries))
        control[spec.name] = np.divide(
            total, per_query, out=np.full(total.shape, np.nan), where=per_query > 0
        )
    control["unsupported"] = 0.0
    parts.append(pd.DataFrame(control))
    query_index = np.where(rows.logger, rows.query, -1)
    for candidate in candidates:
        columns: dict[str, Any] = {"arm": candidate.name, "query": logs.queries.astype(str)}
        columns["impressions"] = per_query.astype(np.int64)
        for spec in specs:
            columns[spec.name] = list_sums(
                rows,
                candidate.lists,
                per_query,
                query_index,
                propensity,
                spec.family,
                spec.k,
                estimator,
            ).per_list
        columns["unsupported"] = candidate.lists.unsupported[:, :deepest].mean(axis=1)
        parts.append(pd.DataFrame(columns))
    table = pd.concat(parts, ignore_index=True)
    return table[table["impressions"] > 0].reset_index(drop=True)


def diagnostics_of(experiment: Experiment, prepared: Prepared) -> dict[str, Any]:
    """The design's summary.json ``diagnostics`` keys."""
    extras = prepared.evidence.extras
    weights = extras["weights"]
    deepest = max(spec.k for spec in prepared.metrics)
    return {
        "propensities": prepared.propensities.by_rank(),
        "propensity_fit": prepared.propensities.to_dict(),
        "support": {name: entry["unsupported"] for name, entry in weights.items()},
        "k": deepest,
        "estimator": experiment.analysis.estimator,
        "estimates": extras["estimates"],
        "observed": extras["observed"],
        "weights": weights,
        "clipping": extras["clipping"],
        "pbm_check": prepared.check.to_dict(),
        "candidates": extras["candidate_counts"],
        "logged_arms": prepared.logged["impressions"],
        "logged_units": prepared.logged["units"],
        "logged_impressions": prepared.logged["impressions"],
    }


def harvested_examination(experiment: Experiment, say: Any = None) -> PropensityEstimate:
    """The examination by rank harvested from ``experiment``'s click logs (an online or
    counterfactual experiment with a ``query`` column), relative to rank 1, with its
    point estimates only (no bootstrap): what ``abrank simulate
    --propensities-from`` gives the planner in place of its default click model's."""
    from abrank.inputs import resolve_inputs

    say = say or (lambda message: None)
    _, logs = read_logs(experiment, resolve_inputs(experiment), say)
    analysis = experiment.analysis.model_copy(update={"propensity_resamples": 0})
    harvest = experiment.model_copy(update={"propensities": "harvest", "analysis": analysis})
    return propensities_of(harvest, logs, 1, say)
