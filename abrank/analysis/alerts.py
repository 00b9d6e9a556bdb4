"""Alerts: conditions of a readout that a scheduled run turns into its exit code.

``abrank run --fail-on srm,loss`` writes the readout as usual and then exits 3 when one of
the named alerts fires, so that cron or Airflow flags the run without parsing its output.
Each alert is one entry of :data:`ALERTS`: its name, what it means, and a check of the
summary that returns the reasons it fired (empty when it did not). ``no-ship`` and
``unhealthy`` read the readout's decision (summary.json's ``decision``, made when the
config gives its metrics roles): a readout without one never fires them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from abrank.errors import ConfigError
from abrank.history.rows import readout_decision, split_check

#: The exit code of a run whose readout was written but an alert named by --fail-on fired.
EXIT_ALERT = 3


@dataclass(frozen=True)
class Alert:
    """One alert: ``check(summary)`` gives the reasons it fired (empty: it did not)."""

    name: str
    description: str
    check: Callable[[dict[str, Any]], list[str]]


def _srm(summary: dict[str, Any]) -> list[str]:
    diagnostics = summary.get("diagnostics") or {}
    srm = split_check(diagnostics)
    if not srm or not srm.get("alarm"):
        return []
    what = "sample ratio mismatch" if diagnostics.get("srm") else "first-team imbalance"
    return [f"{what} (p = {srm['p_value']:.2g} < {srm.get('alpha', 0.001):g})"]


def _overall(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in summary.get("comparisons", []) if c.get("segment") is None]


def _loss(summary: dict[str, Any]) -> list[str]:
    return [
        f"{c['metric']} ({c['treatment']}): loss"
        for c in _overall(summary)
        if c["verdict"] == "loss"
    ]


def _inconclusive(summary: dict[str, Any]) -> list[str]:
    primary = summary.get("primary_metric")
    return [
        f"{c['metric']} ({c['treatment']}): inconclusive"
        for c in _overall(summary)
        if c["metric"] == primary and c["verdict"] == "inconclusive"
    ]


def _stale(summary: dict[str, Any]) -> list[str]:
    schedule = summary.get("schedule") or {}
    if not schedule.get("stale"):
        return []
    return [
        f"the inputs of {schedule['date']} are byte-identical to those of "
        f"{schedule['previous_date']} (the logs did not refresh)"
    ]


def _decided(status: str) -> Callable[[dict[str, Any]], list[str]]:
    """The check of an alert that fires when the readout's decision is ``status``: its
    reason is the decision's first (the readout's opening sentence)."""

    def check(summary: dict[str, Any]) -> list[str]:
        decided, reason = readout_decision(summary)
        if decided != status or reason is None:
            return []
        head, _, rest = reason.partition(": ")  # the alert names the status already
        return [rest if rest and head.lower().replace(" ", "-") == status else reason]

    return check


def stale_warning(summary: dict[str, Any]) -> str | None:
    """The warning of a dated readout whose inputs are the previous date's very bytes, for
    ``diagnostics.warnings`` (None when they refreshed, or the summary has no schedule)."""
    from abrank.readout.model import Schedule

    schedule = summary.get("schedule")
    return Schedule.from_dict(schedule, "summary.schedule").message() if schedule else None


ALERTS: dict[str, Alert] = {
    alert.name: alert
    for alert in (
        Alert(
            "srm",
            "the units per arm fail the sample-ratio check (an interleaving: the first-team check)",
            _srm,
        ),
        Alert("loss", "an overall comparison is a significant loss", _loss),
        Alert("inconclusive", "the primary metric's comparison is inconclusive", _inconclusive),
        Alert("stale", "a dated run's inputs are those of the previous date", _stale),
        Alert("no-ship", "the readout's decision is no-ship (metric roles)", _decided("no-ship")),
        Alert(
            "unhealthy",
            "the readout's decision is unhealthy (metric roles)",
            _decided("unhealthy"),
        ),
    )
}


def parse_alerts(values: Sequence[str]) -> tuple[str, ...]:
    """Alert names from ``--fail-on`` values (comma-separated or repeated); ConfigError
    naming an unknown one and listing the known ones."""
    names = [part.strip().lower() for value in values for part in value.split(",")]
    names = [name for name in names if name]
    unknown = [name for name in names if name not in ALERTS]
    if unknown:
        raise ConfigError(
            f"--fail-on: expected alerts among {', '.join(ALERTS)}, got {', '.join(unknown)}"
        )
    return tuple(dict.fromkeys(names))


def fired_alerts(summary: dict[str, Any], names: Sequence[str]) -> list[str]:
    """``name: reason`` for every reason of every named alert that fired."""
    return [f"{name}: {reason}" for name in names for reason in ALERTS[name].check(summary)]
