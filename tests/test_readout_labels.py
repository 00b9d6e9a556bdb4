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
import html
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from test_index_page import TODAY, _badges, _cards, _lines
from test_online_pipeline import CONFIG, make_log
from test_report import build_readout
from test_trends import dates_from, history_frame

import abrank
from abrank.analysis.summarise import comparison_warnings
from abrank.readout import Readout
from abrank.readout.model import SampleRatio
from abrank.render import render_html, render_markdown
from abrank.render.forest_charts import forest_chart, segment_forest_charts
from abrank.render.index_page import render_index
from abrank.stats.clustered_result import NOTE_CUPED

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    """An online readout of ~1,200 users (the exact binomial test's range for the sample
    ratio check), its unit resampling forced onto grid cells (an approximation) by a zero
    work budget, with a satisfied-click dwell of 20 s; and its log."""
    import abrank.stats.clustered_resampling as clustered_resampling

    folder = tmp_path_factory.mktemp("online")
    log = make_log()
    log.to_csv(folder / "log.csv", index=False)
    (folder / "exp.yaml").write_text(
        CONFIG.replace("  resamples: 2000\n", "  resamples: 2000\n  sat_dwell: 20\n")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(clustered_resampling, "UNIT_BUDGET_NS", 0)
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


# --------------------------------------------------------------------------- split checks


def test_a_p_value_below_0_001_reads_p_below_and_the_chi_square_is_named(online):
    readout, _ = online
    summary = copy.deepcopy(readout.summary)
    units = {"a": 2_300, "b": 1_980}  # over 1,000 expected per arm: the chi-square test
    test = sps.chisquare([2_300, 1_980])
    assert test.pvalue < 0.001
    summary["diagnostics"]["srm"].update(
        units=units, chi2=float(test.statistic), p_value=float(test.pvalue), alarm=True, test="chi2"
    )
    text = html.unescape(render_markdown(_readout(summary, readout), charts=[]))
    assert "sample ratio ALARM (p < 0.001)" in text
    assert (
        f"- sample ratio check (chi-square test): ALARM: chi-square {test.statistic:.2f}, "
        "p < 0.001 (alarm below 0.001)"
    ) in text
    assert "p = <" not in text and "p = <" not in html.unescape(
        render_html(_readout(summary, readout), charts=[])
    )


def test_the_exact_binomial_srm_test_is_named_and_no_chi_square_is_claimed(online):
    readout, log = online
    srm = readout.summary["diagnostics"]["srm"]
    users = log.groupby("arm")["user_id"].nunique()
    assert srm["units"] == {"a": users["a"], "b": users["b"]}
    assert srm["test"] == "exact"  # fewer than 1,000 users expected per arm
    p = sps.binomtest(int(users["a"]), int(users.sum()), 0.5).pvalue
    text = html.unescape(render_markdown(readout, charts=[]))
    assert f"sample ratio ok (p = {p:.3g})" in text
    assert (
        f"- sample ratio check (exact binomial test): ok: p = {p:.3g} (alarm below 0.001)" in text
    )
    page = html.unescape(render_html(readout, charts=[]))
    assert "<dt>sample ratio check (exact binomial test)</dt>" in page
    for shown in (text, page):
        assert "chi-square" not in shown.lower()


def test_the_srm_alarm_sentence_names_the_exact_test():
    p = float(sps.binomtest(12, 60, 0.5).pvalue)  # 12 of 60 units in one arm
    assert p < 0.001
    check = SampleRatio.from_dict(
        {
            "units": {"a": 12, "b": 48},
            "expected": {"a": 0.5, "b": 0.5},
            "chi2": 21.6,
            "p_value": p,
            "alarm": True,
            "alpha": 0.001,
            "test": "exact",
        }
    )
    assert check.message() == (
        "Sample ratio mismatch: units per arm a 12 / b 48 against an expected split of "
        f"50.0% / 50.0% (exact binomial test, p = {p:.2g} < 0.001); assignment or logging "
        "lost units, so these comparisons are not trustworthy until that is explained"
    )
    three = SampleRatio.from_dict(
        {
            "units": {"a": 5, "b": 20, "c": 20},
            "expected": {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3},
            "chi2": 10.0,
            "p_value": 0.0004,
            "alarm": True,
            "test": "exact",
        }
    )
    assert "(exact multinomial test, p = 0.0004 < 0.001)" in three.message()
    chi2 = SampleRatio.from_dict({**check.to_dict(), "test": "chi2"})
    assert "(chi-square 21.6, p = " in chi2.message()


# --------------------------------------------------------------------------- legend


def _legend(text: str) -> dict[str, str]:
    return dict(re.findall(r"^- \*\*(.+?)\*\*: (.+)$", text, flags=re.MULTILINE))


def test_the_legend_defines_each_click_metric_of_the_readout(online):
    readout, _ = online
    text = render_markdown(readout, charts=[])
    legend = _legend(text.split("**How to read this readout**")[1])
    assert legend["ClickRR@5"] == (
        "click reciprocal rank, per impression: 1 / the position of the first clicked result "
        "in the top 5 (0 when nothing there was clicked)."
    )
    assert legend["CTR@2"] == (
        "click-through rate: the share of impressions with a click on a result in the top 2."
    )
    assert legend["Abandonment"] == (
        "the share of impressions without any click; lower is better, so a fall is the "
        "treatment's win."
    )
    assert legend["SatCTR@5"] == (
        "satisfied click-through rate: the share of impressions with a click in the top 5 "
        "whose dwell reached 20 s."
    )
    assert not any(name.startswith("Clicks@") for name in legend)  # not in this readout
    page = html.unescape(render_html(readout, charts=[]))
    assert (
        "<dt>Abandonment</dt><dd>the share of impressions without any click; lower is better"
        in page
    )


def test_the_clicks_metric_has_its_own_definition(online):
    readout, _ = online
    summary = copy.deepcopy(readout.summary)
    summary["metrics"] = ["clicks@3"]
    summary["metric_labels"] = {"clicks@3": "Clicks@3"}
    summary["comparisons"] = [
        {**c, "metric": "clicks@3"} for c in summary["comparisons"] if c["metric"] == "ctr@2"
    ]
    legend = _legend(render_markdown(_readout(summary, readout), charts=[]))
    assert legend["Clicks@3"] == "the number of clicked results in the top 3, per impression."
    assert not {"ClickRR@5", "CTR@2", "Abandonment", "SatCTR@5"} & set(legend)


# --------------------------------------------------------------------------- method notes


def test_resampling_approximations_are_a_methods_note_not_a_warning(online):
    readout, _ = online
    summary = readout.summary
    approximated = [
        c for c in summary["comparisons"] if c["segment"] is None and c["approximation"]
    ]
    assert len(approximated) >= 2  # the zero work budget put them on grid cells
    expected = [
        f"{c['metric']} ({c['treatment']}): resampled with an approximation: {c['approximation']}"
        for c in approximated
    ]
    assert summary["diagnostics"]["method_notes"] == expected
    assert not any("approximation" in w for w in summary["diagnostics"]["warnings"])
    text = render_markdown(readout, charts=[])
    top, rest = text.split("## Results")
    assert "approximation" not in top  # the title block and the headline hold alarms only
    note = rest.split("**Methods note**")[1].split("## ")[0]
    for line in expected:
        assert line.replace("_", "\\_").replace(">=", "&gt;=") in note
    page = render_html(readout, charts=[])
    assert not re.search(r'class="warning[^"]*"[^<]*<strong>[^<]*</strong>[^<]*approximation', page)
    assert "<h3>Methods note</h3>" in page


def test_the_cuped_note_is_a_method_note_too():
    import abrank as api
    from abrank.analysis.summarise import method_notes

    rng = np.random.default_rng(5)
    comp = api.compare(rng.random(60), rng.random(60), design="paired", seed=7)
    cuped = [
        comp.__class__(**{**comp.__dict__, "metric": m, "treatment": "b", "notes": (NOTE_CUPED,)})
        for m in ("ctr@2", "abandonment")
    ]
    assert comparison_warnings(cuped) == []
    assert method_notes(cuped) == (f"ctr@2 (b), abandonment (b): {NOTE_CUPED}",)
    assert method_notes([comp]) is None


# --------------------------------------------------------------------------- index page


def _latest_overall(history: pd.DataFrame) -> pd.DataFrame:
    latest = history["date"] == history["date"].max()
    return history[latest & history["segment"].isna()]


def test_an_interleaving_card_names_its_preferences_without_n_a_placeholders():
    history = history_frame(build_readout(n=200).summary, dates_from("2026-11-28", 3), seed=8)
    history["metric"] = history["metric"].map({"mrr@10": "clicks", "ndcg@10": "sat_clicks"})
    history["design"] = "interleaved"
    history["relative_lift"] = np.nan
    card = _cards(render_index(history, {}, today=TODAY))["demo-reranker"]
    rows = _latest_overall(history)
    words = {"clicks": "preference by clicks", "sat_clicks": "preference by satisfied clicks"}
    assert _lines(card) == [
        f"reranker: {words[m]} Δ_AB {d:+.3f} {v}"
        for m, d, v in zip(rows["metric"], rows["delta"], rows["verdict"], strict=True)
    ]
    assert "n/a" not in card and "sat_clicks" not in card


@pytest.mark.parametrize(
    ("primary", "secondary", "tone", "badges"),
    [
        ("win", "loss", "win", ["secondary-loss"]),
        ("loss", "win", "loss", ["loss"]),
        ("inconclusive", "loss", "", ["secondary-loss"]),
        ("loss", "loss", "loss", ["loss", "secondary-loss"]),
    ],
)
def test_a_card_takes_its_colour_from_the_primary_metric(primary, secondary, tone, badges):
    history = history_frame(build_readout(n=200).summary, dates_from("2026-11-28", 3), seed=9)
    overall = history["segment"].isna()
    history.loc[overall & history["primary"], "verdict"] = primary
    history.loc[overall & ~history["primary"], "verdict"] = secondary
    page = render_index(history, {}, today=TODAY)
    assert (
        re.search(r'<article class="card ?([a-z]*)" id="experiment-demo-reranker">', page).group(1)
        == tone
    )
    assert _badges(_cards(page)["demo-reranker"]) == badges
