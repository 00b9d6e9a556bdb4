"""The reports root's index page: every experiment's latest verdicts and alarms, one page.

``reports/index.html`` is rebuilt from the history store after each scheduled run: a card
per experiment (sorted by name) with its latest date and how long ago that was, the
overall verdicts of that date (the primary metric first: ``MRR@10 +0.246 (+45.6%) win``
per treatment; an interleaving's preference as ``preference by clicks Δ_AB +0.058 win``),
alarm badges, a link to the latest readout's report.html and a sparkline of the primary
metric's delta. The card's colour is the primary metric's verdict (a loss of any
treatment's primary metric makes it a loss), unless the latest readout has a decision (its
metrics have roles): then the card shows the decision's status as a badge with its first
reason, and the status colours the card (ship green, no-ship the loss colour, keep-running
amber, unhealthy red, its badge grey), whatever the verdicts. The alarms:

- **SRM**: a sample ratio mismatch alarm (``srm_alarm``) at the latest date;
- **loss**: the primary metric lost at the latest date;
- **secondary loss**: another metric's overall comparison lost at the latest date (marked
  apart: it does not colour the card);
- **stale**: the latest date's inputs were the same bytes as the date before (``stale``),
  or the latest date is more than :data:`STALE_AFTER_DAYS` days before today.

A history without a ``primary`` mark on any latest row treats every overall row as primary.

Like the readouts, the page is self-contained (report.html's inline styles, an inline SVG,
no script, nothing fetched). It carries ``<meta name="generator" content="abrank">``, and
:func:`write_index` never replaces an index.html without it: that page is someone else's.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from abrank.errors import ConfigError
from abrank.readout.charts.trends import check_history_columns, parse_dates
from abrank.readout.model import STATUSES
from abrank.render.chart_style import VERDICT_COLOURS
from abrank.render.html import REPORT_CSS
from abrank.render.text import fmt_percent, fmt_signed, is_number, metric_display
from abrank.root_names import INDEX_PAGE

#: The mark of an index page abrank wrote (and may therefore replace).
GENERATOR = '<meta name="generator" content="abrank">'
#: A latest date more than this many days before today is stale.
STALE_AFTER_DAYS = 2
#: The history columns the index page reads.
INDEX_COLUMNS = (
    "experiment",
    "date",
    "metric",
    "treatment",
    "segment",
    "primary",
    "delta",
    "relative_lift",
    "verdict",
    "srm_alarm",
    "stale",
)
#: The history columns of the readout's decision, read when the history has them.
DECISION_COLUMNS = ("decision", "decision_reason")

_INDEX_CSS = """
.cards { display: grid; gap: 14px; margin: 18px 0; }
.card { border: 1px solid var(--line); border-left: 5px solid var(--neutral); border-radius: 3px;
  padding: 10px 14px; display: grid; grid-template-columns: 1fr auto; gap: 4px 18px; }
.card.win { border-left-color: var(--win); }
.card.loss { border-left-color: var(--loss); }
.card.ship { border-left-color: var(--win); }
.card.no-ship { border-left-color: var(--loss); }
.card.keep-running { border-left-color: #9a6700; }
.card.unhealthy { border-left-color: var(--alarm); }
.card .decision { margin: 4px 0 0; font-size: 0.92rem; }
.decision-badge { display: inline-block; font-size: 0.74rem; font-weight: 700;
  letter-spacing: 0.04em; text-transform: uppercase; color: #fff; border-radius: 3px;
  padding: 2px 7px; margin-right: 6px; background: var(--neutral); }
.decision-badge.ship { background: var(--win); }
.decision-badge.no-ship { background: var(--loss); }
.decision-badge.keep-running { background: #9a6700; }
.decision-badge.unhealthy { background: #555; }
.card h2 { margin: 0; padding: 0; border: 0; font-size: 1.15rem; }
.card h2 a { color: inherit; }
.card .when { color: #555; font-size: 0.9rem; margin: 0; }
.card ul.verdicts { list-style: none; margin: 4px 0 0; padding: 0; font-size: 0.92rem;
  font-variant-numeric: tabular-nums; }
.card ul.verdicts li { margin: 1px 0; }
.card .treatment { color: #555; }
.card .verdict { font-weight: 700; color: var(--neutral); }
.card .verdict.win { color: var(--win); }
.card .verdict.loss { color: var(--loss); }
.card .side { text-align: right; }
.alarms { display: flex; gap: 6px; justify-content: flex-end; margin: 0 0 6px; }
.alarm-badge { display: inline-block; font-size: 0.74rem; font-weight: 700; letter-spacing: 0.04em;
  text-transform: uppercase; color: #fff; border-radius: 3px; padding: 2px 7px; }
.alarm-badge.srm { background: #b00020; }
.alarm-badge.loss { background: var(--loss); }
.alarm-badge.secondary-loss { background: #fff; color: var(--loss); border: 1px solid var(--loss);
  padding: 1px 6px; }
.alarm-badge.stale { background: #8a6d00; }
.alarm-badge.ok { background: var(--win); }
svg.spark { display: block; margin-left: auto; }
.empty { color: #555; font-size: 1.05rem; }
"""

_SPARK_WIDTH, _SPARK_HEIGHT = 160, 36

#: How an interleaving credit reads on a card (the history keeps the credit's name only).
_CREDIT_LABELS = {
    "clicks": "preference by clicks",
    "sat_clicks": "preference by satisfied clicks",
}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _ago(latest: date, today: date) -> str:
    """``today``, ``yesterday``, ``3 days ago`` (``in 2 days`` for a date after today)."""
    days = (today - latest).days
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{days} days ago" if days > 1 else f"in {-days} days"


def _flag(values: pd.Series) -> bool:
    """Whether any value of a nullable boolean column is true (null is not)."""
    return bool(values.fillna(False).astype(bool).any())


@dataclass(frozen=True)
class ExperimentStatus:
    """What an experiment's card shows: its latest date, that date's overall rows of the
    history (each treatment's primary metric first), what colours the card (``tone``: the
    decision's status when the latest readout has one, else the primary metric's verdict,
    ``win``, ``loss`` or ``""``), the alarms (``srm``, ``loss`` of the primary metric,
    ``secondary_loss`` of another metric, ``stale``: whether each fires) and the latest
    readout's decision (``decision``: its status, ``reason``: its first reason; None
    without one)."""

    name: str
    latest: date
    overall: pd.DataFrame
    alarms: dict[str, bool]
    tone: str = ""
    decision: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The status as JSON-safe builtins: the overall rows as (treatment, metric,
        verdict) records."""
        return {
            "name": self.name,
            "latest": self.latest.isoformat(),
            "verdicts": [
                {"treatment": str(t), "metric": str(m), "verdict": str(v)}
                for t, m, v in zip(
                    self.overall["treatment"],
                    self.overall["metric"],
                    self.overall["verdict"],
                    strict=True,
                )
            ],
            "tone": self.tone,
            "alarms": dict(self.alarms),
            "decision": self.decision,
            "reason": self.reason,
        }


def experiment_status(name: str, rows: pd.DataFrame, today: date) -> ExperimentStatus:
    """One experiment's card from its history ``rows``: its latest date, the overall
    comparisons of that date (each treatment's primary metric first) and which alarms
    fire, ``today`` deciding what is stale."""
    dates = parse_dates(rows["date"], f"history of {name}")
    latest = max(dates)
    at_latest = rows[rows["date"] == latest.isoformat()]
    overall = at_latest[at_latest["segment"].isna()]
    primary = overall["primary"].fillna(False).astype(bool).to_numpy()
    metric_order = {m: i for i, m in enumerate(dict.fromkeys(overall["metric"]))}
    treatment_order = {t: i for i, t in enumerate(dict.fromkeys(overall["treatment"]))}
    order = np.lexsort(
        (
            overall["metric"].map(metric_order).to_numpy(),
            ~primary,
            overall["treatment"].map(treatment_order).to_numpy(),
        )
    )
    overall = overall.iloc[order]
    primary = overall["primary"].fillna(False).astype(bool).to_numpy()
    if not primary.any():  # no primary mark: every overall row decides
        primary = np.ones(len(overall), dtype=bool)
    leading = [str(v) for v in overall["verdict"][primary]]
    others = [str(v) for v in overall["verdict"][~primary]]
    tone = "loss" if "loss" in leading else "win" if "win" in leading else ""
    stale = _flag(at_latest["stale"]) or latest < today - timedelta(days=STALE_AFTER_DAYS)
    alarms = {
        "srm": _flag(at_latest["srm_alarm"]),
        "loss": "loss" in leading,
        "secondary_loss": "loss" in others,
        "stale": stale,
    }
    decision, reason = _latest_decision(at_latest)
    if decision is not None:
        tone = decision
    return ExperimentStatus(name, latest, overall, alarms, tone, decision, reason)


def _latest_decision(at_latest: pd.DataFrame) -> tuple[str | None, str | None]:
    """The decision's status and first reason of the latest date's readout (the same on
    each of its rows); (None, None) when it has none, or the history has no such columns.
    A status abrank does not know is not shown (nor does it colour the card)."""
    if "decision" not in at_latest.columns:
        return None, None
    decided = at_latest[at_latest["decision"].isin(STATUSES)]
    if decided.empty:
        return None, None
    row = decided.iloc[0]
    reason = row.get("decision_reason")
    return str(row["decision"]), str(reason) if isinstance(reason, str) and reason else None


def _verdict_line(row: pd.Series) -> str:
    """``reranker: MRR@10 +0.246 (+45.6%) win``; an interleaving's preference as
    ``preference by clicks Δ_AB +0.058 win``; no relative lift where there is none."""
    metric = str(row["metric"])
    delta = fmt_signed(row["delta"])
    if row.get("design") == "interleaved" and metric in _CREDIT_LABELS:
        label, delta = _CREDIT_LABELS[metric], f"Δ_AB {delta}"
    else:
        label = metric_display(None, metric)
    lift = f" ({fmt_percent(row['relative_lift'])})" if is_number(row["relative_lift"]) else ""
    verdict = str(row["verdict"]) if row["verdict"] in VERDICT_COLOURS else "inconclusive"
    return (
        f'<li><span class="treatment">{_e(row["treatment"])}:</span> '
        f"{_e(label)} {_e(delta)}{_e(lift)} "
        f'<span class="verdict {_e(verdict)}">{_e(verdict)}</span></li>'
    )


def sparkline(rows: pd.DataFrame) -> str:
    """An inline SVG of the primary metric's overall delta over the dates (the first
    treatment's), with the zero line; empty with fewer than two finite deltas."""
    overall = rows[rows["segment"].isna()]
    primary = overall[overall["primary"].fillna(False).astype(bool)]
    if primary.empty:
        return ""
    first = primary[primary["treatment"] == primary["treatment"].iloc[0]]
    first = first.sort_values("date", kind="stable")
    deltas = first["delta"].to_numpy(dtype=np.float64, na_value=np.nan)
    days = np.array(
        [d.toordinal() for d in parse_dates(first["date"], "history")], dtype=np.float64
    )
    keep = np.isfinite(deltas)
    deltas, days = deltas[keep], days[keep]
    if deltas.size < 2 or days.max() == days.min():
        return ""
    low, high = min(0.0, float(deltas.min())), max(0.0, float(deltas.max()))
    span = high - low or 1.0
    pad = 3.0
    xs = pad + (days - days.min()) / (days.max() - days.min()) * (_SPARK_WIDTH - 2 * pad)
    ys = pad + (high - deltas) / span * (_SPARK_HEIGHT - 2 * pad)
    zero = pad + high / span * (_SPARK_HEIGHT - 2 * pad)
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    verdict = str(first["verdict"].iloc[-1])
    colour = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["inconclusive"])
    label = f"{metric_display(None, str(first['metric'].iloc[0]))} delta over {deltas.size} dates"
    return (
        f'<svg class="spark" width="{_SPARK_WIDTH}" height="{_SPARK_HEIGHT}" '
        f'viewBox="0 0 {_SPARK_WIDTH} {_SPARK_HEIGHT}" role="img" aria-label="{_e(label)}">'
        f'<line x1="0" y1="{zero:.1f}" x2="{_SPARK_WIDTH}" y2="{zero:.1f}" stroke="#999" '
        'stroke-dasharray="3,2" stroke-width="1"/>'
        f'<polyline points="{points}" fill="none" stroke="#555" stroke-width="1.4"/>'
        f'<circle cx="{xs[-1]:.1f}" cy="{ys[-1]:.1f}" r="3" fill="{colour}"/></svg>'
    )


def _card(name: str, rows: pd.DataFrame, link: str | None, today: date) -> str:
    status = experiment_status(name, rows, today)
    latest, overall, alarms, tone = status.latest, status.overall, status.alarms, status.tone
    title = f'<a href="{_e(link)}">{_e(name)}</a>' if link else _e(name)
    texts = {
        "srm": ("SRM", "sample ratio mismatch at the latest date"),
        "loss": ("loss", "the primary metric lost at the latest date"),
        "secondary_loss": ("secondary loss", "another metric lost at the latest date"),
        "stale": ("stale", "the latest inputs are unchanged or older than two days"),
    }
    badges = [
        f'<span class="alarm-badge {key.replace("_", "-")}" title="{_e(texts[key][1])}">'
        f"{_e(texts[key][0])}</span>"
        for key in ("srm", "loss", "secondary_loss", "stale")
        if alarms[key]
    ] or ['<span class="alarm-badge ok" title="no alarm at the latest date">ok</span>']
    lines = [_verdict_line(row) for _, row in overall.iterrows()]
    report = f' · <a href="{_e(link)}">latest report</a>' if link else ""
    decision = []
    if status.decision is not None:
        reason = f' <span class="reason">{_e(status.reason)}</span>' if status.reason else ""
        decision = [
            f'<p class="decision"><span class="decision-badge {_e(status.decision)}" '
            f'title="the latest readout\'s decision">{_e(status.decision)}</span>{reason}</p>'
        ]
    return "\n".join(
        [
            f'<article class="card {tone}" id="experiment-{_e(name)}">',
            "<div>",
            f"<h2>{title}</h2>",
            f'<p class="when">latest {_e(latest.isoformat())} ({_e(_ago(latest, today))}){report}'
            "</p>",
            *decision,
            '<ul class="verdicts">',
            *(lines or ["<li>no overall comparison</li>"]),
            "</ul>",
            "</div>",
            '<div class="side">',
            f'<p class="alarms">{"".join(badges)}</p>',
            sparkline(rows),
            "</div>",
            "</article>",
        ]
    )


def render_index(
    history: pd.DataFrame, links: Mapping[str, str], *, today: date | None = None
) -> str:
    """The index page of a reports root, as HTML text.

    ``history`` is the whole history store (any experiments, the store's columns);
    ``links`` maps an experiment's name to its latest readout's report.html, relative to
    the root; ``today`` (default: today in UTC) decides what is stale. An empty history
    gives a page saying that no experiment has run yet.
    """
    today = today or datetime.now(timezone.utc).date()
    cards = []
    if not history.empty:
        check_history_columns(history, INDEX_COLUMNS, "history")
        names = history["experiment"].astype(str)
        for name, rows in history.groupby(names, sort=True):
            cards.append(_card(str(name), rows, links.get(str(name)), today))
    count = len(cards)
    summary = (
        f"{count} experiment{'s' if count != 1 else ''}, as of {today.isoformat()}"
        if cards
        else "No experiment has run yet: this page lists every experiment once "
        "a dated readout has been written."
    )
    body = ['<div class="cards">', *cards, "</div>"] if cards else []
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        GENERATOR,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Experiments · abrank readouts</title>",
        f"<style>{REPORT_CSS}{_INDEX_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        "<h1>Experiments</h1>",
        f'<p class="{"meta" if cards else "empty"}">{_e(summary)}</p>',
        *body,
        f"<footer>abrank · {_e(today.isoformat())}</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def write_index(root: str | Path, history: pd.DataFrame, links: Mapping[str, str]) -> Path:
    """Write ``root/index.html`` atomically (a hidden temp file beside it, then
    ``os.replace``); returns its path.

    An existing index.html that abrank did not write (no :data:`GENERATOR` mark) is left
    alone: ConfigError naming it.
    """
    root = Path(root)
    path = root / INDEX_PAGE
    if path.exists() or path.is_symlink():
        try:
            existing = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(
                f"{path}: expected an index page abrank wrote, got an unreadable file ({exc})"
            ) from None
        if GENERATOR not in existing or path.is_symlink():
            raise ConfigError(
                f"{path}: expected an index page abrank wrote (with {GENERATOR}), got another "
                "file; it is left as it is"
            )
    text = render_index(history, links)
    root.mkdir(parents=True, exist_ok=True)
    temp = root / f".{INDEX_PAGE}.tmp-{os.getpid()}"
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path
