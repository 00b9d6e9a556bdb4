"""``abrank run`` over configs, folders of configs and dates: one outcome per run, one exit code.

A scheduler runs abrank unattended, so a batch keeps going past a bad config or a date
whose logs have not landed yet, reports each run on one line, and exits with the worst
outcome (DESIGN.md "Exit codes"): 1 an internal error, 2 bad input, 3 an alert named by
``--fail-on`` fired (its readout written), 99 an input of the date does not exist yet and
``--missing skip`` was given (nothing written), 0 otherwise.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abrank.config.dates import date_range, parse_date
from abrank.errors import ConfigError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_ALERT = 0, 1, 2, 3
#: a dated input is not there yet and ``--missing skip`` was given (Airflow's skip code)
EXIT_SKIPPED = 99
#: the run was stopped by SIGTERM (128 + 15, as a shell reports it)
EXIT_TERMINATED = 143
#: exit codes from the best outcome to the worst
SEVERITY = (EXIT_OK, EXIT_SKIPPED, EXIT_ALERT, EXIT_BAD_INPUT, EXIT_FAILURE)
CONFIG_SUFFIXES = (".yaml", ".yml")


def worst(codes: Iterable[int]) -> int:
    """The worst of some runs' exit codes (0 for none)."""
    return max(codes, key=SEVERITY.index, default=EXIT_OK)


def config_files(paths: Sequence[str | Path]) -> list[Path]:
    """The config files named: a folder stands for its ``*.yaml`` / ``*.yml`` files, sorted
    by name (not its subfolders); a folder without any is a ConfigError."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            inside = sorted(
                p for p in path.iterdir() if p.suffix in CONFIG_SUFFIXES and p.is_file()
            )
            if not inside:
                raise ConfigError(
                    f"{path}: expected a folder of experiment configs (*.yaml), got none in it"
                )
            found += inside
        else:
            found.append(path)
    return found


def run_dates(
    date: str | None, start: str | None, end: str | None, today: dt.date | None = None
) -> list[dt.date | None]:
    """The dates to run: ``--date``, every date of ``--from``..``--to`` (``--to`` defaults to
    today), or ``[None]`` for an undated run."""
    if date is not None and (start is not None or end is not None):
        raise ConfigError("--date: expected either --date or --from/--to, got both")
    if date is not None:
        return [parse_date(date, "--date")]
    if end is not None and start is None:
        raise ConfigError("--to: expected --from beside it, got none")
    if start is None:
        return [None]
    first = parse_date(start, "--from")
    last = parse_date(end, "--to") if end is not None else (today or dt.date.today())
    return list(date_range(first, last))


@dataclass(frozen=True)
class RunOutcome:
    """How one (config, date) run of a batch ended.

    ``code`` is its exit code; ``status`` one word (``ok``, ``alert``, ``skipped``,
    ``error``, ``failed``); ``detail`` what happened (the verdicts, the error, the missing
    file); ``folder`` the readout written, if any.
    """

    config: str
    experiment: str | None
    date: str | None
    code: int
    status: str
    detail: str
    folder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-safe builtins."""
        return dict(self.__dict__)

    def line(self) -> str:
        """The outcome on one line: ``name date: status: detail``."""
        who = self.experiment or self.config
        when = f" {self.date}" if self.date else ""
        return f"{who}{when}: {self.status}: {self.detail}"


def verdict_counts(summary: dict[str, Any]) -> str:
    """The overall verdicts of a readout, counted: ``3 wins, 1 loss of 4 comparisons``."""
    overall = [c for c in summary.get("comparisons", []) if c.get("segment") is None]
    counts: dict[str, int] = {}
    for comparison in overall:
        counts[comparison["verdict"]] = counts.get(comparison["verdict"], 0) + 1
    words = {"win": ("win", "wins"), "loss": ("loss", "losses")}
    parts = []
    for verdict in ("win", "loss", "inconclusive"):
        n = counts.get(verdict, 0)
        if n:
            one, many = words.get(verdict, (verdict, verdict))
            parts.append(f"{n} {one if n == 1 else many}")
    total = len(overall)
    return f"{', '.join(parts) or 'no verdict'} of {total} comparison{'s' * (total != 1)}"
