"""The HTML readout in a real browser: headless Chromium opens report.html from disk.

Chromium is looked up on PATH. Locally the test is skipped when it is missing; in CI
(``CI=true``) a missing browser is a failure, since CI installs Debian's ``chromium``.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_report import build_readout

from abrank.render import write_report

WIDTH, TALL = 1280, 16000


def find_chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium: expected a browser on PATH in CI, got none")
        pytest.skip("chromium is not installed")
    return path


# Headless, offline, no sandbox (CI runs as root), no first-run or update traffic.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
)


def screenshot(browser: str, page: Path, shot: Path, profile: Path, height: int) -> np.ndarray:
    command = [
        browser,
        *HEADLESS_FLAGS,
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={shot}",
        f"--window-size={WIDTH},{height}",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with Image.open(shot) as image:
        return np.asarray(image.convert("RGB"))


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path):
    browser = find_chromium()
    write_report(build_readout(n=300), tmp_path, formats=("html",))
    page = tmp_path / "report.html"
    pixels = screenshot(browser, page, tmp_path / "shot.png", tmp_path / "profile", TALL)
    assert pixels.shape == (TALL, WIDTH, 3)

    # Not blank: text, tables and charts put many distinct colours on the page.
    inked = (pixels < 235).any(axis=2)
    assert inked.mean() > 0.01
    packed = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    assert np.unique(packed).size > 200
    # The Okabe-Ito green of wins (charts) and the badge colour both show up.
    assert ((pixels == [0, 158, 115]).all(axis=2)).any()

    # The page ends where the last non-white row is; a tall readout, not a runaway one.
    rows = np.flatnonzero(inked.any(axis=1))
    height = rows[-1] + 1
    assert 4500 <= height <= 12000, height
    # The layout fits a laptop screen: no content runs off the right edge,
    # and the centred column leaves margins on both sides.
    columns = np.flatnonzero(inked.any(axis=0))
    assert columns[0] > 10 and columns[-1] < WIDTH - 10, (columns[0], columns[-1])

    # The first screen shows the title and the headline, not an empty band.
    top = inked[:800]
    assert top[:120].any() and top[150:700].mean() > 0.02


@pytest.mark.slow
def test_report_prints_to_a_few_pages(tmp_path):
    browser = find_chromium()
    write_report(build_readout(n=300), tmp_path, formats=("html",))
    pdf = tmp_path / "report.pdf"
    command = [
        browser,
        *HEADLESS_FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--print-to-pdf={pdf}",
        "--no-pdf-header-footer",
        (tmp_path / "report.html").as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", data))
    assert 4 <= pages <= 14, pages


# Measures the laid-out page in the browser and writes them into the DOM, which
# ``--dump-dom`` prints once the page has loaded. Added to a copy of the report only.
MEASURE = """<script>
(function () {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.right]; };
  const h1 = document.querySelector("h1");
  let next = h1.nextElementSibling;
  const out = {
    viewport: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    verdicts: Array.from(document.querySelectorAll(
      "table.results td[data-key=verdict], table.results th.verdict"
    )).map((cell) => [...box(cell), ...box(cell.closest(".table-wrap")), cell.textContent]),
    title: h1.textContent,
    first: [next.tagName, next.className, next.textContent],
  };
  const pre = document.createElement("pre");
  pre.id = "abrank-measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _measure(browser: str, page: Path, profile: Path) -> dict:
    """The page laid out at 1,280 px in headless Chromium, measured by :data:`MEASURE`."""
    measured = page.with_name("measure.html")
    measured.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    command = [
        browser,
        *HEADLESS_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},4000",
        "--dump-dom",
        measured.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="abrank-measure">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, done.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.slow
def test_two_treatments_fit_a_laptop_screen_and_open_with_the_sentence(tmp_path):
    browser = find_chromium()
    readout = build_readout(n=300, treatments=("reranker", "boost"))
    write_report(readout, tmp_path, formats=("html",))
    page = tmp_path / "report.html"
    measured = _measure(browser, page, tmp_path / "profile")

    # The page is no wider than the screen, and every verdict cell (results and segments:
    # 2 headers + 4 + 16 rows) lies inside the viewport and inside its table's scroll box,
    # so no verdict is cut off however wide the table is.
    assert measured["viewport"] == WIDTH
    assert measured["scrollWidth"] <= WIDTH
    verdicts = measured["verdicts"]
    assert len(verdicts) == 2 + 4 + 16
    for left, right, box_left, box_right, _ in verdicts:
        assert 0 <= box_left <= left < right <= box_right <= WIDTH, (left, right, box_right)
    comps = readout.summary["comparisons"]
    shown = [text for *_, text in verdicts if text != "verdict"]
    assert shown == [c["verdict"] for c in comps if c["segment"] is None] + [
        c["verdict"] for c in comps if c["segment"] is not None
    ]

    # The first text under the title is the opening sentence of the primary metric (MRR@10)
    # for the first treatment, rebuilt here from its summary numbers.
    comp = next(c for c in comps if c["segment"] is None and c["treatment"] == "reranker")
    assert comp["metric"] == "mrr@10" and comp["delta"] > 0
    low, high = comp["ci"]
    verdict = {"win": "a win", "loss": "a loss"}[comp["verdict"]]
    assert measured["title"] == readout.summary["experiment"]["title"]
    assert measured["first"] == [
        "P",
        "opening",
        f"Cross-encoder reranker raises MRR@10 from {comp['control_mean']:.3f} to "
        f"{comp['treatment_mean']:.3f} ({100 * comp['relative_lift']:+.1f}%, 95% CI "
        f"[{low:+.3f}, {high:+.3f}]): {verdict}.",
    ]

    # The screenshot: the opening sentence sits right under the title, before the headline
    # band; nothing runs into the right margin (wide tables scroll inside their boxes).
    shot = tmp_path / "shot.png"
    pixels = screenshot(browser, page, shot, tmp_path / "profile", 1600)
    inked = (pixels < 200).any(axis=2)
    rows = np.flatnonzero(inked[:, : WIDTH // 2].any(axis=1))
    bands = np.split(rows, np.flatnonzero(np.diff(rows) > 6) + 1)
    assert len(bands) >= 3  # title, opening sentence, ... (one text line each)
    title, opening = bands[0], bands[1]
    assert opening[0] - title[-1] < 40  # the sentence follows the title closely
    columns = np.flatnonzero(inked.any(axis=0))
    assert columns[-1] < WIDTH - 10


# Lays the results tables out and writes every shown cell's box into the DOM, row by row,
# with the box of the table's scroll container. With ``#print`` in the URL the page's print
# styles are applied on screen first (the window then stands for the printed page's width).
# Added to a copy of the report only.
LAYOUT = """<script>
(function () {
  if (location.hash === "#print") {
    for (const sheet of document.styleSheets) {
      for (const rule of sheet.cssRules) {
        if (rule.media && rule.media.mediaText === "print") rule.media.mediaText = "all";
      }
    }
  }
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const tables = Array.from(document.querySelectorAll("table.results")).map((table) => ({
    css: table.className,
    wrap: box(table.closest(".table-wrap")),
    rows: Array.from(table.rows).map((row) =>
      Array.from(row.cells)
        .filter((cell) => getComputedStyle(cell).display !== "none")
        .map((cell) => [cell.dataset.key || cell.textContent, ...box(cell)])
    ),
  }));
  const pre = document.createElement("pre");
  pre.id = "abrank-layout";
  pre.textContent = JSON.stringify({
    viewport: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    tables: tables,
  });
  document.body.appendChild(pre);
})();
</script>"""

# The printed page's width in CSS pixels: A4 (210 mm) less Chromium's default 1 cm margins.
PRINT_WIDTH = round((210 - 2 * 10) / 25.4 * 96)


def _lay_out(browser: str, page: Path, profile: Path, width: int, *, printed: bool) -> dict:
    """The results tables of ``page`` laid out ``width`` px wide by :data:`LAYOUT`."""
    measured = page.with_name("layout.html")
    measured.write_text(
        page.read_text(encoding="utf-8").replace("</body>", LAYOUT + "</body>"), encoding="utf-8"
    )
    command = [
        browser,
        *HEADLESS_FLAGS,
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},3000",
        "--dump-dom",
        measured.as_uri() + ("#print" if printed else ""),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="abrank-layout">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, done.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def _overlaps(row: list) -> list[tuple[str, str]]:
    """The pairs of cells of one row whose boxes intersect (by more than half a pixel)."""
    return [
        (a[0], b[0])
        for i, a in enumerate(row)
        for b in row[i + 1 :]
        if min(a[3], b[3]) - max(a[1], b[1]) > 0.5 and min(a[4], b[4]) - max(a[2], b[2]) > 0.5
    ]


@pytest.mark.slow
def test_no_results_column_lies_under_another_at_any_width_or_in_print(tmp_path):
    browser = find_chromium()
    readout = build_readout(
        n=300, treatments=("reranker", "boost"), segment_values=("mobile-app", "desktop-web")
    )
    readout.summary["metric_labels"]["ndcg@10"] = "NDCG@10 (linear gain, graded 0-3)"
    write_report(readout, tmp_path, formats=("html",))
    page = tmp_path / "report.html"
    for width in (1600, 1280, 760):
        laid = _lay_out(browser, page, tmp_path / "profile", width, printed=False)
        assert [t["css"] for t in laid["tables"]] == ["results", "results segments"]
        assert laid["scrollWidth"] <= width
        for table in laid["tables"]:
            wrap_left, _, wrap_right, _ = table["wrap"]
            for row in table["rows"]:
                keys = [cell[0] for cell in row]
                assert "wtl" in keys or "W / T / L" in keys
                # no cell covers another: the W / T / L counts stay readable
                assert _overlaps(row) == [], (width, table["css"], row)
                # and the verdict is in view without scrolling the table
                verdict = next(c for c in row if c[0] == "verdict")
                assert wrap_left <= verdict[1] < verdict[3] <= wrap_right, (width, verdict)

    # Printed, every cell that is shown lies on the page, none on another.
    laid = _lay_out(browser, page, tmp_path / "profile", PRINT_WIDTH, printed=True)
    assert laid["scrollWidth"] <= PRINT_WIDTH
    for table in laid["tables"]:
        wrap_left, _, wrap_right, _ = table["wrap"]
        assert wrap_right <= PRINT_WIDTH
        for row in table["rows"]:
            keys = [cell[0] for cell in row]
            assert {"verdict", "wtl"} <= set(keys) or {"verdict", "W / T / L"} <= set(keys)
            assert _overlaps(row) == [], ("print", table["css"], row)
            for key, left, _, right, _ in row:
                assert wrap_left <= left < right <= wrap_right + 0.5, ("print", key, right)
