"""The counterfactual readout: the comparison records of every candidate against the logging
arm, and the design's diagnostics (propensities, support, weights, clipping, the PBM check).

A candidate whose share of unsupported top-k slots is above ``analysis.max_unsupported``
keeps its estimates but gets no verdict (``verdict: "unsupported"``): its documents that
no log showed count as never clicked, which biases its estimate down by an unknown amount.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pandas as pd

from abrank.analysis.comparisons import arm_pairs
from abrank.analysis.summarise import (
    comparison_family,
    comparison_warnings,
    method_notes,
    resampled_draws,
    saved_comparison,
    segments_summary,
    sequential_summary,
    summary_settings,
)
from abrank.config import Experiment
from abrank.evidence import Evidence
from abrank.readout import Readout
from abrank.readout.model import ArmSummary, DiagnosticsSummary, InputFile, Summary

if TYPE_CHECKING:
    from abrank.stats import Comparison

__all__ = ["UNSUPPORTED", "build_counterfactual_readout"]

#: The verdict of a candidate with too little support: no verdict.
UNSUPPORTED = "unsupported"

#: A relative gap between the logging arm's model estimate and its observed mean above
#: which the readout warns that the model misses how these users click.
MODEL_GAP_WARNING = 0.05


def model_gap_warnings(diagnostics: dict[str, Any], control: str) -> list[str]:
    """A warning per metric whose model estimate of the logging arm is off its observed
    mean by more than :data:`MODEL_GAP_WARNING` (relative)."""
    out = []
    estimator = diagnostics["estimator"]
    for metric, observed in diagnostics["observed"].items():
        model = diagnostics["estimates"][metric][estimator][control]
        if observed is None or model is None or observed <= 0:
            continue
        gap = model / observed - 1
        if abs(gap) > MODEL_GAP_WARNING:
            out.append(
                f"{metric}: the model puts the logging arm {control} at {model:.3f} against its "
                f"observed {observed:.3f} ({gap:+.0%}): the position-based model misses how "
                "these users click (e.g. users who click more than others click together), so "
                "the candidates' deltas of this metric may be off by a similar share"
            )
    return out


def without_verdicts(comparisons: list[Comparison], unsupported: set[str]) -> list[Comparison]:
    """The comparisons, those of the ``unsupported`` candidates with no verdict; no
    wins, ties and losses for any (units' linearised values do not win or lose: the count
    does not apply to this design)."""
    out = []
    for c in comparisons:
        c = dataclasses.replace(c, wins=None, ties=None, losses=None)
        out.append(dataclasses.replace(c, verdict=UNSUPPORTED) if c.treatment in unsupported else c)
    return out


def build_counterfactual_readout(
    experiment: Experiment,
    logged: Experiment,
    evidence: Evidence,
    comparisons: list[Comparison],
    too_small: list[dict[str, Any]],
    diagnostics: dict[str, Any],
    per_query: pd.DataFrame,
) -> Readout:
    """The readout of ``experiment`` (whose treatments are the candidates) from the logs of
    ``logged`` (the config as written: the logged arms), with the design's ``diagnostics``
    (summary.json ``diagnostics`` keys beside the common ones)."""
    analysis = experiment.analysis
    limit = analysis.max_unsupported
    support = diagnostics["support"]
    unsupported = {name for name, share in support.items() if share is not None and share > limit}
    comparisons = without_verdicts(comparisons, unsupported)
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    warnings = [
        f"{name}: {support[name]:.1%} of its top-{diagnostics['k']} results were never shown for "
        f"their query in the logs (above analysis.max_unsupported = {limit:g}): they count as "
        "never clicked, so its estimates are biased down; no verdict"
        for name in sorted(unsupported)
    ]
    check = diagnostics.get("pbm_check")
    if check is not None and check["fails"]:
        warnings.append(
            f"the position-based model does not fit the logs (check p = {check['p_value']:.2g}): "
            "results below attractive ones are clicked at other rates than it predicts, so "
            "predictions for rankings that reorder results are not to be trusted"
        )
    for entry in diagnostics["propensity_fit"].get("adjacent", []):
        if entry["agrees"] is False:
            low, high = entry["ci"]
            warnings.append(
                f"propensities: the all-pairs ratio p{entry['ranks'][1]}/p{entry['ranks'][0]} = "
                f"{entry['fitted']:.3f} lies outside the adjacent ranks' own interval "
                f"[{low:.3f}, {high:.3f}]"
            )
    control = experiment.control.name
    warnings += model_gap_warnings(diagnostics, control)
    warnings += comparison_warnings(comparisons)
    units, rows = evidence.units, evidence.rows
    arms = tuple(
        ArmSummary(
            name=arm.name,
            label=arm.label or arm.name,
            role="control" if arm.name == control else "treatment",
            queries=rows[control],
            units=units[arm.name],
            impressions=rows[control],
        )
        for arm in experiment.arms
    )
    summary = Summary(
        **summary_settings(experiment),
        arms=arms,
        family=comparison_family(experiment, pairs),
        sequential=sequential_summary(experiment, comparisons),
        comparisons=tuple(saved_comparison(c, pairs, False) for c in comparisons),
        segments=segments_summary(experiment, too_small),
        diagnostics=DiagnosticsSummary(
            queries={control: rows[control]},
            analysed_queries=int(rows[control]),
            warnings=tuple(warnings),
            method_notes=method_notes(comparisons),
            units={logged_arm: count for logged_arm, count in diagnostics["logged_units"].items()},
            impressions=dict(diagnostics["logged_impressions"]),
            extra={key: diagnostics[key] for key in DIAGNOSTIC_KEYS if key in diagnostics},
        ),
        inputs=tuple(InputFile(**item) for item in evidence.inputs),
        unit=analysis.unit,
    )
    return Readout.from_summary(
        summary,
        per_query,
        pd.DataFrame(columns=["arm", "metric", "k", "value"]),
        pd.DataFrame(columns=["arm", "query_id", "rank"]),
        resampled_draws(comparisons),
        experiment.text,
    )


#: The design's own ``diagnostics`` keys, in summary.json's order.
DIAGNOSTIC_KEYS: tuple[str, ...] = (
    "propensities",
    "propensity_fit",
    "support",
    "k",
    "estimator",
    "estimates",
    "observed",
    "weights",
    "clipping",
    "pbm_check",
    "candidates",
    "logged_arms",
)
