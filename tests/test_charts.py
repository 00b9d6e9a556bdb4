"""Charts: which charts a readout gets, that each is a real PNG, and the data behind them."""

from __future__ import annotations

import copy
import io
import struct

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from test_report import EXAMPLE, PNG_SIGNATURE, build_readout

from abrank.readout import Readout
from abrank.readout.charts import RANK_BUCKETS, first_relevant_rank_shares, paired_deltas
from abrank.render.chart_style import GREEN, VERMILLION
from abrank.render.charts import plan_charts
from abrank.render.forest_charts import forest_chart

ALL = [
    "forest.png",
    "deltas.png",
    "first_relevant.png",
    "curves.png",
    "segments-mrr-10.png",
    "segments-ndcg-10.png",
    "bootstrap.png",
]


@pytest.fixture(scope="module")
def readout() -> Readout:
    return build_readout(n=200)


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", png[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", png[16:24])


def _pixels(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


def _has_colour(pixels: np.ndarray, hex_colour: str) -> bool:
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return bool((pixels == rgb).all(axis=2).any())


def test_every_chart_is_a_valid_non_empty_png(readout):
    charts = plan_charts(readout)
    assert [c.name for c in charts] == ALL
    for chart in charts:
        png = chart.png
        width, height = _png_size(png)
        assert width == 900 and 240 <= height <= 1400, chart.name
        with Image.open(io.BytesIO(png)) as image:
            image.verify()  # checks the chunks and their CRCs
        pixels = _pixels(png)
        assert pixels.shape == (height, width, 3)
        ink = (pixels < 200).any(axis=2).mean()  # share of clearly non-white pixels
        assert 0.005 < ink < 0.6, (chart.name, ink)
        assert chart.title and chart.caption and chart.to_dict()["name"] == chart.name


def test_charts_are_drawn_lazily_and_deterministically(readout):
    first, second = plan_charts(readout), plan_charts(readout)
    assert all("png" not in vars(c) for c in first)  # planning draws nothing
    assert [c.png for c in first] == [c.png for c in second]  # no timestamps, same bytes


def test_planning_computes_no_chart_data_until_a_chart_is_drawn(readout, monkeypatch):
    from abrank.render import distribution_charts, position_charts

    def refused(*args, **kwargs):
        raise AssertionError("chart data computed while planning")

    for module, name in (
        (distribution_charts, "delta_distributions"),
        (distribution_charts, "bootstrap_panels"),
        (position_charts, "first_relevant_shares"),
        (position_charts, "metric_curves"),
    ):
        monkeypatch.setattr(module, name, refused)
    charts = plan_charts(readout)
    assert [c.name for c in charts] == ALL
    with pytest.raises(AssertionError, match="while planning"):
        next(c for c in charts if c.name == "deltas.png").draw()


def test_forest_colours_follow_the_verdicts():
    chart = forest_chart(EXAMPLE)
    pixels = _pixels(chart.png)
    assert _has_colour(pixels, GREEN)  # the win
    assert _has_colour(pixels, VERMILLION)  # the loss
    only_wins = copy.deepcopy(EXAMPLE)
    only_wins["comparisons"] = only_wins["comparisons"][:1]
    assert not _has_colour(_pixels(forest_chart(only_wins).png), VERMILLION)


def test_charts_left_out_when_their_data_is_missing(readout):
    summary = copy.deepcopy(readout.summary)
    summary["comparisons"] = [c for c in summary["comparisons"] if c["segment"] is None]
    bare = Readout(
        summary, readout.per_query, readout.curves.iloc[0:0], readout.first_relevant.iloc[0:0], {}
    )
    assert [c.name for c in plan_charts(bare)] == ["forest.png", "deltas.png"]
    empty = Readout({"comparisons": []}, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    assert plan_charts(empty) == []


def test_several_treatments_and_independent_design_still_draw():
    readout = build_readout(n=90, treatments=("reranker", "boost"))
    names = [c.name for c in plan_charts(readout)]
    assert names == ALL
    readout.summary["design"] = "independent"
    for comp in readout.summary["comparisons"]:
        comp["design"] = "independent"
    for chart in plan_charts(readout):
        assert _png_size(chart.png)[0] == 900
    deltas = next(c for c in plan_charts(readout) if c.name == "deltas.png")
    assert deltas.title == "Per-query values per arm"


def test_user_text_with_mathtext_markers_is_drawn_literally():
    readout = build_readout(
        n=60, labels={"reranker": "cost $5 vs $6 \\alpha"}, title="$x^2$ ranker"
    )
    readout.summary["metric_labels"]["mrr@10"] = "MRR$@10"
    for chart in plan_charts(readout):
        assert chart.png.startswith(PNG_SIGNATURE)


def test_first_relevant_rank_shares_by_hand():
    ranks = [1, 1, 2, 10, 11, 20, 21, 100, 101, np.nan, 3, 5000]
    frame = pd.DataFrame(
        {
            "arm": ["a"] * len(ranks) + ["b"],
            "query_id": range(len(ranks) + 1),
            "rank": [*ranks, 4.0],
        }
    )
    expected = np.zeros(len(RANK_BUCKETS) + 1)
    # buckets: 1..10 one each, then 11-20, 21-100, >100, none
    for bucket, count in {0: 2, 1: 1, 2: 1, 9: 1, 10: 2, 11: 2, 12: 2, 13: 1}.items():
        expected[bucket] = count
    np.testing.assert_allclose(first_relevant_rank_shares(frame, "a"), expected / 12)
    b = np.zeros(len(RANK_BUCKETS) + 1)
    b[3] = 1.0
    np.testing.assert_allclose(first_relevant_rank_shares(frame, "b"), b)
    assert first_relevant_rank_shares(frame, "missing").sum() == 0


def test_paired_deltas_pair_by_query_id():
    frame = pd.DataFrame(
        {
            "arm": ["c", "c", "c", "t", "t", "t"],
            "query_id": ["q1", "q2", "q3", "q3", "q1", "q9"],
            "m": [0.5, 1.0, np.nan, 1.0, 0.25, 1.0],
        }
    )
    # q1: 0.25 - 0.5; q3 has no control value; q2 and q9 are in one arm only
    np.testing.assert_allclose(paired_deltas(frame, "m", "c", "t"), [-0.25])


def test_a_dominant_tie_bar_is_cut_so_wins_and_losses_stay_visible():
    base = build_readout(n=60)
    n = 1000
    control = np.full(n, 0.5)
    treatment = control.copy()
    treatment[:10] = 1.0  # 10 wins of +0.5
    treatment[10:20] = 0.0  # 10 losses of -0.5; 980 ties
    frame = pd.DataFrame(
        {
            "arm": ["bm25"] * n + ["reranker"] * n,
            "query_id": [f"q{i}" for i in range(n)] * 2,
            "mrr@10": np.concatenate([control, treatment]),
            "ndcg@10": np.concatenate([control, control]),
        }
    )
    readout = Readout(base.summary, frame, base.curves, base.first_relevant)
    chart = next(c for c in plan_charts(readout) if c.name == "deltas.png")
    mrr, ndcg = chart.draw().axes[:2]
    heights = sorted(p.get_height() for p in mrr.patches if p.get_height() > 0)
    assert heights == [10, 10, 980]  # losses, wins, ties: each query drawn once
    assert mrr.get_ylim()[1] == pytest.approx(13.5)  # 1.35 x the tallest non-tie bar
    assert [t.get_text() for t in mrr.texts] == [" ties ↑ (bar cut)"]
    assert not ndcg.texts  # all ties and nothing else: nothing to cut for


def test_a_panel_of_ties_only_shows_a_wide_tie_bar():
    base = build_readout(n=60)
    n = 42
    frame = pd.DataFrame(
        {
            "arm": ["bm25"] * n + ["reranker"] * n,
            "query_id": [f"q{i}" for i in range(n)] * 2,
            "mrr@10": np.full(2 * n, 0.5),  # 42 of 42 queries tie
            "ndcg@10": np.full(2 * n, 0.5),
        }
    )
    readout = Readout(base.summary, frame, base.curves, base.first_relevant)
    chart = next(c for c in plan_charts(readout) if c.name == "deltas.png")
    ax = chart.draw().axes[0]
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert [b.get_height() for b in bars] == [42]
    # the deltas span no range, so the bins run over [-1, 1] (and the axis 5% beyond on
    # each side): the tie bar covers [-0.1, 0.1], 0.2 of 2.2, instead of a 0.024 sliver
    # hidden by the zero line
    assert bars[0].get_x() == pytest.approx(-0.1) and bars[0].get_width() == pytest.approx(0.2)
    assert ax.get_xlim()[1] - ax.get_xlim()[0] == pytest.approx(2.2)
    assert bars[0].get_zorder() > ax.lines[0].get_zorder()  # drawn over the zero line


def test_metric_at_k_axes_start_at_zero_with_a_log_axis_past_k_100():
    base = build_readout(n=60)
    k = np.arange(1, 1001)
    deep = pd.concat(
        [
            pd.DataFrame({"arm": arm, "metric": "recall", "k": k, "value": 0.3 + 0.5 * k / 1000})
            for arm in ("bm25", "reranker")
        ]
    )
    readout = Readout(
        base.summary, base.per_query, pd.concat([deep, base.curves]), base.first_relevant
    )
    chart = next(c for c in plan_charts(readout) if c.name == "curves.png")
    fig = chart.draw()
    recall, ndcg = fig.axes
    assert recall.get_xscale() == "log" and recall.get_xlim() == (1.0, 1000.0)
    assert ndcg.get_xscale() == "linear" and ndcg.get_xlim() == (0.0, 10.0)
    top = deep["value"].max()
    assert recall.get_ylim() == pytest.approx((0.0, top * 1.05))
    assert ndcg.get_ylim()[0] == 0.0
    # one legend for the whole figure, above the panels: none inside an axes
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "BM25 (production)",
        "Cross-encoder reranker",
    ]
    assert "log scale" in chart.caption
