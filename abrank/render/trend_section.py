"""The Trend section of a dated readout: what its history spans, the trend charts, and a
table of the overall comparisons at the latest dates (:data:`TABLE_DATES`), newest first.

A readout whose history (:mod:`abrank.readout.charts.trends`) spans fewer than two dates
has no such section. Every number shown is a number of the history rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from abrank.readout.charts.trends import VERDICTS, day_numbers, ordered, readout_rows
from abrank.readout.core import Readout
from abrank.readout.typed import readout_summary, treatment_names
from abrank.render.blocks import (
    Block,
    Cell,
    ChartRef,
    Column,
    Heading,
    Paragraph,
    Section,
    Table,
    own,
)
from abrank.render.chart_style import Chart
from abrank.render.text import arm_labels, fmt_interval, fmt_signed, metric_display

#: How many of the latest dates the trend table lists.
TABLE_DATES = 14


def trend_table(readout: Readout, last: int = TABLE_DATES) -> Table | None:
    """The overall rows of the ``last`` latest dates, newest first: date, (treatment,)
    metric, Δ, CI, verdict; None with fewer than two dates."""
    rows = readout_rows(readout)
    if rows is None:
        return None
    summary = readout_summary(readout)
    several = rows["treatment"].nunique() > 1
    labels = arm_labels(summary)
    dates = sorted(pd.unique(rows["date"]), reverse=True)[:last]
    treatments = ordered(list(rows["treatment"]), treatment_names(summary))
    metrics = ordered(list(rows["metric"]), list(summary.metrics or ()))
    shown = rows[rows["date"].isin(dates)]
    order = np.lexsort(
        (
            shown["metric"].map({m: i for i, m in enumerate(metrics)}).to_numpy(),
            shown["treatment"].map({t: i for i, t in enumerate(treatments)}).to_numpy(),
            -day_numbers(str(d) for d in shown["date"]),
        )
    )
    shown = shown.iloc[order]
    columns = [Column("date", "left", "text")]
    if several:
        columns.append(Column("treatment", "left", "text"))
    columns += [
        Column("metric", "left", "text"),
        Column("Δ"),
        Column("CI"),
        Column("verdict", "left", "verdict"),
    ]
    deltas = _floats(shown["delta"])
    lows, highs = _floats(shown["ci_low"]), _floats(shown["ci_high"])
    out = []
    for i, (day, treatment, metric, verdict) in enumerate(
        zip(shown["date"], shown["treatment"], shown["metric"], shown["verdict"], strict=True)
    ):
        verdict = str(verdict) if verdict in VERDICTS else "inconclusive"
        bounds = [lows[i], highs[i]]
        cells = [Cell(str(day), "date", str(day), True, "text")]
        if several:
            label = labels.get(treatment, treatment)
            cells.append(Cell(label, "treatment", treatment, True, "text"))
        cells += [
            Cell(metric_display(summary, metric), "metric", metric, True, "text"),
            Cell(fmt_signed(deltas[i]), "delta", deltas[i], True, own=True),
            Cell(fmt_interval(bounds), "ci", bounds, True, "wrap", own=True),
            Cell(verdict, "verdict", verdict, True, f"verdict {verdict}", own=True),
        ]
        out.append(tuple(cells))
    return Table(tuple(columns), tuple(out), "trend")


def _floats(values: pd.Series) -> list[float | None]:
    """A column's numbers as floats, None where missing or not finite (a cell's value)."""
    array = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return [float(v) if math.isfinite(v) else None for v in array]


def trend_section(readout: Readout, charts: Sequence[Chart]) -> Section | None:
    """The Trend section: what the history spans, its charts, the table of the latest
    dates; None with fewer than two dates (an undated readout has no such section)."""
    table = trend_table(readout)
    if table is None:
        return None
    rows = readout_rows(readout)
    assert rows is not None
    dates = sorted(pd.unique(rows["date"]))
    shown = min(len(dates), TABLE_DATES)
    text = (
        f"The overall comparisons at each of the {len(dates)} dates of the experiment's "
        f"history, {dates[0]} to {dates[-1]} (this readout's); each date's interval and "
        "verdict are those of its own readout."
    )
    blocks: list[Block] = [Paragraph((own(text),), role="note")]
    blocks += [ChartRef(c.name, c.title, c.caption) for c in charts if c.section == "trend"]
    blocks += [Heading(f"The last {shown} dates", "newest first"), table]
    return Section("trend", "Trend", tuple(blocks))
