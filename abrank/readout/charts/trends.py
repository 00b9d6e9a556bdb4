"""The data of a dated readout's trend: its overall history rows, as series against date.

A scheduled readout (``abrank run CONFIG --date D``) carries its experiment's rows of the
history store up to and including D (:attr:`abrank.readout.Readout.history`). With two or
more dates, its trend chart draws a panel per metric x treatment (each date's delta,
interval and verdict), and for online experiments a line per arm of its units per date.
Nothing is computed here but the rows' choice and order: every number is the history's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import DataError
from abrank.readout.charts.common import floats, json_floats
from abrank.readout.core import Readout
from abrank.readout.typed import control_name, readout_summary, treatment_names

#: The history columns the trend reads.
TREND_COLUMNS = ("date", "metric", "treatment", "segment", "delta", "ci_low", "ci_high", "verdict")
#: The further columns the units per arm read.
UNIT_COLUMNS = ("unit", "primary", "n_control", "n_treatment")
#: The verdicts a trend shows; any other value reads ``inconclusive``.
VERDICTS = ("win", "loss", "inconclusive")


def check_history_columns(history: pd.DataFrame, needed: Sequence[str], where: str) -> None:
    """Raise DataError naming ``where`` and the missing columns unless ``history`` has all
    of ``needed``."""
    missing = [c for c in needed if c not in history.columns]
    if missing:
        raise DataError(
            f"{where}: expected the history store's columns {', '.join(needed)}, "
            f"got no column {', '.join(repr(c) for c in missing)}"
        )


def parse_dates(values: pd.Series, where: str) -> list[date]:
    """The history's ``date`` texts as dates; a DataError names the first one that is not
    a ``YYYY-MM-DD`` date."""
    parsed = pd.to_datetime(values.astype("string"), format="%Y-%m-%d", errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        value = values.to_numpy(dtype=object)[np.flatnonzero(bad)[0]]
        raise DataError(f"{where}: date: expected a date as YYYY-MM-DD, got {value!r}")
    return [d.date() for d in parsed]


def overall_rows(history: pd.DataFrame, experiment: str | None = None) -> pd.DataFrame:
    """The overall comparisons' rows (``segment`` null), oldest date first; only
    ``experiment``'s when the frame holds several experiments and that one among them."""
    check_history_columns(history, TREND_COLUMNS, "history")
    frame = history
    if experiment is not None and "experiment" in frame.columns:
        mine = frame["experiment"] == experiment
        if mine.any():
            frame = frame[mine]
    frame = frame[frame["segment"].isna()]
    parse_dates(frame["date"], "history")
    return frame.sort_values("date", kind="stable")


def readout_date(readout: Readout) -> str | None:
    """The date of a dated readout (summary.json's ``schedule.date``), else None."""
    schedule = readout.summary.get("schedule")
    day = schedule.get("date") if isinstance(schedule, dict) else None
    return str(day) if day is not None else None


def readout_rows(readout: Readout) -> pd.DataFrame | None:
    """The readout's overall history rows up to and including its date (when the summary
    names it), or None when they span fewer than two dates."""
    if readout.history is None:
        return None
    experiment = (readout.summary.get("experiment") or {}).get("name")
    rows = overall_rows(readout.history, experiment)
    day = readout_date(readout)
    if day is not None:  # YYYY-MM-DD texts sort as the dates do
        rows = rows[rows["date"].astype(str) <= day]
    return rows if rows["date"].nunique() >= 2 else None


def day_numbers(dates: Iterable[str]) -> np.ndarray:
    """``YYYY-MM-DD`` dates as day numbers (proleptic ordinals): the x axis of a trend."""
    return np.array([date.fromisoformat(d).toordinal() for d in dates], dtype=np.float64)


def ordered(found: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """The distinct values of ``found``: those of ``preferred`` first, in its order, then
    the others in the order met."""
    known = [x for x in preferred if x in found]
    return known + [x for x in dict.fromkeys(found) if x not in known]


@dataclass(frozen=True)
class TrendPanel:
    """One panel of the trend chart: a metric x treatment's overall rows, oldest first.

    ``dates`` are ``YYYY-MM-DD`` texts; ``delta``, ``ci_low`` and ``ci_high`` the history's
    numbers at those dates (NaN when missing); ``verdicts`` each date's verdict.
    """

    metric: str
    treatment: str
    dates: tuple[str, ...]
    delta: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    verdicts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The panel's series as JSON-safe builtins (NaN as None)."""
        return {
            "metric": self.metric,
            "treatment": self.treatment,
            "dates": list(self.dates),
            "delta": json_floats(self.delta),
            "ci_low": json_floats(self.ci_low),
            "ci_high": json_floats(self.ci_high),
            "verdicts": list(self.verdicts),
        }


def _numbers(values: pd.Series) -> tuple[float, ...]:
    return floats(values.to_numpy(dtype=np.float64, na_value=np.nan))


def trend_panels(readout: Readout) -> list[TrendPanel]:
    """The trend chart's panels, rows per treatment (the summary's order), a panel per
    metric (the summary's order) within; empty with fewer than two dates."""
    rows = readout_rows(readout)
    if rows is None:
        return []
    summary = readout_summary(readout)
    panels = []
    treatments = ordered(list(rows["treatment"]), treatment_names(summary))
    metrics = ordered(list(rows["metric"]), list(summary.metrics or ()))
    for treatment in treatments:
        for metric in metrics:
            part = rows[(rows["treatment"] == treatment) & (rows["metric"] == metric)]
            if part.empty:
                continue
            panels.append(
                TrendPanel(
                    metric,
                    treatment,
                    tuple(str(d) for d in part["date"]),
                    _numbers(part["delta"]),
                    _numbers(part["ci_low"]),
                    _numbers(part["ci_high"]),
                    tuple(str(v) if v in VERDICTS else "inconclusive" for v in part["verdict"]),
                )
            )
    return panels


@dataclass(frozen=True)
class DatedCounts:
    """One arm's count at each date (oldest first; NaN where missing)."""

    arm: str
    dates: tuple[str, ...]
    counts: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The series as JSON-safe builtins (NaN as None)."""
        return {"arm": self.arm, "dates": list(self.dates), "counts": json_floats(self.counts)}


@dataclass(frozen=True)
class UnitsPerArm:
    """The units each arm counted at each date: ``unit`` names the unit column, ``arms``
    has the control first, then the treatments."""

    unit: str
    arms: tuple[DatedCounts, ...]

    def to_dict(self) -> dict[str, Any]:
        """The series as JSON-safe builtins."""
        return {"unit": self.unit, "arms": [a.to_dict() for a in self.arms]}


def units_per_arm(readout: Readout) -> UnitsPerArm | None:
    """Online readouts: units per arm per date, from the primary metric's overall rows
    (the control's count from its first treatment's rows); None offline or with fewer
    than two dates."""
    rows = readout_rows(readout)
    if rows is None or "unit" not in rows.columns or rows["unit"].isna().all():
        return None
    check_history_columns(rows, UNIT_COLUMNS, "history")
    summary = readout_summary(readout)
    primary = rows[rows["primary"].fillna(False).astype(bool)]
    if primary.empty:  # a history without the flag: the summary's primary metric
        primary = rows[rows["metric"] == (summary.primary_metric or rows["metric"].iloc[0])]
    treatments = ordered(list(primary["treatment"]), treatment_names(summary))
    control = control_name(summary) or "control"
    if "control" in primary.columns and primary["control"].notna().any():
        control = str(primary["control"].dropna().iloc[0])
    first = primary[primary["treatment"] == treatments[0]]
    series = {control: DatedCounts(control, _dates(first), _numbers(first["n_control"]))}
    for treatment in treatments:
        part = primary[primary["treatment"] == treatment]
        series[treatment] = DatedCounts(treatment, _dates(part), _numbers(part["n_treatment"]))
    return UnitsPerArm(str(rows["unit"].dropna().iloc[0]), tuple(series.values()))


def _dates(rows: pd.DataFrame) -> tuple[str, ...]:
    return tuple(str(d) for d in rows["date"])
