"""Comparing the arms of an online experiment on per-unit sums (clustered inference).

Every metric x pair of arms, overall and per segment, is compared with
:func:`abrank.stats.compare_clustered_metrics` on the units' sums (the delta method, with
the unit-level bootstrap and label permutation as second opinions), CUPED-adjusted when
the experiment names pre-period covariates; p-values are adjusted per family as for the
offline designs. The sample-ratio check tests the units per arm against the expected split.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from abrank.analysis.compare import arm_pairs, orient_verdicts, test_options
from abrank.analysis.online import OnlineData, OnlineScores, unit_columns, valued
from abrank.config import Experiment


def compare_online(
    experiment: Experiment, data: OnlineData, scores: OnlineScores
) -> tuple[list, list[dict]]:
    """Every metric x pair comparison on per-unit sums, overall and per segment, with
    adjusted p-values (the overall ones one family, the segment ones another), and the
    segment comparisons skipped for having fewer than ``segments.min_queries`` units."""
    from abrank.stats import adjust

    analysis = experiment.analysis
    options = dict(unit=analysis.unit, **test_options(experiment))
    metric_order = {metric: i for i, metric in enumerate(experiment.metrics)}
    primary: list = []
    breakdown: list = []
    too_small: list[tuple[tuple, dict]] = []
    for t_index, pair in enumerate(arm_pairs(experiment)):
        controls = {m: _sums(scores.sums[pair.control], m) for m in experiment.metrics}
        treatments = {m: _sums(scores.sums[pair.treatment], m) for m in experiment.metrics}
        covariates = _covariates(experiment, data, scores, pair.control, pair.treatment)
        primary += _compare(controls, treatments, pair.name, None, covariates, options)
        s_index = 0
        for column, by_arm in scores.segment_sums.items():
            values = sorted(
                set(by_arm[pair.control].index.get_level_values(0).astype(str))
                | set(by_arm[pair.treatment].index.get_level_values(0).astype(str))
            )
            for value in values:
                label = f"{column}={value}"
                controls, treatments = {}, {}
                for metric in experiment.metrics:
                    c = _sums(_level(by_arm[pair.control], value), metric)
                    t = _sums(_level(by_arm[pair.treatment], value), metric)
                    n = min(c.numerator.size, t.numerator.size)
                    if n < experiment.segments.min_queries:
                        entry = {"segment": label, "treatment": pair.name, "metric": metric}
                        too_small.append(
                            ((t_index, metric_order[metric], s_index), {**entry, "n": n})
                        )
                    else:
                        controls[metric], treatments[metric] = c, t
                if controls:
                    found = _compare(controls, treatments, pair.name, label, None, options)
                    breakdown += [((t_index, metric_order[c.metric], s_index), c) for c in found]
                s_index += 1
    breakdown.sort(key=lambda item: item[0])
    primary = adjust(primary, method=analysis.correction)
    segments = adjust([c for _, c in breakdown], method=analysis.segment_correction)
    comparisons = orient_verdicts([*primary, *segments])
    return comparisons, [entry for _, entry in sorted(too_small, key=lambda e: e[0])]


def sample_ratio(experiment: Experiment, scores: OnlineScores):
    """The sample-ratio-mismatch check of the units per arm against the expected split."""
    from abrank.stats import sample_ratio_mismatch

    return sample_ratio_mismatch(
        scores.units, experiment.analysis.expected_split, alpha=experiment.analysis.srm_alpha
    )


def _compare(controls: dict, treatments: dict, treatment: str, segment, covariates, options):
    from abrank.stats import compare_clustered_metrics

    return compare_clustered_metrics(
        controls,
        treatments,
        covariates=covariates or None,
        treatment_name=treatment,
        segment=segment,
        **options,
    )


def _sums(table: pd.DataFrame, metric: str):
    from abrank.stats import UnitSums

    numerator, denominator = unit_columns(table, metric)
    return UnitSums(numerator=numerator, denominator=denominator)


def _level(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """The per-unit sums of one segment value (rows of the first index level)."""
    keys = table.index.get_level_values(0).astype(str)
    return table[keys == value].droplevel(0)


def _covariates(
    experiment: Experiment, data: OnlineData, scores: OnlineScores, control: str, treatment: str
) -> dict:
    """Per metric with a pre-period column, each arm's pre-period sums over the units of
    its comparison (in the order of their sums; a unit without pre-period data has 0 / 0)."""
    from abrank.stats import UnitSums

    table = data.covariates
    if table is None:
        return {}
    out = {}
    for metric in experiment.metrics:
        if metric not in table.columns:
            continue
        pair = []
        for arm in (control, treatment):
            sums = scores.sums[arm]
            units = sums.index[valued(sums, metric) > 0].astype(str)
            pre = table.reindex(units)
            mean = pre[metric].to_numpy(dtype=np.float64)
            weight = pre["impressions"].to_numpy(dtype=np.float64)
            known = np.isfinite(mean) & np.isfinite(weight) & (weight > 0)
            weight = np.where(known, weight, 0.0)
            pair.append(UnitSums(np.where(known, mean, 0.0) * weight, weight))
        out[metric] = tuple(pair)
    return out
