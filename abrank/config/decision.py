"""Metric roles and the ``decision`` section (DESIGN.md "Decisions").

A ``metrics`` entry is a name, or a mapping ``{name, role, nim, direction}``:

- ``role``: ``success`` (the change is meant to move it), ``guardrail`` (it must not get
  worse by more than its non-inferiority margin ``nim``) or ``secondary`` (reported, no
  decision; the role of a bare name once any metric has a role);
- ``nim``: a guardrail's margin, absolute (``0.005``) or relative to the control's mean
  (``"5%"``);
- ``direction``: ``higher`` or ``lower`` is better, overriding the metric registry's.

The mappings are split off the config before the models validate it
(:func:`split_metric_entries`), so that ``metrics`` stays a list of names for every reader;
:func:`checked_roles` checks them with the config's line numbers and returns the roles by
canonical metric name. The ``decision`` section chooses the rule and its settings
(:class:`DecisionConfig`); a config with roles gets the default rule without one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from abrank.config.keys import Strict
from abrank.config.problems import Checks
from abrank.errors import ConfigError

ROLES: tuple[str, ...] = ("success", "guardrail", "secondary")
"""The roles a metric may have, in the order a readout lists them."""

DIRECTIONS: tuple[str, ...] = ("higher", "lower")

RULES: tuple[str, ...] = ("ship-if-success-and-no-harm",)
"""The decision rules abrank knows (DESIGN.md "Decisions")."""

ENTRY_KEYS: tuple[str, ...] = ("name", "role", "nim", "direction")

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*%\s*$")


class DecisionConfig(Strict):
    """The ``decision`` section: the rule and what it needs.

    ``deterioration_alpha``: the level of every metric's check for a significant change in
    the wrong direction (default: ``analysis.alpha``). ``mde``: per success metric, the
    smallest change worth detecting, for the units a ``keep-running`` experiment still
    needs (default: the observed change, where it goes the right way). ``power``: the
    planned probability of shipping when a success metric moves by its MDE and the
    guardrails hold.
    """

    rule: Literal["ship-if-success-and-no-harm"] = "ship-if-success-and-no-harm"
    deterioration_alpha: float | None = Field(default=None, gt=0, lt=1)
    mde: dict[str, float] = {}
    power: float = Field(default=0.8, gt=0, lt=1)


class MetricRole(Strict):
    """One metric's role, resolved: ``nim`` is the margin's number (a share of the
    control's mean when ``relative``), ``direction`` None where the registry decides."""

    role: Literal["success", "guardrail", "secondary"] = "secondary"
    nim: float | None = None
    relative: bool = False
    direction: Literal["higher", "lower"] | None = None

    def margin_text(self) -> str:
        """The margin as a config writes it: ``0.005`` or ``5%``."""
        if self.nim is None:
            return ""
        return f"{self.nim * 100:g}%" if self.relative else f"{self.nim:g}"

    def to_dict(self) -> dict[str, Any]:
        """The role as JSON-safe builtins (unset keys left out)."""
        out: dict[str, Any] = {"role": self.role}
        if self.nim is not None:
            out["nim"] = self.margin_text()
        if self.direction is not None:
            out["direction"] = self.direction
        return out


def split_metric_entries(data: dict[str, Any]) -> tuple[dict[str, Any], dict[int, dict]]:
    """``data`` with every mapping of ``metrics`` replaced by its name, and those mappings
    by their index. A mapping without a name string is left for the models to refuse."""
    metrics = data.get("metrics")
    if not isinstance(metrics, list) or not any(isinstance(m, dict) for m in metrics):
        return data, {}
    names: list[Any] = []
    entries: dict[int, dict] = {}
    for index, item in enumerate(metrics):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
            entries[index] = item
        else:
            names.append(item)
    return {**data, "metrics": names}, entries


def parse_margin(value: Any) -> tuple[float, bool]:
    """A ``nim`` as (number, relative): ``0.005`` -> (0.005, False), ``"5%"`` -> (0.05,
    True). ValueError naming what a margin is."""
    if isinstance(value, bool):
        raise ValueError(f"expected a margin such as 0.005 or '5%', got {value!r}")
    if isinstance(value, (int, float)):
        number, relative = float(value), False
    elif isinstance(value, str) and _PERCENT.match(value):
        number, relative = float(_PERCENT.match(value).group(1)) / 100.0, True  # type: ignore[union-attr]
    elif isinstance(value, str):
        try:
            number, relative = float(value), False
        except ValueError:
            raise ValueError(f"expected a margin such as 0.005 or '5%', got {value!r}") from None
    else:
        raise ValueError(f"expected a margin such as 0.005 or '5%', got {value!r}")
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"expected a margin of 0 or more, got {value!r}")
    return number, relative


def checked_roles(
    checks: Checks,
    entries: dict[int, dict],
    canonical: list[str],
    decision: DecisionConfig | None,
    metric_name: Callable[[str], str],
) -> tuple[dict[str, MetricRole], DecisionConfig | None]:
    """The roles by canonical metric name (every metric, ``secondary`` where none is
    given) and the decision section with canonical ``mde`` names; empty and None when the
    config gives neither roles nor a ``decision`` section. Problems go to ``checks``."""
    if not entries and decision is None:
        return {}, None
    roles: dict[str, MetricRole] = {}
    for index, name in enumerate(canonical):
        entry = entries.get(index)
        roles[name] = MetricRole() if entry is None else _role(checks, index, entry)
    if not any(role.role == "success" for role in roles.values()):
        where = ("metrics",) if entries else ("decision",)
        checks.add(
            where,
            "expected at least one metric with role: success (the decision rule ships only "
            "when a success metric wins), got none",
        )
    decision = decision if decision is not None else DecisionConfig()
    mde: dict[str, float] = {}
    for key, value in decision.mde.items():
        try:
            name = metric_name(key)
        except ConfigError as exc:
            checks.add(("decision", "mde", key), str(exc))
            continue
        role = roles.get(name)
        if role is None or role.role != "success":
            success = [m for m, r in roles.items() if r.role == "success"]
            checks.add(
                ("decision", "mde", key), f"expected a success metric {success}, got {key!r}"
            )
            continue
        if not math.isfinite(value) or value <= 0:
            checks.add(("decision", "mde", key), f"expected a change above 0, got {value!r}")
            continue
        mde[name] = float(value)
    return roles, decision.model_copy(update={"mde": mde})


def _role(checks: Checks, index: int, entry: dict) -> MetricRole:
    """One mapping of ``metrics`` checked: its keys, role, margin and direction."""
    loc = ("metrics", index)
    for key in entry:
        if key not in ENTRY_KEYS:
            checks.add((*loc, key), f"unknown key (known keys: {', '.join(ENTRY_KEYS)})")
    role = entry.get("role", "secondary")
    if role not in ROLES:
        checks.add((*loc, "role"), f"expected one of {', '.join(ROLES)}, got {role!r}")
        role = "secondary"
    direction = entry.get("direction")
    if direction is not None and direction not in DIRECTIONS:
        checks.add((*loc, "direction"), f"expected higher or lower, got {direction!r}")
        direction = None
    nim, relative = None, False
    if "nim" in entry:
        if role != "guardrail":
            checks.add(
                (*loc, "nim"),
                f"expected a margin only on a guardrail, got one on a {role} metric",
            )
        else:
            try:
                nim, relative = parse_margin(entry["nim"])
            except ValueError as exc:
                checks.add((*loc, "nim"), str(exc))
    elif role == "guardrail":
        checks.add(
            loc,
            "expected nim, the guardrail's non-inferiority margin (e.g. nim: 0.005 or "
            "nim: 2%), got none",
        )
    return MetricRole(role=role, nim=nim, relative=relative, direction=direction)
