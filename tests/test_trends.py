"""The Trend section of dated readouts: charts and table of the history store's rows.

The history frames here are built from the demo's golden summary.json (and the small
readouts of test_report), one set of rows per date with jittered deltas and intervals and
the store's exact column types; every expected value is read from that frame directly.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from test_report import build_readout

from abrank.errors import DataError
from abrank.readout import HISTORY_DATA, Readout, load_readout, summary_json, write_chart_data
from abrank.readout.charts import trend_panels
from abrank.render import plan_charts, render_html, render_markdown
from abrank.render.chart_style import VERDICT_COLOURS

GOLDEN = Path(__file__).resolve().parent / "golden" / "demo-summary.json"

#: The history store's schema (the shared contract of issue 12).
SCHEMA = pa.schema(
    [
        ("experiment", pa.string()),
        ("date", pa.string()),
        ("metric", pa.string()),
        ("treatment", pa.string()),
        ("control", pa.string()),
        ("segment", pa.string()),
        ("primary", pa.bool_()),
        ("role", pa.string()),
        ("design", pa.string()),
        ("primary_test", pa.string()),
        ("unit", pa.string()),
        ("control_mean", pa.float64()),
        ("treatment_mean", pa.float64()),
        ("delta", pa.float64()),
        ("ci", pa.list_(pa.float64())),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("ci_level", pa.float64()),
        ("relative_lift", pa.float64()),
        ("p_value", pa.float64()),
        ("p_adjusted", pa.float64()),
        ("verdict", pa.string()),
        ("n", pa.int64()),
        ("n_control", pa.int64()),
        ("n_treatment", pa.int64()),
        ("sequential", pa.bool_()),
        ("srm_p_value", pa.float64()),
        ("srm_alarm", pa.bool_()),
        ("decision", pa.string()),
        ("decision_reason", pa.string()),
        ("window", pa.string()),
        ("window_start", pa.string()),
        ("stale", pa.bool_()),
        ("config_sha256", pa.string()),
        ("inputs_sha256", pa.string()),
        ("abrank_version", pa.string()),
        ("run_time", pa.timestamp("us", tz="UTC")),
    ]
)


#: What a comparison of test_report's small readouts leaves out.
DEFAULTS = {
    "ci_level": 0.95,
    "p_value": 0.01,
    "p_adjusted": 0.02,
    "primary_test": "t",
    "n": 200,
    "n_control": 200,
    "n_treatment": 200,
    "design": "paired",
}


def golden_summary() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def dates_from(start: str, count: int, gaps: Sequence[int] = ()) -> list[str]:
    """``count`` dates from ``start``, one a day, skipping the day offsets in ``gaps``."""
    first = date.fromisoformat(start)
    out, day = [], 0
    while len(out) < count:
        if day not in gaps:
            out.append((first + timedelta(days=day)).isoformat())
        day += 1
    return out


def history_frame(
    summary: dict,
    dates: Sequence[str],
    *,
    experiment: str | None = None,
    unit: str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """A realistic history of ``summary``'s comparisons over ``dates``, in the store's types.

    Each date's delta and interval are the summary's shifted by one draw of N(0, 0.02); the
    verdict follows the interval (above 0: win, below: loss, else inconclusive); online
    (``unit``) the arms count a few more units each day.
    """
    rng = np.random.default_rng(seed)
    name = experiment or summary["experiment"]["name"]
    control = next(a["name"] for a in summary["arms"] if a["role"] == "control")
    rows = []
    for index, day in enumerate(dates):
        for comp in summary["comparisons"]:
            shift = float(rng.normal(0.0, 0.02))
            low, high = comp["ci"][0] + shift, comp["ci"][1] + shift
            verdict = "win" if low > 0 else "loss" if high < 0 else "inconclusive"
            rows.append(
                {
                    "experiment": name,
                    "date": day,
                    "metric": comp["metric"],
                    "treatment": comp["treatment"],
                    "control": control,
                    "segment": comp["segment"],
                    "primary": comp["metric"] == summary["primary_metric"],
                    "design": "clustered" if unit else comp.get("design", DEFAULTS["design"]),
                    "primary_test": comp.get("primary_test", DEFAULTS["primary_test"]),
                    "unit": unit,
                    "control_mean": comp["control_mean"],
                    "treatment_mean": comp["control_mean"] + comp["delta"] + shift,
                    "delta": comp["delta"] + shift,
                    "ci": [low, high],
                    "ci_low": low,
                    "ci_high": high,
                    "ci_level": comp.get("ci_level", DEFAULTS["ci_level"]),
                    "relative_lift": (comp["delta"] + shift) / comp["control_mean"],
                    "p_value": comp.get("p_value", DEFAULTS["p_value"]),
                    "p_adjusted": comp.get("p_adjusted", DEFAULTS["p_adjusted"]),
                    "verdict": verdict,
                    "n": comp.get("n", DEFAULTS["n"]),
                    "n_control": comp.get("n_control", DEFAULTS["n_control"]) + 37 * index,
                    "n_treatment": comp.get("n_treatment", DEFAULTS["n_treatment"]) + 41 * index,
                    "sequential": False,
                    "srm_p_value": 0.5 if unit else None,
                    "srm_alarm": False if unit else None,
                    "window": "daily",
                    "window_start": None,
                    "stale": False,
                    "config_sha256": "c" * 64,
                    "inputs_sha256": f"{index:064x}",
                    "abrank_version": "0.0.0",
                    "run_time": pd.Timestamp(day, tz="UTC") + pd.Timedelta(hours=6),
                }
            )
    return pa.Table.from_pylist(rows, schema=SCHEMA).to_pandas()


def golden_readout(history: pd.DataFrame | None, summary: dict | None = None) -> Readout:
    """The demo's summary with no per-query data (its other charts drop out) and
    ``history``."""
    return Readout(
        summary or golden_summary(),
        pd.DataFrame(columns=["arm", "query_id"]),
        pd.DataFrame(columns=["arm", "metric", "k", "value"]),
        pd.DataFrame(columns=["arm", "query_id", "rank"]),
        history=history,
    )


def _chart(readout: Readout, name: str):
    found = [c for c in plan_charts(readout) if c.name == name]
    return found[0] if found else None


def _overall(history: pd.DataFrame) -> pd.DataFrame:
    return history[history["segment"].isna()]


def _days(dates) -> np.ndarray:
    return np.array([date.fromisoformat(d).toordinal() for d in dates], dtype=float)


# --------------------------------------------------------------------------- section


def test_two_dates_add_a_trend_section_and_one_date_none():
    summary = golden_summary()
    two = golden_readout(history_frame(summary, dates_from("2026-11-20", 2)))
    one = golden_readout(history_frame(summary, dates_from("2026-11-20", 1)))
    undated = golden_readout(None)

    markdown = render_markdown(two)
    assert "\n## Trend\n" in markdown
    assert "![Deltas over time](charts/trend.png)" in markdown
    assert '<section id="trend">' in render_html(two)
    assert [c.name for c in plan_charts(two) if c.section == "trend"] == ["trend.png"]

    for readout in (one, undated):
        assert "## Trend" not in render_markdown(readout)
        assert '<section id="trend">' not in render_html(readout)
        assert all(c.section != "trend" for c in plan_charts(readout))
    # a single date renders exactly as an undated readout does
    assert render_markdown(one) == render_markdown(undated)
    assert render_html(one) == render_html(undated)


def test_the_trend_section_sits_after_the_results_and_before_the_segments():
    base = build_readout(n=200)
    history = history_frame(base.summary, dates_from("2026-11-01", 5))
    readout = dataclasses.replace(base, history=history)
    headings = re.findall(r"^## (.+)$", render_markdown(readout), flags=re.M)
    assert headings.index("Trend") == headings.index("Results") + 1
    assert headings.index("Trend") < headings.index("Segments")
    undated = [h for h in headings if h != "Trend"]
    assert undated == re.findall(r"^## (.+)$", render_markdown(base), flags=re.M)


# --------------------------------------------------------------------------- the chart


def test_the_trend_chart_plots_the_histories_deltas_and_intervals():
    summary = golden_summary()
    dates = dates_from("2026-10-25", 9, gaps=(3, 4))  # a weekend without a run
    history = history_frame(summary, dates, seed=5)
    readout = golden_readout(history)
    fig = _chart(readout, "trend.png").draw()
    overall = _overall(history)
    labels = summary["metric_labels"]
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in axes) == sorted(labels[m] for m in summary["metrics"])
    latest = max(dates)
    for ax in axes:
        metric = next(m for m, label in labels.items() if label == ax.get_title())
        rows = overall[overall["metric"] == metric].sort_values("date")
        points = next(c for c in ax.collections if c.get_gid() == "delta")
        bars = next(c for c in ax.collections if c.get_gid() == "ci")
        offsets = np.asarray(points.get_offsets())
        np.testing.assert_array_equal(offsets[:, 0], _days(rows["date"]))
        np.testing.assert_allclose(offsets[:, 1], rows["delta"], rtol=0, atol=0)
        segments = bars.get_segments()
        np.testing.assert_array_equal([s[0][0] for s in segments], _days(rows["date"]))
        np.testing.assert_allclose([s[0][1] for s in segments], rows["ci_low"], rtol=0, atol=0)
        np.testing.assert_allclose([s[1][1] for s in segments], rows["ci_high"], rtol=0, atol=0)
        colours = [to_hex(c).upper() for c in points.get_facecolors()]
        assert colours == [VERDICT_COLOURS[v].upper() for v in rows["verdict"]]
        # the readout's own date: the biggest marker and the shaded band around it
        sizes = points.get_sizes()
        assert sizes.argmax() == len(rows) - 1 and sizes[-1] > sizes[0]
        band = next(p for p in ax.patches if p.get_gid() == "current")
        low, high = band.get_x(), band.get_x() + band.get_width()
        assert low < date.fromisoformat(latest).toordinal() < high
        # the zero line and the y axis reach every interval
        y_low, y_high = ax.get_ylim()
        assert y_low <= min(0.0, rows["ci_low"].min()) and y_high >= max(0.0, rows["ci_high"].max())
        assert ax.get_xlabel() == "date (2026)" and ax.get_ylabel()


def test_panels_are_rows_per_treatment_and_ignore_segments_and_other_experiments():
    base = build_readout(n=200, treatments=("reranker", "boost"))
    history = history_frame(base.summary, dates_from("2026-11-01", 4), seed=2)
    other = history_frame(base.summary, dates_from("2026-11-01", 4), experiment="other", seed=9)
    readout = dataclasses.replace(base, history=pd.concat([history, other], ignore_index=True))
    panels = trend_panels(readout)
    metrics = base.summary["metrics"]
    assert [(p.treatment, p.metric) for p in panels] == [
        (t, m) for t in ("reranker", "boost") for m in metrics
    ]
    for panel in panels:
        rows = _overall(history)
        rows = rows[(rows["metric"] == panel.metric) & (rows["treatment"] == panel.treatment)]
        np.testing.assert_array_equal(panel.delta, rows["delta"].to_numpy())
        assert panel.dates == tuple(rows["date"])
    fig = _chart(readout, "trend.png").draw()
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(titled) == 2 * len(metrics)
    # with two treatments every panel's title names its treatment
    labels = base.summary["metric_labels"]
    assert sorted(ax.get_title() for ax in titled) == sorted(
        f"{labels[m]} · {arm}"
        for m in metrics
        for arm in ("Cross-encoder reranker", "Freshness boost")
    )
    # the boost row lies under the reranker row
    tops = {ax.get_title(): ax.get_position().y0 for ax in titled}
    assert tops["MRR@10 · Freshness boost"] < tops["MRR@10 · Cross-encoder reranker"]


@pytest.mark.parametrize("count", [2, 30, 90])
def test_dates_stay_readable_from_2_to_90(count):
    summary = golden_summary()
    dates = dates_from("2026-09-15", count)
    fig = _chart(golden_readout(history_frame(summary, dates)), "trend.png").draw()
    for ax in (ax for ax in fig.axes if ax.get_title()):
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert 2 <= len(labels) <= 6
        assert all(re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", label) for label in labels)
        last = date.fromisoformat(dates[-1])
        assert labels[-1] == f"{last:%b} {last.day}"  # the latest date is always ticked
    # the labels do not overlap: each one ends before the next starts
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in (ax for ax in fig.axes if ax.get_title()):
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
        assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False))


# --------------------------------------------------------------------------- online


def test_the_units_chart_is_drawn_for_an_online_history_only():
    summary = golden_summary()
    dates = dates_from("2026-11-01", 6)
    offline = golden_readout(history_frame(summary, dates))
    assert _chart(offline, "trend_units.png") is None

    history = history_frame(summary, dates, unit="user_id", seed=4)
    online = golden_readout(history)
    chart = _chart(online, "trend_units.png")
    assert chart is not None and chart.section == "trend"
    assert "![Users per arm over time](charts/trend_units.png)" in render_markdown(online)
    ax = chart.draw().axes[0]
    lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
    primary = _overall(history)
    primary = primary[primary["metric"] == summary["primary_metric"]].sort_values("date")
    control = lines["units-bm25"]
    treatment = lines["units-reranker"]
    np.testing.assert_array_equal(control.get_xdata(), _days(dates))
    np.testing.assert_array_equal(control.get_ydata(), primary["n_control"].to_numpy(float))
    np.testing.assert_array_equal(treatment.get_ydata(), primary["n_treatment"].to_numpy(float))
    assert control.get_label() == "BM25 (production)"
    assert treatment.get_label() == "Cross-encoder reranker"
    assert ax.get_ylabel() == "users per arm"


# --------------------------------------------------------------------------- the table


def _table_after(markdown: str, heading: str) -> list[list[str]]:
    lines = markdown.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_markdown_table_lists_the_last_14_dates_newest_first():
    summary = golden_summary()
    dates = dates_from("2026-11-01", 20, gaps=(6,))
    history = history_frame(summary, dates, seed=8)
    markdown = render_markdown(golden_readout(history))
    rows = _table_after(markdown, "**The last 14 dates** (newest first)")
    overall = _overall(history)
    labels = summary["metric_labels"]
    expected = []
    for day in sorted(dates, reverse=True)[:14]:
        for metric in summary["metrics"]:
            row = overall[(overall["date"] == day) & (overall["metric"] == metric)].iloc[0]
            expected.append(
                [
                    day,
                    labels[metric],
                    f"{row['delta']:+.3f}",
                    f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]",
                    row["verdict"],
                ]
            )
    assert rows == expected
    assert len({r[0] for r in rows}) == 14


def test_the_html_table_carries_each_rows_numbers():
    summary = golden_summary()
    history = history_frame(summary, dates_from("2026-11-01", 3), seed=1)
    page = render_html(golden_readout(history))
    table = page.split('<table class="trend">', 1)[1].split("</table>", 1)[0]
    deltas = [float(v) for v in re.findall(r'data-key="delta" data-value="([^"]+)"', table)]
    overall = _overall(history).sort_values("date", ascending=False, kind="stable")
    assert deltas == list(overall["delta"])
    assert table.count('class="verdict loss"') == (overall["verdict"] == "loss").sum()


# --------------------------------------------------------------------------- round trip


def test_a_readout_folder_keeps_its_history_and_renders_the_same(tmp_path):
    summary = golden_summary()
    history = history_frame(summary, dates_from("2026-11-01", 7), unit="user_id", seed=3)
    history = history[history["date"] != "2026-11-03"]  # an index with a gap, kept as is
    readout = golden_readout(history)
    (tmp_path / "summary.json").write_text(summary_json(readout.summary), encoding="utf-8")
    write_chart_data(readout, tmp_path)
    assert (tmp_path / HISTORY_DATA).is_file()
    loaded = load_readout(tmp_path)
    pd.testing.assert_frame_equal(loaded.history, history)
    assert str(loaded.history["run_time"].dtype) == str(history["run_time"].dtype)
    assert render_markdown(loaded) == render_markdown(readout)


def test_a_folder_without_history_loads_none(tmp_path):
    readout = golden_readout(None)
    (tmp_path / "summary.json").write_text(summary_json(readout.summary), encoding="utf-8")
    write_chart_data(readout, tmp_path)
    assert not (tmp_path / HISTORY_DATA).exists()
    assert load_readout(tmp_path).history is None


def test_a_damaged_history_file_is_a_data_error_naming_it(tmp_path):
    readout = golden_readout(history_frame(golden_summary(), dates_from("2026-11-01", 2)))
    (tmp_path / "summary.json").write_text(summary_json(readout.summary), encoding="utf-8")
    write_chart_data(readout, tmp_path)
    (tmp_path / HISTORY_DATA).write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"history\.parquet: expected the history rows abrank"):
        load_readout(tmp_path)


# --------------------------------------------------------------------------- bad input


def test_a_history_without_a_needed_column_is_a_data_error_naming_it():
    history = history_frame(golden_summary(), dates_from("2026-11-01", 3)).drop(columns="ci_low")
    with pytest.raises(DataError) as error:
        render_markdown(golden_readout(history))
    assert str(error.value) == (
        "history: expected the history store's columns date, metric, treatment, segment, "
        "delta, ci_low, ci_high, verdict, got no column 'ci_low'"
    )


def test_a_history_date_that_is_not_a_date_is_a_data_error_naming_it():
    history = history_frame(golden_summary(), dates_from("2026-11-01", 3))
    history.loc[history.index[-1], "date"] = "2026-11-3x"
    history.loc[history.index[-1], "segment"] = None
    with pytest.raises(
        DataError, match=r"^history: date: expected a date as YYYY-MM-DD, got '2026-11-3x'$"
    ):
        render_markdown(golden_readout(history))


def test_a_written_dated_readout_lists_its_history_and_loads_it_back(tmp_path):
    from abrank.analysis.write import READOUT_MARKER, write_readout

    history = history_frame(golden_summary(), dates_from("2026-11-01", 3), seed=2)
    readout = golden_readout(history)
    folder = tmp_path / "demo-reranker" / "2026-11-03"
    write_readout(readout, folder, formats=("json", "md"))
    marker = json.loads((folder / READOUT_MARKER).read_text(encoding="utf-8"))
    assert HISTORY_DATA in marker["files"] and "charts/trend.png" in marker["files"]
    loaded = load_readout(folder)
    pd.testing.assert_frame_equal(loaded.history, history)
    assert (folder / "report.md").read_text(encoding="utf-8") == render_markdown(loaded)


def test_rows_after_the_readouts_own_date_are_left_out():
    summary = golden_summary()
    summary["schedule"] = {"date": "2026-11-04", "window": "daily"}  # as summary.json has it
    history = history_frame(summary, dates_from("2026-11-01", 6), seed=7)
    readout = golden_readout(history, summary)
    panels = trend_panels(readout)
    assert {p.dates for p in panels} == {("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")}
    markdown = render_markdown(readout)
    assert "2026-11-01 to 2026-11-04 (this readout's)" in markdown
    assert "2026-11-05" not in markdown and "2026-11-06" not in markdown
