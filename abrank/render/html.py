"""The readout as one self-contained HTML page: draws the section model of
:mod:`abrank.render.sections`.

The page loads nothing from the network: styles are inline and charts are embedded as
base64 PNG. Every text is escaped; results cells carry the JSON value behind them
(``data-key``, ``data-value``), so a reader or a test can check each number against
summary.json. A wide results table scrolls inside its own box; its verdict column, last
in the model (and in Markdown), is drawn right after the row labels, so that it is in view
without scrolling at any width while no column ever lies under it. Printed, the results
tables wrap their cells to fit the page.
"""

from __future__ import annotations

import base64
import html
import json
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

#: The page styles of report.html (colours, type, tables), shared by the index page.
REPORT_CSS = """
:root { --win: #007a5a; --loss: #b34700; --neutral: #666; --alarm: #b00020; --line: #d9d9d9;
  --ink: #1a1a1a; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1260px; margin: 0 auto; padding: 24px 24px 48px; }
h1 { font-size: 1.75rem; margin: 0 0 6px; line-height: 1.25; }
h2 { font-size: 1.25rem; margin: 36px 0 12px; padding-bottom: 4px;
  border-bottom: 2px solid var(--line); }
h3 { font-size: 1.02rem; margin: 22px 0 8px; }
.description { margin: 0 0 8px; max-width: 80ch; }
.meta { color: #555; margin: 0; font-size: 0.9rem; }
ol.headline { list-style: none; padding: 0; margin: 0; }
ol.headline li { display: flex; gap: 12px; align-items: baseline; padding: 8px 10px;
  border-left: 5px solid var(--neutral); background: #f6f6f6; margin-bottom: 6px; }
ol.headline li.win { border-color: var(--win); }
ol.headline li.loss { border-color: var(--loss); }
ol.headline code { white-space: pre-wrap; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo,
  Consolas, "Liberation Mono", monospace; overflow-wrap: anywhere; }
.badge { flex: none; display: inline-block; min-width: 118px; text-align: center;
  font-size: 0.78rem; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em;
  color: #fff; background: var(--neutral); border-radius: 3px; padding: 2px 6px; }
.badge.win { background: var(--win); }
.badge.loss { background: var(--loss); }
.opening { font-size: 1.12rem; margin: 10px 0 6px; max-width: 95ch; }
.decision { border-left: 6px solid var(--neutral); background: #f6f6f6; padding: 6px 12px; }
.decision.ship { border-color: var(--win); background: #e8f5f0; }
.decision.no-ship { border-color: var(--loss); background: #fcefe6; }
.decision.keep-running { border-color: #b88600; background: #fdf6e0; }
.decision.unhealthy { border-color: var(--alarm); background: #fde7ea; }
.figures { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 12px 0 6px; }
.figure { border-left: 5px solid var(--neutral); padding: 2px 0 2px 12px; }
.figure.win { border-color: var(--win); }
.figure.loss { border-color: var(--loss); }
.figure .subject { color: #555; font-size: 0.85rem; }
.figure .means { font-size: 1.9rem; font-weight: 700; line-height: 1.2;
  font-variant-numeric: tabular-nums; }
.figure .delta { font-size: 1.05rem; font-variant-numeric: tabular-nums; }
.figure .verdict { font-size: 0.78rem; font-weight: 700; text-transform: uppercase;
  letter-spacing: 0.04em; margin-left: 8px; color: var(--neutral); }
.figure.win .verdict { color: var(--win); }
.figure.loss .verdict { color: var(--loss); }
ol.headline li.flagged, .figure.flagged { border-color: var(--alarm); }
.badge.flagged { background: #fff; color: var(--alarm); border: 2px solid var(--alarm);
  padding: 0 4px; }
.figure.flagged .verdict, .figure .caveat { color: var(--alarm); }
.figure .caveat { font-size: 0.78rem; font-weight: 700; margin-left: 8px; }
.gloss { margin: 4px 0; color: #333; max-width: 95ch; }
.stamp { color: #555; margin: 4px 0 12px; font-size: 0.9rem; }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px;
  margin: 6px 0 16px; font-size: 0.86rem; max-width: 110ch; }
dl.legend dt { font-weight: 600; }
dl.legend dd { margin: 0; }
table.results th.verdict, table.results td.verdict { text-align: left; }
.warning { border: 1px solid #e0a040; background: #fff6e5; padding: 8px 12px; margin: 10px 0;
  border-radius: 3px; }
.warning.alarm { border: 2px solid #b00020; background: #fde7ea; color: #6d0010; }
.table-wrap { overflow-x: auto; margin: 8px 0 12px; }
table { border-collapse: collapse; font-size: 0.76rem; }
th, td { padding: 3px 4px; border-bottom: 1px solid var(--line); text-align: right;
  white-space: nowrap; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; white-space: normal; vertical-align: bottom; }
table.results td.text { min-width: 8ch; white-space: nowrap; }
table.results td[data-key="treatment"] { min-width: 11ch; white-space: normal; }
th.text, td.text { text-align: left; white-space: normal; }
td.win { color: var(--win); font-weight: 700; }
td.loss { color: var(--loss); font-weight: 700; }
td.flagged { color: var(--alarm); text-decoration: underline wavy var(--alarm); }
td.code, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.8rem; }
td.hash { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.72rem; overflow-wrap: anywhere; white-space: normal; text-align: left; }
.note { color: #555; font-size: 0.88rem; }
.print-only { display: none; }
figure { margin: 16px 0 24px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.88rem; margin-top: 4px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 18px; margin: 8px 0; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; }
pre.config { background: #f6f6f6; border: 1px solid var(--line); padding: 10px 12px;
  overflow-x: auto; font-size: 0.8rem; line-height: 1.4; white-space: pre-wrap; }
.moves { display: grid; grid-template-columns: 1fr 1fr; gap: 0 28px; }
td.missing { color: var(--loss); }
table.lists td.relevant { color: var(--win); font-weight: 700; }
table.lists td.unjudged { color: #777; font-style: italic; }
footer { margin-top: 40px; color: #777; font-size: 0.8rem; border-top: 1px solid var(--line);
  padding-top: 8px; }
@media (max-width: 800px) { main { padding: 16px; } .moves { grid-template-columns: 1fr; } }
@media print {
  body { font-size: 10pt; }
  table { font-size: 6.5pt; }
  th, td { padding: 2px 3px; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  figure, table, ol.headline li, .warning { break-inside: avoid; }
  .table-wrap { overflow: visible; }
  td.wrap, td.text, table.results th, table.results td { white-space: normal; }
  table.results td.text { min-width: 0; white-space: normal; overflow-wrap: anywhere; }
  .secondary { display: none; }
  .print-only { display: block; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

_TAGS = {"strong": "strong", "em": "em", "code": "code"}
_PARAGRAPH_CLASSES = {
    "opening": "opening",
    "decision-ship": "opening decision ship",
    "decision-no-ship": "opening decision no-ship",
    "decision-keep-running": "opening decision keep-running",
    "decision-unhealthy": "opening decision unhealthy",
    "gloss": "gloss",
    "stamp": "stamp",
    "note": "note",
    "print-only": "note print-only",
}


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _json_default(value: Any) -> Any:
    """NumPy scalars and arrays as builtins, anything else as its text."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _span(span: Span) -> str:
    tag = _TAGS.get(span.style)
    return f"<{tag}>{_e(span.text)}</{tag}>" if tag else _e(span.text)


def _td(cell: Cell) -> str:
    attrs = f' class="{_e(cell.css)}"' if cell.css else ""
    if cell.key is not None:
        attrs += f' data-key="{_e(cell.key)}"'
    if cell.has_value:
        attrs += f' data-value="{_e(json.dumps(cell.value, default=_json_default))}"'
    return f"<td{attrs}>{_e(cell.text)}</td>"


def column_order(table: Table) -> list[int]:
    """The order in which the page draws a table's columns (indices into the model's).

    A results table's one verdict column (the model's last) moves to just after the row
    labels (the leading text columns): it is then in view without scrolling however narrow
    the window, and nothing has to be pinned over the columns that scroll beneath it.
    Other tables keep the model's order.
    """
    order = list(range(len(table.columns)))
    verdicts = [i for i, c in enumerate(table.columns) if "verdict" in c.css.split()]
    if "results" not in table.css.split() or verdicts != order[-1:]:
        return order
    labels = 0
    while labels < len(order) - 1 and "text" in table.columns[labels].css.split():
        labels += 1
    return [*order[:labels], order[-1], *order[labels:-1]]


def _table(table: Table) -> str:
    order = column_order(table)
    head = "".join(
        f'<th class="{_e(c.css)}" scope="col">{_e(c.header)}</th>'
        if c.css
        else f'<th scope="col">{_e(c.header)}</th>'
        for c in (table.columns[i] for i in order)
    )
    body = "".join(f"<tr>{''.join(_td(row[i]) for i in order)}</tr>" for row in table.rows)
    klass = f' class="{_e(table.css)}"' if table.css else ""
    return (
        f'<div class="table-wrap"><table{klass}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _chart(ref: ChartRef, charts: dict[str, Chart]) -> str:
    data = base64.b64encode(charts[ref.name].png).decode("ascii")
    return (
        f'<figure id="chart-{_e(ref.name.removesuffix(".png"))}">'
        f'<img src="data:image/png;base64,{data}" alt="{_e(ref.title)}">'
        f"<figcaption>{_e(ref.caption)}</figcaption></figure>"
    )


def _verdict_class(verdict: str, caveat: str) -> str:
    """``win``, or ``win flagged`` when a caveat holds: a flagged verdict is drawn in the
    alarm's colours, never in the green of a win or the orange of a loss."""
    return f"{verdict} flagged" if caveat else verdict


def _block(block: Block, charts: dict[str, Chart]) -> list[str]:
    if isinstance(block, Paragraph):
        css = _PARAGRAPH_CLASSES.get(block.role, "")
        klass = f' class="{css}"' if css else ""
        return [f"<p{klass}>{''.join(_span(s) for s in block.content)}</p>"]
    if isinstance(block, Heading):
        note = f" ({_e(block.note)})" if block.note else ""
        return [f"<h3>{_e(block.text)}{note}</h3>"]
    if isinstance(block, KeyFigures):
        items = [
            f'<div class="figure {_e(_verdict_class(f.verdict, f.caveat))}">'
            f'<div class="subject">{_e(f.subject)}</div>'
            f'<div class="means">{_e(f.means)}</div>'
            f'<div class="delta">{_e(f.delta)}<span class="verdict">{_e(f.verdict)}</span>'
            + (f'<span class="caveat">{_e(f.caveat)}</span>' if f.caveat else "")
            + "</div></div>"
            for f in block.figures
        ]
        return ['<div class="figures">', *items, "</div>"]
    if isinstance(block, Headline):
        items = [
            f'<li class="{_e(_verdict_class(line.verdict, line.caveat))}">'
            f'<span class="badge {_e(_verdict_class(line.verdict, line.caveat))}"'
            + (f' title="{_e(line.caveat)}">{_e(line.verdict)} ⚠' if line.caveat else ">")
            + (f"{_e(line.verdict)}" if not line.caveat else "")
            + f"</span><code>{_e(line.text)}</code></li>"
            for line in block.lines
        ]
        return ['<ol class="headline">', *items, "</ol>"]
    if isinstance(block, Alert):
        if block.alarm:
            return [
                f'<p class="warning alarm" role="alert"><strong>ALARM:</strong> {_e(block.text)}</p>'
            ]
        return [f'<p class="warning"><strong>Warning:</strong> {_e(block.text)}</p>']
    if isinstance(block, Table):
        return [_table(block)]
    if isinstance(block, Facts):
        items = [f"<dt>{_e(n)}</dt><dd>{_e(v)}</dd>" for n, v in block.items]
        return [f'<dl class="{_e(block.css)}">', *items, "</dl>"]
    if isinstance(block, ChartRef):
        return [_chart(block, charts)]
    if isinstance(block, Code):
        return [f'<pre class="config">{_e(block.text)}</pre>']
    if isinstance(block, Columns):
        parts = ['<div class="moves">']
        for part in block.parts:
            parts += ["<div>", *(line for b in part for line in _block(b, charts)), "</div>"]
        return [*parts, "</div>"]
    raise TypeError(f"block: expected a block of abrank.render.blocks, got {type(block)!r}")


def draw_html(document: Document, charts: Sequence[Chart]) -> str:
    """A :class:`Document` as one HTML page; ``charts`` hold the images it refers to."""
    by_name = {c.name: c for c in charts}
    head = document.title
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(head.title)} · abrank readout</title>",
        f"<style>{REPORT_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        '<header id="top">',
        f"<h1>{_e(head.title)}</h1>",
    ]
    for block in head.opening:
        parts += _block(block, by_name)
    if head.description:
        parts.append(f'<p class="description">{_e(head.description)}</p>')
    parts += [f'<p class="meta">{" · ".join(_e(m) for m in head.meta)}</p>', "</header>"]
    for section in document.sections:
        parts += [f'<section id="{_e(section.id)}">', f"<h2>{_e(section.heading)}</h2>"]
        for block in section.blocks:
            parts += _block(block, by_name)
        parts.append("</section>")
    parts += [
        f"<footer>{' · '.join(_e(f) for f in document.footer)}</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def render_html(readout: Readout, *, charts: Sequence[Chart] | None = None) -> str:
    """The readout as one self-contained HTML page: inline styles, charts as base64 PNG.

    It loads nothing from the network (no scripts, fonts or stylesheets), prints cleanly,
    and escapes every user text. ``charts`` defaults to every chart the readout has data
    for; pass the already drawn list to avoid drawing twice.
    """
    charts = list(plan_charts(readout) if charts is None else charts)
    return draw_html(build_document(readout, charts), charts)
