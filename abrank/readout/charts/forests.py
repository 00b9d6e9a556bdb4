"""The data of the forest plots: each comparison's delta, interval and verdict.

The overall forest has a row per overall comparison (metric x treatment); the segment
forests one per metric, a row per segment comparison, with the overall delta of that metric
as a reference when a single treatment is compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from abrank.readout.charts.common import finite, finite_pair, json_float
from abrank.readout.model import ComparisonSummary, Summary
from abrank.readout.typed import as_summary, overall_comparisons, segment_comparisons


@dataclass(frozen=True)
class ForestRow:
    """One row of a forest plot: a comparison's delta and interval (None where the summary
    has no finite value) and its verdict (``inconclusive`` when it has none)."""

    metric: str
    treatment: str
    segment: str | None
    delta: float | None
    interval: tuple[float, float] | None
    verdict: str

    @classmethod
    def of(cls, comp: ComparisonSummary) -> ForestRow:
        """The row of one comparison."""
        return cls(
            comp.metric,
            comp.treatment,
            None if comp.segment is None else str(comp.segment),
            finite(comp.delta),
            finite_pair(comp.ci),
            str(comp.verdict if comp.verdict is not None else "inconclusive"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "segment": self.segment,
            "delta": json_float(self.delta),
            "ci": list(self.interval) if self.interval is not None else None,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Forest:
    """A forest plot's rows, top to bottom. ``metric`` names the metric of a segment forest
    (None for the overall forest); ``overall`` is that metric's overall delta, drawn as a
    reference line, when a single treatment is compared (else None)."""

    rows: tuple[ForestRow, ...]
    metric: str | None = None
    overall: float | None = None

    @property
    def several_treatments(self) -> bool:
        """Rows of more than one treatment."""
        return len({row.treatment for row in self.rows}) > 1

    def to_dict(self) -> dict[str, Any]:
        """The forest as JSON-safe builtins."""
        return {
            "metric": self.metric,
            "overall": json_float(self.overall),
            "rows": [row.to_dict() for row in self.rows],
        }


def overall_forest(summary: Summary | dict[str, Any]) -> Forest | None:
    """A row per overall comparison, in the summary's order; None without any."""
    rows = tuple(ForestRow.of(c) for c in overall_comparisons(summary))
    return Forest(rows) if rows else None


def segment_forests(summary: Summary | dict[str, Any]) -> tuple[Forest, ...]:
    """One forest per metric (the summary's order) over its segment comparisons."""
    summary = as_summary(summary)
    segmented = segment_comparisons(summary)
    several = len({c.treatment for c in segmented}) > 1
    forests = []
    for metric in dict.fromkeys(c.metric for c in segmented):
        overall = None
        if not several:
            for comp in summary.comparisons:
                if comp.segment is None and comp.metric == metric:
                    overall = finite(comp.delta)
        rows = tuple(ForestRow.of(c) for c in segmented if c.metric == metric)
        forests.append(Forest(rows, metric, overall))
    return tuple(forests)
