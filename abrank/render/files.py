"""Writing a readout's reports: ``charts/*.png``, ``report.md`` and ``report.html``.

Charts are drawn once (in the chart workers when they run), written to ``charts/`` and
embedded in the HTML, so the Markdown's links and the HTML's images are the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from abrank import workers
from abrank.errors import ConfigError
from abrank.readout import Readout
from abrank.render.chart_style import Chart
from abrank.render.charts import plan_charts
from abrank.render.html import render_html
from abrank.render.markdown import render_markdown

REPORT_FORMATS = ("html", "md")


def write_charts(
    readout: Readout, folder: Path, *, charts: Sequence[Chart] | None = None
) -> list[Path]:
    """Draw the readout's charts into ``folder/charts/*.png``; returns the paths written."""
    charts = list(plan_charts(readout) if charts is None else charts)
    target = Path(folder) / "charts"
    target.mkdir(parents=True, exist_ok=True)
    workers.render_charts(readout, charts)  # in the chart workers when they run
    paths = []
    for chart in charts:
        path = target / chart.name
        path.write_bytes(chart.png)
        paths.append(path)
    return paths


def write_report(
    readout: Readout, folder: Path, formats: Sequence[str] = REPORT_FORMATS
) -> list[Path]:
    """Write ``report.html`` and/or ``report.md`` into ``folder``, with the charts they show.

    ``folder`` must exist (the pipeline builds the readout in a temporary folder and moves
    it into place when complete). Charts are drawn once, written to ``charts/`` and
    embedded in the HTML. Returns the paths written.
    """
    folder = Path(folder)
    if isinstance(formats, str):
        formats = [formats]
    unknown = [f for f in formats if f not in REPORT_FORMATS]
    if unknown:
        raise ConfigError(
            f"formats: expected some of {', '.join(REPORT_FORMATS)}, "
            f"got {', '.join(map(repr, unknown))}"
        )
    if not folder.is_dir():
        raise ConfigError(f"{folder}: expected an existing folder, got none")
    if not formats:
        return []
    charts = plan_charts(readout)
    paths = write_charts(readout, folder, charts=charts)
    if "md" in formats:
        path = folder / "report.md"
        path.write_text(render_markdown(readout, charts=charts), encoding="utf-8")
        paths.append(path)
    if "html" in formats:
        path = folder / "report.html"
        path.write_text(render_html(readout, charts=charts), encoding="utf-8")
        paths.append(path)
    return paths
