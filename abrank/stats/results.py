"""The result of one comparison: :class:`Comparison`, and the one constructor both designs use.

A design measures (means, p-values, intervals as functions of their level); what follows
from those is the same for every design and is worked out here once, in
:func:`build_comparison`: the primary interval at the nominal level, the verdict, whether
interval and verdict agree, the approximation note.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np

from abrank.records import Record
from abrank.stats import registry
from abrank.stats import resampling as rs

Interval = tuple[float, float]
IntervalAt = Callable[[float], Interval]
"""An interval as a function of its confidence level."""


@dataclass(frozen=True)
class Levels:
    """How to redraw a comparison's intervals and MDE at another level, so that after a
    multiple-testing correction the interval shown agrees with the adjusted verdict.

    ``primary``: level -> (low, high); ``relative``: level -> (low, high) or None, or None
    when the comparison has no relative interval; ``mde``: alpha -> float or None;
    ``relative_bootstrap``: the bootstrap interval of the relative lift kept beside the
    shown one (None when there is none).
    """

    primary: Any
    relative: Any
    mde: Any
    relative_bootstrap: Any = None


@dataclass(frozen=True)
class Comparison(Record):
    """One metric x treatment (x segment) comparison against the control arm: the one
    comparison record of every design.

    Its fields are the ``comparisons`` entries of ``summary.json`` (``to_dict``, in this
    order; a readout read back holds them again through ``from_dict``, with NaN where the
    file has null), the rows of the history store (:mod:`abrank.history.rows`) and what the
    Python API returns. ``delta`` is always
    treatment - control. ``ci`` is the primary interval: the t-interval (Welch's in the
    independent design) when the primary test is ``t``, else the (expanded) BCa bootstrap
    interval. Its level ``ci_level`` is ``confidence_level`` until ``adjust`` widens it
    by the same factor as the p-value (1 - (1 - level) * p_value / p_adjusted), so that the
    interval excludes 0 exactly when the adjusted verdict is a win or a loss; the interval
    at the nominal level is always in ``ci_unadjusted``, and ``relative_ci`` and ``mde``
    follow the same level. ``ci_agrees`` is False when the interval and the verdict still
    disagree (a permutation or rank test beside a bootstrap interval), and ``notes`` name
    every small-sample rule applied. ``p_values`` holds every test that was run (the names
    of :data:`abrank.stats.registry.TESTS`; None where a test was refused, e.g. the
    bootstrap below ``MIN_BOOTSTRAP`` queries); ``p_value`` is the primary test's,
    ``p_adjusted`` its multiplicity-adjusted value (equal to ``p_value`` until ``adjust``).
    ``relative_lift`` is None when the control mean is below ``MIN_LIFT_SHARE`` of the
    larger mean, ``relative_ci`` also when the ratio is unbounded. ``relative_ci`` is the
    lift's interval the headline shows, from the verdict's own test and level (paired
    design with the t-test: Fieller's interval, the inverted t-test of treatment - (1 + r)
    * control, so it excludes 0 exactly when the verdict is a win or a loss);
    ``relative_ci_bootstrap`` is the paired BCa bootstrap interval of the lift, a second
    opinion at the same level, and a note says when it disagrees with the verdict.
    ``regime`` is set when the paired deltas are sparse, skewed or dominated by one query
    and the sign-flip test gave the verdict instead of the configured test (then
    ``primary_test`` names it and ``relative_ci`` is None: that test has no interval), or
    when a clustered comparison's impressions are concentrated in few units and the
    jackknife gave the verdict, its interval (``ci``) and the lift's. ``p_value`` and
    ``effect_size`` are None (NaN) with fewer than two queries. For the paired design,
    ``n_control`` / ``n_treatment`` count pairs whose value was observed in that arm (the
    rest were scored 0 under ``missing="zero"``); for the independent design they are the
    arms' sizes. ``approximation`` names a grid-cell resampling approximation and its
    error bound when one was used (very large samples of mostly distinct values).

    A clustered comparison (:func:`abrank.stats.compare_clustered`: users randomized, the
    metric a ratio of per-unit sums) also fills ``unit`` (the clustering column),
    ``n_units`` ({"control": ..., "treatment": ...}; ``n`` is then their total and
    ``n_control`` / ``n_treatment`` count impressions) and, with a pre-period covariate,
    ``cuped`` (theta, the variance reduction and the unadjusted comparison); all three
    are None for the other designs.

    An interleaved comparison (:func:`abrank.stats.compare_interleaved`) also fills
    ``interleaving`` (units, impressions with a click and their share, the first-team
    check); it is None, and left out of :meth:`to_dict`, for the other designs.

    With metric roles (:mod:`abrank.config.decision`), an overall comparison also has its
    ``role`` (success, guardrail or secondary) and ``decision_checks``: the metric's
    direction, whether it deteriorated significantly, and for a guardrail its
    non-inferiority test (:mod:`abrank.decision.checks`); both are left out otherwise.

    With machine judgments beside human ones (:mod:`abrank.analysis.machine_labels`),
    ``estimates`` holds the comparison under human labels only, machine-filled labels and
    prediction-powered inference ({human, filled, ppi}, each {delta, ci, p_value,
    p_adjusted, verdict, n} or None where that comparison was not made); the record's own
    figures are those of the estimate ``analysis.judgments_estimate`` chooses. It is left
    out otherwise.

    In a readout, ``treatment`` may read ``"B vs A"`` when two treatments are compared
    (``comparisons: all-pairs``); ``control`` and ``treatment_arm`` then name the two arms
    (written only then). ``extra`` keeps the keys of a saved comparison that these fields
    do not name, written back after them. ``resampled_deltas`` and ``levels`` are only in
    memory (the resamples behind the charts, the intervals at other levels).
    """

    metric: str
    treatment: str
    segment: str | None
    design: str
    n: int
    n_control: int
    n_treatment: int
    control_mean: float
    treatment_mean: float
    delta: float
    relative_lift: float | None
    ci: tuple[float, float]
    ci_method: str
    ci_level: float
    bootstrap_ci: tuple[float, float] | None
    relative_ci: tuple[float, float] | None
    p_value: float
    p_values: dict[str, float]
    p_adjusted: float
    correction: str | None
    effect_size: float
    mde: float | None
    wins: int | None
    ties: int | None
    losses: int | None
    verdict: str
    primary_test: str
    alpha: float
    confidence_level: float
    n_resamples: int
    approximation: str | None = None
    ci_unadjusted: tuple[float, float] | None = None
    ci_agrees: bool = True
    notes: tuple[str, ...] = ()
    resampled_deltas: np.ndarray | None = field(default=None, compare=False, repr=False)
    levels: Levels | None = field(default=None, compare=False, repr=False)
    unit: str | None = None
    n_units: dict[str, int] | None = None
    cuped: dict[str, Any] | None = None
    control: str | None = None
    treatment_arm: str | None = None
    interleaving: dict[str, Any] | None = None
    relative_ci_bootstrap: tuple[float, float] | None = None
    regime: dict[str, Any] | None = None
    role: str | None = None
    decision_checks: dict[str, Any] | None = None
    estimates: dict[str, dict[str, Any] | None] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"control", "treatment_arm", "interleaving", "role", "decision_checks", "estimates"}
    )
    NULL_AS_NAN: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins only, as summary.json holds them: tuples become lists, NaN and
        infinities become None; ``control``, ``treatment_arm`` and ``interleaving`` only
        when they are set; then ``extra``."""
        out = {
            f.name: json_safe(getattr(self, f.name))
            for f in fields(self)
            if f.name not in _INTERNAL
            and not (f.name in self.OMITTED_WHEN_NONE and getattr(self, f.name) is None)
        }
        out.update(json_safe(self.extra))
        return out

    def saved(self, *, control: str | None = None, treatment_arm: str | None = None) -> Comparison:
        """The comparison as a readout holds it: its summary.json entry read back (JSON
        values, NaN for null, no resamples), ``control`` and ``treatment_arm`` naming the
        arms of a comparison between two treatments."""
        return replace(
            type(self).from_dict(self.to_dict(), "comparison"),
            control=control,
            treatment_arm=treatment_arm,
        )

    @classmethod
    def saved_fields(cls) -> tuple[str, ...]:
        """The names of the fields summary.json holds, in order."""
        return tuple(f.name for f in fields(cls) if f.name not in _INTERNAL)

    def __repr__(self) -> str:
        """One line: what was compared, the delta, its interval, p and the verdict."""
        parts = [
            f"metric={self.metric!r}",
            f"treatment={self.treatment!r}",
            f"segment={self.segment!r}",
            f"delta={_signed(self.delta)}",
            f"ci=[{_signed(self.ci[0])}, {_signed(self.ci[1])}]",
            f"p={_plain(self.p_value)}",
        ]
        if self.correction is not None:
            parts.append(f"p_adjusted={_plain(self.p_adjusted)} ({self.correction})")
        parts.append(f"verdict={self.verdict!r}")
        return f"Comparison({', '.join(parts)})"

    def _repr_html_(self) -> str:
        """A small table for notebooks: means, delta, interval, p-values and verdict."""
        level = f"{self.ci_level * 100:.4g}%"
        rows = [
            ("metric", self.metric),
            ("treatment", self.treatment),
            ("segment", "all" if self.segment is None else self.segment),
            ("n", f"{self.n:,}"),
            ("control mean", _plain(self.control_mean)),
            ("treatment mean", _plain(self.treatment_mean)),
            ("delta", _signed(self.delta)),
            (f"{level} CI ({self.ci_method})", f"[{_signed(self.ci[0])}, {_signed(self.ci[1])}]"),
            (
                "relative lift",
                "n/a" if self.relative_lift is None else f"{self.relative_lift:+.2%}",
            ),
            (f"p ({self.primary_test})", _plain(self.p_value)),
        ]
        if self.correction is not None:
            rows.append((f"p adjusted ({self.correction})", _plain(self.p_adjusted)))
        rows.append(("verdict", self.verdict))
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table class='abrank-comparison'>{body}</table>"


_INTERNAL = {"resampled_deltas", "levels", "extra"}


def json_safe(value: Any) -> Any:
    """``value`` as JSON-safe builtins: tuples become lists, NaN and infinities None."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def _signed(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "nan" if value is None or math.isnan(value) else f"{value:+}"
    return f"{value:+.4g}"


def _plain(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "nan"
    return f"{value:.4g}"


# --------------------------------------------------------------------------- verdicts


def verdict(p: float, alpha: float, delta: float) -> str:
    """``win`` / ``loss`` when ``p`` is below ``alpha`` in the direction of ``delta``."""
    if p < alpha and delta > 0:
        return "win"
    if p < alpha and delta < 0:
        return "loss"
    return "inconclusive"


def excludes_zero(ci: tuple[float, float] | None) -> bool:
    """The interval lies wholly above or below 0."""
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def agrees(ci: tuple[float, float], verdict: str) -> bool:
    """The interval excludes 0 exactly when the verdict is a win or a loss."""
    return excludes_zero(ci) == (verdict != "inconclusive")


LIFT_DISAGREES = "the bootstrap interval of the relative lift (relative_ci_bootstrap)"
"""How the note that the bootstrap lift interval disagrees with the verdict begins."""


def lift_notes(
    notes: Sequence[str], relative_bootstrap: Interval | None, decided: str, test: str
) -> tuple[str, ...]:
    """``notes`` with the note on the bootstrap lift interval redone for ``decided``: it is
    there when that interval excludes 0 and the verdict is inconclusive, or the reverse."""
    kept = tuple(note for note in notes if not note.startswith(LIFT_DISAGREES))
    if relative_bootstrap is None or agrees(relative_bootstrap, decided):
        return kept
    low, high = relative_bootstrap
    test = registry.test_display_names().get(test, test)
    if excludes_zero(relative_bootstrap):
        side = f"excludes 0 while the {test} test finds no significant change"
    else:
        side = f"includes 0 while the {test} test finds a significant change"
    return (
        *kept,
        f"{LIFT_DISAGREES} [{low:+.2%}, {high:+.2%}] {side}; the lift interval shown "
        f"(relative_ci) is the {test} test's own",
    )


def approximation_note(parts: Sequence[str]) -> str | None:
    """The ``approximation`` text naming each grid-cell resampling and its error bound."""
    if not parts:
        return None
    return (
        "grid-cell resampling for "
        + "; ".join(parts)
        + f" (each bound holds per resample with probability >= 1 - {rs.FAILURE_PROB:g})"
    )


# --------------------------------------------------------------------------- constructor


def build_comparison(
    *,
    metric: str,
    treatment: str,
    segment: str | None,
    design: str,
    counts: tuple[int, int, int],
    control_mean: float,
    treatment_mean: float,
    delta: float,
    relative_lift: float | None,
    p_values: Mapping[str, float],
    primary_test: str,
    primary_at: IntervalAt,
    ci_method: str,
    bootstrap_at: IntervalAt | None,
    relative_at: Callable[[float], Interval | None] | None,
    mde_at: Callable[[float], float | None],
    relative_bootstrap_at: Callable[[float], Interval | None] | None = None,
    regime: dict[str, Any] | None = None,
    effect_size: float,
    wins_ties_losses: tuple[int, int, int] | None,
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    approximations: Sequence[str],
    notes: Sequence[str],
    resampled_deltas: np.ndarray | None,
) -> Comparison:
    """The :class:`Comparison` of what a design measured, before any correction.

    ``counts`` is (n, n_control, n_treatment); the intervals are functions of their level
    (``mde_at`` of alpha), drawn here at ``confidence_level`` and kept in ``levels`` for
    :func:`abrank.stats.adjust` to redraw. The verdict is the primary test's at ``alpha``
    in the direction of ``delta`` (none when the delta is undefined).
    """
    n, n_control, n_treatment = counts
    wins, ties, losses = wins_ties_losses if wins_ties_losses is not None else (None, None, None)
    p_value = p_values[primary_test]
    ci = primary_at(confidence_level)
    decided = verdict(p_value, alpha, delta if math.isfinite(delta) else 0.0)
    relative_bootstrap = relative_bootstrap_at(confidence_level) if relative_bootstrap_at else None
    return Comparison(
        metric=metric,
        treatment=treatment,
        segment=segment,
        design=design,
        n=n,
        n_control=n_control,
        n_treatment=n_treatment,
        control_mean=control_mean,
        treatment_mean=treatment_mean,
        delta=delta,
        relative_lift=relative_lift,
        ci=ci,
        ci_method=ci_method,
        ci_level=confidence_level,
        bootstrap_ci=bootstrap_at(confidence_level) if bootstrap_at else None,
        relative_ci=relative_at(confidence_level) if relative_at else None,
        p_value=p_value,
        p_values=dict(p_values),
        p_adjusted=p_value,
        correction=None,
        effect_size=effect_size,
        mde=mde_at(alpha),
        wins=wins,
        ties=ties,
        losses=losses,
        verdict=decided,
        primary_test=primary_test,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximation=approximation_note(approximations),
        ci_unadjusted=ci,
        ci_agrees=agrees(ci, decided),
        notes=lift_notes(notes, relative_bootstrap, decided, primary_test),
        resampled_deltas=resampled_deltas,
        levels=Levels(primary_at, relative_at, mde_at, relative_bootstrap_at),
        relative_ci_bootstrap=relative_bootstrap,
        regime=regime,
    )
