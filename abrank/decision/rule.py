"""The decision rule ``ship-if-success-and-no-harm`` (DESIGN.md "Decisions").

Read per treatment against the control, from the overall comparison records (their role
and :mod:`abrank.decision.checks`) and the readout's health checks:

- **unhealthy** when a health check fails (:mod:`abrank.decision.health`): the numbers
  cannot be trusted, whatever they say;
- **no-ship** when any metric deteriorates significantly, or a guardrail is shown worse
  than its margin;
- **ship** when at least one success metric wins (its verdict, corrected over the success
  metrics only), every guardrail is shown non-inferior and nothing deteriorates;
- **keep-running** otherwise, with the units still needed for the planned power
  (:mod:`abrank.decision.sizing`: the success metrics moving by ``decision.mde``, else by
  their observed change where it goes the right way; guardrails and other metrics not
  moving).

With several treatments the experiment ships when one of them does (the reasons name
it); ``treatments`` then gives each one's status.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.special import ndtri

from abrank.config import Experiment
from abrank.decision.health import health_problems
from abrank.decision.sizing import MetricPlan, units_for_power
from abrank.readout.model import ComparisonSummary, Decision, Summary

RULE = "ship-if-success-and-no-harm"


def units_text(unit: str | None) -> str:
    """What the units are called in a sentence: ``queries``, or ``units (user_id)``."""
    return "queries" if unit in (None, "queries") else f"units ({unit})"


@dataclass(frozen=True)
class RuleSettings:
    """What the rule needs besides the comparisons: the level of the tests (``alpha``),
    of the deterioration checks, the planned power and the success metrics' MDEs."""

    alpha: float = 0.05
    deterioration_alpha: float = 0.05
    power: float = 0.8
    mde: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, experiment: Experiment) -> RuleSettings:
        """The settings of an experiment's config (``analysis.alpha``, ``decision``)."""
        alpha = experiment.analysis.alpha
        decision = experiment.decision
        if decision is None:
            return cls(alpha=alpha, deterioration_alpha=alpha)
        return cls(
            alpha=alpha,
            deterioration_alpha=decision.deterioration_alpha or alpha,
            power=decision.power,
            mde=dict(decision.mde),
        )


_ORDER = {"ship": 0, "keep-running": 1, "no-ship": 2}


def decide(summary: Summary, experiment: Experiment) -> Decision | None:
    """The readout's decision; None when its metrics have no roles."""
    if not experiment.metric_roles:
        return None
    compared = [
        c
        for c in summary.comparisons
        if c.segment is None and c.control is None and c.role is not None
    ]
    return decide_comparisons(
        compared,
        RuleSettings.of(experiment),
        problems=health_problems(summary),
        labels=summary.metric_labels,
        unit=summary.unit or "queries",
        days=summary.schedule.dates if summary.schedule is not None else None,
    )


def decide_comparisons(
    compared: Sequence[ComparisonSummary],
    settings: RuleSettings,
    *,
    problems: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    unit: str = "queries",
    days: int | None = None,
) -> Decision:
    """The rule over overall comparisons of treatments against the control, each with its
    ``role`` and ``decision_checks`` (:func:`abrank.decision.checks.annotate`), and the
    readout's health ``problems`` (module text). ``days``: how many days of data the
    comparisons hold (a dated readout's window), for the days a ``keep-running`` experiment
    still needs at its current rate."""
    labels = labels or {}
    treatments = list(dict.fromkeys(c.treatment for c in compared))
    success = tuple(_success_entry(c) for c in compared if c.role == "success")
    guardrails = tuple(_guardrail_entry(c) for c in compared if c.role == "guardrail")
    deteriorations = tuple(_deterioration_entry(c) for c in compared if _checks(c)["deteriorated"])
    several = len(treatments) > 1
    if problems:
        reasons = [f"Unhealthy: {problems[0]}; explain it before deciding", *problems[1:]]
        return Decision(
            status="unhealthy",
            rule=RULE,
            reasons=tuple(reasons),
            success=success,
            guardrails=guardrails,
            deteriorations=deteriorations,
            planned_power=settings.power,
            unit=unit,
            treatments={t: "unhealthy" for t in treatments} if several else None,
        )
    verdicts = {}
    for treatment in treatments:
        own = [c for c in compared if c.treatment == treatment]
        verdicts[treatment] = _treatment_status(own, labels, settings, unit, several, days)
    if not verdicts:
        status, reasons, needed, more_days = (
            "keep-running",
            ["Keep running: nothing compared"],
            None,
            None,
        )
    else:
        best = min(treatments, key=lambda t: (_ORDER[verdicts[t][0]], treatments.index(t)))
        status, reasons, needed, more_days = verdicts[best]
    return Decision(
        status=status,
        rule=RULE,
        reasons=tuple(reasons),
        success=success,
        guardrails=guardrails,
        deteriorations=deteriorations,
        units_needed=needed,
        days_needed=more_days,
        planned_power=settings.power,
        unit=unit,
        treatments={t: v[0] for t, v in verdicts.items()} if several else None,
    )


def _treatment_status(
    comparisons: Sequence[ComparisonSummary],
    labels: Mapping[str, str],
    settings: RuleSettings,
    unit: str,
    several: bool,
    days: int | None = None,
) -> tuple[str, list[str], int | None, int | None]:
    """(status, reasons, units and days still needed) of one treatment against the control."""
    prefix = f" ({comparisons[0].treatment})" if several and comparisons else ""
    name = lambda c: labels.get(c.metric, c.metric)  # noqa: E731 -- a short local reader
    harms = [
        _harm_reason(c, name(c))
        for c in comparisons
        if _checks(c)["deteriorated"] or _checks(c).get("inferior")
    ]
    wins = [c for c in comparisons if c.role == "success" and c.verdict == "win"]
    if harms:
        reasons = [f"No-ship{prefix}: {harms[0]}", *harms[1:]]
        if wins:
            won = ", ".join(f"{name(c)} ({_signed(c.delta)})" for c in wins)
            reasons.append(f"the win on {won} does not outweigh a harm")
        return "no-ship", reasons, None, None
    guards = [c for c in comparisons if c.role == "guardrail"]
    open_guards = [c for c in guards if not _checks(c).get("non_inferior")]
    if wins and not open_guards:
        if len(wins) == 1:
            won = f"{name(wins[0])} wins ({_signed(wins[0].delta)})"
        else:
            won = " and ".join(f"{name(c)} ({_signed(c.delta)})" for c in wins) + " win"
        held = [f"{name(c)} stays within its {_margin(c)} margin" for c in guards]
        tail = ", ".join(held) if held else "no metric deteriorates"
        return "ship", [f"Ship{prefix}: {won} and {tail}"], None, None
    waiting = []
    if not wins:
        tried = ", ".join(
            f"{name(c)} {_signed(c.delta)}, {_p(c.p_adjusted)}"
            for c in comparisons
            if c.role == "success"
        )
        waiting.append(f"no success metric wins yet ({tried})")
    for c in open_guards:
        bound = _checks(c).get("bound")
        scale = _checks(c).get("scale")
        shown = f"bound {_signed(bound, scale)}" if bound is not None else "no bound"
        waiting.append(f"{name(c)} is not yet shown within its {_margin(c)} margin ({shown})")
    needed = units_needed(comparisons, settings)
    reasons = [f"Keep running{prefix}: {waiting[0]}", *waiting[1:]]
    more_days = None
    if needed is not None:
        text = f"about {needed:,} more {units_text(unit)} for {settings.power:.0%} power to ship"
        now = max(c.n for c in comparisons)
        if days and now > 0:
            more_days = math.ceil(needed / (now / days))
            text += f" (about {more_days:,} more days at the current rate)"
        reasons.append(text)
    return "keep-running", reasons, needed, more_days


def units_needed(comparisons: Sequence[ComparisonSummary], settings: RuleSettings) -> int | None:
    """The units still needed (module text); None where no success metric has a change to
    plan for or the planned power cannot be reached."""
    plans = [plan for c in comparisons if (plan := metric_plan(c, settings)) is not None]
    if not plans or len(plans) != len(comparisons):
        return None
    scale = units_for_power(plans, settings.power, settings.alpha, settings.deterioration_alpha)
    if scale is None:
        return None
    now = max(p.n for p in plans)
    return max(0, math.ceil(now * scale) - now)


def metric_plan(comp: ComparisonSummary, settings: RuleSettings) -> MetricPlan | None:
    """One comparison as the sizing sees it: the standard error of its change (from its
    interval at the nominal level), its planned change and its margin."""
    low, high = comp.ci_unadjusted or comp.ci
    if not (math.isfinite(low) and math.isfinite(high)) or comp.n < 2:
        return None
    se = (high - low) / (2.0 * float(ndtri(0.5 + comp.confidence_level / 2.0)))
    checks = _checks(comp)
    sign = -1.0 if checks.get("direction") == "lower" else 1.0
    effect = 0.0
    margin = None
    if comp.role == "success":
        planned = settings.mde.get(comp.metric)
        observed = sign * comp.delta if math.isfinite(comp.delta) else 0.0
        effect = planned if planned is not None else max(observed, 0.0)
    elif comp.role == "guardrail":
        margin = checks.get("margin")
        if margin is not None and checks.get("margin_relative"):
            margin = margin * abs(comp.control_mean)
    return MetricPlan(comp.role or "secondary", se, comp.n, effect, margin)


def _checks(comp: ComparisonSummary) -> dict[str, Any]:
    return comp.decision_checks or {"deteriorated": False}


def _success_entry(c: ComparisonSummary) -> dict[str, Any]:
    return {
        "metric": c.metric,
        "treatment": c.treatment,
        "delta": _finite(c.delta),
        "relative_lift": _finite(c.relative_lift),
        "p_adjusted": _finite(c.p_adjusted),
        "verdict": c.verdict,
        "wins": c.verdict == "win",
    }


def _guardrail_entry(c: ComparisonSummary) -> dict[str, Any]:
    checks = _checks(c)
    return {
        "metric": c.metric,
        "treatment": c.treatment,
        "delta": _finite(c.delta),
        "margin": _margin(c),
        "scale": checks.get("scale"),
        "bound": _finite(checks.get("bound")),
        "p_non_inferiority": _finite(checks.get("p_non_inferiority")),
        "non_inferior": bool(checks.get("non_inferior")),
        "inferior": bool(checks.get("inferior")),
    }


def _deterioration_entry(c: ComparisonSummary) -> dict[str, Any]:
    return {
        "metric": c.metric,
        "treatment": c.treatment,
        "role": c.role,
        "delta": _finite(c.delta),
        "p_value": _finite(c.p_value),
    }


def _harm_reason(c: ComparisonSummary, label: str) -> str:
    checks = _checks(c)
    if checks["deteriorated"]:
        text = f"{label} deteriorates ({_signed(c.delta)}, {_p(c.p_value)})"
        if checks.get("inferior"):
            text += f", beyond its {_margin(c)} margin"
        elif c.role == "guardrail" and not checks.get("non_inferior"):
            text += f" and is not shown within its {_margin(c)} margin"
        return text
    bound = checks.get("bound")
    return (
        f"{label} is worse than its {_margin(c)} margin ({_signed(c.delta)}; "
        f"bound {_signed(bound, checks.get('scale'))})"
    )


def _margin(c: ComparisonSummary) -> str:
    """A guardrail's margin as a signed change the bad way: ``-0.005``, ``-5%``."""
    checks = _checks(c)
    margin = checks.get("margin")
    if margin is None:
        return "n/a"
    sign = "+" if checks.get("direction") == "lower" else "-"
    if checks.get("margin_relative"):
        return f"{sign}{margin * 100:g}%"
    return f"{sign}{margin:g}"


def _signed(value: Any, scale: str | None = None) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    if scale == "relative":
        return f"{value * 100:+.1f}%"
    if abs(value) >= 10:  # a latency, a revenue: no noise digits (abrank.render.text)
        return f"{value:+.{1 if abs(value) >= 100 else 2}f}"
    return f"{value:+.3f}" if abs(value) >= 0.0005 or value == 0 else f"{value:+.2g}"


def _p(value: Any) -> str:
    """A p-value in a sentence: ``p < 0.001``, ``p = 0.0342``."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3g}"


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
