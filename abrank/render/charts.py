"""Which charts a readout gets, in the order the reports show them.

Every chart only draws numbers the readout already holds, computed into plain data by
:mod:`abrank.readout.charts`; the drawing vocabulary they share (palette, sizes, the
:class:`~abrank.render.chart_style.Chart`, layout) is :mod:`.chart_style` and
:mod:`.chart_panels`. The families, each in its own module:

- :mod:`.forest_charts` — deltas with intervals, overall and per segment;
- :mod:`.distribution_charts` — per-query deltas and the bootstrap distribution;
- :mod:`.position_charts` — where the first relevant document lands, metric@k curves;
- :mod:`.online_charts` — click-through rate by position, the primary metric per unit;
- :mod:`.interleaved_charts` — outcomes per impression, the preference per unit;
- :mod:`.propensity_charts` — a counterfactual readout's examination by position;
- :mod:`.trend_charts` — a dated readout's deltas and units over the history's dates;
- :mod:`.explain_charts` — what moved each metric (waterfall) and how alike the lists are.
"""

from __future__ import annotations

from abrank.readout.core import Readout
from abrank.readout.typed import readout_summary
from abrank.render.chart_style import Chart, text_width
from abrank.render.distribution_charts import bootstrap_chart, delta_distribution_chart
from abrank.render.explain_charts import rbo_chart, waterfall_chart
from abrank.render.forest_charts import forest_chart, segment_forest_charts
from abrank.render.interleaved_charts import outcome_chart, preference_chart
from abrank.render.online_charts import ctr_by_rank_chart, unit_distribution_chart
from abrank.render.position_charts import curves_chart, first_relevant_chart
from abrank.render.propensity_charts import propensity_chart
from abrank.render.trend_charts import trend_chart, units_chart


def plan_charts(readout: Readout) -> list[Chart]:
    """Every chart the readout has data for, in the order the reports show them.

    Charts whose data is absent (no segments, no curves, no bootstrap draws, ...) are
    left out rather than drawn empty. Nothing is drawn until a chart's ``png`` is read.
    """
    summary = readout_summary(readout)
    charts: list[Chart | None] = [
        forest_chart(summary),
        delta_distribution_chart(readout),
        first_relevant_chart(readout),
        curves_chart(readout),
        ctr_by_rank_chart(readout),
        unit_distribution_chart(readout),
        outcome_chart(readout),
        preference_chart(readout),
        propensity_chart(readout),
        *segment_forest_charts(summary),
        waterfall_chart(readout),
        rbo_chart(readout),
        bootstrap_chart(readout),
        trend_chart(readout),
        units_chart(readout),
    ]
    return [chart for chart in charts if chart is not None]


def warm_up() -> None:
    """Import matplotlib and load its fonts now, so that the first chart is not slower."""
    text_width("0", 10)
