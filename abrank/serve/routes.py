"""URL to handler: every name taken from a URL is checked against the catalog.

The path is split on ``/`` *before* percent-decoding, each part decoded once: an encoded
``/`` (``%2f``) stays inside its part, and a part is only ever compared, as a string, with
the keys the catalog found (:mod:`abrank.serve.catalog`), never joined into a path. So
``/e/../../etc/passwd``, ``/e/%2e%2e/%2e%2e/etc/passwd``, ``/e/..%2f..%2fetc%2fpasswd``
and double-encoded forms are unknown names: 404. Files inside a readout are served only
when they are in the folder's own listing and resolve inside it.

Routes (GET and HEAD only; anything else is 405):

- ``/``: the index; ``/e/KEY``: a readout; ``/e/KEY/q/QID``: a query;
  ``/e/KEY/files/PATH``: a file of the readout folder (report.html, its charts);
  ``/h/NAME/DATE``: the rows the history store recorded for a date without a folder;
- ``/api/experiments``, ``/api/experiments/KEY/queries``, ``/api/experiments/KEY/queries/QID``.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from abrank.errors import AbrankError
from abrank.serve import api, pages
from abrank.serve.catalog import Catalog, ReadoutEntry
from abrank.serve.query_table import ParameterError, QueryTable, TableCache

#: What a page may load: its own inline styles, images of its own server or inline; no
#: script, nothing from the network.
PAGE_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
ALLOWED_METHODS = ("GET", "HEAD")


@dataclass(frozen=True)
class Response:
    """An answer: status, content type, body and extra headers."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The response's head as JSON-safe builtins (for logs and tests)."""
        return {
            "status": self.status,
            "content_type": self.content_type,
            "length": len(self.body),
            "headers": dict(self.headers),
        }


class NotFound(Exception):
    """A URL naming nothing the catalog holds."""


def _html(body: bytes, status: int = 200) -> Response:
    return Response(
        status, "text/html; charset=utf-8", body, (("Content-Security-Policy", PAGE_POLICY),)
    )


def _json(body: bytes, status: int = 200) -> Response:
    return Response(status, "application/json; charset=utf-8", body)


class App:
    """The explorer over one reports root: :meth:`handle` answers a request line."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.catalog = Catalog(self.root)
        self.tables = TableCache()

    # ---------------------------------------------------------------- dispatch

    def handle(self, method: str, target: str) -> Response:
        """The response to ``method`` ``target`` (the request line's path and query)."""
        api_call = target.startswith("/api/")
        if method not in ALLOWED_METHODS:
            message = f"method: expected GET or HEAD (read-only), got {method}"
            body = api.error_body(405, message) if api_call else pages.error_page(405, message)
            response = _json(body, 405) if api_call else _html(body, 405)
            return Response(
                405,
                response.content_type,
                response.body,
                (*response.headers, ("Allow", "GET, HEAD")),
            )
        try:
            return self._route(target)
        except NotFound as exc:
            message = str(exc) or "not found"
            return (
                _json(api.error_body(404, message), 404)
                if api_call
                else _html(pages.error_page(404, message), 404)
            )
        except ParameterError as exc:
            if api_call:
                return _json(api.error_body(400, str(exc), **exc.to_dict()), 400)
            return _html(pages.error_page(400, str(exc)), 400)
        except AbrankError as exc:  # a readout that cannot be read: its file and why
            return (
                _json(api.error_body(500, str(exc)), 500)
                if api_call
                else _html(pages.error_page(500, str(exc)), 500)
            )
        except Exception as exc:  # a bug or a readout replaced mid-request: no traceback out
            message = f"internal error: {type(exc).__name__}: {exc}"
            body = api.error_body(500, message) if api_call else pages.error_page(500, message)
            return _json(body, 500) if api_call else _html(body, 500)

    def _route(self, target: str) -> Response:
        split = urlsplit(target)
        raw = split.path
        if not raw.startswith("/"):
            raise NotFound("path: expected one starting with /")
        try:
            parts = [unquote(part, errors="strict") for part in raw.split("/")[1:]]
        except UnicodeDecodeError:
            raise NotFound("path: expected UTF-8 text") from None
        if len(parts) > 1 and parts[-1] == "":  # a trailing slash
            parts = parts[:-1]
        params = parse_qs(split.query, keep_blank_values=True)
        match parts:
            case [""]:
                return _html(pages.index_page(self.experiments()))
            case ["e", key]:
                return self._readout(self._entry(key), params)
            case ["e", key, "q", qid]:
                return self._query_page(self._entry(key), qid, params)
            case ["e", key, "files", *rest] if rest:
                return self._file(self._entry(key), rest)
            case ["h", name, day]:
                return self._history(name, day)
            case ["api", "experiments"]:
                return _json(api.experiments_body(self.experiments()))
            case ["api", "experiments", key, "queries"]:
                entry = self._entry(key)
                table = self._table(entry)
                return _json(api.queries_body(table.page(table.request(params))))
            case ["api", "experiments", key, "queries", qid]:
                entry = self._entry(key)
                detail = self._detail(entry, qid, params)
                return _json(api.query_body(detail))
        raise NotFound(f"path: expected one of the explorer's pages, got {raw}")

    # ---------------------------------------------------------------- lookups

    def _entry(self, key: str) -> ReadoutEntry:
        entry = self.catalog.find(key)
        if entry is None:
            raise NotFound(f"readout: expected one under the reports root, got {key!r}")
        return entry

    def _table(self, entry: ReadoutEntry) -> QueryTable:
        if not entry.has_queries:
            raise NotFound(f"readout {entry.key!r}: expected its queries.parquet, got none")
        return self.tables.get(entry.folder, entry.summary)

    def _detail(
        self,
        entry: ReadoutEntry,
        qid: str,
        params: dict[str, list[str]],
        table: QueryTable | None = None,
    ) -> Any:
        unknown = sorted(set(params) - {"metric", "treatment"})
        if unknown:
            raise ParameterError(unknown[0], "metric or treatment", unknown[0])
        table = table or self._table(entry)
        metric = _one(params, "metric")
        treatment = _one(params, "treatment")
        detail = table.detail(qid, metric, treatment)
        if detail is None:
            raise NotFound(f"query: expected one of readout {entry.key!r}, got {qid!r}")
        return detail

    # ---------------------------------------------------------------- pages

    def experiments(self) -> list[dict[str, Any]]:
        """Every experiment as the index and ``/api/experiments`` show it: ``name``,
        ``title``, ``main`` (the key ``/e/NAME`` opens), ``status`` (summary.json's
        ``decision.status``), the primary metric's overall ``verdicts``, ``readouts``,
        ``history_dates``, ``history_only_dates`` (recorded, no folder), ``latest`` and
        ``trend`` (an inline SVG of the primary delta over the history's dates)."""
        from abrank.render.index_page import sparkline

        history = self._history_frame()
        by_name = {}
        if history is not None and len(history):
            by_name = {str(n): rows for n, rows in history.groupby("experiment", sort=True)}
        dates = {name: tuple(sorted(set(map(str, rows["date"])))) for name, rows in by_name.items()}
        listed = []
        for experiment in self.catalog.experiments(dates):
            main = experiment.main
            summary = main.summary() if main is not None else {}
            primary = summary.get("primary_metric")
            verdicts = [
                {
                    "treatment": c.get("treatment"),
                    "metric": c.get("metric"),
                    "delta": c.get("delta"),
                    "verdict": c.get("verdict"),
                }
                for c in summary.get("comparisons", [])
                if c.get("segment") is None and c.get("metric") == primary
            ]
            kept = {entry.date for entry in experiment.readouts}
            rows = by_name.get(experiment.name)
            undated = _undated_date(experiment.readouts, rows)
            kept.add(undated)
            trend = ""
            if rows is not None:
                try:
                    trend = sparkline(rows)
                except (AbrankError, KeyError, ValueError):
                    trend = ""
            listed.append(
                {
                    "name": experiment.name,
                    "title": (summary.get("experiment") or {}).get("title"),
                    "main": main.key if main is not None else None,
                    "status": (summary.get("decision") or {}).get("status"),
                    "verdicts": verdicts,
                    "readouts": [
                        {
                            **entry.to_dict(),
                            "recorded": undated if entry.date is None else entry.date,
                        }
                        for entry in experiment.readouts
                    ],
                    "history_dates": list(experiment.history_dates),
                    "history_only_dates": [d for d in experiment.history_dates if d not in kept],
                    "latest": experiment.history_dates[-1] if experiment.history_dates else None,
                    "trend": trend,
                }
            )
        return listed

    def _history_frame(self) -> Any:
        from abrank.history.store import history_table

        try:
            return history_table(self.root, skipped=[]).to_pandas()
        except AbrankError:
            return None

    def _readout(self, entry: ReadoutEntry, params: dict[str, list[str]]) -> Response:
        summary = entry.summary()
        report = entry.file("report.html") is not None
        if not entry.has_queries:
            if params:
                raise ParameterError(
                    sorted(params)[0], "no parameters (no query table)", sorted(params)[0]
                )
            return _html(pages.readout_page(entry.key, summary, report, None, None))
        table = self._table(entry)
        page = table.page(table.request(params))
        return _html(pages.readout_page(entry.key, summary, report, table, page))

    def _query_page(self, entry: ReadoutEntry, qid: str, params: dict[str, list[str]]) -> Response:
        table = self._table(entry)
        detail = self._detail(entry, qid, params, table)
        return _html(pages.query_page(entry.key, table, detail))

    def _file(self, entry: ReadoutEntry, rest: list[str]) -> Response:
        if any(part in ("", ".", "..") or "/" in part or "\\" in part for part in rest):
            raise NotFound("file: expected one of the readout's files")
        path = entry.file("/".join(rest))
        if path is None:
            raise NotFound(
                f"file: expected one of readout {entry.key!r}'s files, got {'/'.join(rest)!r}"
            )
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/json",):
            kind += "; charset=utf-8"
        headers: tuple[tuple[str, str], ...] = (("Content-Security-Policy", PAGE_POLICY),)
        return Response(200, kind, path.read_bytes(), headers)

    def _history(self, name: str, day: str) -> Response:
        history = self._history_frame()
        if history is None or not len(history):
            raise NotFound("history: expected a recorded experiment and date")
        rows = history[
            (history["experiment"].astype(str) == name) & (history["date"].astype(str) == day)
        ]
        if rows.empty:
            raise NotFound(
                f"history: expected a recorded date of an experiment, got {name!r} {day!r}"
            )
        return _html(pages.history_page(name, day, rows))


def _one(params: dict[str, list[str]], name: str) -> str | None:
    values = [v for v in params.get(name, []) if v]
    if len(values) > 1:
        raise ParameterError(name, "one value", values)
    return values[0] if values else None


def _undated_date(readouts: tuple[ReadoutEntry, ...], rows: Any) -> str | None:
    """The history date the undated readout recorded: the latest date whose inputs'
    fingerprint is that of the readout's summary (an undated run records the day it ran);
    None without an undated readout or such a date."""
    from abrank.history import inputs_fingerprint

    undated = [entry for entry in readouts if entry.date is None]
    if not undated or rows is None or "inputs_sha256" not in rows.columns:
        return None
    try:
        fingerprint = inputs_fingerprint(undated[0].summary().get("inputs", []))
    except (TypeError, KeyError, AttributeError, ValueError):
        return None
    dates = rows.loc[rows["inputs_sha256"] == fingerprint, "date"].astype(str)
    return str(dates.max()) if len(dates) else None
