"""What one overall comparison says for the decision rule, written into its record.

Every metric with a role is checked for a significant **deterioration**: its primary
test's two-sided p-value (before any correction) below ``decision.deterioration_alpha``,
with the change in the wrong direction. A **guardrail** is also tested for
non-inferiority: with margin m (absolute, or a share of the control's mean), the
one-sided test at alpha of H0: the change is worse than -m, i.e. the one-sided (1 - alpha)
bound of the change (the near end of the two-sided 1 - 2 alpha interval of the primary
test) lies inside -m. A relative margin is read on the lift's own interval where the
comparison has one, else on the change against m times the control's mean. The p-value of
the test is the alpha at which that bound meets the margin (the interval inverted), so
``p_non_inferiority < alpha`` exactly when the guardrail is shown non-inferior. A guardrail
is shown **inferior** when the far end of that interval lies beyond -m as well.

Every comparison needs its intervals as functions of their level (``levels``), so these
checks run where the comparisons are made, before they are saved.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from abrank.config.decision import MetricRole
from abrank.stats.results import Comparison

_BISECTIONS = 60


def annotate(
    comp: Comparison, role: MetricRole, lower_is_better: bool, deterioration_alpha: float
) -> Comparison:
    """``comp`` with its ``role`` and ``decision_checks`` (module text)."""
    sign = -1.0 if lower_is_better else 1.0
    checks: dict[str, Any] = {"direction": "lower" if lower_is_better else "higher"}
    good = sign * comp.delta if math.isfinite(comp.delta) else math.nan
    p = comp.p_value
    checks["deteriorated"] = bool(math.isfinite(p) and p < deterioration_alpha and good < 0)
    if role.role == "guardrail" and role.nim is not None:
        checks.update(non_inferiority(comp, role, sign))
    return dataclasses.replace(comp, role=role.role, decision_checks=checks)


def non_inferiority(comp: Comparison, role: MetricRole, sign: float) -> dict[str, Any]:
    """The guardrail's test (module text): margin, bound, p-value and outcome."""
    assert role.nim is not None
    alpha = comp.alpha
    level = 1.0 - 2.0 * alpha
    out: dict[str, Any] = {"margin": role.nim, "margin_relative": role.relative}
    levels = comp.levels
    relative = role.relative and levels is not None and levels.relative is not None
    estimate: float
    interval_at: Callable[[float], tuple[float, float] | None] | None
    if relative:
        assert levels is not None and levels.relative is not None
        interval_at = _finite_or_none(levels.relative)
        estimate = comp.relative_lift if comp.relative_lift is not None else math.nan
        margin = role.nim
    else:
        interval_at = _finite_or_none(levels.primary) if levels is not None else None
        estimate = comp.delta
        margin = role.nim * abs(comp.control_mean) if role.relative else role.nim
        if role.relative:
            out["margin_absolute"] = margin
    out["scale"] = "relative" if relative else "absolute"
    interval = interval_at(level) if interval_at is not None else None
    if interval is None or not math.isfinite(estimate) or not math.isfinite(margin):
        out.update(bound=None, non_inferior=False, inferior=False, p_non_inferiority=None)
        return out
    near, far = _sides(interval, sign)
    out["bound"] = near
    out["non_inferior"] = bool(sign * near > -margin)
    out["inferior"] = bool(sign * far < -margin)
    assert interval_at is not None
    out["p_non_inferiority"] = _inverted_p(interval_at, sign, margin, sign * estimate + margin)
    return out


def _sides(interval: tuple[float, float], sign: float) -> tuple[float, float]:
    """(near, far) ends of an interval: the worse end first for the metric's direction."""
    low, high = interval
    return (low, high) if sign > 0 else (high, low)


def _finite_or_none(
    at: Callable[[float], Any],
) -> Callable[[float], tuple[float, float] | None]:
    def interval(level: float) -> tuple[float, float] | None:
        found = at(level)
        if found is None:
            return None
        low, high = float(found[0]), float(found[1])
        return (low, high) if math.isfinite(low) and math.isfinite(high) else None

    return interval


def _inverted_p(
    interval_at: Callable[[float], tuple[float, float] | None],
    sign: float,
    margin: float,
    gap: float,
) -> float | None:
    """The one-sided p-value of H0 "worse than -margin": the alpha at which the interval's
    bound meets -margin (``gap`` is the estimate's distance beyond -margin, the good way).

    With the estimate inside the margin the near end is followed: p = (1 - L) / 2 at the
    level L where it meets -margin. Beyond it the far end is: p = (1 + L) / 2.
    """
    if gap == 0:
        return 0.5
    side = 0 if gap > 0 else 1

    def inside(level: float) -> bool | None:
        found = interval_at(level)
        if found is None:
            return None
        end = _sides(found, sign)[side]
        return (sign * end > -margin) if gap > 0 else (sign * end < -margin)

    low, high = 0.0, 1.0 - 1e-15  # inside at the low level, not at the high one
    top = inside(high)
    if top is None:
        return None
    if top:
        return 0.0 if gap > 0 else 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        found = inside(mid)
        if found is None:
            return None
        if found:
            low = mid
        else:
            high = mid
    level = 0.5 * (low + high)
    return (1.0 - level) / 2.0 if gap > 0 else (1.0 + level) / 2.0
