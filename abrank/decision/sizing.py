"""How likely the rule is to ship at a sample size, and the units it needs for a power.

The rule ships when a success metric wins, every guardrail is shown non-inferior and no
metric deteriorates. With n units each metric's change is about normal with standard
error se * sqrt(n_now / n), so (treating the metrics as independent):

    P(ship) = P(some success metric wins)
              x product over guardrails of P(shown non-inferior, not deteriorated)
              x product over the other metrics of P(not deteriorated)

where a success metric that truly moves by its MDE d wins with probability
Phi(d / se - z(1 - alpha / (2 S))) (S success metrics: the correction's first step), a
guardrail that truly holds (no change) passes with 1 - Phi(max(z(1 - alpha) - m / se,
-z(1 - alpha_d / 2))) (m its margin), and a metric that truly does not move escapes the
deterioration check with 1 - alpha_d / 2. The product of the last factors bounds P(ship)
whatever n: many metrics checked for deterioration cost power.

:func:`units_for_power` finds the smallest n at which P(ship) reaches the planned power
1 - beta and, as Schultzberg, Kjellin & Rydberg (2024) size a test for this rule, the
success metrics win with probability 1 - beta and each of the G guardrails is shown
non-inferior with probability 1 - beta / G (the power correction over guardrails). The
planner (``abrank simulate``) and a ``keep-running`` decision both use it, so they agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.special import ndtr, ndtri

_MAX_SCALE = 1e9


@dataclass(frozen=True)
class MetricPlan:
    """One metric as the sizing sees it: its role, the standard error of its change at
    ``n`` units, the true change assumed (the good way; 0 where it does not move) and, for
    a guardrail, its margin on the change's scale."""

    role: str
    se: float
    n: int
    effect: float = 0.0
    margin: float | None = None


def metric_probabilities(
    plans: Sequence[MetricPlan], scale: float, alpha: float, deterioration_alpha: float
) -> list[float]:
    """Each metric's chance of doing its part at ``scale`` times its ``n`` (module text): a
    success metric's of winning, a guardrail's of being shown non-inferior without
    deteriorating, any other metric's of not deteriorating."""
    success = sum(1 for p in plans if p.role == "success")
    z_win = float(ndtri(1.0 - alpha / (2.0 * max(success, 1))))
    z_ni = float(ndtri(1.0 - alpha))
    z_det = float(ndtri(1.0 - deterioration_alpha / 2.0))
    found = []
    for plan in plans:
        se = plan.se / math.sqrt(scale)
        shift = plan.effect / se if se > 0 else (math.inf if plan.effect > 0 else 0.0)
        if plan.role == "success":
            found.append(float(ndtr(shift - z_win)))
        elif plan.role == "guardrail" and plan.margin is not None:
            reach = plan.margin / se if se > 0 else math.inf
            found.append(1.0 - float(ndtr(max(z_ni - reach, -z_det) - shift)))
        else:
            found.append(1.0 - float(ndtr(-shift - z_det)))
    return found


def ship_probability(
    plans: Sequence[MetricPlan], scale: float, alpha: float, deterioration_alpha: float
) -> float:
    """P(ship) (module text) with every metric's sample ``scale`` times its plan's ``n``."""
    chances = metric_probabilities(plans, scale, alpha, deterioration_alpha)
    z_det = float(ndtri(1.0 - deterioration_alpha / 2.0))
    miss_all = 1.0
    others = 1.0
    for plan, chance in zip(plans, chances, strict=True):
        if plan.role == "success":
            miss_all *= 1.0 - chance
            se = plan.se / math.sqrt(scale)
            shift = plan.effect / se if se > 0 else (math.inf if plan.effect > 0 else 0.0)
            others *= 1.0 - float(ndtr(-shift - z_det))
        else:
            others *= chance
    return (1.0 - miss_all) * others


def units_for_power(
    plans: Sequence[MetricPlan], power: float, alpha: float, deterioration_alpha: float
) -> float | None:
    """The smallest scale (a multiple of the plans' ``n``) at which :func:`ship_probability`
    reaches ``power``, some success metric wins with ``power`` and every guardrail holds
    with 1 - (1 - power) / G (module text); None when no success metric moves or no scale
    reaches it."""
    if not any(p.role == "success" and p.effect > 0 for p in plans):
        return None
    if any(not (math.isfinite(p.se) and p.se >= 0) for p in plans):
        return None

    guardrails = sum(1 for p in plans if p.role == "guardrail" and p.margin is not None)
    each = 1.0 - (1.0 - power) / max(guardrails, 1)

    def reaches(scale: float) -> bool:
        chances = metric_probabilities(plans, scale, alpha, deterioration_alpha)
        missed = 1.0
        for plan, chance in zip(plans, chances, strict=True):
            if plan.role == "success":
                missed *= 1.0 - chance
            elif plan.role == "guardrail" and plan.margin is not None and chance < each:
                return False
        if 1.0 - missed < power:
            return False
        return ship_probability(plans, scale, alpha, deterioration_alpha) >= power

    low, high = 1e-9, 1.0
    while not reaches(high):
        low, high = high, high * 2.0
        if high > _MAX_SCALE:
            return None
    if reaches(low):
        return low
    for _ in range(100):
        mid = math.sqrt(low * high)
        if reaches(mid):
            high = mid
        else:
            low = mid
        if high / low < 1.0 + 1e-9:
            break
    return high
