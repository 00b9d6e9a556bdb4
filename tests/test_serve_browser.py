"""The explorer in headless Chromium: the pages as a browser renders them (``--dump-dom``),
navigated by their own links and GET forms, and a screenshot of a query page at 1,280 px.

Reuses test_report_browser's browser lookup: skipped locally without Chromium, a failure in
CI (``CI=true``) without it.
"""

from __future__ import annotations

import html
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from serve_fixtures import NAME, build_root, running
from test_report_browser import HEADLESS_FLAGS, WIDTH, find_chromium

DELTA = "delta:reranker:mrr@10"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    browser = find_chromium()
    base_dir = tmp_path_factory.mktemp("serve-browser")
    root = build_root(base_dir)
    with running(root) as base:
        yield browser, root, base, base_dir


def dump_dom(browser: str, address: str, profile: Path) -> str:
    """The DOM of ``address`` once Chromium has rendered it."""
    command = [
        browser,
        *HEADLESS_FLAGS,
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        address,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class _Form(HTMLParser):
    """The first ``form.filters`` of a page: its action, and each select's options and
    selected value (what a browser submits when nothing is changed)."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.selects: dict[str, list[str]] = {}
        self.chosen: dict[str, str] = {}
        self._select: str | None = None
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and self.action is None and "filters" in (found.get("class") or ""):
            self.action, self._inside = found.get("action"), True
        elif self._inside and tag == "select":
            self._select = found["name"]
            self.selects[self._select] = []
        elif self._inside and tag == "option" and self._select:
            value = found.get("value") or ""
            self.selects[self._select].append(value)
            if "selected" in found or self._select not in self.chosen:
                self.chosen[self._select] = value

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "form":
            self._inside = False


def submit(dom: str, **changes: str) -> str:
    """The URL the page's filter form sends with ``changes`` made to its selects (each
    value must be one of the select's options, as a user can only pick those)."""
    form = _Form()
    form.feed(dom)
    assert form.action, "no filter form on the page"
    values = dict(form.chosen)
    for name, value in changes.items():
        assert value in form.selects[name], (name, value, form.selects[name])
        values[name] = value
    return f"{form.action}?{urlencode(values)}"


def first_query_link(dom: str) -> tuple[str, str]:
    """(href, shown id) of the first query link of a rendered readout page."""
    start = dom.index('<a class="query" href="')
    href = dom[start + len('<a class="query" href="') :].split('"', 1)[0]
    text = dom[start:].split(">", 1)[1].split("</a>", 1)[0]
    return html.unescape(href), html.unescape(text)


@pytest.mark.slow
def test_filter_sort_and_open_the_worst_query(served, tmp_path):
    browser, root, base, _ = served
    queries = pd.read_parquet(root / NAME / "queries.parquet")
    page = dump_dom(browser, f"{base}/e/{NAME}", tmp_path / "p1")
    assert "queries match" in page
    filtered = submit(page, segment="locale:ja-JP", sort="delta", order="asc")
    page = dump_dom(browser, base + filtered, tmp_path / "p2")
    ja = queries[queries["locale"] == "ja-JP"]
    assert f"{len(ja):,} queries match" in page
    href, shown = first_query_link(page)
    worst = ja.sort_values([DELTA, "query_id"], na_position="last").iloc[0]
    assert shown == worst["query_id"] and worst[DELTA] == ja[DELTA].min()
    query = dump_dom(browser, base + href, tmp_path / "p3")
    assert f'<span class="qid">{worst["query_id"]}</span>' in query
    from abrank.readout.folder import load_readout

    lists = load_readout(root / NAME).query(worst["query_id"])
    for arm in ("bm25", "reranker"):
        assert f'data-arm="{arm}"' in query
        table = query.split(f'data-arm="{arm}"', 1)[1].split("</table>", 1)[0]
        shown_arm = lists[lists[f"rank_{arm}"].notna()].sort_values(f"rank_{arm}")
        cells = [c.split("</td>", 1)[0] for c in table.split('<td class="grade">')[1:]]
        expected = [
            "unjudged" if np.isnan(g) else str(int(g)) for g in shown_arm["grade"].to_numpy()
        ]
        assert cells == expected, arm
        for doc in shown_arm["doc_id"]:
            assert f"<td>{doc}</td>" in table


@pytest.mark.slow
def test_a_query_missing_from_the_treatments_log_is_flagged(served, tmp_path):
    browser, root, base, _ = served
    queries = pd.read_parquet(root / NAME / "queries.parquet")
    page = dump_dom(browser, f"{base}/e/{NAME}", tmp_path / "p1")
    page = dump_dom(
        browser, base + submit(page, tag="missing_log", sort="query_id"), tmp_path / "p2"
    )
    missing = queries[queries["missing_in"] == "reranker"].sort_values("query_id")
    assert f"{len(missing):,} queries match" in page
    href, shown = first_query_link(page)
    assert shown == missing["query_id"].iloc[0]
    query = html.unescape(dump_dom(browser, base + href, tmp_path / "p3"))
    assert '<span class="flag missing">missing from reranker\'s log</span>' in query
    assert "no list: missing from reranker's log" in query
    assert 'data-arm="bm25"' in query and 'data-arm="reranker"' not in query


@pytest.mark.slow
def test_a_query_page_screenshot_at_1280_px_is_not_blank(served, tmp_path):
    browser, root, base, _ = served
    shot = tmp_path / "query.png"
    command = [
        browser,
        *HEADLESS_FLAGS,
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        f"--window-size={WIDTH},1400",
        "--virtual-time-budget=5000",
        f"{base}/e/{NAME}/q/q00000",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("RGB"))
    assert pixels.shape == (1400, WIDTH, 3)
    packed = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    assert np.unique(packed).size > 100  # text, badges, shaded rows: many colours
    # the lists' area (below the metrics table) holds dark text in both halves
    area = pixels[500:1300]
    dark = (area < 90).all(axis=2)
    assert dark[:, : WIDTH // 2].mean() > 0.003 and dark[:, WIDTH // 2 :].mean() > 0.003
    # the shaded rows of relevant documents (grade 1-3 backgrounds) show in the lists
    shades = [(0xCF, 0xE9, 0xDD), (0xE1, 0xF1, 0xE9), (0xF0, 0xF8, 0xF4)]
    assert any((area == shade).all(axis=2).any() for shade in shades)
