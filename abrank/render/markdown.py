"""The readout in Markdown: draws the section model of :mod:`abrank.render.sections`.

User text is escaped (HTML and Markdown syntax neutralised, line breaks blanked); the
report's own text (numbers, intervals) is shown as it is; the big numbers of the HTML page
are left out, since the opening sentences above them already state them; verbatim text (the headline
lines, the config) goes in fences longer than any backtick run inside it. Charts are
linked as ``charts/NAME.png``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from abrank.readout import Readout
from abrank.render.blocks import (
    Alert,
    Block,
    Cell,
    ChartRef,
    Code,
    Columns,
    Document,
    Facts,
    Heading,
    Headline,
    KeyFigures,
    Paragraph,
    Span,
    Table,
)
from abrank.render.chart_style import Chart
from abrank.render.charts import plan_charts
from abrank.render.sections import build_document
from abrank.render.text import oneline

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_EMPHASIS = {"": "{}", "strong": "**{}**", "em": "*{}*"}
SKIPPED_ROLES = ("print-only",)  # paragraphs for the printed HTML page only


def md_escape(text: Any) -> str:
    """User text for Markdown: HTML and Markdown syntax characters neutralised."""
    return _escape_run(oneline(text))


def _escape_run(text: str) -> str:
    """A run of inline text with Markdown's and HTML's syntax neutralised (kept unstripped,
    since it may sit between other runs)."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(_blank(text), quote=False))


def _blank(text: str) -> str:
    """Control characters and line breaks as spaces: Markdown text stays on its line."""
    return _CONTROL.sub(" ", str(text))


def _own(text: str) -> str:
    """The report's own text (numbers, intervals, fixed wording), shown as it is."""
    return _blank(text)


def fence(text: str) -> str:
    """A code fence longer than any backtick run in ``text`` (at least three)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _span(span: Span) -> str:
    if span.style == "code":
        ticks = "`" * (max((len(m) for m in re.findall(r"`+", span.text)), default=0) + 1)
        return f"{ticks}{_blank(span.text)}{ticks}"
    text = _own(span.text) if span.own else _escape_run(span.text)
    return _EMPHASIS[span.style].format(text)


def _inline(content: Sequence[Span]) -> str:
    return "".join(_span(s) for s in content)


def _cell(cell: Cell) -> str:
    if cell.code and re.fullmatch(r"[0-9a-fA-F]+", cell.text):
        return f"`{cell.text}`"
    return _own(cell.text) if cell.own else md_escape(cell.text)


def _table(table: Table) -> list[str]:
    marks = {"left": "---", "right": "--:"}
    lines = [
        "| " + " | ".join(md_escape(c.header) for c in table.columns) + " |",
        "|" + "|".join(marks[c.align] for c in table.columns) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return lines + [""]


def _block(block: Block) -> list[str]:
    if isinstance(block, Paragraph):
        return [] if block.role in SKIPPED_ROLES else [_inline(block.content), ""]
    if isinstance(block, Heading):
        note = f" ({md_escape(block.note)})" if block.note else ""
        return [f"**{md_escape(block.text)}**{note}", ""]
    if isinstance(block, KeyFigures):
        return []  # a visual element: the opening sentences already hold these numbers
    if isinstance(block, Headline):
        lines = [line.text for line in block.lines]
        marks = fence("\n".join(lines))
        return [f"{marks}text", *lines, marks, ""]
    if isinstance(block, Alert):
        lead = "ALARM" if block.alarm else "Warning"
        return [f"> **{lead}:** {md_escape(block.text)}", ""]
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Facts):
        if block.css == "legend":
            items = [f"- **{md_escape(n)}**: {md_escape(v)}" for n, v in block.items]
        else:
            items = [f"- {md_escape(n)}: {md_escape(v)}" for n, v in block.items]
        return [*items, ""] if items else []
    if isinstance(block, ChartRef):
        return [
            f"![{md_escape(block.title)}](charts/{block.name})",
            "",
            f"*{md_escape(block.caption)}*",
            "",
        ]
    if isinstance(block, Code):
        marks = fence(block.text)
        return [f"{marks}{block.language}", block.text.rstrip("\n"), marks, ""]
    if isinstance(block, Columns):
        return [line for part in block.parts for b in part for line in _block(b)]
    raise TypeError(f"block: expected a block of abrank.render.blocks, got {type(block)!r}")


def draw_markdown(document: Document) -> str:
    """A :class:`Document` as Markdown text."""
    head = document.title
    out = [f"# {md_escape(head.title)}", ""]
    for block in head.opening:
        out += _block(block)
    if head.description:
        out += [md_escape(head.description), ""]
    out += [" · ".join(md_escape(m) for m in head.meta), ""]
    for section in document.sections:
        out += [f"## {md_escape(section.heading)}", ""]
        for block in section.blocks:
            out += _block(block)
    return "\n".join(out).rstrip() + "\n"


def render_markdown(readout: Readout, *, charts: Sequence[Chart] | None = None) -> str:
    """The readout as Markdown: the same sections as the HTML, charts linked as charts/NAME.png.

    ``charts`` is the chart list to link (default: every chart the readout has data for);
    the images themselves are written by :func:`abrank.render.write_charts`.
    """
    charts = list(plan_charts(readout) if charts is None else charts)
    return draw_markdown(build_document(readout, charts))
