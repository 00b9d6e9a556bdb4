"""One clustered comparison of checked arguments: its tests run, its result assembled.

The design's tests are listed once (:data:`CLUSTERED_TESTS`: the delta-method tests of
:mod:`abrank.stats.clustered_delta`, the resampling tests of
:mod:`abrank.stats.clustered_resampling`) and run on the comparison's sample
(:mod:`abrank.stats.clustered_sample`). The :class:`Comparison` holds the verdict's test
(the configured primary test, or the jackknife where the impressions are concentrated,
:mod:`abrank.stats.clustered_regime`), its interval and the lift's, the method's words
(clustered by the unit), the effect size and the MDE of the test that gives the verdict,
and the notes. Under CUPED the delta-method tests run again on the adjusted sample and the
unadjusted comparison is kept beside it, in ``cuped``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from abrank.stats.clustered_delta import (
    DELTA_METHOD_TESTS,
    delta_method_sequence,
    delta_method_test,
)
from abrank.stats.clustered_regime import concentrated_note, concentrated_regime
from abrank.stats.clustered_resampling import unit_bootstrap, unit_permutation_test
from abrank.stats.clustered_sample import ClusteredSample, sample_of
from abrank.stats.cuped import cuped_adjustment
from abrank.stats.estimation import (
    NOTE_CUPED,
    NOTE_LIFT,
    DesignTests,
    TestOutcome,
    lift,
    primary_interval,
)
from abrank.stats.power import POWER, minimum_detectable_effect
from abrank.stats.results import Comparison, Interval, build_comparison, json_safe
from abrank.stats.sequential import CI_METHOD as SEQUENCE_METHOD
from abrank.stats.sequential import SequenceTuning, detectable_delta
from abrank.stats.unit_draws import SharedUnitDraws
from abrank.stats.unit_jackknife import JACKKNIFE, t_test_mde
from abrank.stats.unit_sums import ArmEstimate, UnitSums, linearized

NOTE_FEW_UNITS = "fewer than 2 units in an arm: no test or interval is possible"
NOTE_NO_COVARIATE = (
    "CUPED: the pre-period covariate has no variance (no unit has pre-period data, or every "
    "unit's is the same value), so nothing was adjusted (theta 0, variance reduction 0)"
)

CLUSTERED_TESTS: DesignTests[ClusteredSample] = DesignTests("independent")
"""The function of each test of a clustered comparison, under its registry name."""
CLUSTERED_TESTS.register("t")(delta_method_test)
CLUSTERED_TESTS.register("sequential")(delta_method_sequence)
CLUSTERED_TESTS.register("permutation")(unit_permutation_test)
CLUSTERED_TESTS.register("bootstrap")(unit_bootstrap)


def clustered_comparison(
    control: UnitSums,
    treatment: UnitSums,
    covariate: tuple[UnitSums, UnitSums] | None,
    *,
    unit: str,
    run: tuple[str, ...],
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    draws: SharedUnitDraws | None,
    sequential_tuning: int | None = None,
) -> Comparison:
    """The comparison of checked arguments (see :func:`abrank.stats.clustered.compare_clustered`)."""
    tuning = SequenceTuning.of(sequential_tuning, confidence_level)

    def sample(c: ArmEstimate, t: ArmEstimate, shared: SharedUnitDraws | None) -> ClusteredSample:
        return sample_of(
            c,
            t,
            control,
            treatment,
            n_resamples=n_resamples,
            seed=seed,
            metric=metric,
            treatment_name=treatment_name,
            segment=segment,
            draws=shared,
            sequential=tuning,
        )

    def comparison(s: ClusteredSample, outcomes: dict[str, TestOutcome], cuped: bool) -> Comparison:
        return build(
            s,
            outcomes,
            control,
            treatment,
            unit=unit,
            run=run,
            alpha=alpha,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            metric=metric,
            treatment_name=treatment_name,
            segment=segment,
            cuped=cuped,
        )

    y_c, y_t = linearized(control), linearized(treatment)
    raw = sample(y_c, y_t, draws)
    outcomes = CLUSTERED_TESTS.run(run, raw)
    unadjusted = comparison(raw, outcomes, cuped=False)
    if covariate is None:
        return unadjusted
    adjustment = cuped_adjustment(y_c, y_t, *covariate)
    adjusted_sample = sample(adjustment.control, adjustment.treatment, None)
    delta_outcomes = CLUSTERED_TESTS.run(
        [name for name in run if name in DELTA_METHOD_TESTS], adjusted_sample
    )
    adjusted_outcomes = {  # resampling tests: unadjusted only
        name: delta_outcomes.get(name, TestOutcome(math.nan)) for name in outcomes
    }
    adjusted = comparison(adjusted_sample, adjusted_outcomes, cuped=True)
    var_raw = y_c.variance + y_t.variance
    var_adj = adjustment.control.variance + adjustment.treatment.variance
    reduction = 1.0 - var_adj / var_raw if var_raw > 0 else math.nan
    notes = list(adjusted.notes)
    if adjustment.theta == 0.0:
        notes.append(NOTE_NO_COVARIATE)
    cuped = {
        "theta": adjustment.theta,
        "variance_reduction": reduction,
        "units_with_covariate": adjustment.units_with_covariate,
        "unadjusted": {
            "delta": unadjusted.delta,
            "ci": unadjusted.ci,
            "p_value": unadjusted.p_value,
            "relative_lift": unadjusted.relative_lift,
            "relative_ci": unadjusted.relative_ci,
            "ci_method": unadjusted.ci_method,
            "p_values": dict(unadjusted.p_values),
            "bootstrap_ci": unadjusted.bootstrap_ci,
            "mde": unadjusted.mde,
            "effect_size": unadjusted.effect_size,
        },
    }
    return dataclasses.replace(adjusted, cuped=json_safe(cuped), notes=tuple(notes))


def build(
    s: ClusteredSample,
    outcomes: dict[str, TestOutcome],
    control: UnitSums,
    treatment: UnitSums,
    *,
    unit: str,
    run: tuple[str, ...],
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    metric: str,
    treatment_name: str,
    segment: str | None,
    cuped: bool,
) -> Comparison:
    """The :class:`Comparison` of a clustered sample and its tests' outcomes."""
    c, t = s.control, s.treatment
    n_c, n_t = c.n, t.n
    notes: list[str] = []
    if not s.enough:
        notes.append(NOTE_FEW_UNITS)
    if cuped:
        notes.append(NOTE_CUPED)
    relative = lift(c.estimate, t.estimate, n_c > 0 and n_t > 0)
    if n_c > 0 and n_t > 0 and relative is None and c.estimate != 0:
        notes.append(NOTE_LIFT)
    for outcome in outcomes.values():
        notes.extend(outcome.notes)
    verdict_test = run[0]
    concentrated = concentrated_regime(s, control, treatment, run[0])
    if concentrated is not None:
        regime, jackknife = concentrated
        outcomes = {**outcomes, JACKKNIFE: jackknife}
        verdict_test = JACKKNIFE
        notes.append(concentrated_note(run[0]))
    primary_at, method = primary_interval(verdict_test, outcomes)
    how = "delta method + CUPED" if cuped else "delta method"
    if method == SEQUENCE_METHOD:
        how = f"{SEQUENCE_METHOD} ({how})"
    elif method == "bca":
        how = "unit bootstrap (BCa)"
    elif method == JACKKNIFE:
        how = "jackknife + CUPED" if cuped else "jackknife"
    ci_method = f"{how}, clustered by {unit}"
    variance = c.variance + t.variance
    sd = math.sqrt(variance / (1.0 / n_c + 1.0 / n_t)) if s.enough else math.nan

    def mde_at(a: float) -> float | None:
        if not s.enough:
            return None
        if run[0] == "sequential":  # the MDE of the test that gives the verdict
            return detectable_delta(n_c + n_t, (n_c + n_t) * variance, a, s.sequential)
        if concentrated is not None:
            return t_test_mde(regime["se"], regime["df"], a, POWER)
        return minimum_detectable_effect(n_c, sd, a, ratio=n_t / n_c)

    boot = outcomes.get("bootstrap")
    result = build_comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design="independent",
        counts=(
            n_c + n_t,
            int(round(float(control.denominator.sum()))),
            int(round(float(treatment.denominator.sum()))),
        ),
        control_mean=control.ratio,
        treatment_mean=treatment.ratio,
        delta=s.obs,
        relative_lift=relative,
        p_values={name: outcome.p_value for name, outcome in outcomes.items()},
        primary_test=verdict_test,
        primary_at=primary_at,
        ci_method=ci_method,
        bootstrap_at=boot.interval if boot is not None and boot.interval else None,
        relative_at=relative_at(verdict_test, outcomes),
        regime=None if concentrated is None else regime,
        mde_at=mde_at,
        effect_size=s.obs / sd if s.enough and sd > 0 else math.nan,
        wins_ties_losses=None,  # units are not paired: nothing wins or loses
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximations=[a for outcome in outcomes.values() for a in outcome.approximations],
        notes=notes,
        resampled_deltas=boot.resampled if boot is not None else None,
    )
    return dataclasses.replace(result, unit=unit, n_units={"control": n_c, "treatment": n_t})


def relative_at(
    primary_test: str, outcomes: dict[str, TestOutcome]
) -> Callable[[float], Interval | None] | None:
    """The relative lift's interval: the jackknife's (Fieller's) or the confidence
    sequence's when it gives the verdict, else the delta-method t-interval's."""
    if primary_test == JACKKNIFE:
        return outcomes[JACKKNIFE].relative
    for name in (primary_test, "t"):
        if name in DELTA_METHOD_TESTS and name in outcomes:
            return outcomes[name].relative
    return None
