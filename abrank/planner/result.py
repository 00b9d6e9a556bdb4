"""The planner's result: power per design and traffic size, users needed, their ratio.

:func:`users_needed` reads the users a design needs for the target power off its power
curve: the first grid size whose power reaches the target, interpolated linearly in
power against log users from the size before it. When the first size already reaches it
the answer is a bound (at most that many users), when no size does it is the other bound
(more than the largest), and when the two bracketing sizes' powers lie far from the
target the interpolation is flagged as coarse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Bound = Literal["within", "at_most", "more_than"]

COARSE = 0.25
"""A bracketing grid point this far (in power) from the target makes the estimate coarse."""

INTERLEAVING = "interleaving"
AB_CLICK_RR = "ab_click_rr"
AB_CTR = "ab_ctr"


@dataclass(frozen=True)
class UsersNeeded:
    """The users a design needs for the target power: ``users`` (None when no grid size
    reached it), ``bound`` (``within`` the grid, ``at_most`` the smallest size, or
    ``more_than`` the largest) and a ``note`` when the grid brackets it coarsely."""

    users: float | None
    bound: Bound
    note: str | None = None

    def text(self) -> str:
        """``1,050``, ``<= 250`` or ``> 8,000``."""
        if self.users is None:
            return "never"
        shown = f"{nice(self.users):,}"
        return {"within": shown, "at_most": f"<= {shown}", "more_than": f"> {shown}"}[self.bound]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {"users": self.users, "bound": self.bound, "text": self.text(), "note": self.note}


def nice(users: float) -> int:
    """A user count rounded to three significant digits (1,047 -> 1,050)."""
    if users <= 0 or not math.isfinite(users):
        return int(users) if math.isfinite(users) else 0
    digits = max(int(math.floor(math.log10(users))) - 2, 0)
    return int(round(users / 10**digits) * 10**digits)


def users_needed(users: Sequence[int], power: Sequence[float], target: float) -> UsersNeeded:
    """The users for ``target`` power read off a power curve on the sizes ``users``
    (ascending; module text)."""
    reached = [i for i, p in enumerate(power) if p >= target]
    if not reached:
        return UsersNeeded(float(users[-1]), "more_than")
    i = reached[0]
    if i == 0:
        return UsersNeeded(float(users[0]), "at_most")
    lo, hi = power[i - 1], power[i]
    x0, x1 = math.log(users[i - 1]), math.log(users[i])
    at = math.exp(x0 + (target - lo) / (hi - lo) * (x1 - x0))
    note = None
    if target - lo > COARSE or hi - target > COARSE:
        note = (
            f"coarse: the grid brackets it between {users[i - 1]:,} users (power {lo:.2f}) "
            f"and {users[i]:,} (power {hi:.2f}); add sizes in between for a closer figure"
        )
    return UsersNeeded(at, "within", note)


@dataclass(frozen=True)
class DesignPower:
    """One design's power curve: ``power[i]`` the share of simulated experiments whose
    test rejected at alpha with ``users[i]`` users, ``mc_se[i]`` its Monte-Carlo
    standard error sqrt(p (1 - p) / simulations); ``effect`` the pilot's estimate of the
    difference the test tries to detect (the treatment's click metric minus the
    control's, or Delta_AB)."""

    name: str
    label: str
    metric: str
    power: tuple[float, ...]
    mc_se: tuple[float, ...]
    needed: UsersNeeded
    effect: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "name": self.name,
            "label": self.label,
            "metric": self.metric,
            "power": list(self.power),
            "mc_se": list(self.mc_se),
            "users_needed": self.needed.to_dict(),
            "effect": self.effect,
        }


@dataclass(frozen=True)
class UsersRatio:
    """A/B users over interleaving users for the target power: ``value`` (None when
    neither is known), ``bound`` ``exact``, ``at_least`` or ``at_most``."""

    value: float | None
    bound: Literal["exact", "at_least", "at_most", "unknown"]

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "bound": self.bound}


def users_ratio(ab: UsersNeeded, interleaving: UsersNeeded) -> UsersRatio:
    """How many times more users the A/B test needs than interleaving (a bound when
    either figure is one: A/B more than its largest size, interleaving at most its
    smallest, give ``at_least``; the opposite bounds ``at_most``)."""
    if ab.users is None or interleaving.users is None:
        return UsersRatio(None, "unknown")
    value = ab.users / interleaving.users
    up = ab.bound == "more_than" or interleaving.bound == "at_most"
    down = ab.bound == "at_most" or interleaving.bound == "more_than"
    if up and down:
        return UsersRatio(None, "unknown")
    return UsersRatio(value, "at_least" if up else "at_most" if down else "exact")


@dataclass(frozen=True)
class PlannerResult:
    """What ``abrank simulate`` found (:func:`abrank.planner.simulate_power`).

    ``users``: the traffic sizes (users per experiment, both arms together), from
    ``grid_source`` (``config``, ``argument`` or ``automatic``, then ``pilot`` holds the
    pilot's analytic sizes); ``designs``: A/B on click_rr@10, A/B on ctr@k, team-draft
    interleaving; ``ratio``: A/B click_rr@10 users / interleaving users for ``target``
    power; ``elapsed``: seconds (the only field that changes between equal runs).
    """

    experiment: dict[str, Any]
    arms: dict[str, str]
    click_model: dict[str, Any]
    user_model: dict[str, float]
    queries: int
    depth: int
    ctr_k: int
    alpha: float
    target: float
    simulations: int
    seed: int
    users: tuple[int, ...]
    grid_source: str
    designs: tuple[DesignPower, ...]
    ratio: UsersRatio
    pilot: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    elapsed: float = field(default=0.0, compare=False)

    def design(self, name: str) -> DesignPower:
        """The design called ``name`` (ab_click_rr, ab_ctr, interleaving)."""
        return next(d for d in self.designs if d.name == name)

    def sentence(self) -> str:
        """The ratio in one line, e.g. "team-draft interleaving needs 9.6x fewer users
        than an A/B test on click_rr@10 (1,050 vs 10,100 users for 80% power)"."""
        ab, il = self.design(AB_CLICK_RR), self.design(INTERLEAVING)
        level = f"{self.target:.0%} power"
        figures = f"({il.needed.text()} vs {ab.needed.text()} users for {level})"
        ratio = self.ratio
        if ratio.value is None:
            return (
                f"the grid does not tell how many times fewer users team-draft interleaving "
                f"needs than an A/B test on {ab.metric} {figures}"
            )
        how = {"exact": "", "at_least": "at least ", "at_most": "at most "}[ratio.bound]
        if ratio.value >= 1:
            return (
                f"team-draft interleaving needs {how}{ratio.value:.1f}x fewer users than an "
                f"A/B test on {ab.metric} {figures}"
            )
        return (
            f"an A/B test on {ab.metric} needs {how}{1 / ratio.value:.1f}x fewer users than "
            f"team-draft interleaving {figures}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins (simulation.json)."""
        return {
            "experiment": dict(self.experiment),
            "arms": dict(self.arms),
            "click_model": dict(self.click_model),
            "user_model": dict(self.user_model),
            "queries": self.queries,
            "depth": self.depth,
            "ctr_k": self.ctr_k,
            "alpha": self.alpha,
            "target_power": self.target,
            "simulations": self.simulations,
            "seed": self.seed,
            "users": list(self.users),
            "grid_source": self.grid_source,
            "pilot": self.pilot,
            "designs": [d.to_dict() for d in self.designs],
            "ratio": self.ratio.to_dict(),
            "sentence": self.sentence(),
            "notes": list(self.notes),
            "elapsed_seconds": self.elapsed,
        }
