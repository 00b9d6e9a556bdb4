"""The readout of an interleaving experiment (:mod:`abrank.designs.interleaved.outcomes`).

summary.json keeps the shape of every other design: ``arms`` (impressions and units each
arm contributed results to), ``comparisons`` (one per pair of arms and credit, design
``interleaved``: wins, ties, losses, ``delta`` = Δ_AB with its clustered interval and
p-value, ``interleaving`` with the units, the impressions with a click and the pair's
first-team check) and ``diagnostics.interleaving`` (the log's first-team check over every
arm and the same-list count). ``per_query.csv`` holds one row per (pair, credit,
impression) on the memory engine (an SQL engine returns per-unit counts only, so there it
holds the columns and no rows); the per-unit distribution chart reads each unit's
preference from the per-unit counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from abrank.analysis.comparisons import arm_pairs
from abrank.analysis.summarise import (
    comparison_family,
    comparison_warnings,
    log_arms,
    method_notes,
    resampled_draws,
    saved_comparison,
    segments_summary,
    summary_settings,
)
from abrank.analysis.window import peeking_warnings
from abrank.config import Experiment
from abrank.designs.interleaved.outcomes import InterleavedData, InterleavedScores
from abrank.evidence import ROWS
from abrank.readout import Readout
from abrank.readout.model import (
    DiagnosticsSummary,
    InputFile,
    InterleavingChecks,
    SampleRatio,
    Summary,
    UnitConcentration,
)


def build_interleaved_readout(
    experiment: Experiment,
    data: InterleavedData,
    scores: InterleavedScores,
    comparisons: list,
    too_small: list[dict[str, Any]],
) -> Readout:
    """The readout of an interleaving experiment from its scores and comparisons."""
    from abrank.stats import sample_ratio_mismatch

    analysis = experiment.analysis
    unit = analysis.unit or "user_id"
    balance = sample_ratio_mismatch(scores.first_team, alpha=analysis.srm_alpha)
    checks = InterleavingChecks(
        impressions=scores.impressions,
        units=scores.units,
        clicked=scores.clicked,
        clicked_share=scores.clicked / scores.impressions if scores.impressions else None,
        first_team=SampleRatio.from_dict(balance.to_dict(), "first_team"),
        same_lists=None if scores.same_lists is None else scores.same_lists.to_dict(),
        fixed_lists=None if scores.fixed_lists is None else scores.fixed_lists.to_dict(),
    )
    warnings = [message for message in [checks.message()] if message]
    if scores.fixed_lists is not None and scores.fixed_lists.warning():
        warnings.append(scores.fixed_lists.warning())
    warnings += same_list_warnings(checks)
    concentration = log_concentration(scores, comparisons)
    warnings += log_concentration_warnings(concentration, unit)
    warnings += peeking_warnings(experiment)
    warnings += comparison_warnings(comparisons)
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    all_pairs = experiment.comparisons == "all-pairs"
    summary = Summary(
        **summary_settings(experiment),
        arms=log_arms(
            experiment,
            {arm: n for arm, (n, _) in scores.per_arm.items()},
            {arm: u for arm, (_, u) in scores.per_arm.items()},
        ),
        family=comparison_family(experiment, pairs),
        comparisons=tuple(saved_comparison(c, pairs, all_pairs) for c in comparisons),
        segments=segments_summary(experiment, too_small),
        diagnostics=DiagnosticsSummary(
            queries={arm: n for arm, (n, _) in scores.per_arm.items()},
            analysed_queries=scores.impressions,
            warnings=tuple(warnings),
            method_notes=method_notes(comparisons),
            units={arm: u for arm, (_, u) in scores.per_arm.items()},
            impressions={arm: n for arm, (n, _) in scores.per_arm.items()},
            interleaving=checks,
            concentration=concentration,
        ),
        inputs=tuple(InputFile(**item) for item in data.inputs),
        unit=unit,
        sat_dwell=float(analysis.sat_dwell) if "sat_clicks" in experiment.metrics else None,
    )
    primary = experiment.primary_metric or experiment.metrics[0]
    return Readout.from_summary(
        summary,
        per_impression_table(scores),
        pd.DataFrame(columns=["arm", "metric", "k", "value"]),
        pd.DataFrame(columns=["arm", "query_id", "rank"]),
        resampled_draws(comparisons),
        experiment.text,
        unit_values=unit_preferences(scores, primary, unit),
    )


LOG = "all"
"""The key of the log's units in ``diagnostics.concentration.arms`` and in a comparison's
``regime`` (every unit sees both teams: one set of units, as ``n_units``)."""


def log_concentration(scores: InterleavedScores, comparisons: list) -> UnitConcentration:
    """``diagnostics.concentration``: how concentrated the log's impressions are in few
    units (:func:`abrank.stats.concentration.concentration` of each unit's impressions,
    the same for every pair and credit), under :data:`LOG`, and the comparisons whose
    verdict the jackknife gave on other units (a segment's)."""
    from abrank.stats.concentration import CONCENTRATED_SHARE, concentration

    table = next(iter(scores.evidence.sums.values()))
    impressions = table[ROWS].to_numpy(dtype=np.float64)
    figures = concentration(impressions).to_dict()
    listed = [
        {
            "metric": c.metric,
            "treatment": c.treatment,
            "segment": c.segment,
            LOG: c.regime[LOG],
        }
        for c in comparisons
        if c.regime and "concentrated" in c.regime.get("reasons", ()) and c.regime[LOG] != figures
    ]
    return UnitConcentration(
        threshold=CONCENTRATED_SHARE, arms={LOG: figures}, comparisons=tuple(listed)
    )


def log_concentration_warnings(concentration: UnitConcentration, unit: str) -> list[str]:
    """The warning of a log whose impressions are concentrated in few units, with its
    figures: the jackknife gives the verdicts (every interleaving test gives way to it)."""
    from abrank.stats.concentration import concentration_warning

    figures = concentration.arms[LOG]
    if not figures.get("concentrated"):
        return []
    name = unit[:-3] if unit.endswith("_id") else unit
    return [concentration_warning("the interleaved log", figures, name, "impressions", True)]


def same_list_warnings(checks: InterleavingChecks) -> list[str]:
    """A warning when many impressions showed a list both rankings agree on (they cannot
    prefer either ranker, so they dilute the preference towards zero), or when source
    rankings were given but no impression could be matched with them."""
    same = checks.same_lists
    if same and not same.get("compared") and same.get("unmatched"):
        return [
            f"none of the {same['unmatched']:,} impressions could be matched with the source "
            "rankings (the log has no query column, or none of its queries is in both rankings): "
            "the share of impressions both rankings would have shown alike is unknown"
        ]
    if not same or not same.get("compared") or (same.get("share") or 0) < 0.5:
        return []
    return [
        f"{same['share']:.0%} of the impressions showed a list that both rankings would have "
        "shown alike: those carry no preference and pull delta towards 0 (the rankings "
        f"differ on the other {1 - same['share']:.0%})"
    ]


def per_impression_table(scores: InterleavedScores) -> pd.DataFrame:
    """per_query.csv of an interleaving experiment: one row per (pair, credit, impression)
    with the credits, the outcome (+1 the treatment won, 0 tie, -1 lost), whether any
    result was clicked, the team of the first result, the unit and the segment columns."""
    frame = pd.concat(
        [
            table.assign(treatment=pair, metric=credit)
            for (pair, credit), table in scores.outcomes.items()
        ],
        ignore_index=True,
    )
    outcome_columns = next(iter(scores.outcomes.values())).columns  # the same for every pair
    return frame[["treatment", "metric", *outcome_columns]]


def unit_preferences(scores: InterleavedScores, credit: str, unit: str) -> pd.DataFrame:
    """Each unit's preference for the treatment by ``credit``: the mean over its impressions
    of 1 (win), 1/2 (tie) or 0 (loss), minus 1/2; columns ``arm`` (the pair) and ``value``."""
    frames = []
    for pair, table in scores.evidence.sums.items():
        means = table[credit].to_numpy(dtype=np.float64) / table[ROWS].to_numpy(np.float64) - 0.5
        frames.append(pd.DataFrame({"arm": pair, "value": means}))
    return pd.concat(frames, ignore_index=True)
