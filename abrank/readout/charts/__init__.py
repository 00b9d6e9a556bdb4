"""The numbers behind a readout's charts, as plain frozen dataclasses with ``to_dict()``.

Each chart of a report draws exactly one of these, and computes nothing of its own; the
same data can be served as JSON (``to_dict()`` gives JSON-safe builtins). A function
returns None (or nothing) when the readout lacks the chart's data; where that data takes
time to compute, a cheaper function tells which panels a chart will have
(:func:`distribution_comparisons`, :func:`bootstrap_treatments`, :func:`curve_depths`,
:func:`unit_value_range`), so that a report can plan its charts and compute their data only
when it draws them.

- :mod:`.forests` — deltas with intervals and verdicts, overall and per segment;
- :mod:`.distributions` — per-query deltas split into losses, ties and wins (per-arm
  values for the independent design), and the bootstrap draws of the primary metric;
- :mod:`.positions` — where the first relevant document lands, metric@k curves;
- :mod:`.online` — click-through rate by rank, the primary metric per unit;
- :mod:`.interleaved` — wins, ties and losses per impression, the preference per unit;
- :mod:`.trends` — a dated readout's history rows as series against date.
"""

from abrank.readout.charts.distributions import (
    BootstrapPanel,
    DeltaDistributions,
    DeltaPanel,
    SplitHistogram,
    bootstrap_panels,
    bootstrap_treatments,
    delta_distributions,
    distribution_comparisons,
    paired_deltas,
)
from abrank.readout.charts.forests import Forest, ForestRow, overall_forest, segment_forests
from abrank.readout.charts.interleaved import Outcome, Outcomes, outcomes, preference_distribution
from abrank.readout.charts.online import (
    RankRates,
    UnitCounts,
    UnitHistogram,
    ctr_by_rank,
    unit_distribution,
    unit_value_range,
)
from abrank.readout.charts.positions import (
    RANK_BUCKETS,
    CurveLine,
    CurvePanel,
    Curves,
    RankShares,
    curve_depths,
    first_relevant_rank_shares,
    first_relevant_shares,
    metric_curves,
)
from abrank.readout.charts.trends import (
    DatedCounts,
    TrendPanel,
    UnitsPerArm,
    trend_panels,
    units_per_arm,
)

__all__ = [
    "RANK_BUCKETS",
    "BootstrapPanel",
    "CurveLine",
    "CurvePanel",
    "Curves",
    "DatedCounts",
    "DeltaDistributions",
    "DeltaPanel",
    "Forest",
    "ForestRow",
    "Outcome",
    "Outcomes",
    "RankRates",
    "RankShares",
    "SplitHistogram",
    "TrendPanel",
    "UnitCounts",
    "UnitHistogram",
    "UnitsPerArm",
    "bootstrap_panels",
    "bootstrap_treatments",
    "ctr_by_rank",
    "curve_depths",
    "delta_distributions",
    "distribution_comparisons",
    "first_relevant_rank_shares",
    "first_relevant_shares",
    "metric_curves",
    "outcomes",
    "overall_forest",
    "paired_deltas",
    "preference_distribution",
    "segment_forests",
    "trend_panels",
    "unit_distribution",
    "unit_value_range",
    "units_per_arm",
]
