"""The HTML readout in a real browser: headless Chromium opens report.html from disk.

Chromium is looked up on PATH. Locally the test is skipped when it is missing; in CI
(``CI=true``) a missing browser is a failure, since CI installs Debian's ``chromium``.
"""

from __future__ import annotations

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


def _chromium() -> str:
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


def _screenshot(browser: str, page: Path, shot: Path, profile: Path, height: int) -> np.ndarray:
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
    browser = _chromium()
    write_report(build_readout(n=300), tmp_path, formats=("html",))
    page = tmp_path / "report.html"
    pixels = _screenshot(browser, page, tmp_path / "shot.png", tmp_path / "profile", TALL)
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
    browser = _chromium()
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
