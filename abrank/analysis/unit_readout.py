"""The readout of a design whose evidence is per-unit sums (:class:`abrank.evidence.Evidence`:
online A/B tests, designs added from outside abrank): units and rows per arm, the
sample-ratio check, the clustered comparisons, the concentration of rows in few units, and
each unit's mean of the primary metric; from the evidence's extras where the design gives
them, the per-impression table, CTR by position, the units seen in several arms and the
judged metrics' impressions without a value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from abrank.analysis.comparisons import arm_pairs
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
from abrank.analysis.units import unit_means
from abrank.analysis.window import peeking_warnings
from abrank.config import Experiment
from abrank.evidence import Evidence
from abrank.readout import Readout
from abrank.readout.model import (
    DiagnosticsSummary,
    InputFile,
    MixedUnitsSummary,
    SampleRatio,
    Summary,
    Undefined,
)

if TYPE_CHECKING:
    from abrank.stats import Comparison

__all__ = ["build_unit_readout", "mixed_warnings"]


def build_unit_readout(
    experiment: Experiment,
    evidence: Evidence,
    comparisons: list[Comparison],
    too_small: list[dict[str, Any]],
    srm: Any,
) -> Readout:
    """The readout of per-unit sums ``evidence`` and the comparisons made on them
    (:func:`abrank.analysis.units.compare_units`); ``srm`` is the sample-ratio check
    (:func:`abrank.analysis.units.sample_ratio`).

    The evidence's extras that it reads, each optional: ``values`` (per arm, a table per
    row, indexed by impression_id: ``per_query.csv``; else the per-unit sums are),
    ``ctr_by_rank``, ``mixed`` (the units seen in several arms, :class:`abrank.io.MixedUnits`),
    ``undefined`` (metric -> rows without a value) and ``sat_dwell`` (the dwell of a
    satisfied click, for click metrics)."""
    analysis = experiment.analysis
    unit = analysis.unit or evidence.unit
    extras = evidence.extras
    units, rows = evidence.units, evidence.rows
    undefined: dict[str, int] = dict(extras.get("undefined", {}))
    check = SampleRatio.from_dict(srm.to_dict(), "srm")
    seen = extras.get("mixed")
    mixed = MixedUnitsSummary(
        column=unit,
        count=int(seen.count) if seen is not None else 0,
        examples=tuple(str(u) for u in seen.examples) if seen is not None else (),
        policy=analysis.mixed_units,
    )
    warnings = [*srm_warnings(check), *mixed_warnings(mixed, units)]
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    concentration = unit_concentration(dict(evidence.sums), comparisons, pairs)
    warnings += concentration_warnings(concentration, unit, analysis.primary_test)
    warnings += peeking_warnings(experiment)
    warnings += comparison_warnings(comparisons)
    numeric = extras.get("numeric")
    warnings += numeric_warnings(numeric or {})
    for metric, count in undefined.items():
        if count:
            warnings.append(
                f"{metric}: no value on {count:,} impressions (their query has no judged "
                "document that could score), left out of its comparisons"
            )
    all_pairs = experiment.comparisons == "all-pairs"
    summary = Summary(
        **summary_settings(experiment),
        arms=log_arms(experiment, rows, units),
        family=comparison_family(experiment, pairs),
        sequential=sequential_summary(experiment, comparisons),
        comparisons=tuple(saved_comparison(c, pairs, all_pairs) for c in comparisons),
        segments=segments_summary(experiment, too_small),
        diagnostics=DiagnosticsSummary(
            queries=dict(rows),
            analysed_queries=int(sum(rows.values())),
            undefined=(
                Undefined(policy=experiment.no_relevant, metrics=undefined)
                if "undefined" in extras
                else None
            ),
            warnings=tuple(warnings),
            method_notes=method_notes(comparisons),
            units=dict(units),
            impressions=dict(rows),
            srm=check,
            mixed_units=mixed,
            concentration=concentration,
            numeric_metrics=numeric,
        ),
        inputs=tuple(InputFile(**item) for item in evidence.inputs),
        unit=unit,
        sat_dwell=extras.get("sat_dwell"),
    )
    tables = extras.get("values") or evidence.sums
    per_row = pd.concat(
        [table.reset_index().assign(arm=name) for name, table in tables.items()],
        ignore_index=True,
    )
    per_row = per_row[["arm", *per_row.columns.drop("arm")]]
    charted = [experiment.primary_metric or experiment.metrics[0], *experiment.metrics]
    # a quantile metric has no per-unit sums: the chart shows the first metric that has
    sums = next(iter(evidence.sums.values()))
    shown = next((m for m in charted if m in sums.columns), None)
    values = (
        unit_means(evidence, shown)
        if shown is not None
        else pd.DataFrame({"arm": pd.Series(dtype=str), "value": pd.Series(dtype=float)})
    )
    return Readout.from_summary(
        summary,
        per_row,
        pd.DataFrame(columns=["arm", "metric", "k", "value"]),
        pd.DataFrame(columns=["arm", "query_id", "rank"]),
        resampled_draws(comparisons),
        experiment.text,
        ctr_by_rank=extras.get("ctr_by_rank"),
        unit_values=values,
    )


def numeric_warnings(numeric: dict[str, dict[str, Any]]) -> list[str]:
    """A warning per numeric metric whose column lacks a value on some impressions (they
    are counted and left out of its comparisons, never silently dropped)."""
    out = []
    for name, entry in numeric.items():
        missing = {arm: int(n) for arm, n in entry.get("missing", {}).items()}
        if not any(missing.values()):
            continue
        total = {arm: missing[arm] + int(entry["impressions"].get(arm, 0)) for arm in missing}
        arms = ", ".join(f"{arm} {n:,} of {total[arm]:,}" for arm, n in missing.items())
        columns = " or ".join(
            str(entry[k]) for k in ("column", "numerator", "denominator") if entry.get(k)
        )
        out.append(
            f"{name}: no value of {columns} on {sum(missing.values()):,} impressions ({arms}), "
            "left out of its comparisons"
        )
    return out


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
