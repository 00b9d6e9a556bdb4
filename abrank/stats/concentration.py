"""How concentrated an arm's impressions are in a few of its units.

A clustered comparison (:mod:`abrank.stats.clustered`) treats units (users) as the
independent draws. When a few heavy users hold a large part of an arm's impressions, the
sample is small in the units that matter, whatever the number of users: with 1% of 500
users per arm at 100 times the impressions of the others, the delta-method t-test rejects
a true A/A null about 14% of the time at alpha 0.05, with 2 such users in 100 per arm
about 31% (``benchmarks/bench_calibration_heavy_users.py``).

The measure is Kish's effective number of units, n_eff = (sum w)^2 / sum w^2 with w each
unit's denominator D_u (its impressions or queries with a value): n for equal weights,
close to 1 when one unit holds nearly everything. It is also the Satterthwaite degrees
of freedom of a sum of n independent unit terms whose variances are proportional to D_u,
which is how :mod:`abrank.stats.unit_jackknife` uses it. Beside it, the share of the
denominator held by the top 1% of units (at least one) and by the top 10.

An arm is concentrated when n_eff is below :data:`CONCENTRATED_SHARE` of its units
(equivalently when the coefficient of variation of D_u exceeds sqrt(3) = 1.73: ordinary
traffic, with a geometric or 1 + Poisson number of impressions per user, sits at 0.5 to
0.9 of its units).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.stats.results import json_safe

CONCENTRATED_SHARE = 0.25
"""An arm whose effective number of units is below this share of its units is
concentrated: the verdict of its clustered comparisons comes from the jackknife.

Ordinary traffic (impressions per user geometric, or 1 + Poisson, or the demo's
Gamma-Poisson mixture) has 0.5 to 0.9; 1% of users at 10 times the impressions 0.4,
at 30 times 0.1, at 100 times 0.02 to 0.04."""
TOP_SHARE = 0.01
"""The top units whose share of the denominator is reported: this share of the units
(rounded up, at least one)."""
TOP_UNITS = 10
"""The number of top units whose share of the denominator is also reported."""


def effective_units(weights: np.ndarray) -> float:
    """Kish's effective number of units, (sum w)^2 / sum w^2 (NaN when every weight is 0)."""
    w = np.asarray(weights, dtype=np.float64)
    squares = float(w @ w)
    return float(w.sum()) ** 2 / squares if squares > 0 else math.nan


@dataclass(frozen=True)
class Concentration:
    """How concentrated one arm's denominator is in a few units.

    ``units``: n; ``effective_units``: Kish's n_eff; ``effective_share``: n_eff / n;
    ``top_units``: how many units the top 1% is (ceil(n / 100), at least 1) and
    ``top_share`` their share of the denominator; ``top_10_share`` the share of the 10
    largest units (all of them below 10 units); ``concentrated``: effective_share is below
    :data:`CONCENTRATED_SHARE`.
    """

    units: int
    effective_units: float
    effective_share: float
    top_units: int
    top_share: float
    top_10_share: float
    concentrated: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins (NaN as None)."""
        return json_safe(
            {
                "units": self.units,
                "effective_units": self.effective_units,
                "effective_share": self.effective_share,
                "top_units": self.top_units,
                "top_share": self.top_share,
                "top_10_share": self.top_10_share,
                "concentrated": self.concentrated,
            }
        )


def concentration(denominator: np.ndarray) -> Concentration:
    """The concentration of an arm's per-unit denominators (impressions or queries)."""
    w = np.asarray(denominator, dtype=np.float64)
    n = int(w.size)
    total = float(w.sum())
    if n == 0 or total <= 0:
        return Concentration(n, math.nan, math.nan, 0, math.nan, math.nan, False)
    n_eff = effective_units(w)
    top = max(1, math.ceil(TOP_SHARE * n))
    k = min(n, max(top, TOP_UNITS))
    largest = np.sort(np.partition(w, n - k)[n - k :])[::-1]  # the k largest, O(n)
    share = n_eff / n
    return Concentration(
        units=n,
        effective_units=n_eff,
        effective_share=share,
        top_units=top,
        top_share=float(largest[:top].sum()) / total,
        top_10_share=float(largest[:TOP_UNITS].sum()) / total,
        concentrated=bool(share < CONCENTRATED_SHARE),
    )


def concentration_warning(
    arm: str, figures: Mapping[str, Any], unit: str, what: str, switched: bool
) -> str:
    """The warning of a concentrated arm, with its figures (:meth:`Concentration.to_dict`):
    ``unit`` names one unit (``user``), ``what`` the denominator (``impressions``);
    ``switched``: the jackknife gives the verdicts (the primary test is one that gives way
    to it), else the primary test keeps them."""
    units = unit if unit.endswith("s") else f"{unit}s"
    top, n = figures["top_units"], figures["units"]
    found = (
        f"{arm}: its {what} are concentrated in few {units}: Kish's effective number of "
        f"{units} is {figures['effective_units']:,.1f} of {n:,} "
        f"({figures['effective_share']:.1%}, below {CONCENTRATED_SHARE:.0%}); the top "
        f"{top:,} (1%) hold {figures['top_share']:.1%} of the {what} and the top "
        f"{min(TOP_UNITS, n)} hold {figures['top_10_share']:.1%}"
    )
    if switched:
        return (
            f"{found}. The delta method and the unit bootstrap do not hold their level with "
            f"so few effective {units}, so the verdicts come from the jackknife (leave one "
            f"{unit} out, on the effective {units} as degrees of freedom)"
        )
    return (
        f"{found}. The delta method and the unit bootstrap do not hold their level with so "
        f"few effective {units}; the primary test keeps the verdicts"
    )
