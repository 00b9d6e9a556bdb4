"""The chart of a counterfactual readout: examination by position, with intervals.

Shows the propensities that every counterfactual estimate rests on (relative to rank 1),
each with its unit-bootstrap interval when harvested; the numbers are the summary's
``diagnostics.propensities``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from abrank.readout.core import Readout
from abrank.readout.typed import readout_summary
from abrank.render.chart_panels import chart_title
from abrank.render.chart_style import BLUE, WIDTH, Chart, mpl_classes

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def propensity_chart(readout: Readout) -> Chart | None:
    """Examination probability by rank (rank 1 = 1) with its interval; None without them."""
    diagnostics = readout_summary(readout).diagnostics
    ranks = (diagnostics.extra.get("propensities") if diagnostics is not None else None) or []
    if not ranks:
        return None

    def draw() -> Figure:
        x = np.array([entry["rank"] for entry in ranks], dtype=np.float64)
        y = np.array([entry["estimate"] for entry in ranks], dtype=np.float64)
        bounds = np.array(
            [[np.nan if v is None else v for v in entry["ci"]] for entry in ranks], dtype=np.float64
        )
        fig = mpl_classes().Figure(figsize=(WIDTH, 3.6))
        ax = fig.add_subplot()
        known = np.isfinite(bounds).all(axis=1)
        if known.any():
            ax.errorbar(
                x[known],
                y[known],
                yerr=np.abs(bounds[known] - y[known, None]).T,
                fmt="none",
                ecolor=BLUE,
                elinewidth=1.4,
                capsize=3,
            )
        ax.plot(x, y, marker="o", color=BLUE, linewidth=1.8)
        ax.set_xticks(x, [str(int(r)) for r in x])
        ax.set_ylim(0, max(1.05, float(np.nanmax(np.r_[y, bounds.ravel()])) * 1.05))
        ax.set_xlabel("position (rank)")
        ax.set_ylabel("examination (rank 1 = 1)")
        chart_title(ax, "Examination by position, relative to rank 1")
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        fig.subplots_adjust(bottom=0.16)
        return fig

    return Chart(
        "propensities.png",
        "Examination by position",
        "How often each position is examined relative to the first, as harvested from the "
        "logs (with 95% unit-bootstrap intervals) or as given; every counterfactual estimate "
        "rests on these.",
        draw,
        section="propensities",
    )
