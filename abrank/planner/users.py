"""Simulated users and their clicks, for many simulated experiments at once.

A user has a click propensity rho (lognormal with mean 1 and standard deviation
``propensity_sd``: log rho ~ N(-s^2 / 2, s^2) with s^2 = log(1 + sd^2)) that multiplies
every click probability (capped at 1), and 1 + Poisson(mean - 1) impressions; each
impression draws a query uniformly, with replacement. The same users, queries and
impressions serve both designs:

* A/B: each user is in the treatment with probability 1/2 and sees that arm's list.
  click_rr@10 and ctr@k depend only on the rank of the first click, and under both
  click models the first click is the first position whose independent click draw
  succeeds (the cascade stops only after a click), so one uniform U per impression
  gives it: with S_r = prod_{i <= r} (1 - q_i) the chance of no click in the top r,
  the first click is at 1 + #{r : S_r > U} (no click when that passes the list).
* Interleaving: the impression shows one of its query's team-draft variants, drawn
  uniformly (:mod:`abrank.planner.setup`); each position is clicked when its uniform is
  below q_i, and in the cascade only while no earlier click was followed by a stop. The
  clicks on each team's results decide the win, tie or loss.

Everything is whole-array NumPy over the impressions of a batch of simulated
experiments; :func:`simulate_units` returns per-user sums (the units the tests cluster on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from abrank.planner.setup import CONTROL_TEAM, TREATMENT_TEAM, ClickSetup

CLICK_RR_K = 10
"""The cutoff of the A/B test's reciprocal rank of the first click (click_rr@10)."""


@dataclass(frozen=True)
class UserModel:
    """How simulated users differ: mean impressions per user, propensity spread."""

    impressions_per_user: float = 5.0
    propensity_sd: float = 0.5

    def to_dict(self) -> dict[str, float]:
        """JSON-safe builtins."""
        return {
            "impressions_per_user": float(self.impressions_per_user),
            "propensity_sd": float(self.propensity_sd),
        }


@dataclass(frozen=True)
class SimulatedUnits:
    """Per-user sums of ``experiments`` simulated experiments of ``users`` users each;
    every array is (experiments, users).

    ``treated``: the user's A/B arm; ``impressions``: D_u; ``click_rr`` and ``ctr``: the
    sums of click_rr@10 and ctr@k over the user's A/B impressions; ``wins`` and
    ``losses``: the user's interleaved impressions the treatment won and lost.
    """

    treated: np.ndarray
    impressions: np.ndarray
    click_rr: np.ndarray
    ctr: np.ndarray
    wins: np.ndarray
    losses: np.ndarray


def propensities(rng: np.random.Generator, size: int, sd: float) -> np.ndarray:
    """``size`` lognormal propensities with mean 1 and standard deviation ``sd``."""
    if sd <= 0:
        return np.ones(size)
    s2 = math.log1p(sd * sd)
    return rng.lognormal(-s2 / 2.0, math.sqrt(s2), size)


def simulate_units(
    setup: ClickSetup,
    users: int,
    experiments: int,
    people: UserModel,
    ctr_k: int,
    rng: np.random.Generator,
) -> SimulatedUnits:
    """The per-user sums of ``experiments`` simulated experiments of ``users`` users."""
    n = users * experiments
    counts = 1 + rng.poisson(people.impressions_per_user - 1.0, n)
    rho = propensities(rng, n, people.propensity_sd)
    treated = rng.random(n) < 0.5
    owner = np.repeat(np.arange(n), counts)
    total = owner.size
    query = rng.integers(setup.n_queries, size=total)
    variant = rng.integers(setup.variants, size=total)
    scale = rho[owner].astype(np.float32)[:, None]

    arm = treated[owner].astype(np.int64)
    base = setup.arm_probability.astype(np.float32)[arm, query]
    survival = np.cumprod(1.0 - np.minimum(base * scale, 1.0), axis=1)
    first = 1 + (survival > rng.random(total, dtype=np.float32)[:, None]).sum(axis=1)
    first = np.where(first > setup.depth, np.inf, first)  # past the list: no click
    click_rr = np.where(first <= CLICK_RR_K, 1.0 / first, 0.0)
    ctr = (first <= ctr_k).astype(np.float64)

    row = query * setup.variants + variant
    q = np.minimum(setup.variant_probability.astype(np.float32)[row] * scale, 1.0)
    clicks = rng.random(q.shape, dtype=np.float32) < q
    if setup.cascade:
        stops = clicks & (rng.random(q.shape, dtype=np.float32) < setup.variant_stop[row])
        before = np.cumsum(stops, axis=1, dtype=np.int16) - stops
        clicks &= before == 0
    team = setup.variant_team[row]
    treatment_credit = (clicks & (team == TREATMENT_TEAM)).sum(axis=1)
    control_credit = (clicks & (team == CONTROL_TEAM)).sum(axis=1)

    shape = (experiments, users)
    return SimulatedUnits(
        treated=treated.reshape(shape),
        impressions=counts.astype(np.float64).reshape(shape),
        click_rr=np.bincount(owner, weights=click_rr, minlength=n).reshape(shape),
        ctr=np.bincount(owner, weights=ctr, minlength=n).reshape(shape),
        wins=np.bincount(owner, weights=treatment_credit > control_credit, minlength=n).reshape(
            shape
        ),
        losses=np.bincount(owner, weights=treatment_credit < control_credit, minlength=n).reshape(
            shape
        ),
    )
