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

from typing import Any

from abrank._lazy import lazy_attribute

#: Each public name -> the module that defines it, imported on first use: a run that writes
#: only summary.json reads the headline lines (:mod:`.headline`) without importing the
#: report and chart modules.
_LAZY = {
    "Chart": "abrank.render.chart_style",
    "plan_charts": "abrank.render.charts",
    "REPORT_FORMATS": "abrank.render.files",
    "write_charts": "abrank.render.files",
    "write_report": "abrank.render.files",
    "alarms": "abrank.render.headline",
    "headline_line": "abrank.render.headline",
    "headline_lines": "abrank.render.headline",
    "interval_phrase": "abrank.render.headline",
    "n_phrase": "abrank.render.headline",
    "opening_sentence": "abrank.render.headline",
    "p_phrase": "abrank.render.headline",
    "verdict_phrase": "abrank.render.headline",
    "render_html": "abrank.render.html",
    "render_index": "abrank.render.index_page",
    "write_index": "abrank.render.index_page",
    "md_escape": "abrank.render.markdown",
    "render_markdown": "abrank.render.markdown",
    "build_document": "abrank.render.sections",
    "CORRECTION_NAMES": "abrank.render.text",
    "SHORT_TEST_NAMES": "abrank.render.text",
    "TEST_NAMES": "abrank.render.text",
    "VERDICT_TEXT": "abrank.render.text",
    "correction_name": "abrank.render.text",
    "fmt_count": "abrank.render.text",
    "fmt_interval": "abrank.render.text",
    "fmt_level": "abrank.render.text",
    "fmt_p": "abrank.render.text",
    "fmt_percent": "abrank.render.text",
    "fmt_relative_interval": "abrank.render.text",
    "fmt_signed": "abrank.render.text",
    "fmt_value": "abrank.render.text",
    "test_name": "abrank.render.text",
}

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


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
