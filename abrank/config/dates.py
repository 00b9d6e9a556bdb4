"""Dated inputs: ``{date}`` templates in paths, run dates and windows of dates.

A scheduled readout reads the logs of one date. A path of a config may hold ``{date}``
(ISO, ``YYYY-MM-DD``) or ``{date:FORMAT}`` with any ``strftime`` format (``{date:%Y%m%d}``,
``date={date}``); a run is then given its date (``--date``, ``run_experiment(date=...)``).
``window: daily`` reads that date's files; ``window: {cumulative: START}`` reads the files
of every date from START through the run date, as one log: a cumulative readout.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from abrank.errors import ConfigError

#: ``{date}`` or ``{date:FORMAT}`` in a path
DATE_FIELD = re.compile(r"\{date(?::([^{}]*))?\}")
_ANY_FIELD = re.compile(r"\{[^{}]*\}")
#: most dates one backfill or window may span (ten years of days)
MAX_DATES = 3660


def parse_date(value: str | dt.date, what: str) -> dt.date:
    """A date given as ``YYYY-MM-DD`` (or a date); ``what`` names the option in errors."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{what}: expected a date as YYYY-MM-DD, got {value!r}") from None


def is_dated(path: str | None) -> bool:
    """The path holds a ``{date}`` field."""
    return path is not None and DATE_FIELD.search(path) is not None


def check_template(path: str) -> str | None:
    """What is wrong with a dated path, or None: only ``{date}`` fields, formats that
    ``strftime`` accepts."""
    for field in _ANY_FIELD.findall(path):
        match = DATE_FIELD.fullmatch(field)
        if match is None:
            return f"expected only {{date}} or {{date:FORMAT}} fields in the path, got {field}"
        if match.group(1) is not None:
            fmt = match.group(1)
            if "%" not in fmt:
                return f"expected a strftime format such as %Y%m%d in {field}, got none"
            try:
                dt.date(2024, 1, 2).strftime(fmt)
            except ValueError as exc:
                return f"expected a valid strftime format in {field}, got {exc}"
    return None


def fill_date(path: str, date: dt.date) -> str:
    """The path of ``date``: each ``{date}`` as YYYY-MM-DD, each ``{date:FORMAT}`` formatted."""
    return DATE_FIELD.sub(
        lambda m: date.strftime(m.group(1)) if m.group(1) is not None else date.isoformat(), path
    )


def date_range(start: dt.date, end: dt.date, what: str = "--from/--to") -> list[dt.date]:
    """Every date from ``start`` through ``end``, in order."""
    if end < start:
        raise ConfigError(f"{what}: expected a start on or before the end, got {start} after {end}")
    days = (end - start).days + 1
    if days > MAX_DATES:
        raise ConfigError(f"{what}: expected at most {MAX_DATES} dates, got {days}")
    return list(_days(start, days))


def _days(start: dt.date, count: int) -> Iterator[dt.date]:
    for offset in range(count):
        yield start + dt.timedelta(days=offset)
