"""The readout of an online experiment: units and impressions per arm, the sample-ratio
check, the clustered comparisons, the per-impression table, CTR by position and each
unit's mean of the primary metric."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from abrank.analysis.comparisons import arm_pairs
from abrank.analysis.score import JUDGED_K
from abrank.analysis.summarise import (
    comparison_family,
    comparison_warnings,
    concentration_warnings,
    log_arms,
    method_notes,
    resampled_draws,
    saved_comparison,
    segments_summary,
    sequential_summary,
    srm_warnings,
    summary_settings,
    unit_concentration,
)
from abrank.analysis.window import peeking_warnings
from abrank.config import Experiment
from abrank.designs.online.logs import unit_means
from abrank.readout import Readout
from abrank.readout.model import (
    DiagnosticsSummary,
    InputFile,
    JudgedAtK,
    MixedUnitsSummary,
    SampleRatio,
    Summary,
    Undefined,
)

if TYPE_CHECKING:
    from abrank.stats import Comparison

__all__ = ["build_online_readout", "mixed_warnings"]


def build_online_readout(
    experiment: Experiment,
    data: Any,
    scores: Any,
    comparisons: list[Comparison],
    too_small: list[dict[str, Any]],
    srm: Any,
) -> Readout:
    """The readout of an online experiment (:mod:`abrank.designs.online.logs`): units and
    impressions per arm, the sample-ratio check, the clustered comparisons, the per-impression
    table, CTR by position and each unit's mean of the primary metric."""
    analysis = experiment.analysis
    unit = analysis.unit or "user_id"
    check = SampleRatio.from_dict(srm.to_dict(), "srm")
    mixed = MixedUnitsSummary(
        column=unit,
        count=int(data.mixed.count),
        examples=tuple(str(u) for u in data.mixed.examples),
        policy=analysis.mixed_units,
    )
    warnings = [*srm_warnings(check), *mixed_warnings(mixed, scores.units)]
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    concentration = unit_concentration(scores.sums, comparisons, pairs)
    warnings += concentration_warnings(concentration, unit, analysis.primary_test)
    warnings += peeking_warnings(experiment)
    warnings += comparison_warnings(comparisons)
    for metric, count in scores.undefined.items():
        if count:
            warnings.append(
                f"{metric}: no value on {count:,} impressions (their query has no judged "
                "document that could score), left out of its comparisons"
            )
    all_pairs = experiment.comparisons == "all-pairs"
    summary = Summary(
        **summary_settings(experiment),
        arms=log_arms(experiment, scores.impressions, scores.units),
        family=comparison_family(experiment, pairs),
        sequential=sequential_summary(experiment, comparisons),
        comparisons=tuple(saved_comparison(c, pairs, all_pairs) for c in comparisons),
        segments=segments_summary(experiment, too_small),
        diagnostics=DiagnosticsSummary(
            queries=dict(scores.impressions),
            judged_queries=0,
            analysed_queries=int(sum(scores.impressions.values())),
            matched=0,
            missing={},
            missing_policy=analysis.missing_queries,
            without_relevant=0,
            undefined=Undefined(policy=experiment.no_relevant, metrics=dict(scores.undefined)),
            unjudged_queries={},
            judged_at_k=JudgedAtK(k=JUDGED_K, arms={}),
            warnings=tuple(warnings),
            method_notes=method_notes(comparisons),
            units=dict(scores.units),
            impressions=dict(scores.impressions),
            srm=check,
            mixed_units=mixed,
            concentration=concentration,
        ),
        inputs=tuple(InputFile(**item) for item in data.inputs),
        unit=unit,
        sat_dwell=float(analysis.sat_dwell),
    )
    per_impression = pd.concat(
        [table.reset_index().assign(arm=name) for name, table in scores.values.items()],
        ignore_index=True,
    )
    per_impression = per_impression[["arm", *per_impression.columns.drop("arm")]]
    values = unit_means(scores, experiment.primary_metric or experiment.metrics[0])
    return Readout.from_summary(
        summary,
        per_impression,
        pd.DataFrame(columns=["arm", "metric", "k", "value"]),
        pd.DataFrame(columns=["arm", "query_id", "rank"]),
        resampled_draws(comparisons),
        experiment.text,
        ctr_by_rank=scores.ctr_by_rank,
        unit_values=values,
    )


def mixed_warnings(mixed: Any, units: dict[str, int]) -> list[str]:
    """A warning when units were seen in more than one arm (a leak in assignment or logs)."""
    if not mixed.count:
        return []
    examples = ", ".join(repr(u) for u in mixed.examples[:3])
    total = sum(units.values())
    done = (
        "dropped from every arm (analysis.mixed_units: drop)"
        if mixed.policy == "drop"
        else "kept in each arm they appear in (analysis.mixed_units: drop leaves them out)"
    )
    return [
        f"{mixed.count:,} {mixed.column} values appear in more than one arm (e.g. {examples}; "
        f"{mixed.count / max(total, 1):.2%} of the units analysed); they were {done}"
    ]
