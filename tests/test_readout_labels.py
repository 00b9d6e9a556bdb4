"""Labels of a readout that must say what is shown: chart axes and captions name the
interval drawn, p-values read ``p < 0.001``, the sample-ratio check names the test that
gave its p-value, the online forest says what its values are, the legend defines the click
metrics, method notes stay out of the warnings, and the index page's cards say and colour
what their primary metric did.

Expected texts are written out here from the numbers the test sets or computes itself
(scipy for the split checks).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
from test_online_pipeline import CONFIG, make_log
from test_report import build_readout

import abrank
from abrank.readout import Readout
from abrank.render.charts import forest_chart, segment_forest_charts

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    """An online readout of ~1,200 users (the exact binomial test's range for the sample
    ratio check), its unit resampling forced onto grid cells (an approximation) by a zero
    work budget, with a satisfied-click dwell of 20 s; and its log."""
    import abrank.stats.clustered as clustered

    folder = tmp_path_factory.mktemp("online")
    log = make_log()
    log.to_csv(folder / "log.csv", index=False)
    (folder / "exp.yaml").write_text(
        CONFIG.replace("  resamples: 2000\n", "  resamples: 2000\n  sat_dwell: 20\n")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(clustered, "UNIT_BUDGET_NS", 0)
        readout = abrank.run_experiment(folder / "exp.yaml")
    return readout, log


def _readout(summary: dict, base: Readout) -> Readout:
    """``base`` with another summary (the same per-query table and chart data)."""
    return dataclasses.replace(base, summary=summary)


def _widened(summary: dict, levels: dict) -> dict:
    """``summary`` with the intervals of the comparisons keyed (metric, segment) in
    ``levels`` drawn at those levels, as a correction leaves them."""
    summary = copy.deepcopy(summary)
    for comp in summary["comparisons"]:
        comp["ci_level"] = levels.get((comp["metric"], comp["segment"]), 0.95)
    return summary


# --------------------------------------------------------------------------- chart labels


def _xlabel(chart) -> str:
    return chart.draw().axes[0].get_xlabel()


def test_the_forest_axis_names_the_corrected_interval_and_the_levels_drawn():
    summary = build_readout(n=200).summary
    # Holm left MRR@10 at 95% (its p-value was the family's largest) and widened NDCG@10
    summary = _widened(summary, {("mrr@10", None): 0.95, ("ndcg@10", None): 0.975})
    chart = forest_chart(summary)
    assert _xlabel(chart) == (
        "delta, treatment − control (mean per query)\nHolm-adjusted 95% CI (drawn at 95%–97.5%)"
    )
    assert chart.caption.startswith(
        "Each metric's delta (treatment − control) with its Holm-adjusted 95% confidence "
        "interval (drawn at 95%–97.5%), coloured by verdict;"
    )
    # without a widened interval the axis says the nominal level only
    plain = forest_chart(_widened(summary, {}))
    assert _xlabel(plain) == "delta, treatment − control (mean per query)\n95% CI"
    assert "adjusted" not in plain.caption


def test_the_segment_forest_axis_names_the_segment_correction_and_its_levels():
    summary = build_readout(n=200).summary
    levels = {
        ("mrr@10", "device=mobile"): 0.9875,
        ("mrr@10", "device=desktop"): 0.99,
        ("mrr@10", "locale=en-US"): 0.95,
        ("mrr@10", "locale=de-DE"): 0.9625,
        ("ndcg@10", "device=mobile"): 0.98,
    }
    charts = {c.name: c for c in segment_forest_charts(_widened(summary, levels))}
    mrr, ndcg = charts["segments-mrr-10.png"], charts["segments-ndcg-10.png"]
    assert _xlabel(mrr) == (
        "delta of MRR@10, treatment − control\nBH-adjusted 95% CI (drawn at 95%–99%)"
    )
    assert _xlabel(ndcg) == (
        "delta of NDCG@10, treatment − control\nBH-adjusted 95% CI (drawn at 95%–98%)"
    )
    assert mrr.caption.startswith(
        "MRR@10: the delta and its BH-adjusted 95% confidence interval (drawn at 95%–99%) "
        "within each segment"
    )


def _percent(level: float) -> str:
    """A level as the tables print it: one decimal, none when it is whole (0.99 -> 99%)."""
    percent = 100 * level
    return f"{round(percent)}%" if abs(percent - round(percent)) < 1e-9 else f"{percent:.1f}%"


def test_the_online_forest_axis_says_mean_per_impression_clustered_on_the_unit(online):
    readout, _ = online
    summary = readout.summary
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    levels = sorted(c["ci_level"] for c in overall)
    assert levels[-1] > 0.95  # Holm over four metrics widened intervals
    assert _xlabel(forest_chart(summary)) == (
        "delta, treatment − control (mean per impression, clustered on user_id)\n"
        f"Holm-adjusted 95% CI (drawn at {_percent(levels[0])}–{_percent(levels[-1])})"
    )
