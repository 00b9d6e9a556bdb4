"""Multiple-testing corrections over a family of comparisons.

The methods are those of :data:`abrank.stats.registry.CORRECTIONS`, computed with
statsmodels' ``multipletests`` (Holm, Bonferroni and Benjamini-Hochberg through the
bit-equal fast path of :mod:`abrank.stats.fast`). After a correction each interval is
redrawn at the level that matches its adjusted p-value, so that it excludes 0 exactly
when the adjusted verdict is a win or a loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from abrank.stats import fast as fast_stats
from abrank.stats.registry import NO_CORRECTION, resolve_correction
from abrank.stats.results import Comparison, agrees, lift_notes, verdict


def adjusted_p_values(p_values: Sequence[float], method: str, alpha: float = 0.05) -> np.ndarray:
    """The p-values adjusted by ``method`` (a registry name or alias), in the input order.

    NaN p-values (comparisons without a test) stay NaN and out of the family; ``none``
    returns them unchanged.
    """
    canonical = resolve_correction(method, "method")
    raw = np.array(p_values, dtype=np.float64)
    adjusted = raw.copy()
    tested = np.isfinite(raw)
    if canonical != NO_CORRECTION and tested.any():
        adjusted[tested] = fast_stats.multipletests(raw[tested], alpha=alpha, method=canonical)[1]
    return adjusted


def adjust(comparisons: Sequence[Comparison], method: str = "holm") -> list[Comparison]:
    """Adjust the primary p-values of one family of comparisons for multiple testing.

    ``method`` is a correction of :data:`abrank.stats.registry.CORRECTIONS` (statsmodels'
    ``multipletests`` names: ``holm``, ``fdr_bh``, ``bonferroni``, ``sidak``, ...; aliases
    such as ``bh``, ``by``, ``hochberg``; ``none`` leaves p-values as they are). Returns
    copies with ``p_adjusted``, ``correction`` and ``verdict`` filled in: ``win`` /
    ``loss`` when the adjusted p-value is below the comparison's alpha in that direction.
    Comparisons without a p-value (too few queries) stay out of the family. The interval,
    the relative interval and the MDE are redrawn at the level that matches the adjusted
    p-value (``ci_level``), so an interval excludes 0 exactly when the adjusted verdict is
    a win or a loss. The input order is kept.
    """
    canonical = resolve_correction(method, "method")
    items = list(comparisons)
    if not items:
        return []
    adjusted = adjusted_p_values([item.p_value for item in items], canonical, items[0].alpha)
    correction = None if canonical == NO_CORRECTION else canonical
    return [
        at_adjusted_level(item, float(p), correction)
        for item, p in zip(items, adjusted, strict=True)
    ]


def at_adjusted_level(item: Comparison, p: float, correction: str | None) -> Comparison:
    """One comparison with its adjusted p-value, verdict and intervals at the matching level."""
    decided = verdict(p, item.alpha, item.delta if math.isfinite(item.delta) else 0.0)
    changes: dict[str, Any] = {"p_adjusted": p, "correction": correction, "verdict": decided}
    share = item.p_value / p if math.isfinite(p) and p > 0 else 1.0
    if item.levels is not None and correction is not None and math.isfinite(share) and share < 1:
        level = 1.0 - (1.0 - item.confidence_level) * share
        changes.update(
            ci=item.levels.primary(level),
            ci_level=level,
            mde=item.levels.mde(item.alpha * share),
        )
        if item.levels.relative is not None:
            changes["relative_ci"] = item.levels.relative(level)
        if item.levels.relative_bootstrap is not None:
            changes["relative_ci_bootstrap"] = item.levels.relative_bootstrap(level)
    changes["ci_agrees"] = agrees(changes.get("ci", item.ci), decided)
    changes["notes"] = lift_notes(
        item.notes,
        changes.get("relative_ci_bootstrap", item.relative_ci_bootstrap),
        decided,
        item.primary_test,
    )
    return replace(item, **changes)
