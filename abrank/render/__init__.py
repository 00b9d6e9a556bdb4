"""Readouts people can act on: headline lines, Markdown, one self-contained HTML page, charts.

This stage renders a :class:`~abrank.readout.Readout`; it computes no statistic of its own.
Every number shown is a number of ``readout.summary`` (summary.json) formatted by the rules
of :mod:`abrank.render.text`, a per-query value of ``readout.per_query``, or chart data
computed by :mod:`abrank.readout.charts`.

The parts, in the order the data flows:

- :mod:`.text` — number formats, display names and labels, shared by reports and charts;
- :mod:`.headline` — the headline lines and the opening sentences;
- :mod:`.glossary` — the legend of the metrics and terms shown;
- :mod:`.moves` — the queries that moved most;
- :mod:`.chart_style` and :mod:`.chart_panels` — what every chart shares (the
  :class:`~abrank.render.chart_style.Chart`: file name, section; palette, layout);
- the chart families, each drawing its data: :mod:`.forest_charts`,
  :mod:`.distribution_charts`, :mod:`.position_charts`, :mod:`.online_charts`,
  :mod:`.interleaved_charts`, :mod:`.trend_charts`; :mod:`.charts` picks a readout's;
- :mod:`.blocks` and :mod:`.sections` — one model of the readout's sections, built once:
  :mod:`.results_section`, :mod:`.trend_section`, :mod:`.unjudged`; what each design adds
  is in its folder (:mod:`abrank.designs.offline.sections`, ...);
- :mod:`.markdown` and :mod:`.html` — each draws that model;
- :mod:`.files` — writes the reports and charts into a readout folder;
- :mod:`.index_page` — the reports root's index.html over the history store.

Every user text (titles, labels, descriptions, query ids, segment values, paths, config
text) is escaped for the format it lands in, and the HTML page loads nothing from the
network: styles are inline and charts are embedded as base64 PNG.
"""

from __future__ import annotations

from abrank.render.chart_style import Chart
from abrank.render.charts import plan_charts
from abrank.render.files import REPORT_FORMATS, write_charts, write_report
from abrank.render.headline import (
    alarms,
    headline_line,
    headline_lines,
    interval_phrase,
    n_phrase,
    opening_sentence,
    p_phrase,
    verdict_phrase,
)
from abrank.render.html import render_html
from abrank.render.index_page import render_index, write_index
from abrank.render.markdown import md_escape, render_markdown
from abrank.render.sections import build_document
from abrank.render.text import (
    CORRECTION_NAMES,
    SHORT_TEST_NAMES,
    TEST_NAMES,
    VERDICT_TEXT,
    correction_name,
    fmt_count,
    fmt_interval,
    fmt_level,
    fmt_p,
    fmt_percent,
    fmt_relative_interval,
    fmt_signed,
    fmt_value,
    test_name,
)

__all__ = [
    "CORRECTION_NAMES",
    "REPORT_FORMATS",
    "SHORT_TEST_NAMES",
    "TEST_NAMES",
    "VERDICT_TEXT",
    "Chart",
    "alarms",
    "build_document",
    "correction_name",
    "fmt_count",
    "fmt_interval",
    "fmt_level",
    "fmt_p",
    "fmt_percent",
    "fmt_relative_interval",
    "fmt_signed",
    "fmt_value",
    "headline_line",
    "headline_lines",
    "interval_phrase",
    "md_escape",
    "n_phrase",
    "opening_sentence",
    "p_phrase",
    "plan_charts",
    "render_html",
    "render_index",
    "render_markdown",
    "test_name",
    "verdict_phrase",
    "write_charts",
    "write_index",
    "write_report",
]
