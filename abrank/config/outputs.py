"""Where a run writes its readout, and which dates a scheduled run reads.

The experiment's name names its readout folder under the reports root, so it may not be
one of abrank's own files there; ``output:`` is a folder (a ``{date}`` template for dated
runs), made absolute but not resolved, so that a symbolic link is refused as ``--out``'s
is; ``window: {cumulative: START}`` reads one file per date, so the logs' paths need
``{date}``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from abrank.config.dates import check_template, is_dated
from abrank.config.keys import Strict
from abrank.config.problems import Checks
from abrank.root_names import reserved_problem


class CumulativeWindow(Strict):
    """``window: {cumulative: START}``: a dated run reads every date from START through its
    own date."""

    cumulative: dt.date


def check_name(checks: Checks, name: str) -> None:
    """An experiment's name may not be one of abrank's own files under the reports root
    (its readout folder would be that file)."""
    reserved = reserved_problem(name)
    if reserved is not None:
        checks.add(("name",), reserved)


def checked_output(checks: Checks, output: str | None) -> str | None:
    """The output folder made absolute against the config's folder (None: the default);
    a bad ``{date}`` template or a NUL byte is a problem."""
    if output is None:
        return None
    if is_dated(output) and check_template(output) is not None:
        checks.add(("output",), str(check_template(output)))
    if "\0" in output:
        checks.add(("output",), "expected a folder path, got a path holding a NUL byte")
    # made absolute, not resolved: a symbolic link stays one, and is refused as --out's is
    return str(checks.base_dir / output) if not Path(output).is_absolute() else output


def check_window(
    checks: Checks, window: str | CumulativeWindow, logs: Sequence[str | None]
) -> None:
    """A cumulative window reads one file per date: some log path (``logs``, as
    configured) must hold ``{date}``."""
    if isinstance(window, CumulativeWindow) and not any(is_dated(p) for p in logs):
        checks.add(
            ("window",),
            "expected {date} in the logs' paths with a cumulative window (it reads one "
            "file per date), got paths without it",
        )
