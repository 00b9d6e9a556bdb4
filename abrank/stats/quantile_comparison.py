"""A quantile difference as the one comparison record, :class:`~abrank.stats.results.Comparison`.

:mod:`abrank.stats.quantile` measures the difference of two arms' q-th quantiles with its
clustered interval (the delta method on the quantile's influence function, Deng, Knoblich &
Lu 2018) and :mod:`abrank.stats.quantile_bootstrap` the unit bootstrap beside it. This
module puts them in the record every other comparison fills, built by
:func:`~abrank.stats.results.build_comparison` like the clustered comparisons of ratio
metrics, so that the decision rule (roles, margins, direction), the multiple-testing
correction, the history, the explorer and every renderer read a quantile metric as they
read any other:

- ``control_mean`` / ``treatment_mean`` hold the arms' quantiles, ``delta`` their difference;
- the verdict's test is the delta method's normal test, under the registry name ``t`` (the
  name of the clustered delta-method test of ratio metrics); the interval is
  delta -+ z se, se = sqrt(se_c^2 + se_t^2), each arm's se from its order-statistic interval;
- the intervals are functions of their level (:class:`~abrank.stats.results.Levels`): at
  another level each arm's order-statistic interval is drawn again (its width is not
  proportional to z), so a Holm-widened interval is the quantile's own at that level;
- the MDE at 80% power is (z_{1-alpha/2} + z_{0.8}) se, from the clustered se at that level;
- the relative lift Q_t / Q_c - 1 with its delta-method interval;
- ``bootstrap_ci``: the unit bootstrap's percentile interval (a second opinion, not the
  verdict's), its resampled deltas kept for the charts;
- ``unit`` and ``n_units`` as for the clustered comparisons (``n`` the units of both arms,
  ``n_control`` / ``n_treatment`` the values each arm's quantile pooled);
- ``extra["quantile"]``: q, each arm's interval, the per-impression ("naive", iid) interval
  and p-value for contrast (too narrow where users differ), the bootstrap's SE.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from abrank.stats.power import normal_detectable_effect
from abrank.stats.quantile import (
    QuantileArm,
    QuantileDifference,
    estimate_from_arm,
    quantile_difference,
)
from abrank.stats.quantile_bootstrap import bootstrap_deltas, percentile_interval
from abrank.stats.quantile_sketch import SketchArm, estimate_from_sketch
from abrank.stats.results import Comparison, Interval, build_comparison, json_safe

__all__ = ["TEST", "compare_quantile_arms"]

TEST = "t"
"""The registry name of the verdict's test: the delta method's (as for ratio metrics)."""

SEQUENTIAL = "sequential"
"""The registry name of the always-valid test: with it as the primary test, a quantile's
verdict, interval, lift interval and MDE are the asymptotic confidence sequence's
(:mod:`abrank.stats.sequential`) on the delta method's SE, as for ratio metrics."""

NOTE_PRIMARY = (
    "the quantile's verdict is the delta method's test (the configured primary test {test} "
    "has no quantile version here)"
)


def compare_quantile_arms(
    control: QuantileArm | SketchArm,
    treatment: QuantileArm | SketchArm,
    q: float,
    *,
    unit: str,
    per_unit: bool = False,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 0,
    seed: int | None = 0,
    metric: str = "quantile",
    treatment_name: str = "treatment",
    segment: str | None = None,
    primary_test: str = TEST,
    sequential_tuning: int | None = None,
    notes: tuple[str, ...] = (),
) -> Comparison:
    """The :class:`Comparison` of treatment - control at the q-th quantile of two prepared
    arms (:func:`abrank.stats.quantile.quantile_arm`; ``per_unit``: each value is a unit's,
    every unit its own cluster). ``n_resamples`` > 0 adds the unit bootstrap's interval,
    seeded from (seed, metric, treatment_name, segment). With ``primary_test`` sequential,
    the verdict is the confidence sequence's (tuned at ``sequential_tuning`` units, None:
    the comparison's own), over n = the units of both arms with per-unit variance n se^2.

    Arms an engine's sketch gave (:class:`~abrank.stats.quantile_sketch.SketchArm`) are
    compared alike, their intervals read from the sketch's quantile function, without the
    bootstrap (their impressions stayed in the engine); ``notes`` are added to the
    record's (the sketch and its bound)."""

    def estimate(arm: QuantileArm | SketchArm, level: float) -> Any:
        if isinstance(arm, SketchArm):
            return estimate_from_sketch(arm, q, level)
        return estimate_from_arm(arm, q, level)

    @functools.lru_cache(maxsize=8)
    def at(level: float) -> QuantileDifference:
        return quantile_difference(estimate(control, level), estimate(treatment, level))

    diff = at(confidence_level)
    n_c, n_t = control.n_units, treatment.n_units
    deltas: np.ndarray | None = None
    if (
        n_resamples > 0
        and min(n_c, n_t) >= 2
        and isinstance(control, QuantileArm)
        and isinstance(treatment, QuantileArm)
    ):
        deltas = bootstrap_deltas(
            control,
            treatment,
            [q],
            n_resamples,
            seed=seed,
            metric=metric,
            treatment_name=treatment_name,
            segment=segment,
        )[:, 0]

    def primary_at(level: float) -> Interval:
        return at(level).ci

    def relative_at(level: float) -> Interval | None:
        low, high = at(level).relative_ci
        return (low, high) if math.isfinite(low) and math.isfinite(high) else None

    def mde_at(a: float) -> float | None:
        return normal_detectable_effect(at(1.0 - a).se, a)

    bootstrap_at = None
    if deltas is not None:
        resampled = deltas

        def bootstrap_at(level: float) -> Interval:
            return percentile_interval(resampled, level)

    listed = [*diff.notes, *notes]
    p_values = {TEST: diff.p_value}
    verdict_test = TEST
    method = "delta method on the quantile's influence function"
    sequence = (
        _sequence(diff, n_c + n_t, confidence_level, sequential_tuning)
        if primary_test == SEQUENTIAL
        else None
    )
    if sequence is not None:
        verdict_test, (p_sequence, primary_at, relative_at, mde_at) = SEQUENTIAL, sequence
        p_values[SEQUENTIAL] = p_sequence
        method = f"confidence sequence ({method})"
    elif primary_test != TEST:
        listed.append(NOTE_PRIMARY.format(test=primary_test))
    sd = diff.se / math.sqrt(1.0 / n_c + 1.0 / n_t) if n_c and n_t else math.nan
    how = "per unit (each unit one value)" if per_unit else f"clustered by {unit}"
    relative = diff.relative_lift if math.isfinite(diff.relative_lift) else None
    result = build_comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design="independent",
        counts=(n_c + n_t, control.n_impressions, treatment.n_impressions),
        control_mean=diff.control.point,
        treatment_mean=diff.treatment.point,
        delta=diff.delta,
        relative_lift=relative,
        p_values=p_values,
        primary_test=verdict_test,
        primary_at=primary_at,
        ci_method=f"{method}, {how}",
        bootstrap_at=bootstrap_at,
        relative_at=relative_at,
        mde_at=mde_at,
        effect_size=diff.delta / sd if math.isfinite(sd) and sd > 0 else math.nan,
        wins_ties_losses=None,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=int(n_resamples) if deltas is not None else 0,
        approximations=(),
        notes=listed,
        resampled_deltas=deltas,
    )
    return dataclasses.replace(
        result,
        unit=unit,
        n_units={"control": n_c, "treatment": n_t},
        extra={"quantile": quantile_extra(diff, deltas)},
    )


def _sequence(
    diff: QuantileDifference, n: int, confidence_level: float, tuning: int | None
) -> tuple[float, Any, Any, Any] | None:
    """The confidence sequence's p-value, interval, lift interval and MDE (functions of the
    level, resp. alpha) of a quantile difference; None without a finite, positive SE."""
    from abrank.stats.sequential import (
        ConfidenceSequence,
        SequenceTuning,
        detectable_delta,
        log_ratio_sequence,
    )

    if not (math.isfinite(diff.se) and diff.se > 0 and n >= 2):
        return None
    tuned = SequenceTuning.of(tuning, confidence_level)
    variance = n * diff.se**2
    sequence = ConfidenceSequence(diff.delta, n, variance, tuned.rho_at(n))
    relative = log_ratio_sequence(
        diff.control.point,
        diff.treatment.point,
        diff.control.se**2,
        diff.treatment.se**2,
        0.0,
        n,
        tuned,
    )

    def mde_at(a: float) -> float | None:
        return detectable_delta(n, variance, a, tuned)

    return sequence.p_value, sequence.interval, relative, mde_at


def quantile_extra(diff: QuantileDifference, deltas: np.ndarray | None) -> dict[str, Any]:
    """The quantile's own figures beside the record's fields (JSON-safe)."""
    return json_safe(
        {
            "q": diff.q,
            "control_interval": diff.control.interval,
            "treatment_interval": diff.treatment.interval,
            "se": diff.se,
            "naive_ci": diff.naive_ci,
            "naive_p_value": diff.naive_p_value,
            "bootstrap_se": float(np.std(deltas, ddof=1)) if deltas is not None else None,
        }
    )
