"""What the chart data of every family shares: JSON-safe numbers, series per arm, histograms.

The chart data are plain frozen dataclasses of tuples (never arrays or frames), so that
they compare by value and :meth:`to_dict` gives JSON-safe builtins directly; a number that
is missing or not finite is kept as NaN in the dataclass (the renderers draw it as a gap)
and written as None by ``to_dict``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a boolean), else None."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def finite_pair(bounds: Any) -> tuple[float, float] | None:
    """An interval's two bounds as floats, or None unless it has two finite bounds."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        return None
    low, high = finite(bounds[0]), finite(bounds[1])
    return (low, high) if low is not None and high is not None else None


def floats(values: Iterable[Any]) -> tuple[float, ...]:
    """Numbers as a tuple of floats (NaN kept)."""
    return tuple(float(v) for v in values)


def json_floats(values: Iterable[float]) -> list[float | None]:
    """Numbers as JSON-safe builtins: NaN and infinities as None."""
    return [float(v) if math.isfinite(v) else None for v in values]


def json_float(value: float | None) -> float | None:
    """One number as a JSON-safe builtin: NaN, infinities and None as None."""
    return float(value) if value is not None and math.isfinite(value) else None


def ordered_arms(arms: pd.Series, preferred: Sequence[str]) -> tuple[str, ...]:
    """The arms of a chart frame's ``arm`` column: those of ``preferred`` (the summary's
    order) first, then any other in the order met."""
    known = [a for a in preferred if (arms == a).any()]
    return tuple(known + [a for a in pd.unique(arms) if a not in known])


@dataclass(frozen=True)
class ArmValues:
    """One value per position (a rank bucket, a rank, a k) for one arm."""

    arm: str
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The arm and its values, as JSON-safe builtins."""
        return {"arm": self.arm, "values": json_floats(self.values)}


@dataclass(frozen=True)
class Histogram:
    """Counts over bins: ``edges`` has one more entry than ``counts`` (numpy.histogram's
    convention); both empty when there was nothing to count."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]

    @classmethod
    def of(cls, values: np.ndarray, bins: int | np.ndarray) -> Histogram:
        """numpy.histogram of ``values`` over ``bins`` (a count, or the edges)."""
        counts, edges = np.histogram(values, bins=bins)
        return cls(floats(edges), tuple(int(c) for c in counts))

    @property
    def total(self) -> int:
        """The values counted."""
        return sum(self.counts)

    def to_dict(self) -> dict[str, Any]:
        """Edges and counts, as JSON-safe builtins."""
        return {"edges": json_floats(self.edges), "counts": list(self.counts)}
