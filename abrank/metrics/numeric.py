"""Numeric and quantile metrics of log columns: the four stats and one metric's spec.

A numeric metric has a name the config chooses (``latency_p95``, ``revenue_per_click``), so
it is no family of the registry of ranking metrics: it is a :class:`NumericMetric` made
from one mapping of ``metrics`` (:func:`parse_numeric`), and what each of its stats
computes is described once, in :data:`NUMERIC_STATS`, which the README's metric table
lists beside the families (:func:`abrank.metrics.registry.markdown_table`).

A column is read per impression: each impression (``impression_id``) has one value, the
value of its rows (a log with a row per shown result repeats it on every row, or gives it
on some rows and leaves the others empty; two different values in one impression are an
error). A value that is missing (an empty cell, NaN) is counted and left out, never
silently dropped: the readout reports how many impressions of each arm had none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LEVELS",
    "NUMERIC_KEYS",
    "NUMERIC_STATS",
    "NumericMetric",
    "NumericStat",
    "is_numeric_entry",
    "parse_numeric",
]

LEVELS: tuple[str, ...] = ("impression", "unit")
"""Where a numeric metric's values are taken: per impression (default) or per unit."""

NUMERIC_KEYS: tuple[str, ...] = (
    "column",
    "stat",
    "level",
    "q",
    "numerator",
    "denominator",
    "cap",
    "approximate",
)
"""The keys of a ``metrics`` mapping that make it a numeric metric (besides ``name``,
``role``, ``nim`` and ``direction``)."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class NumericStat:
    """One stat of a numeric metric: how the config writes it, what it computes per
    impression and per unit, and its interval."""

    stat: str
    usage: str
    impression: str
    unit: str
    interval: str


NUMERIC_STATS: dict[str, NumericStat] = {
    spec.stat: spec
    for spec in (
        NumericStat(
            "mean",
            "{name: dwell_mean, column: dwell, stat: mean}",
            "Σ values / impressions with a value (a ratio of per-unit sums)",
            "the mean over units of each unit's mean",
            "clustered delta method (Deng, Knoblich & Lu 2018); unit bootstrap",
        ),
        NumericStat(
            "sum",
            "{name: revenue_per_user, column: revenue, stat: sum}",
            "— (a sum is per unit: `level: unit` only)",
            "the mean over units of each unit's total",
            "delta method over units; unit bootstrap",
        ),
        NumericStat(
            "ratio",
            "{name: revenue_per_click, stat: ratio, numerator: revenue, denominator: clicks}",
            "Σ numerator / Σ denominator over impressions with both",
            "the mean over units of each unit's ratio",
            "clustered delta method; unit bootstrap",
        ),
        NumericStat(
            "quantile",
            "{name: latency_p95, column: latency_ms, stat: quantile, q: 0.95}",
            "the q-th quantile of the pooled impression values (numpy's linear rule)",
            "the q-th quantile of the units' means",
            "delta method on the quantile's influence function, clustered (Deng, Knoblich "
            "& Lu 2018); unit bootstrap",
        ),
    )
}
"""The four stats of a numeric metric, in the order the README lists them."""


@dataclass(frozen=True)
class NumericMetric:
    """One numeric metric of a log column (see the module's docstring).

    ``stat``: mean, sum, ratio or quantile (:data:`NUMERIC_STATS`); ``level``: impression
    (each impression a value, clustered on the unit) or unit (each unit one value: its
    mean, total or ratio); ``column`` (mean, sum, quantile) or ``numerator`` and
    ``denominator`` (ratio); ``q``: the quantile; ``cap``: winsorize the values the stat
    reads at this quantile, per arm and segment (values above it are set to it; for a
    ratio, the numerator); ``direction``: which way is better; ``approximate``: a sketch
    quantile computed by the SQL engine (quantile per impression, without cap: Spark's
    ``percentile_approx``, DuckDB's ``approx_quantile``; the memory engine's is exact).
    """

    name: str
    stat: str
    direction: str
    column: str | None = None
    numerator: str | None = None
    denominator: str | None = None
    level: str = "impression"
    q: float | None = None
    cap: float | None = None
    approximate: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        """The log columns the metric reads."""
        if self.stat == "ratio":
            return (str(self.numerator), str(self.denominator))
        return (str(self.column),)

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def label(self) -> str:
        """The name, as the config gives it (a chosen name is its own label)."""
        return self.name

    def describe(self) -> str:
        """What the metric computes, in a few words: ``p95 of latency_ms per impression``."""
        per = "per impression" if self.level == "impression" else "per unit"
        if self.stat == "quantile":
            what = f"p{(self.q or 0.0) * 100:g} of {self.column}"
        elif self.stat == "ratio":
            what = f"{self.numerator} / {self.denominator}"
        elif self.stat == "sum":
            what = f"total {self.column}"
        else:
            what = f"mean {self.column}"
        capped = f", capped at its p{self.cap * 100:g}" if self.cap is not None else ""
        return f"{what} {per}{capped}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: the keys the config gave (unset ones left out)."""
        out: dict[str, Any] = {"name": self.name, "stat": self.stat, "level": self.level}
        for key in ("column", "numerator", "denominator", "q", "cap"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out["direction"] = self.direction
        if self.approximate:
            out["approximate"] = True
        return out


def is_numeric_entry(entry: Mapping[str, Any]) -> bool:
    """A ``metrics`` mapping is a numeric metric when it names a stat or a column."""
    return any(key in entry for key in ("stat", "column", "numerator", "denominator"))


def parse_numeric(entry: Mapping[str, Any]) -> tuple[NumericMetric | None, list[tuple[str, str]]]:
    """The :class:`NumericMetric` of a ``metrics`` mapping, and its problems as
    (key, message) pairs (key ``""`` for the entry itself); None when there are any."""
    problems: list[tuple[str, str]] = []
    known = ("name", *NUMERIC_KEYS, "role", "nim", "direction")
    for key in entry:
        if key not in known:
            problems.append((str(key), f"unknown key (known keys: {', '.join(known)})"))
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(
            ("name", f"expected a name of letters, digits, '_', '.' or '-', got {name!r}")
        )
    stat = entry.get("stat")
    if stat not in NUMERIC_STATS:
        problems.append(("stat", f"expected one of {', '.join(NUMERIC_STATS)}, got {stat!r}"))
    default_level = "unit" if stat == "sum" else "impression"
    level = entry.get("level", default_level)
    if level not in LEVELS:
        problems.append(("level", f"expected impression or unit, got {level!r}"))
    elif stat == "sum" and level == "impression":
        problems.append(
            ("level", "expected unit for stat: sum (a sum per impression is a mean: stat: mean)")
        )
    direction = entry.get("direction")
    if direction not in ("higher", "lower"):
        problems.append(
            (
                "direction",
                f"expected higher or lower (which way is better for a numeric metric), got "
                f"{direction!r}",
            )
        )
    if stat == "ratio":
        for key in ("numerator", "denominator"):
            if not _column_name(entry.get(key)):
                problems.append((key, f"expected a column name, got {entry.get(key)!r}"))
        if "column" in entry:
            problems.append(
                ("column", "expected numerator and denominator for a ratio, not column")
            )
    elif stat in NUMERIC_STATS:
        if not _column_name(entry.get("column")):
            problems.append(("column", f"expected a column name, got {entry.get('column')!r}"))
        for key in ("numerator", "denominator"):
            if key in entry:
                problems.append((key, f"expected {key} only with stat: ratio, got stat: {stat}"))
    q = entry.get("q")
    if stat == "quantile":
        if not _fraction(q, closed=True):
            problems.append(("q", f"expected a number from 0 to 1 (0.95 for p95), got {q!r}"))
    elif "q" in entry:
        problems.append(("q", f"expected q only with stat: quantile, got stat: {stat}"))
    cap = entry.get("cap")
    if cap is not None and not _fraction(cap, closed=False):
        problems.append(("cap", f"expected a quantile above 0 and below 1 (0.99), got {cap!r}"))
    approximate = entry.get("approximate", False)
    if not isinstance(approximate, bool):
        problems.append(("approximate", f"expected true or false, got {approximate!r}"))
    elif approximate and stat != "quantile":
        problems.append(
            (
                "approximate",
                f"expected approximate only with stat: quantile (a sketch quantile), got "
                f"stat: {stat}",
            )
        )
    elif approximate and level != "impression":
        problems.append(
            (
                "approximate",
                "expected approximate only at level: impression (the engine's sketch reads the "
                "impression values), got level: unit",
            )
        )
    elif approximate and cap is not None:
        problems.append(
            (
                "approximate",
                "expected approximate without cap (the engine's sketch reads the values as "
                "they are)",
            )
        )
    if problems:
        return None, problems
    return (
        NumericMetric(
            name=str(name),
            stat=str(stat),
            direction=str(direction),
            column=entry.get("column"),
            numerator=entry.get("numerator"),
            denominator=entry.get("denominator"),
            level=str(level),
            q=float(q) if q is not None else None,
            cap=float(cap) if cap is not None else None,
            approximate=bool(approximate),
        ),
        [],
    )


def _column_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _fraction(value: Any, *, closed: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    number = float(value)
    if not math.isfinite(number):
        return False
    return 0.0 <= number <= 1.0 if closed else 0.0 < number < 1.0
