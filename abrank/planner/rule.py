"""The units an experiment needs for its decision rule to ship with the planned power.

``abrank simulate`` on a config whose metrics have roles: the experiment's own data is
the pilot. It is analysed as ``abrank run`` would (its primary test only), and each
metric's standard error at the pilot's size, the success metrics' planned changes
(``decision.mde``, else the observed change where it goes the right way) and the
guardrails' margins go into :mod:`abrank.decision.sizing`: the units (queries offline,
randomized units online, both arms together) at which P(ship) reaches
``decision.power`` when one success metric moves by its MDE and the guardrails hold. A
``keep-running`` readout computes the same figure (:func:`abrank.decision.rule.units_needed`),
so the planner and the rule agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abrank.config import Experiment, load_experiment
from abrank.decision.rule import RuleSettings, metric_plan, units_text
from abrank.decision.sizing import metric_probabilities, ship_probability, units_for_power
from abrank.errors import ConfigError


@dataclass(frozen=True)
class RulePlan:
    """The plan: ``units`` needed (None when no planned change reaches the power) of kind
    ``unit``, the pilot's size, P(ship) at the pilot's size and at the planned one, and
    per metric (``metrics``) its role, standard error at the pilot, planned change or
    margin, and its chance of doing its part at the planned size."""

    experiment: str
    unit: str
    pilot_units: int
    units: int | None
    power: float
    planned_power: float | None
    pilot_power: float
    alpha: float
    deterioration_alpha: float
    metrics: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "experiment": self.experiment,
            "unit": self.unit,
            "pilot_units": self.pilot_units,
            "units": self.units,
            "power": self.power,
            "planned_power": self.planned_power,
            "pilot_power": self.pilot_power,
            "alpha": self.alpha,
            "deterioration_alpha": self.deterioration_alpha,
            "metrics": [dict(m) for m in self.metrics],
        }

    def text(self) -> str:
        """The plan as printed by ``abrank simulate``."""
        units = units_text(self.unit)
        head = (
            f"{self.experiment}: units for the decision rule (pilot: {self.pilot_units:,} {units})"
        )
        lines = [head]
        width = max(len(m["metric"]) for m in self.metrics) if self.metrics else 6
        for m in self.metrics:
            planned = (
                f"MDE {m['effect']:.4g}"
                if m["role"] == "success"
                else f"margin {m['margin']:.4g}"
                if m["role"] == "guardrail"
                else "no change"
            )
            chance = "n/a" if m["chance"] is None else f"{m['chance']:.1%}"
            lines.append(
                f"  {m['metric']:<{width}}  {m['role']:<9}  se {m['se']:.4g}  {planned:<16}  {chance}"
            )
        if self.units is None:
            lines.append(
                f"  no size reaches {self.power:.0%} power: no success metric has a planned "
                "change (set decision.mde), or the deterioration checks of many metrics cap it"
            )
        else:
            lines.append(
                f"  {self.units:,} {units} for P(ship) = {self.planned_power:.1%} "
                f"(target {self.power:.0%}; at the pilot's size {self.pilot_power:.1%})"
            )
        return "\n".join(lines)


def plan_for_rule(config: str | Path | Experiment, *, seed: int | None = None) -> RulePlan:
    """The plan of the module text for an experiment whose metrics have roles."""
    import abrank

    experiment = config if isinstance(config, Experiment) else load_experiment(config)
    if not experiment.metric_roles:
        raise ConfigError(
            f"{experiment.source}: metrics: expected roles (success, guardrail) to plan for "
            "the decision rule, got none"
        )
    if not experiment.treatments:  # a counterfactual config may log the control alone
        raise ConfigError(
            f"{experiment.source}: treatments: expected a treatment to plan the decision rule "
            "for, got none"
        )
    primary = experiment.analysis.primary_test
    quick = experiment.model_copy(
        update={"analysis": experiment.analysis.model_copy(update={"tests": [primary]})}
    )
    readout = abrank.run_experiment(quick, seed=seed, explain=False)  # the summary only
    summary = readout.model
    settings = RuleSettings.of(experiment)
    treatment = experiment.treatments[0].name
    compared = [
        c
        for c in summary.comparisons
        if c.segment is None and c.control is None and c.treatment == treatment and c.role
    ]
    plans = [metric_plan(c, settings) for c in compared]
    if not compared or any(plan is None for plan in plans):
        raise ConfigError(
            f"{experiment.source}: expected every metric with a role to have an interval in the "
            "pilot, got a comparison without one (too few units)"
        )
    found = [plan for plan in plans if plan is not None]
    pilot = max(plan.n for plan in found)
    alpha, worse = settings.alpha, settings.deterioration_alpha
    scale = units_for_power(found, settings.power, alpha, worse)
    at = scale if scale is not None else 1.0
    chances = metric_probabilities(found, at, alpha, worse)
    metrics = tuple(
        {
            "metric": c.metric,
            "role": plan.role,
            "se": plan.se,
            "effect": plan.effect,
            "margin": plan.margin,
            "chance": chance if scale is not None else None,
        }
        for c, plan, chance in zip(compared, found, chances, strict=True)
    )
    return RulePlan(
        experiment=experiment.name,
        unit=summary.unit or "queries",
        pilot_units=pilot,
        units=None if scale is None else math.ceil(pilot * scale),
        power=settings.power,
        planned_power=None if scale is None else ship_probability(found, scale, alpha, worse),
        pilot_power=ship_probability(found, 1.0, alpha, worse),
        alpha=alpha,
        deterioration_alpha=worse,
        metrics=metrics,
    )
