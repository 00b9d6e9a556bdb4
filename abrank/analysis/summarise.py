"""Summarising: the readout of one experiment from its data, scores and comparisons."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.analysis.comparisons import ArmPair, arm_pairs
from abrank.analysis.load import LoadedData
from abrank.analysis.machine_labels import changed_notes
from abrank.analysis.score import JUDGED_K, ScoredArms, intersection
from abrank.analysis.unjudged import changed_verdict_notes, unjudged_check
from abrank.analysis.window import peeking_warnings, window_summary
from abrank.config import Experiment
from abrank.config.judgments import family_warnings
from abrank.inputs import display_path
from abrank.readout import Readout
from abrank.readout.model import (
    ArmSummary,
    ComparedPair,
    ComparisonSummary,
    Correction,
    DiagnosticsSummary,
    ExperimentInfo,
    Family,
    InputFile,
    JudgedAtK,
    MachineLabels,
    Schedule,
    SegmentsSummary,
    SequentialSummary,
    Summary,
    TooSmall,
    Undefined,
    UnitConcentration,
)

if TYPE_CHECKING:
    from abrank.stats import Comparison

#: A treatment whose judged@k falls this far below the control's gets a warning.
JUDGED_GAP_WARNING = 0.05


def build_readout(
    experiment: Experiment,
    data: LoadedData,
    scored: ScoredArms,
    comparisons: list[Comparison],
    too_small: list[dict[str, Any]],
    condensed: list[Comparison] | None = None,
    *,
    machine_labels: MachineLabels | None = None,
) -> Readout:
    """The readout of one experiment: its typed summary (:class:`Summary`, what
    summary.json holds), the per-query table and what the charts are drawn from.

    ``comparisons`` and ``too_small`` are :func:`~abrank.analysis.compare.compare_arms`'s,
    ``condensed`` the judged-only comparisons of the sensitivity check
    (:mod:`abrank.analysis.unjudged`; None when it did not run), ``machine_labels`` the
    agreement of machine and human judgments (:mod:`abrank.analysis.machine_labels`; None
    without machine labels); nothing is computed here beyond counts and the warnings the
    readout shows.
    """

    analysis = experiment.analysis
    control = experiment.control.name
    missing_ids = missing_queries(scored)
    missing = {name: len(ids) for name, ids in missing_ids.items()}
    logged = {
        name: int(index.size) + scored.unjudged_queries[name]
        for name, index in scored.present.items()
    }
    matched = int(intersection(scored.present.values()).size)
    warnings = [*_identical_logs(data.inputs), *_warnings(experiment, scored, missing)]
    warnings += peeking_warnings(experiment)
    warnings += comparison_warnings(comparisons)
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    all_pairs = experiment.comparisons == "all-pairs"
    saved = tuple(saved_comparison(c, pairs, all_pairs) for c in comparisons)
    unjudged = unjudged_check(
        scored, saved, [saved_comparison(c, pairs, all_pairs) for c in condensed or ()]
    )
    warnings += changed_verdict_notes(unjudged, saved)
    warnings += family_warnings(experiment.judgments, experiment.treatments)
    if machine_labels is not None:
        several = len({c.treatment for c in saved}) > 1
        warnings += changed_notes(machine_labels.verdicts_changed, machine_labels.estimate, several)
    summary = Summary(
        **summary_settings(experiment),
        arms=tuple(
            ArmSummary(
                name=arm.name,
                label=arm.label or arm.name,
                role="control" if arm.name == control else "treatment",
                queries=logged[arm.name],
            )
            for arm in experiment.arms
        ),
        family=comparison_family(experiment, pairs),
        sequential=sequential_summary(experiment, comparisons),
        comparisons=saved,
        segments=SegmentsSummary(
            columns=tuple(experiment.segments.columns),
            min_queries=experiment.segments.min_queries,
            too_small=tuple(TooSmall(**entry) for entry in too_small),
        ),
        diagnostics=DiagnosticsSummary(
            queries={name: logged[name] for name in data.rankings},
            judged_queries=scored.judged_queries,
            analysed_queries=int(scored.universe.size),
            matched=matched,
            missing=missing,
            missing_queries=missing_ids,
            missing_policy=analysis.missing_queries,
            without_relevant=int(scored.without_relevant.size),
            undefined=Undefined(policy=experiment.no_relevant, metrics=dict(scored.undefined)),
            unjudged_queries=dict(scored.unjudged_queries),
            judged_at_k=JudgedAtK(
                k=JUDGED_K, arms={k: _finite(v) for k, v in scored.judged_at_k.items()}
            ),
            rbp_residual=dict(scored.rbp_residual) or None,
            warnings=tuple(warnings),
            method_notes=method_notes(comparisons),
            unjudged=unjudged,
            machine_labels=machine_labels,
        ),
        inputs=tuple(InputFile(**item) for item in data.inputs),
    )
    return Readout.from_summary(
        summary,
        _per_query_table(experiment, data, scored),
        scored.curves,
        _first_relevant_table(scored),
        resampled_draws(comparisons),
        experiment.text,
    )


def resampled_draws(comparisons: list[Comparison]) -> dict:
    """The bootstrap draws of each overall comparison's delta, by (metric, treatment), for
    the bootstrap-distribution chart."""
    return {
        (c.metric, c.treatment): c.resampled_deltas
        for c in comparisons
        if c.segment is None and getattr(c, "resampled_deltas", None) is not None
    }


def summary_settings(experiment: Experiment) -> dict[str, Any]:
    """The summary's fields that come from the config alone: what the experiment is and
    how it was analysed (the same for every kind of experiment)."""
    from abrank import __version__

    analysis = experiment.analysis
    return dict(
        experiment=ExperimentInfo(
            name=experiment.name,
            title=experiment.title or experiment.name,
            description=experiment.description,
            owner=experiment.owner,
        ),
        abrank_version=__version__,
        config_path=display_path(experiment.source),
        design=analysis.design,
        seed=analysis.seed,
        alpha=analysis.alpha,
        confidence_level=analysis.confidence_level,
        n_resamples=analysis.resamples,
        primary_test=analysis.primary_test,
        tests=tuple(analysis.tests),
        correction=Correction(primary=analysis.correction, segments=analysis.segment_correction),
        relevance_threshold=experiment.relevance_threshold,
        no_relevant=experiment.no_relevant,
        gain=experiment.gain,
        depth=experiment.depth,
        metrics=tuple(experiment.metrics),
        metric_labels={name: metric_label(experiment, name) for name in experiment.metrics},
        primary_metric=experiment.primary_metric,
        schedule=_schedule(experiment),
    )


def metric_label(experiment: Experiment, name: str) -> str:
    """A metric's name in a report's prose, as the experiment's design words it."""
    from abrank.design_registry import DESIGNS

    return str(DESIGNS.of(experiment).metric_label(experiment, name))


def _schedule(experiment: Experiment) -> Schedule | None:
    """The ``schedule`` of a dated run (None undated); ``stale`` is filled when the run is
    recorded in the history (:mod:`abrank.analysis.record`)."""
    window = window_summary(experiment)
    return None if window is None else Schedule(**window)


def missing_queries(scored: ScoredArms) -> dict[str, tuple[str, ...]]:
    """``diagnostics.missing_queries``: per arm, the analysed queries (sorted) that its log
    lacks, which the missing-query policy scores 0 or drops."""
    return {
        name: tuple(str(q) for q in scored.universe.difference(index).sort_values())
        for name, index in scored.present.items()
    }


def missing_in_column(experiment: Experiment, scored: ScoredArms) -> pd.Series:
    """Per analysed query, the arms whose log lacks it, in the config's order and joined by
    ``;`` (``reranker``, ``a;b``); empty when every arm's log holds it."""
    universe = scored.universe
    names = pd.Series("", index=universe, dtype=object)
    for arm in experiment.arms:
        # Arrow's hash lookup: pandas' isin on Arrow-backed text goes through a Python
        # object per value (a third of a second per arm at 100,000 queries)
        found = pc.is_in(pa.array(universe), value_set=pa.array(scored.present[arm.name]))
        absent = ~found.to_numpy(zero_copy_only=False)
        if absent.any():
            joined = np.where(names.to_numpy() == "", arm.name, names.to_numpy() + ";" + arm.name)
            names = names.mask(absent, pd.Series(joined, index=universe, dtype=object))
    return names.rename(MISSING_IN)


#: The per-query table's column naming the arms whose log lacked the query.
MISSING_IN = "missing_in"


def _per_query_table(experiment: Experiment, data: LoadedData, scored: ScoredArms) -> pd.DataFrame:
    """per_query.csv: one row per (arm, query), the metrics, ``missing_in`` (the arms whose
    log lacked the query), then the segment columns."""
    per_query = []
    missing_in = missing_in_column(experiment, scored)
    for arm in experiment.arms:
        table = scored.values[arm.name].join(missing_in, how="left")
        table[MISSING_IN] = table[MISSING_IN].fillna("")
        table = table.join(data.segments, how="left") if len(data.segments.columns) else table
        per_query.append(table.reset_index().assign(arm=arm.name))
    frame = pd.concat(per_query, ignore_index=True)
    return frame[["arm", *frame.columns.drop("arm")]]


def _first_relevant_table(scored: ScoredArms) -> pd.DataFrame:
    """Where each arm's first relevant document lands: columns arm, query_id, rank."""
    return pd.concat(
        [
            s.rename("rank").rename_axis("query_id").reset_index().assign(arm=name)
            for name, s in scored.first_relevant.items()
        ],
        ignore_index=True,
    )[["arm", "query_id", "rank"]]


def _is_method_note(note: str) -> bool:
    """Whether a comparison's note says how a number was made (the CUPED adjustment), not
    that something is wrong: it goes to the methods note, not to the warnings."""
    from abrank.stats.estimation import NOTE_CUPED

    return note == NOTE_CUPED


def comparison_warnings(comparisons: list[Comparison]) -> list[str]:
    """The small-sample notes of the comparisons, each once with what it applies to (the
    notes on methods, CUPED and resampling approximations, are :func:`method_notes`)."""
    warnings: list[str] = []
    overall_notes: dict[str, list[str]] = {}
    segment_notes: dict[str, int] = {}
    for comparison in comparisons:
        for note in comparison.notes:
            if _is_method_note(note):
                continue
            if comparison.segment is None:
                subject = f"{comparison.metric} ({comparison.treatment})"
                overall_notes.setdefault(note, []).append(subject)
            else:
                segment_notes[note] = segment_notes.get(note, 0) + 1
    for note, subjects in overall_notes.items():
        warnings.append(f"{', '.join(subjects)}: {note}")
    for note, count in segment_notes.items():
        warnings.append(f"{count} segment comparison{'s' if count > 1 else ''}: {note}")
    return warnings


def method_notes(comparisons: list[Comparison]) -> tuple[str, ...] | None:
    """How the overall comparisons' numbers were made where that deserves a word: the
    CUPED adjustment (each note once, with the comparisons it applies to) and the
    resampling approximations (grid cells, lattices) with their error bounds. Notes on the
    methods (``diagnostics.method_notes``), not warnings: nothing is wrong with the
    readout. None when there is nothing to note."""
    overall = [comparison for comparison in comparisons if comparison.segment is None]
    subjects: dict[str, list[str]] = {}
    for comparison in overall:
        for note in comparison.notes:
            if _is_method_note(note):
                subjects.setdefault(note, []).append(
                    f"{comparison.metric} ({comparison.treatment})"
                )
    notes = [f"{', '.join(names)}: {note}" for note, names in subjects.items()]
    notes += [
        f"{comparison.metric} ({comparison.treatment}): resampled with an approximation: "
        f"{comparison.approximation}"
        for comparison in overall
        if comparison.approximation
    ]
    return tuple(notes) or None


def comparison_family(experiment: Experiment, pairs: dict[str, ArmPair]) -> Family | None:
    """The primary family when treatments are also compared with each other (``all-pairs``);
    None for the default family (each treatment against the control), which is not written."""
    if experiment.comparisons != "all-pairs":
        return None
    # with metric roles the family is the success metrics' (abrank.analysis.comparisons)
    success = [m for m, role in experiment.metric_roles.items() if role.role == "success"]
    return Family(
        comparisons=experiment.comparisons,
        pairs=tuple(ComparedPair(treatment=p.treatment, control=p.control) for p in pairs.values()),
        size=len(pairs) * len(success or experiment.metrics),
    )


def sequential_summary(
    experiment: Experiment, comparisons: list[Comparison]
) -> SequentialSummary | None:
    """``sequential`` (None unless ``analysis.sequential``): the method, the N* of the
    primary metric's first overall comparison (``analysis.sequential_tuning``, else its
    sample size) and where it came from, and how many times as wide as the fixed-horizon
    t-interval that comparison's sequence is at the nominal level. The t quantile has
    n - 1 degrees of freedom (paired: n queries) or n - 2 (two arms; n the values or units
    of both), the pooled t's, which Welch's degrees of freedom match within 1% from a few
    dozen per arm.
    """
    from abrank.stats.sequential import METHOD, width_ratio

    analysis = experiment.analysis
    if not analysis.sequential:
        return None
    primary = experiment.primary_metric or experiment.metrics[0]
    first = next((c for c in comparisons if c.metric == primary and c.segment is None), None)
    planned = analysis.sequential_tuning
    source = "analysis.sequential_tuning" if planned is not None else "sample_size"
    tuning = planned if planned is not None else (first.n if first is not None else None)
    ratio = None
    if first is not None and tuning is not None:
        df = first.n - 1 if first.design == "paired" else first.n - 2
        ratio = _finite(width_ratio(first.n, analysis.confidence_level, tuning, df))
    return SequentialSummary(method=METHOD, tuning=tuning, width_ratio=ratio, tuning_source=source)


def saved_comparison(
    comparison: Any, pairs: dict[str, ArmPair], all_pairs: bool
) -> ComparisonSummary:
    """A comparison as summary.json holds it; with ``all-pairs`` it names both of its arms."""
    if not all_pairs:
        return comparison.saved()
    pair = pairs[comparison.treatment]
    return comparison.saved(control=pair.control, treatment_arm=pair.treatment)


def _identical_logs(inputs: list[dict[str, Any]]) -> list[str]:
    """A warning for each treatment whose log holds the control's very bytes (same sha256).

    Comparing a ranker with itself is nearly always a config mistake (a copied path, an
    export run twice from the same model); the readout would show a zero delta everywhere.
    """
    control = next(item for item in inputs if item["role"] == "control")
    return [
        f"{item['arm']}: its log {item['path']} has the same content as the control's "
        f"({control['path']}, sha256 {control['sha256'][:12]}): the arms cannot differ; "
        "check the treatment's path"
        for item in inputs
        if item["role"] == "treatment" and item["sha256"] == control["sha256"]
    ]


def _warnings(experiment: Experiment, scored: ScoredArms, missing: dict[str, int]) -> list[str]:
    control = experiment.control.name
    notes = []
    base = scored.judged_at_k.get(control, np.nan)
    for arm in experiment.treatments:
        value = scored.judged_at_k.get(arm.name, np.nan)
        if np.isfinite(base) and np.isfinite(value) and value < base - JUDGED_GAP_WARNING:
            notes.append(
                f"{arm.name}: judged@{JUDGED_K} is {value:.3f} against control's {base:.3f}; unjudged "
                f"documents count as not relevant, which biases the comparison against {arm.name}"
            )
    policy = experiment.analysis.missing_queries
    for name, count in missing.items():
        if count and experiment.analysis.design == "paired":
            effect = {"zero": "scored 0", "drop": "left out of every arm"}.get(policy, policy)
            notes.append(f"{name}: {count} analysed queries are missing from its log ({effect})")
    for name, count in scored.unjudged_queries.items():
        if count:
            notes.append(
                f"{name}: {count} queries in the log have no judgments and are not analysed"
            )
    effect = (
        "scored 0 (no_relevant: zero)"
        if experiment.no_relevant == "zero"
        else "left out of the comparisons (no_relevant: drop)"
    )
    by_count: dict[int, list[str]] = {}
    for metric, count in scored.undefined.items():
        if count:
            by_count.setdefault(count, []).append(metric)
    for count, names in by_count.items():
        notes.append(
            f"{', '.join(names)}: undefined on {count} of {scored.universe.size} queries (no "
            f"judged document could score on {'them' if len(names) > 1 else 'it'}), {effect}"
        )
    return notes


def _finite(value: float) -> float | None:
    """The value, or None (JSON null) when it is not finite."""
    return float(value) if np.isfinite(value) else None


def unit_concentration(
    sums: dict[str, pd.DataFrame], comparisons: list[Comparison], pairs: dict[str, ArmPair]
) -> UnitConcentration:
    """``diagnostics.concentration``: each arm's concentration of impressions in few units
    (:func:`abrank.stats.concentration.concentration` of its units' impressions), and the
    comparisons whose verdict the jackknife gave on units whose figures differ from their
    arms' (a segment, or a judged metric's impressions with a value)."""
    from abrank.stats.concentration import CONCENTRATED_SHARE, concentration

    arms = {
        name: concentration(table["impressions"].to_numpy(dtype=np.float64)).to_dict()
        for name, table in sums.items()
    }
    listed = []
    for comparison in comparisons:
        regime = comparison.regime
        if regime is None or "concentrated" not in regime.get("reasons", ()):
            continue
        pair = pairs[comparison.treatment]
        figures = {"control": regime["control"], "treatment": regime["treatment"]}
        if (
            figures["control"] == arms[pair.control]
            and figures["treatment"] == arms[pair.treatment]
        ):
            continue
        listed.append(
            {
                "metric": comparison.metric,
                "treatment": comparison.treatment,
                "segment": comparison.segment,
                **figures,
            }
        )
    return UnitConcentration(threshold=CONCENTRATED_SHARE, arms=arms, comparisons=tuple(listed))


def concentration_warnings(concentration: Any, unit: str, primary_test: str) -> list[str]:
    """A warning per arm whose impressions are concentrated in few units, with its figures
    and what it does to the verdicts (the jackknife gives them when the primary test is
    the delta method's t or the unit bootstrap)."""
    from abrank.stats.clustered_regime import REGIME_TESTS
    from abrank.stats.concentration import concentration_warning

    name = unit[:-3] if unit.endswith("_id") else unit
    return [
        concentration_warning(arm, figures, name, "impressions", primary_test in REGIME_TESTS)
        for arm, figures in concentration.arms.items()
        if figures.get("concentrated")
    ]


def log_arms(
    experiment: Experiment, impressions: dict[str, int], units: dict[str, int]
) -> tuple[ArmSummary, ...]:
    """``arms`` of a readout from impression logs: each arm's impressions and units."""
    control = experiment.control.name
    return tuple(
        ArmSummary(
            name=arm.name,
            label=arm.label or arm.name,
            role="control" if arm.name == control else "treatment",
            queries=impressions[arm.name],
            units=units[arm.name],
            impressions=impressions[arm.name],
        )
        for arm in experiment.arms
    )


def segments_summary(experiment: Experiment, too_small: list[dict[str, Any]]) -> SegmentsSummary:
    """``segments``: the breakdown columns, the size rule and the comparisons it skipped."""
    return SegmentsSummary(
        columns=tuple(experiment.segments.columns),
        min_queries=experiment.segments.min_queries,
        too_small=tuple(TooSmall(**entry) for entry in too_small),
    )


def srm_warnings(srm: Any) -> list[str]:
    """The sample-ratio-mismatch alarm as the first warning of every output (none when the
    split is as expected)."""
    message = srm.message() if srm is not None else None
    return [message] if message else []
