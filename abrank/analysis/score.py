"""Scoring: per-query metric values of every arm, and what the judgments cover per arm.

The values, judged@k and where the first relevant document lands come from
the in-memory engine's ``score_arm`` (:func:`abrank.engines.get_engine`), which gives the numbers of the Python API's
``evaluate``, ``diagnose`` and ``first_relevant_rank`` for the same frames from one
ordering and join.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abrank.analysis.load import LoadedData
from abrank.config import Experiment
from abrank.errors import DataError
from abrank.evidence import ROWS, Evidence
from abrank.metrics.registry import FAMILIES

if TYPE_CHECKING:
    from abrank.engines.evaluate import ArmScores

#: judged@k, the diagnostic of judgment coverage, is taken at this cutoff.
JUDGED_K = 10
#: The cutoffs drawn on the metric@k chart (up to each metric's own cutoff).
CURVE_POINTS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 50, 100, 200, 500, 1000)


@dataclasses.dataclass(frozen=True)
class ScoredArms:
    """Per-query metric values of every arm over the analysed queries.

    ``values[arm]`` covers every analysed query (the judged queries that any arm holds):
    a query the arm's log lacks is scored as an empty ranking (0), and ``present[arm]``
    tells which queries the log really holds, so that each comparison can apply the
    missing-query policy to its own two arms only. Undefined values (a metric that no
    ranking could score above 0 on a query) are NaN, or 0 under ``no_relevant: zero``.
    """

    values: dict[str, pd.DataFrame]  # arm -> frame indexed by query_id, one column per metric
    present: dict[str, pd.Index]  # arm -> judged queries the arm's log holds
    universe: pd.Index  # queries analysed: judged queries held by any arm
    judged_at_k: dict[str, float]
    first_relevant: dict[str, pd.Series]
    curves: pd.DataFrame
    without_relevant: pd.Index  # analysed queries whose judgments hold no relevant document
    undefined: dict[str, int]  # metric -> analysed queries on which it is undefined
    unjudged_queries: dict[str, int]
    judged_queries: int
    #: rbp metric -> arm -> mean rbp, mean residual and the queries they cover
    #: (:func:`rbp_range`); empty without an rbp metric
    rbp_residual: dict[str, dict[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def evidence(self) -> Evidence:
        """The statistics' view of the values (DESIGN.md "The spine"): the unit is the
        query, and ``sums[arm]`` holds every analysed query (aligned across arms, for
        pairing) with ``impressions`` 1, per metric M_u (the value; 0 where undefined) and
        ``<metric>:n`` D_u (1 where the value is defined, else 0); ``extras["present"]``
        the queries each arm's log holds (the missing-query policy reads them)."""
        sums = {}
        for arm, values in self.values.items():
            defined = values.notna()
            columns: dict[str, Any] = {ROWS: np.ones(len(values), dtype=np.int64)}
            for metric in values.columns:
                columns[metric] = values[metric].fillna(0.0)
                columns[f"{metric}:n"] = defined[metric].astype(np.int64)
            sums[arm] = pd.DataFrame(columns, index=values.index)
        return Evidence(unit="query", sums=sums, extras={"present": dict(self.present)})


def score_arms(experiment: Experiment, data: LoadedData) -> ScoredArms:
    """Score each arm on every analysed query (judged queries that any arm holds)."""
    from abrank.engines import get_engine
    from abrank.metrics import parse_metric

    metrics = [parse_metric(name) for name in experiment.metrics]
    queries = analysed_queries(experiment, data)
    judged, logged, present, universe = (
        queries.judged,
        queries.logged,
        queries.present,
        queries.universe,
    )
    unjudged = {name: int(logged[name].size - present[name].size) for name in logged}

    judgments = data.judgments
    if judged.size != universe.size:
        judgments = judgments.loc[_member(judgments["query_id"], universe)]
    best = judgments.groupby("query_id", sort=False)["relevance"].max().reindex(universe)
    without_relevant = best.index[best.fillna(-np.inf).to_numpy() < experiment.relevance_threshold]

    curve = curve_metrics(metrics)
    requested = {m.name for m in metrics}
    extra = [m for m in [*curve, *residual_metrics(metrics)] if m.name not in requested]
    options = dict(
        rel_level=experiment.relevance_threshold, gain=experiment.gain, depth=experiment.depth
    )
    arms = {}
    for name, frame in data.rankings.items():
        rankings = frame
        if logged[name].size != present[name].size:
            rankings = frame.loc[_member(frame["query_id"], universe)]
        # complete: a query missing from this log is scored as an empty ranking
        arms[name] = get_engine("memory").score_arm(
            rankings, judgments, [*metrics, *extra], complete=True, judged_k=JUDGED_K, **options
        )
    return arms_scored(
        experiment, arms, present, universe, without_relevant, unjudged, int(judged.size)
    )


@dataclasses.dataclass(frozen=True)
class AnalysedQueries:
    """Which queries an offline experiment's loaded inputs hold: the judged ones, each
    arm's logged ones, those of them that are judged, and the analysed ones (the judged
    queries that any arm holds, sorted)."""

    judged: pd.Index
    logged: dict[str, pd.Index]
    present: dict[str, pd.Index]
    universe: pd.Index

    def to_dict(self) -> dict[str, Any]:
        """How many queries each set holds, as JSON-safe builtins."""
        return {
            "judged": int(self.judged.size),
            "logged": {name: int(index.size) for name, index in self.logged.items()},
            "present": {name: int(index.size) for name, index in self.present.items()},
            "analysed": int(self.universe.size),
        }


def analysed_queries(experiment: Experiment, data: LoadedData) -> AnalysedQueries:
    """The query sets of the loaded inputs; a DataError when no logged query is judged (the
    check ``abrank validate`` makes too, without scoring)."""
    judged = pd.Index(pd.unique(data.judgments["query_id"]))
    logged = {name: pd.Index(pd.unique(frame["query_id"])) for name, frame in data.rankings.items()}
    present = {name: queries.intersection(judged) for name, queries in logged.items()}
    universe = union(present.values())
    if universe.empty:
        control = data.rankings[experiment.control.name]
        first_judged = str(judged[0]) if judged.size else ""
        raise DataError(
            "the rankings and judgments: expected queries in common, got none "
            f"(e.g. ranking query {_first_id(control)!r}, judged query {first_judged!r})"
        )
    return AnalysedQueries(judged, logged, present, universe.sort_values().rename("query_id"))


def arms_scored(
    experiment: Experiment,
    arms: dict[str, ArmScores],
    present: dict[str, pd.Index],
    universe: pd.Index,
    without_relevant: pd.Index,
    unjudged: dict[str, int],
    judged_queries: int,
) -> ScoredArms:
    """:class:`ScoredArms` from each arm's scores (the requested metrics and the chart's
    metric@k, every query of ``universe`` scored: complete), whichever engine scored them."""
    from abrank.metrics import parse_metric

    metrics = [parse_metric(name) for name in experiment.metrics]
    curve = curve_metrics(metrics)
    zero = experiment.no_relevant == "zero"
    values: dict[str, pd.DataFrame] = {}
    curves: list[pd.DataFrame] = []
    judged_at_k: dict[str, float] = {}
    first_relevant: dict[str, pd.Series] = {}
    undefined: dict[str, int] = {}
    ranges: dict[str, dict[str, dict[str, Any]]] = {}
    with_residual = residual_pairs(metrics)
    for name, arm in arms.items():
        table = arm.values.reindex(universe).rename_axis("query_id")
        own = table.loc[present[name]] if present[name].size != universe.size else table
        for metric, residual in with_residual:
            ranges.setdefault(metric.name, {})[name] = rbp_range(
                own[metric.name], own[residual.name]
            )
        judged_at_k[name] = arm.judged_at_k
        first_relevant[name] = arm.first_relevant.reindex(own.index).rename("rank")
        if not undefined:  # undefined values depend on the judgments only, not on the arm
            undefined = {m.name: int(table[m.name].isna().sum()) for m in metrics}
        scored = table[[m.name for m in metrics]]
        if zero:  # trec_eval's convention: an undefined value scores 0
            scored = scored.fillna(0.0)
        values[name] = scored
        curve_table = own.fillna(0.0) if zero else own
        rows = [
            {"arm": name, "metric": m.family, "k": m.k, "value": float(curve_table[m.name].mean())}
            for m in curve
        ]
        curves.append(pd.DataFrame(rows, columns=["arm", "metric", "k", "value"]))
    return ScoredArms(
        values,
        present,
        universe,
        judged_at_k,
        first_relevant,
        pd.concat(curves, ignore_index=True),
        without_relevant,
        undefined,
        unjudged,
        judged_queries,
        ranges,
    )


def residual_pairs(metrics: list) -> list[tuple[Any, Any]]:
    """Every rbp metric (but a judged-only one) with its residual (``rbp_residual``, same
    persistence and cutoff), in order."""
    return [
        (m, dataclasses.replace(m, family="rbp_residual", rel=None))
        for m in metrics
        if m.family == "rbp" and not m.judged_only
    ]


def residual_metrics(metrics: list) -> list:
    """The residual of every rbp metric (:func:`residual_pairs`): scored beside it so that
    the readout can say what range the unjudged documents leave open."""
    return [residual for _, residual in residual_pairs(metrics)]


def rbp_range(values: pd.Series, residuals: pd.Series) -> dict[str, Any]:
    """One arm's rbp and residual, each averaged over the queries on which rbp is defined:
    the judged documents give ``rbp``, and unjudged ones, were they all relevant, could
    raise it to ``rbp + residual`` (``upper``)."""
    defined = values.notna().to_numpy()
    n = int(defined.sum())
    if n == 0:
        return {"rbp": None, "residual": None, "upper": None, "queries": 0}
    mean = float(values.to_numpy()[defined].mean())
    residual = float(residuals.to_numpy()[defined].mean())
    return {"rbp": mean, "residual": residual, "upper": mean + residual, "queries": n}


def curve_metrics(metrics: list) -> list:
    """metric@k for k = 1..cutoff of every cut-off metric, for the metric@k chart."""
    curve = []
    seen = set()
    for metric in metrics:
        # judged@k and rbp's residual count judgments: no curve of theirs is drawn
        if metric.k is None or FAMILIES[metric.family].relevance == "judged":
            continue
        for k in CURVE_POINTS:
            if k > metric.k:
                break
            point = dataclasses.replace(metric, k=k)
            if point.name not in seen:
                seen.add(point.name)
                curve.append(point)
    return curve


def _member(values: pd.Series | pd.Index, allowed: pd.Index) -> np.ndarray:
    """Which values lie in ``allowed``, through Arrow's hash join (pandas' ``isin`` on
    Arrow strings loops in Python over the allowed values)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.is_in(pa.array(values), value_set=pa.array(allowed))
    return found.to_numpy(zero_copy_only=False)


def union(indexes: Iterable[pd.Index]) -> pd.Index:
    """The union of several indexes."""
    return functools.reduce(pd.Index.union, indexes)


def intersection(indexes: Iterable[pd.Index]) -> pd.Index:
    """The queries common to several indexes."""
    return functools.reduce(pd.Index.intersection, indexes)


def _first_id(frame: pd.DataFrame) -> str:
    """The first query id of a log, for a message (empty for an empty log)."""
    return str(frame["query_id"].iat[0]) if len(frame) else ""
