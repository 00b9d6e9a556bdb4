"""Comparing the arms of an offline replay: per-query values through the one comparison loop.

The loop (:mod:`abrank.analysis.comparisons`) fixes the pairs, the order, the size rule,
the families and the orientation; here are the offline designs' samples (each arm's
per-query values on the pair's queries, by the missing-query policy) and their test:
:func:`abrank.stats.compare_metrics` on the two arms' values (through
:mod:`abrank.workers`, in threads where that is safe).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, cast

import numpy as np
import pandas as pd

from abrank import workers
from abrank.analysis.comparisons import ArmPair, PendingComparisons, start_all, test_settings
from abrank.analysis.geometric import is_geometric, log_values
from abrank.analysis.score import ScoredArms
from abrank.config import Experiment
from abrank.errors import DataError
from abrank.evidence import Evidence
from abrank.inputs import display_path


def compare_arms(
    experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison (see :func:`~abrank.analysis.comparisons.arm_pairs`),
    overall and per segment, with adjusted p-values: the overall ones form one family, the
    segment ones another (:func:`~abrank.analysis.comparisons.compare_all`).

    Each comparison depends on its own two arms only: its queries are those both arms hold
    (under ``missing_queries: drop``) or either holds (``zero``), never those of another arm.
    """
    return start_comparing_arms(experiment, scored, segments).result()


def start_comparing_arms(
    experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame
) -> PendingComparisons:
    """:func:`compare_arms`, started in the comparison threads: ``.result()`` waits for it."""
    return start_all(experiment, QuerySamples(experiment, scored, segments))


class QuerySamples:
    """The offline designs' samples for the comparison loop, read from the evidence
    (:meth:`ScoredArms.evidence`): each arm's per-query values of a metric on the pair's
    queries, and their subsets per segment value."""

    def __init__(self, experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame):
        self.experiment = experiment
        self.evidence = scored.evidence()
        self.design = experiment.analysis.design
        self.options = dict(design=self.design, settings=test_settings(experiment))
        self.groups = [
            (column, segments[column].groupby(segments[column], sort=True).groups)
            for column in segments.columns
        ]
        self._pair: tuple[ArmPair, dict[str, tuple]] | None = None

    def metrics(self) -> list[str]:
        return list(self.experiment.metrics)

    def overall(self, pair: ArmPair, metric: str) -> tuple[pd.Series, pd.Series]:
        return self._values(pair)[metric]

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        return [
            (f"{column}={value}", members)
            for column, groups in self.groups
            for value, members in groups.items()
        ]

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> tuple:
        return tuple(
            series.reindex(series.index.intersection(key)) for series in self._values(pair)[metric]
        )

    def size(self, samples: tuple[pd.Series, pd.Series]) -> int:
        return _pair_size(samples, self.design)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        return _compare_pairs(dict(samples), pair.name, segment, self.options)

    def lower_is_better(self, metric: str) -> bool:
        from abrank.metrics import parse_metric

        return parse_metric(metric).lower_is_better

    def _values(self, pair: ArmPair) -> dict[str, tuple]:
        """Every metric's (control, treatment) values on the pair's queries (kept for the
        pair's segments)."""
        if self._pair is None or self._pair[0] != pair:
            queries = _pair_queries(self.experiment, self.evidence.extras["present"], pair)
            self._pair = (
                pair,
                {m: _pair_values(self.evidence, pair, m, queries) for m in self.experiment.metrics},
            )
        return self._pair[1]


def _pair_queries(experiment: Experiment, present: Mapping[str, pd.Index], arms: ArmPair) -> tuple:
    """The queries of one comparison of two arms (``present``: the queries each arm's log
    holds), by the missing-query policy.

    Paired design: one index shared by both arms. Independent design: each arm's own.
    """
    control, treatment = arms.control, arms.treatment
    mine, theirs = present[control], present[treatment]
    if experiment.analysis.design != "paired":
        return mine, theirs
    policy = experiment.analysis.missing_queries
    if policy == "error":
        for name, missing in (
            (control, theirs.difference(mine)),
            (treatment, mine.difference(theirs)),
        ):
            if len(missing):
                shown = ", ".join(map(repr, missing[:5])) + (
                    f" and {len(missing) - 5} more" if len(missing) > 5 else ""
                )
                # an offline replay's arms each name their log: the config refuses one without
                path = cast(str, next(arm.path for arm in experiment.arms if arm.name == name))
                raise DataError(
                    f"{display_path(path)}: expected every analysed query "
                    f"(analysis.missing_queries: error), got {len(missing)} missing: {shown}"
                )
    shared = mine.intersection(theirs) if policy == "drop" else mine.union(theirs)
    shared = shared.sort_values()
    return shared, shared


def _pair_values(
    evidence: Evidence, arms: ArmPair, metric: str, queries: tuple
) -> tuple[pd.Series, pd.Series]:
    """One metric's (control, treatment) values on the comparison's queries: M_u where
    D_u = 1, NaN where the value is undefined; a geometric metric's as their logs
    (:func:`abrank.analysis.geometric.log_values`)."""
    control_queries, treatment_queries = queries
    pair = (
        _query_values(evidence.sums[arms.control], metric).reindex(control_queries),
        _query_values(evidence.sums[arms.treatment], metric).reindex(treatment_queries),
    )
    if is_geometric(metric):
        return log_values(pair[0]), log_values(pair[1])
    return pair


def _query_values(sums: pd.DataFrame, metric: str) -> pd.Series:
    """An arm's per-query values of ``metric`` from its evidence (NaN where undefined)."""
    return sums[metric].where(sums[f"{metric}:n"] > 0).rename(metric)


def _pair_size(pair: tuple[pd.Series, pd.Series], design: str) -> int:
    """How many queries a comparison would use: defined pairs (paired), the smaller arm's
    defined values (independent); a segment below the minimum is not tested."""
    control, treatment = pair
    if design == "paired":
        return int((control.notna() & treatment.notna()).sum())
    return int(min(control.notna().sum(), treatment.notna().sum()))


def _compare_pairs(
    pairs: dict[str, tuple[pd.Series, pd.Series]],
    treatment: str,
    segment: str | None,
    options: dict[str, Any],
) -> Future:
    """The comparisons of every metric of ``pairs`` (metric -> (control, treatment)
    Series), as a future of a list in the metrics' order (see :func:`stats.compare_metrics`)."""
    from abrank.stats import compare_metrics

    # paired: the Series of the queries both arms define; independent: each arm's values
    controls: dict[str, pd.Series | np.ndarray] = {}
    treatments: dict[str, pd.Series | np.ndarray] = {}
    for metric, (control, treatment_values) in pairs.items():
        if options["design"] == "paired":
            defined = control.notna() & treatment_values.notna()
            control, treatment_values = control[defined], treatment_values[defined]
            if len(control) == 0:
                raise DataError(
                    f"metric {metric}: expected queries with a defined value, got none "
                    "(no relevant judgments?)"
                )
            controls[metric], treatments[metric] = control, treatment_values
        else:
            controls[metric] = control.dropna().to_numpy()
            treatments[metric] = treatment_values.dropna().to_numpy()
    return workers.start_comparison(  # in a thread when that is safe; see abrank.workers
        compare_metrics,
        controls,
        treatments,
        cost=sum(len(values) for values in controls.values()),  # the largest first
        treatment_name=treatment,
        segment=segment,
        **options,
    )
