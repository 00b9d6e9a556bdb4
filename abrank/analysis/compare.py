"""Comparing arms: every metric x pair of arms comparison, overall and per segment.

The pairs are each treatment against the control (``comparisons: control``, the default)
or every pair of arms (``comparisons: all-pairs``: treatments against each other too, the
later arm of the config against the earlier one). Each comparison runs
:func:`abrank.stats.compare_metrics` on its own two arms' per-query values (through
:mod:`abrank.workers`, in threads where that is safe); the p-values are then adjusted per
family: the primary family (metrics x pairs) and the segment breakdowns.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from abrank import workers
from abrank.analysis.score import ScoredArms
from abrank.config import Experiment
from abrank.errors import DataError
from abrank.inputs import display_path


@dataclasses.dataclass(frozen=True)
class ArmPair:
    """Two arms compared: ``treatment`` against ``control`` (delta = treatment - control).

    ``name`` is what the comparison's ``treatment`` field says: the treatment arm's name
    against the experiment's control, ``"B vs A"`` for a treatment against another one.
    """

    treatment: str
    control: str
    name: str


def arm_pairs(experiment: Experiment) -> list[ArmPair]:
    """The pairs of arms an experiment compares, in the readout's order: every treatment
    against the control, then (``all-pairs``) each treatment against each earlier one."""
    control = experiment.control.name
    pairs = [ArmPair(t.name, control, t.name) for t in experiment.treatments]
    if experiment.comparisons == "all-pairs":
        names = [t.name for t in experiment.treatments]
        pairs += [
            ArmPair(later, earlier, f"{later} vs {earlier}")
            for j, later in enumerate(names)
            for earlier in names[:j]
        ]
    return pairs


def test_options(experiment: Experiment) -> dict:
    """The keyword arguments of every comparison of the experiment: which tests run, at
    which level, with how many resamples and which seed, and the N* of the ``sequential``
    test's confidence sequence."""
    analysis = experiment.analysis
    return dict(
        primary_test=analysis.primary_test,
        tests=tuple(analysis.tests),
        alpha=analysis.alpha,
        confidence_level=analysis.confidence_level,
        n_resamples=analysis.resamples,
        seed=analysis.seed,
        sequential_tuning=analysis.sequential_tuning,
    )


def compare_arms(
    experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison (see :func:`arm_pairs`), overall and per segment, with
    adjusted p-values: the overall ones form one family, the segment ones another.

    Each comparison depends on its own two arms only: its queries are those both arms hold
    (under ``missing_queries: drop``) or either holds (``zero``), never those of another arm.
    """
    from abrank.stats import adjust

    analysis = experiment.analysis
    options = dict(design=analysis.design, **test_options(experiment))
    groups_by_column = {
        column: segments[column].groupby(segments[column], sort=True).groups
        for column in segments.columns
    }
    primary: list = []  # (order, future of a list of comparisons)
    breakdown: list = []
    too_small: list[tuple[tuple, dict]] = []
    metric_order = {metric: i for i, metric in enumerate(experiment.metrics)}
    for t_index, arms in enumerate(arm_pairs(experiment)):
        queries = _pair_queries(experiment, scored, arms)
        pairs = {
            metric: _pair_values(scored, arms, metric, queries) for metric in experiment.metrics
        }
        primary.append(_compare_pairs(pairs, arms.name, None, options))
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
                        entry = {"segment": label, "treatment": arms.name, "metric": metric}
                        too_small.append(
                            ((t_index, metric_order[metric], s_index), {**entry, "n": n})
                        )
                    else:
                        subsets[metric] = subset
                if subsets:
                    order = (t_index, s_index)
                    breakdown.append((order, _compare_pairs(subsets, arms.name, label, options)))
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
    comparisons = orient_verdicts([*primary, *breakdown])
    return comparisons, [entry for _, entry in sorted(too_small, key=lambda e: e[0])]


def orient_verdicts(comparisons: list) -> list:
    """The comparisons with the verdicts of lower-is-better metrics (abandonment) turned
    around: a significant decrease is the treatment's win. The statistics call a
    significant increase a win; only the metric knows which direction is better."""
    from abrank.metrics import parse_metric

    swap = {"win": "loss", "loss": "win"}
    return [
        dataclasses.replace(c, verdict=swap[c.verdict])
        if c.verdict in swap and parse_metric(c.metric).lower_is_better
        else c
        for c in comparisons
    ]


def _pair_queries(experiment: Experiment, scored: ScoredArms, arms: ArmPair) -> tuple:
    """The queries of one comparison of two arms, by the missing-query policy.

    Paired design: one index shared by both arms. Independent design: each arm's own.
    """
    control, treatment = arms.control, arms.treatment
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
    scored: ScoredArms, arms: ArmPair, metric: str, queries: tuple
) -> tuple[pd.Series, pd.Series]:
    """One metric's (control, treatment) values on the comparison's queries."""
    return tuple(
        scored.values[arm][metric].reindex(index)
        for arm, index in zip((arms.control, arms.treatment), queries, strict=True)
    )


def _pair_size(pair: tuple[pd.Series, pd.Series], design: str) -> int:
    """How many queries a comparison would use: defined pairs (paired), the smaller arm's
    defined values (independent); a segment below the minimum is not tested."""
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
