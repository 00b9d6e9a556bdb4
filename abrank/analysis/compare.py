"""Comparing arms: every metric x treatment comparison, overall and per segment.

Each comparison runs :func:`abrank.stats.compare_metrics` on its own two arms' per-query
values (through :mod:`abrank.workers`, in threads where that is safe); the p-values are then
adjusted per family: the primary family (metrics x treatments) and the segment breakdowns.
"""

from __future__ import annotations

import pandas as pd

from abrank import workers
from abrank.analysis.load import display_path
from abrank.analysis.score import ScoredArms
from abrank.config import Experiment
from abrank.errors import DataError


def compare_arms(
    experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame
) -> tuple[list, list[dict]]:
    """Every metric x treatment comparison, overall and per segment, with adjusted p-values.

    Each comparison depends on its own two arms only: its queries are those the control
    and that treatment hold (both under ``missing_queries: drop``, either under ``zero``),
    never those of another treatment.
    """
    from abrank.stats import adjust

    analysis = experiment.analysis
    options = dict(
        design=analysis.design,
        primary_test=analysis.primary_test,
        tests=tuple(analysis.tests),
        alpha=analysis.alpha,
        confidence_level=analysis.confidence_level,
        n_resamples=analysis.resamples,
        seed=analysis.seed,
    )
    groups_by_column = {
        column: segments[column].groupby(segments[column], sort=True).groups
        for column in segments.columns
    }
    primary: list = []  # (order, future of a list of comparisons)
    breakdown: list = []
    too_small: list[tuple[tuple, dict]] = []
    metric_order = {metric: i for i, metric in enumerate(experiment.metrics)}
    for t_index, treatment in enumerate(experiment.treatments):
        queries = _pair_queries(experiment, scored, treatment.name)
        pairs = {
            metric: _pair_values(experiment, scored, treatment.name, metric, queries)
            for metric in experiment.metrics
        }
        primary.append(_compare_pairs(pairs, treatment.name, None, options))
        s_index = 0
        for column, groups in groups_by_column.items():
            for value, members in groups.items():
                label = f"{column}={value}"
                subsets = {}
                for metric, pair in pairs.items():
                    subset = tuple(
                        series.reindex(series.index.intersection(members)) for series in pair
                    )
                    n = _pair_size(subset, analysis.design)
                    if n < experiment.segments.min_queries:
                        entry = {"segment": label, "treatment": treatment.name, "metric": metric}
                        too_small.append(
                            ((t_index, metric_order[metric], s_index), {**entry, "n": n})
                        )
                    else:
                        subsets[metric] = subset
                if subsets:
                    order = (t_index, s_index)
                    breakdown.append(
                        (order, _compare_pairs(subsets, treatment.name, label, options))
                    )
                s_index += 1
    primary_results = [c for found in workers.results(primary) for c in found]
    orders = [order for order, _ in breakdown]
    found = workers.results([future for _, future in breakdown])
    # segment comparisons in the order treatment, metric, segment
    ranked = sorted(
        (
            ((t_index, metric_order[c.metric], s_index), c)
            for (t_index, s_index), comparisons in zip(orders, found, strict=True)
            for c in comparisons
        ),
        key=lambda item: item[0],
    )
    primary = adjust(primary_results, method=analysis.correction)
    breakdown = adjust([c for _, c in ranked], method=analysis.segment_correction)
    return [*primary, *breakdown], [entry for _, entry in sorted(too_small, key=lambda e: e[0])]


def _pair_queries(experiment: Experiment, scored: ScoredArms, treatment: str) -> tuple:
    """The queries of one control-vs-treatment comparison, by the missing-query policy.

    Paired design: one index shared by both arms. Independent design: each arm's own.
    """
    control = experiment.control.name
    mine, theirs = scored.present[control], scored.present[treatment]
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
                path = next(arm.path for arm in experiment.arms if arm.name == name)
                raise DataError(
                    f"{display_path(path)}: expected every analysed query "
                    f"(analysis.missing_queries: error), got {len(missing)} missing: {shown}"
                )
    shared = mine.intersection(theirs) if policy == "drop" else mine.union(theirs)
    shared = shared.sort_values()
    return shared, shared


def _pair_values(
    experiment: Experiment, scored: ScoredArms, treatment: str, metric: str, queries: tuple
) -> tuple[pd.Series, pd.Series]:
    control = experiment.control.name
    return tuple(
        scored.values[arm][metric].reindex(index)
        for arm, index in zip((control, treatment), queries, strict=True)
    )


def _pair_size(pair: tuple[pd.Series, pd.Series], design: str) -> int:
    control, treatment = pair
    if design == "paired":
        return int((control.notna() & treatment.notna()).sum())
    return int(min(control.notna().sum(), treatment.notna().sum()))


def _compare_pairs(pairs: dict, treatment: str, segment: str | None, options: dict):
    """The comparisons of every metric of ``pairs`` (metric -> (control, treatment)
    Series), as a future of a list in the metrics' order (see :func:`stats.compare_metrics`)."""
    from abrank.stats import compare_metrics

    controls, treatments = {}, {}
    for metric, (control, treatment_values) in pairs.items():
        if options["design"] == "paired":
            defined = control.notna() & treatment_values.notna()
            control, treatment_values = control[defined], treatment_values[defined]
            if len(control) == 0:
                raise DataError(
                    f"metric {metric}: expected queries with a defined value, got none "
                    "(no relevant judgments?)"
                )
        else:
            control, treatment_values = (
                control.dropna().to_numpy(),
                treatment_values.dropna().to_numpy(),
            )
        controls[metric], treatments[metric] = control, treatment_values
    return workers.start_comparison(  # in a thread when that is safe; see abrank.workers
        compare_metrics,
        controls,
        treatments,
        treatment_name=treatment,
        segment=segment,
        **options,
    )
