"""The explorer's HTML pages, rendered on the server: inline CSS, no script, GET forms.

Every value that reaches a page (names, query and document ids, segment values, numbers)
goes through :func:`e` (``html.escape``, quotes too), and every value put into a URL
through :func:`url` (percent-encoded, no ``/`` left), so that a query id such as
``<script>alert(1)</script>`` shows as text and links back to itself.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import pandas as pd

from abrank.render.text import fmt_p, fmt_signed, fmt_value, metric_display
from abrank.serve.query_table import QueryDetail, QueryPage, QueryTable

CSS = """
:root { --win: #007a5a; --loss: #b34700; --neutral: #666; --alarm: #b00020; --line: #d9d9d9;
  --ink: #1a1a1a; --amber: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
main { max-width: 1260px; margin: 0 auto; padding: 18px 24px 48px; }
nav.crumbs { font-size: 0.9rem; color: #555; margin-bottom: 6px; }
h1 { font-size: 1.5rem; margin: 0 0 6px; }
h2 { font-size: 1.15rem; margin: 26px 0 10px; padding-bottom: 3px; border-bottom: 2px solid var(--line); }
a { color: #0b57a4; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
td.num { text-align: right; }
.win { color: var(--win); font-weight: 700; }
.loss { color: var(--loss); font-weight: 700; }
.status { display: inline-block; font-size: 0.75rem; font-weight: 700; text-transform: uppercase;
  letter-spacing: 0.04em; color: #fff; background: var(--neutral); border-radius: 3px; padding: 2px 7px; }
.status.ship { background: var(--win); }
.status.no-ship { background: var(--loss); }
.status.keep-running { background: var(--amber); }
.status.unhealthy { background: #555; }
.flag { display: inline-block; background: #fdecea; color: var(--alarm); border: 1px solid var(--alarm);
  border-radius: 3px; padding: 1px 6px; font-weight: 700; font-size: 0.85rem; }
.tag { display: inline-block; background: #eef2f7; border-radius: 3px; padding: 0 5px; margin: 1px;
  font-size: 0.8rem; }
form.filters { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: end; background: #f6f6f6;
  padding: 8px 10px; border-radius: 3px; margin: 8px 0 12px; }
form.filters label { display: flex; flex-direction: column; font-size: 0.8rem; color: #444; }
.pager { margin: 10px 0; display: flex; gap: 16px; }
.lists { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.lists table { width: 100%; }
.pos { color: var(--win); } .neg { color: var(--loss); }
.muted { color: #666; }
.grade-3 { background: #cfe9dd; } .grade-2 { background: #e1f1e9; } .grade-1 { background: #f0f8f4; }
.experiments td { padding: 6px 10px; }
svg.spark { display: block; }
"""


def e(value: object) -> str:
    """``value`` as text safe inside HTML (``<``, ``>``, ``&`` and quotes escaped)."""
    return html.escape(str(value), quote=True)


def url(*parts: str, query: Mapping[str, Any] | None = None) -> str:
    """A path of percent-encoded ``parts`` (``/`` inside a part encoded too) and a query
    string; the result is still to be escaped into an attribute."""
    path = "/" + "/".join(quote(str(part), safe="") for part in parts)
    pairs = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
    return path + (f"?{urlencode(pairs, doseq=True)}" if pairs else "")


def number(value: Any, digits: int = 4) -> str:
    """A metric value as text (``–`` for none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return fmt_value(value, digits)


def signed(value: Any, digits: int = 4) -> str:
    """A change as signed text, in a span coloured by its sign."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    value = round(float(value), digits) + 0.0  # what rounds to 0 (and -0.0) reads +0
    tone = "pos" if value > 0 else "neg" if value < 0 else "muted"
    return f'<span class="{tone}">{e(fmt_signed(value, digits))}</span>'


def document(title: str, body: Sequence[str]) -> bytes:
    """A whole page: ``title`` and the ``body`` parts, inline CSS only."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)} · abrank serve</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        *body,
        "</main>",
        "</body>",
        "</html>",
    ]
    return ("\n".join(parts) + "\n").encode("utf-8")


def error_page(status: int, message: str) -> bytes:
    """A page saying what went wrong (the message escaped)."""
    return document(
        f"{status}",
        [
            '<nav class="crumbs"><a href="/">All experiments</a></nav>',
            f"<h1>{e(status)}</h1>",
            f'<p class="error">{e(message)}</p>',
        ],
    )


def status_badge(status: str | None) -> str:
    """The decision's status as a coloured badge (none: a dash)."""
    if not status:
        return '<span class="muted">–</span>'
    return f'<span class="status {e(status)}">{e(status)}</span>'


# ------------------------------------------------------------------------- index


def index_page(experiments: Sequence[Mapping[str, Any]]) -> bytes:
    """``/``: one row per experiment (see :func:`abrank.serve.routes.App.experiments`):
    its decision status, primary verdicts, trend sparkline and every readout and history
    date, each a link."""
    rows = []
    dash, no_history = '<span class="muted">–</span>', '<span class="muted">no history</span>'
    one_date = '<span class="muted">one date: no trend yet</span>'
    for item in experiments:
        name = str(item["name"])
        main = item.get("main")
        title = f'<a href="{e(url("e", main))}">{e(name)}</a>' if main else e(name)
        readouts = " ".join(
            f'<a href="{e(url("e", r["key"]))}">{e(r["date"] or "undated")}</a>'
            + (
                f' <span class="muted">({e(r["recorded"])})</span>'
                if not r["date"] and r.get("recorded")
                else ""
            )
            for r in item["readouts"]
        )
        recorded = " ".join(
            f'<a href="{e(url("h", name, day))}">{e(day)}</a>' for day in item["history_only_dates"]
        )
        dated = readouts + (
            f'<br><span class="muted">recorded only:</span> {recorded}' if recorded else ""
        )
        verdicts = "<br>".join(
            f"{e(v['treatment'])}: {e(metric_display(None, v['metric']))} "
            f'{signed(v["delta"], 3)} <span class="{e(v["verdict"])}">{e(v["verdict"])}</span>'
            for v in item["verdicts"]
        )
        rows.append(
            "<tr>"
            f'<td><strong>{title}</strong><br><span class="muted">{e(item.get("title") or "")}</span></td>'
            f"<td>{status_badge(item.get('status'))}</td>"
            f"<td>{verdicts or dash}</td>"
            f"<td>{item.get('trend') or (one_date if item['history_dates'] else no_history)}</td>"
            f"<td>{dated}</td>"
            "</tr>"
        )
    table = (
        [
            '<table class="experiments">',
            "<tr><th>Experiment</th><th>Decision</th><th>Primary metric</th><th>Trend</th>"
            "<th>Readouts</th></tr>",
            *rows,
            "</table>",
        ]
        if rows
        else ['<p class="muted">No readout under this reports root yet.</p>']
    )
    count = len(experiments)
    return document(
        "Experiments",
        [
            "<h1>Experiments</h1>",
            f'<p class="muted">{count} experiment{"s" if count != 1 else ""}; read-only.</p>',
            *table,
        ],
    )


# ------------------------------------------------------------------------- readout


def _headline(summary: Mapping[str, Any]) -> list[str]:
    comparisons = [c for c in summary.get("comparisons", []) if c.get("segment") is None]
    rows = []
    for c in comparisons:
        metric = str(c.get("metric"))
        verdict = str(c.get("verdict") or "")
        ci = c.get("ci") or [None, None]
        rows.append(
            "<tr>"
            f"<td>{e(metric_display(None, metric))}</td><td>{e(c.get('treatment'))}</td>"
            f'<td class="num">{e(number(c.get("control_mean"), 3))}</td>'
            f'<td class="num">{e(number(c.get("treatment_mean"), 3))}</td>'
            f'<td class="num">{signed(c.get("delta"), 3)}</td>'
            f'<td class="num">[{e(number(ci[0], 3))}, {e(number(ci[1], 3))}]</td>'
            f'<td class="num">{e(fmt_p(c.get("p_adjusted", c.get("p_value"))))}</td>'
            f'<td class="num">{e(c.get("n"))}</td>'
            f'<td><span class="{e(verdict)}">{e(verdict)}</span></td>'
            "</tr>"
        )
    return [
        "<table>",
        "<tr><th>Metric</th><th>Treatment</th><th>Control</th><th>Treatment</th><th>Δ</th>"
        "<th>CI</th><th>p (adj.)</th><th>n</th><th>Verdict</th></tr>",
        *rows,
        "</table>",
    ]


def _select(name: str, options: Sequence[tuple[str, str]], chosen: str | None) -> str:
    items = "".join(
        f'<option value="{e(value)}"{" selected" if value == (chosen or "") else ""}>{e(label)}</option>'
        for value, label in options
    )
    return f'<select name="{e(name)}" id="f-{e(name)}">{items}</select>'


def readout_page(
    key: str,
    summary: Mapping[str, Any],
    report: bool,
    table: QueryTable | None,
    page: QueryPage | None,
) -> bytes:
    """``/e/KEY``: the headline numbers, the link to report.html and the query table
    (its filter form, the page's rows, links to the previous and next pages)."""
    experiment = summary.get("experiment") or {}
    title = str(experiment.get("title") or experiment.get("name") or key)
    decision = summary.get("decision") or {}
    body = [
        '<nav class="crumbs"><a href="/">All experiments</a> › ' + e(key) + "</nav>",
        f"<h1>{e(title)}</h1>",
        f'<p class="muted">{e(key)}'
        + (
            f" · date {e((summary.get('schedule') or {}).get('date'))}"
            if summary.get("schedule")
            else ""
        )
        + "</p>",
    ]
    if decision:
        reasons = "".join(f"<li>{e(r)}</li>" for r in decision.get("reasons", []))
        body += [f"<p>Decision: {status_badge(decision.get('status'))}</p>", f"<ul>{reasons}</ul>"]
    if report:
        body.append(
            f'<p><a href="{e(url("e", key, "files", "report.html"))}">Full report (report.html)</a></p>'
        )
    body += ["<h2>Headline</h2>", *_headline(summary), "<h2>Queries</h2>"]
    if table is None or page is None:
        body.append('<p class="muted">This readout keeps no query table (queries.parquet).</p>')
        return document(title, body)
    request = page.request
    segments = [("", "all segments")] + [
        (f"{column}:{value}", f"{column} = {value}")
        for column, values in table.segment_values().items()
        for value in values
    ]
    chosen_segment = (
        f"{request.segments[0][0]}:{request.segments[0][1]}" if request.segments else ""
    )
    form = [
        f'<form class="filters" method="get" action="{e(url("e", key))}">',
        f"<label>metric {_select('metric', [(m, m) for m in table.metrics], request.metric)}</label>",
    ]
    if len(table.treatments) > 1:
        options = [(t, t) for t in table.treatments]
        form.append(f"<label>treatment {_select('treatment', options, request.treatment)}</label>")
    sorts = [("delta", "delta"), ("query_id", "query id"), ("rbo", "RBO")] + [
        (arm, f"{arm}'s value") for arm in table.arms
    ]
    form += [
        f"<label>segment {_select('segment', segments, chosen_segment)}</label>",
        f"<label>tag {_select('tag', [('', 'any tag')] + [(t, t) for t in table.tags()], request.tag)}</label>",
        f"<label>sort by {_select('sort', sorts, request.sort)}</label>",
        f"<label>order {_select('order', [('asc', 'ascending'), ('desc', 'descending')], request.order)}</label>",
        f"<label>rows {_select('limit', [(str(n), str(n)) for n in (25, 50, 100, 250)], str(request.limit))}</label>",
        '<button type="submit">Apply</button>',
        "</form>",
    ]
    body += form
    first, last = request.offset + 1, request.offset + len(page.rows)
    body.append(
        f'<p class="muted">{e(f"{page.total:,}")} queries match'
        + (f"; showing {e(first)}–{e(last)}" if page.rows else "")
        + f" · metric {e(request.metric)}, Δ = {e(request.treatment)} − {e(table.control)}</p>"
    )
    head = (
        "<tr><th>Query</th><th>Δ</th>"
        + "".join(f"<th>{e(arm)}</th>" for arm in page.arms)
        + "<th>RBO</th><th>Tags</th><th>Missing</th>"
        + "".join(f"<th>{e(c)}</th>" for c in page.segment_columns)
        + "</tr>"
    )
    detail = {
        "metric": request.metric,
        "treatment": request.treatment if len(table.treatments) > 1 else None,
    }
    lines = []
    for row in page.rows:
        qid = str(row["query_id"])
        missing = str(row.get("missing_in") or "")
        lines.append(
            "<tr>"
            f'<td><a class="query" href="{e(url("e", key, "q", qid, query=detail))}">{e(qid)}</a></td>'
            f'<td class="num">{signed(row["delta"])}</td>'
            + "".join(f'<td class="num">{e(number(row.get(arm)))}</td>' for arm in page.arms)
            + f'<td class="num">{e(number(row.get("rbo"), 3))}</td>'
            + f"<td>{''.join(f'<span class=tag>{e(t)}</span>' for t in row.get('tags') or [])}</td>"
            + (
                "<td>"
                + "".join(f'<span class="flag">{e(text)}</span>' for text in _missing_text(missing))
                + "</td>"
            )
            + "".join(
                f"<td>{e(row.get(c) if row.get(c) is not None else '')}</td>"
                for c in page.segment_columns
            )
            + "</tr>"
        )
    body += ['<table class="queries">', head, *lines, "</table>"]
    state = request.to_dict()
    state["treatment"] = detail["treatment"]
    pager = []
    if request.offset > 0:
        back = dict(state, offset=max(0, request.offset - request.limit))
        pager.append(f'<a rel="prev" href="{e(url("e", key, query=back))}">← previous</a>')
    if request.offset + request.limit < page.total:
        ahead = dict(state, offset=request.offset + request.limit)
        pager.append(f'<a rel="next" href="{e(url("e", key, query=ahead))}">next →</a>')
    body.append(f'<div class="pager">{"".join(pager)}</div>')
    return document(title, body)


# ------------------------------------------------------------------------- query


def _missing_text(missing: str) -> list[str]:
    return [f"missing from {arm}'s log" for arm in missing.split(";") if arm]


def _list_table(lists: pd.DataFrame, arm: str, other: str, control: str) -> str:
    """One arm's list in its rank order: rank, document, grade, where the document sits in
    the other arm (its move) and its contribution."""
    shown = lists[lists[f"rank_{arm}"].notna()].sort_values(f"rank_{arm}", kind="stable")
    rows = []
    for doc, grade, rank, there, part in zip(
        shown["doc_id"],
        shown["grade"],
        shown[f"rank_{arm}"],
        shown[f"rank_{other}"],
        shown["contribution"],
        strict=True,
    ):
        judged = not (isinstance(grade, float) and math.isnan(grade))
        label = fmt_value(grade, 0) if judged else "unjudged"
        tone = f' class="grade-{int(grade)}"' if judged and 1 <= grade <= 3 else ""
        if isinstance(there, float) and math.isnan(there):
            move = "dropped" if arm == control else "entered"
        else:
            # the treatment's move: up when its rank is smaller than the control's
            shift = int(there - rank) if arm != control else int(rank - there)
            move = f"▲ {shift}" if shift > 0 else f"▼ {-shift}" if shift < 0 else "="
            move += f" (#{int(there)} in {other})"
        rows.append(
            f'<tr{tone}><td class="num">{e(int(rank))}</td><td>{e(doc)}</td>'
            f'<td class="grade">{e(label)}</td><td>{e(move)}</td>'
            f'<td class="num">{signed(part, 3)}</td></tr>'
        )
    return "\n".join(
        [
            f'<table class="list" data-arm="{e(arm)}">',
            "<tr><th>Rank</th><th>Document</th><th>Grade</th><th>Move</th><th>Contribution</th></tr>",
            *rows,
            "</table>",
        ]
    )


def query_page(key: str, table: QueryTable, detail: QueryDetail) -> bytes:
    """``/e/KEY/q/QID``: the query's row (every metric per arm, deltas, RBO, tags, the
    missing-log flag) and the two lists side by side."""
    qid = detail.query_id
    body = [
        f'<nav class="crumbs"><a href="/">All experiments</a> › '
        f'<a href="{e(url("e", key))}">{e(key)}</a> › query</nav>',
        f'<h1>Query <span class="qid">{e(qid)}</span></h1>',
    ]
    form = [
        f'<form class="filters" method="get" action="{e(url("e", key, "q", qid))}">',
        f"<label>contributions to {_select('metric', [(m, m) for m in table.metrics], detail.metric)}</label>",
    ]
    if len(table.treatments) > 1:
        options = [(t, t) for t in table.treatments]
        form.append(f"<label>treatment {_select('treatment', options, detail.treatment)}</label>")
    body += [*form, '<button type="submit">Show</button>', "</form>"]
    for row in detail.rows:
        missing = _missing_text(str(row.get("missing_in") or ""))
        for text in missing:
            body.append(f'<p><span class="flag missing">{e(text)}</span></p>')
        tags = row.get(f"tags:{detail.treatment}") or []
        segments = [c for c in table.segment_columns if row.get(c) is not None]
        facts = [f"RBO {e(number(row.get(f'rbo:{detail.treatment}'), 3))}"]
        facts += [f"{e(c)} = {e(row.get(c))}" for c in segments]
        if row.get("undefined"):
            facts.append(f"undefined: {e(row['undefined'])}")
        body.append(
            f'<p class="facts">{" · ".join(facts)} · tags: '
            + ("".join(f'<span class="tag">{e(t)}</span>' for t in tags) or "none")
            + "</p>"
        )
        metric_rows = "".join(
            "<tr>"
            f"<td>{e(metric_display(None, m))}</td>"
            + "".join(
                f'<td class="num">{e(number(row.get(f"{arm}:{m}")))}</td>' for arm in table.arms
            )
            + "".join(
                f'<td class="num">{signed(row.get(f"delta:{t}:{m}"))}</td>'
                for t in table.treatments
            )
            + "</tr>"
            for m in table.metrics
        )
        body += [
            '<table class="metrics">',
            "<tr><th>Metric</th>"
            + "".join(f"<th>{e(arm)}</th>" for arm in table.arms)
            + "".join(f"<th>Δ {e(t)}</th>" for t in table.treatments)
            + "</tr>",
            metric_rows,
            "</table>",
        ]
    lists = detail.lists
    total = lists["contribution"].sum(min_count=1)
    body.append(
        f'<h2>Lists side by side</h2><p class="muted">Contribution of each document to the change of '
        f"{e(detail.metric)} ({e(detail.treatment)} − {e(detail.control)}); they sum to "
        f"{signed(total, 4)}.</p>"
    )
    columns = []
    for arm, other in ((detail.control, detail.treatment), (detail.treatment, detail.control)):
        count = int(lists[f"rank_{arm}"].notna().sum())
        heading = f"<h3>{e(arm)}{' (control)' if arm == detail.control else ''}</h3>"
        if count == 0:
            columns.append(
                f'<div>{heading}<p><span class="flag">no list: missing from {e(arm)}\'s log</span></p></div>'
            )
        else:
            columns.append(f"<div>{heading}{_list_table(lists, arm, other, detail.control)}</div>")
    body += ['<div class="lists">', *columns, "</div>"]
    return document(f"Query {qid}", body)


# ------------------------------------------------------------------------- history


def history_page(name: str, day: str, rows: pd.DataFrame) -> bytes:
    """``/h/NAME/DATE``: the comparisons the history store recorded for a date whose
    readout folder is not kept."""
    shown = [
        c
        for c in (
            "treatment",
            "metric",
            "segment",
            "control_mean",
            "treatment_mean",
            "delta",
            "ci_low",
            "ci_high",
            "p_adjusted",
            "verdict",
            "n",
        )
        if c in rows.columns
    ]
    lines = []
    for record in rows[shown].astype(object).where(rows[shown].notna(), None).to_dict("records"):
        cells = []
        for column in shown:
            value = record[column]
            text = number(value) if isinstance(value, float) else ("–" if value is None else value)
            cells.append(f"<td>{e(text)}</td>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    return document(
        f"{name} {day}",
        [
            f'<nav class="crumbs"><a href="/">All experiments</a> › {e(name)} › {e(day)}</nav>',
            f"<h1>{e(name)} on {e(day)}</h1>",
            '<p class="muted">The readout folder of this date is not kept: these are the rows '
            "the history store recorded.</p>",
            "<table>",
            "<tr>" + "".join(f"<th>{e(c)}</th>" for c in shown) + "</tr>",
            *lines,
            "</table>",
        ],
    )
