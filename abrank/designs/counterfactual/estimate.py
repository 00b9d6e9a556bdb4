"""From coded logs to the counterfactual design's evidence: per-unit sums of every metric
for the logging arm and each candidate (:func:`abrank.stats.ips.list_sums`), both
estimators' figures, and the diagnostics of each candidate (support, weights, clipping).

The evidence's arms are the logging arm (``control``, scored by the PBM over its own
logged lists) and the candidates; its units are every unit of every logged arm, since
every row informs the attractiveness estimates (a unit of another arm has D_u = 0 and
only its rows' influence in M_u). The comparisons read the same units' sums of both
arms, so their difference is paired on units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from abrank.designs.counterfactual.logs import CodedLogs
from abrank.evidence import ROWS, Evidence
from abrank.stats.ips import (
    ESTIMATORS,
    Lists,
    attractiveness_by_propensities,
    clipped_estimates,
    distinct_lists,
    list_sums,
    mean_estimate,
    weight_diagnostics,
)
from abrank.stats.results import json_safe

__all__ = ["CandidateInput", "MetricSpec", "counterfactual_evidence", "paired_interval"]


@dataclass(frozen=True)
class MetricSpec:
    """A metric's canonical name, its click family and cut-off."""

    name: str
    family: str
    k: int


@dataclass(frozen=True)
class CandidateInput:
    """A candidate's name, its lists (:func:`~abrank.designs.counterfactual.logs.candidate_lists`)
    and the counts of its queries."""

    name: str
    lists: Lists
    counts: dict[str, Any]


def paired_interval(
    treatment: np.ndarray,
    control: np.ndarray,
    denominator: np.ndarray,
    level: float,
    extra_variance: float = 0.0,
) -> tuple[float, float, float, float]:
    """(delta, low, high, variance) of sum(T - C) / sum(D) by the delta method over units
    (normal), ``extra_variance`` (the propensities') added to the units' variance."""
    total = float(denominator.sum())
    diff = treatment - control
    delta = float(diff.sum()) / total
    n = diff.size
    z = diff - delta * denominator
    variance = float((z**2).sum() * n / max(n - 1, 1)) / total**2
    half = float(sps.norm.ppf(0.5 + level / 2)) * float(np.sqrt(variance + extra_variance))
    return delta, delta - half, delta + half, variance


def propensity_variances(
    logs: CodedLogs,
    candidates: list[CandidateInput],
    draws: np.ndarray | None,
    metrics: list[MetricSpec],
    estimator: str,
) -> dict[str, dict[str, float]]:
    """Per metric and candidate, the variance of its delta over the propensities' bootstrap
    replicates with the data held fixed: the part of the delta's variance that comes from
    estimating the propensities (0 without replicates: given propensities)."""
    out: dict[str, dict[str, float]] = {m.name: {c.name: 0.0 for c in candidates} for m in metrics}
    if draws is None or not candidates:
        return out
    usable = draws[np.isfinite(draws).all(axis=1)]
    if usable.shape[0] < 2:
        return out
    rows = logs.rows
    logger, counts = distinct_lists(logs.logger_lists)
    per_query = logs.logger_impressions_per_query()
    deltas = np.empty((usable.shape[0], len(metrics), len(candidates)))
    alphas = attractiveness_by_propensities(rows, usable, estimator)
    for b, p in enumerate(usable):  # replicates; each vectorised over every list
        alpha = alphas[:, b]
        for i, spec in enumerate(metrics):
            base = mean_estimate(logger, counts, alpha, p, spec.family, spec.k)
            for j, candidate in enumerate(candidates):
                value = mean_estimate(candidate.lists, per_query, alpha, p, spec.family, spec.k)
                deltas[b, i, j] = value - base
    spread = deltas.var(axis=0, ddof=1)
    return {
        spec.name: {c.name: float(spread[i, j]) for j, c in enumerate(candidates)}
        for i, spec in enumerate(metrics)
    }


def counterfactual_evidence(
    logs: CodedLogs,
    control: str,
    candidates: list[CandidateInput],
    propensity: np.ndarray,
    metrics: list[MetricSpec],
    *,
    estimator: str,
    unit: str,
    level: float,
    inputs: tuple = (),
    draws: np.ndarray | None = None,
) -> Evidence:
    """Per-unit sums of every metric (by ``estimator``) for the logging arm and each
    candidate; extras: ``estimates`` (both estimators' means and paired deltas with
    intervals), ``weights`` (per candidate, :func:`weight_diagnostics` at the deepest
    cut-off), ``clipping`` (per candidate and metric), ``observed`` (the logging arm's
    observed means), ``candidate_counts`` and ``inflation``: per metric and candidate, the
    factor by which the propensities' noise (their bootstrap ``draws``) widens the delta's
    standard error, which the comparisons apply to the units' linearised values."""
    rows = logs.rows
    per_query = logs.logger_impressions_per_query()
    logger_of_impression = np.where(rows.logger, np.arange(rows.logger.size), -1)
    query_of_impression = np.where(rows.logger, rows.query, -1)
    ones = np.ones(logs.n_logger)
    units = logs.units.astype(str)
    sums: dict[str, dict[str, np.ndarray]] = {control: {}}
    for candidate in candidates:
        sums[candidate.name] = {}
    estimates: dict[str, Any] = {}
    extra = {
        name: propensity_variances(logs, candidates, draws, metrics, name) for name in ESTIMATORS
    }
    inflation: dict[str, dict[str, float]] = {spec.name: {} for spec in metrics}
    for spec in metrics:
        by_estimator: dict[str, dict[str, Any]] = {}
        for name in ESTIMATORS:
            base = list_sums(
                rows,
                logs.logger_lists,
                ones,
                logger_of_impression,
                propensity,
                spec.family,
                spec.k,
                name,
            )
            entry: dict[str, Any] = {control: json_safe(base.estimate)}
            if name == estimator:
                sums[control][spec.name] = base.numerator
                sums[control][ROWS] = base.denominator
            for candidate in candidates:
                got = list_sums(
                    rows,
                    candidate.lists,
                    per_query,
                    query_of_impression,
                    propensity,
                    spec.family,
                    spec.k,
                    name,
                )
                added = extra[name][spec.name][candidate.name]
                delta, low, high, variance = paired_interval(
                    got.numerator, base.numerator, base.denominator, level, added
                )
                entry[candidate.name] = {
                    "estimate": json_safe(got.estimate),
                    "delta": json_safe(delta),
                    "ci": [json_safe(low), json_safe(high)],
                    "se_units": json_safe(float(np.sqrt(variance))),
                    "se_propensities": json_safe(float(np.sqrt(added))),
                }
                if name == estimator:
                    ratio = added / variance if variance > 0 else 0.0
                    inflation[spec.name][candidate.name] = float(np.sqrt(1.0 + ratio))
                    sums[candidate.name][spec.name] = got.numerator
                    sums[candidate.name][ROWS] = got.denominator
            by_estimator[name] = entry
        estimates[spec.name] = by_estimator
    deepest = max(spec.k for spec in metrics)
    weights = {
        c.name: weight_diagnostics(rows, c.lists, per_query, propensity, deepest)
        for c in candidates
    }
    clipping = {
        c.name: {
            spec.name: [
                {"clip": clip, "estimate": json_safe(value)}
                for clip, value in clipped_estimates(
                    rows, c.lists, per_query, propensity, spec.family, spec.k
                )
            ]
            for spec in metrics
        }
        for c in candidates
    }
    observed = {spec.name: json_safe(logs.observed(spec.family, spec.k)) for spec in metrics}
    frames = {
        arm: pd.DataFrame(columns, index=pd.Index(units, name=unit))[
            [ROWS, *[spec.name for spec in metrics]]
        ]
        for arm, columns in sums.items()
    }
    return Evidence(
        unit=unit,
        sums=frames,
        inputs=tuple(inputs),
        extras={
            "estimates": estimates,
            "weights": weights,
            "clipping": clipping,
            "observed": observed,
            "candidate_counts": {c.name: c.counts for c in candidates},
            "inflation": inflation,
        },
    )
