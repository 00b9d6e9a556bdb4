"""The decision of a readout: summary.json's ``decision``."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from abrank.records import Record

STATUSES: tuple[str, ...] = ("ship", "no-ship", "keep-running", "unhealthy")
"""The statuses of the decision rule, from the best news to the worst."""


@dataclasses.dataclass(frozen=True)
class Decision(Record):
    """summary.json's ``decision``: what the rule concludes, and why.

    ``status``: one of :data:`STATUSES`; ``rule`` the rule's name; ``reasons`` the
    sentences that led to it (the first is the readout's opening); ``success``,
    ``guardrails`` and ``deteriorations`` one entry per overall comparison concerned
    (metric, treatment and what the rule read of it); ``units_needed`` the units (queries,
    or the randomized units of an online design, both arms together) still needed at the
    current sample's variance for the planned power, for ``keep-running`` (None otherwise
    or where it cannot be worked out), and for a dated readout ``days_needed``, the days
    of traffic they take at the rate of its window; ``planned_power`` the power it is planned for;
    ``treatments`` the status of each treatment against the control when there are
    several (the decision then ships when one of them does).
    """

    status: str
    rule: str
    reasons: tuple[str, ...]
    success: tuple[dict[str, Any], ...] = ()
    guardrails: tuple[dict[str, Any], ...] = ()
    deteriorations: tuple[dict[str, Any], ...] = ()
    units_needed: int | None = None
    days_needed: int | None = None
    planned_power: float | None = None
    unit: str | None = None
    treatments: dict[str, str] | None = None

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"treatments"})

    @property
    def headline(self) -> str:
        """The readout's opening sentence: the status and the first reason."""
        return self.reasons[0] if self.reasons else STATUS_TEXT[self.status]


def units_text(unit: str | None) -> str:
    """What the units are called in a sentence: ``queries``, or ``units (user_id)``."""
    return "queries" if unit in (None, "queries") else f"units ({unit})"


STATUS_TEXT: dict[str, str] = {
    "ship": "Ship",
    "no-ship": "No-ship",
    "keep-running": "Keep running",
    "unhealthy": "Unhealthy",
}
"""Each status as a readout's opening word."""
