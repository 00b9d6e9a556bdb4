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
    workers.render_charts(readout, charts)  # in the chart workers when they run
    return _write_pngs(charts, folder)


def _write_pngs(charts: Sequence[Chart], folder: Path) -> list[Path]:
    """The drawn charts' PNG bytes into ``folder/charts/``; the paths written."""
    target = Path(folder) / "charts"
    target.mkdir(parents=True, exist_ok=True)
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
    return start_report(readout, folder, formats).write()


class PendingReport:
    """A report whose charts the chart workers are drawing (:func:`start_report`).

    :meth:`write` writes the Markdown, waits for the charts, then writes them and the
    HTML; :meth:`discard` drops the drawing (the readout failed meanwhile). Call one of
    them once.
    """

    def __init__(
        self,
        readout: Readout,
        folder: Path,
        formats: Sequence[str],
        charts: list[Chart],
        drawing: workers.ChartDrawing | None,
    ):
        self.readout = readout
        self.folder = folder
        self.formats = formats
        self.charts = charts
        self.drawing = drawing

    def write(self) -> list[Path]:
        """Write the reports and charts; the paths written (charts, then reports)."""
        if self.drawing is None:
            return []
        try:
            markdown = None
            if "md" in self.formats:
                markdown = render_markdown(self.readout, charts=self.charts)
        except BaseException:
            self.discard()
            raise
        self.drawing.wait()
        paths = _write_pngs(self.charts, self.folder)
        if markdown is not None:
            path = self.folder / "report.md"
            path.write_text(markdown, encoding="utf-8")
            paths.append(path)
        if "html" in self.formats:
            path = self.folder / "report.html"
            path.write_text(render_html(self.readout, charts=self.charts), encoding="utf-8")
            paths.append(path)
        return paths

    def discard(self) -> None:
        """Let the charts go undrawn (the chart workers' replies are read and dropped)."""
        if self.drawing is not None:
            self.drawing.discard()


def start_report(
    readout: Readout, folder: Path, formats: Sequence[str] = REPORT_FORMATS
) -> PendingReport:
    """:func:`write_report`, started: the arguments are checked and the charts sent to the
    chart workers at once, so that the caller can write other files while they draw; then
    ``.write()`` writes the reports and charts (or ``.discard()`` drops them)."""
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
        return PendingReport(readout, folder, formats, [], None)
    charts = plan_charts(readout)
    drawing = workers.start_charts(readout, charts)  # in the chart workers when they run
    return PendingReport(readout, folder, formats, charts, drawing)
