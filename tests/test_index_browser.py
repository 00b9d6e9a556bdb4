"""The index page and a dated report with its Trend section, in headless Chromium.

Reuses test_report_browser's browser lookup and screenshots: skipped locally without
Chromium, a failure in CI (``CI=true``) without it.
"""

from __future__ import annotations

import dataclasses
from datetime import date

import numpy as np
import pandas as pd
import pytest
from test_index_page import history_with_latest
from test_report import build_readout
from test_report_browser import WIDTH, find_chromium, screenshot
from test_trends import dates_from, golden_summary, history_frame

from abrank.render import write_report
from abrank.render.index_page import write_index

HEIGHT = 4000


def _hex(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def _has(pixels: np.ndarray, colour: str) -> bool:
    return bool((pixels == _hex(colour)).all(axis=2).any())


def _inked(pixels: np.ndarray) -> np.ndarray:
    return (pixels < 235).any(axis=2)


@pytest.mark.slow
def test_index_page_renders_with_its_badges_and_verdict_colours(tmp_path):
    browser = find_chromium()
    demo = history_frame(golden_summary(), dates_from("2026-11-25", 6), seed=1)
    alarmed = history_with_latest(dates_from("2026-11-10", 4), srm_alarm=True, verdict="loss")
    alarmed["experiment"] = "zeta-online"
    root = tmp_path / "reports"
    write_index(
        root,
        pd.concat([demo, alarmed], ignore_index=True),
        {"demo-reranker": "demo-reranker/2026-11-30/report.html"},
    )
    pixels = screenshot(browser, root / "index.html", tmp_path / "shot.png", tmp_path / "p", HEIGHT)
    inked = _inked(pixels)
    assert inked.mean() > 0.005  # not blank
    rows = np.flatnonzero(inked.any(axis=1))
    assert 300 <= rows[-1] + 1 <= 1600, rows[-1]  # two cards and the footer: a short page
    columns = np.flatnonzero(inked.any(axis=0))
    assert columns[0] > 10 and columns[-1] < WIDTH - 10
    assert _has(pixels, "#b00020")  # the SRM badge
    assert _has(pixels, "#b34700")  # the loss badge and loss verdicts (report.html's colour)
    assert _has(pixels, "#8a6d00")  # the stale badge
    assert _has(pixels, "#007a5a")  # win verdicts


@pytest.mark.slow
def test_dated_report_shows_its_trend_charts(tmp_path):
    browser = find_chromium()
    base = build_readout(n=300)
    history = history_frame(base.summary, dates_from("2026-11-01", 20), unit="user_id", seed=4)
    readout = dataclasses.replace(base, history=history)
    write_report(readout, tmp_path, formats=("html",))
    page = tmp_path / "report.html"
    assert '<section id="trend">' in page.read_text(encoding="utf-8")
    tall = 20000
    pixels = screenshot(browser, page, tmp_path / "shot.png", tmp_path / "profile", tall)
    inked = _inked(pixels)
    rows = np.flatnonzero(inked.any(axis=1))
    assert 5000 <= rows[-1] + 1 <= 16000, rows[-1]
    assert _has(pixels, "#009E73")  # Okabe-Ito green of wins in the charts
    assert _has(pixels, "#fff1b8")  # the band of this readout's date in the trend charts
    undated = tmp_path / "undated"
    undated.mkdir()
    write_report(base, undated, formats=("html",))
    plain = screenshot(browser, undated / "report.html", tmp_path / "s2.png", tmp_path / "p2", tall)
    assert not _has(plain, "#fff1b8")
    # the trend section makes the page taller by about its charts and table
    extra = rows[-1] - np.flatnonzero(_inked(plain).any(axis=1))[-1]
    assert 900 <= extra <= 3500, extra
    assert date.fromisoformat("2026-11-20").isoformat() in page.read_text(encoding="utf-8")
