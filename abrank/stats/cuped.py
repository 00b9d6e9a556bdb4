"""CUPED (Deng, Xu, Kohavi & Walker, WSDM 2013) for ratio metrics clustered by unit.

The metric and its pre-period covariate (the same metric per unit, in the same unit order)
are both linearized per unit (:func:`abrank.stats.unit_sums.linearized`), and each arm's
estimate is adjusted by theta = Cov(L_Y, L_X) / Var(L_X), pooled over both arms' within-arm
deviations. A unit without pre-period data (numerator and denominator 0) has a covariate
deviation of exactly 0, so it contributes no adjustment: its arm's covariate mean stands
in for it.

A covariate without variance (every unit's pre-period mean the same value) cannot adjust
anything, but its deviations are rounding noise (about 1e-17) rather than exact zeros, and
their ratio would make theta a meaningless 1e13 or more that moves the delta and the
p-value. So the covariate counts as constant when its deviations are below
:data:`COVARIATE_REL_TOL` of the size of its values: theta is then 0, the estimates are the
unadjusted ones and the reported variance reduction is 0 (with a note).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.errors import ConfigError, DataError
from abrank.stats.unit_sums import ArmEstimate, UnitSums, checked_sums, linearized

COVARIATE_REL_TOL = 1e-9
"""A covariate whose deviations' root mean square is below this share of the root mean
square of its values (both per unit, over the mean denominator) has no variance."""


@dataclass(frozen=True)
class CupedAdjustment:
    """The CUPED-adjusted estimates of both arms and what the adjustment did.

    ``theta`` = Cov(L_Y, L_X) / Var(L_X) over both arms' within-arm deviations; each arm's
    estimate is R_a - theta (Rx_a - Rx), with Rx the pooled covariate ratio, and its
    deviations L_Y - theta L_X. ``units_with_covariate`` per arm counts units with
    pre-period data.
    """

    control: ArmEstimate
    treatment: ArmEstimate
    theta: float
    units_with_covariate: dict[str, int]


def cuped_adjustment(
    y_c: ArmEstimate, y_t: ArmEstimate, x_c: UnitSums, x_t: UnitSums
) -> CupedAdjustment:
    """Adjust the arms' linearized estimates ``y_c``, ``y_t`` by the covariate sums."""
    lx_c, lx_t = linearized(x_c), linearized(x_t)
    variance = float(lx_c.deviations @ lx_c.deviations + lx_t.deviations @ lx_t.deviations)
    covariance = float(y_c.deviations @ lx_c.deviations + y_t.deviations @ lx_t.deviations)
    theta = covariance / variance if variance > _noise_floor(x_c, x_t, lx_c, lx_t) else 0.0
    total_d = float(x_c.denominator.sum() + x_t.denominator.sum())
    pooled = float(x_c.numerator.sum() + x_t.numerator.sum()) / total_d if total_d > 0 else 0.0

    def adjusted(y: ArmEstimate, x: ArmEstimate) -> ArmEstimate:
        shift = x.estimate - pooled if math.isfinite(x.estimate) else 0.0
        return ArmEstimate(y.estimate - theta * shift, y.deviations - theta * x.deviations)

    return CupedAdjustment(
        control=adjusted(y_c, lx_c),
        treatment=adjusted(y_t, lx_t),
        theta=theta,
        units_with_covariate={
            "control": int(np.count_nonzero(x_c.denominator > 0)),
            "treatment": int(np.count_nonzero(x_t.denominator > 0)),
        },
    )


def _noise_floor(x_c: UnitSums, x_t: UnitSums, lx_c: ArmEstimate, lx_t: ArmEstimate) -> float:
    """The sum of squared deviations below which the covariate is constant: the
    (:data:`COVARIATE_REL_TOL`)^2 share of the sum of squares of the units' values on the
    deviations' scale (|M_u| + |R| D_u) / mean(D), where rounding leaves its noise."""
    floor = 0.0
    for sums, lx in ((x_c, lx_c), (x_t, lx_t)):
        n, total_d = sums.numerator.size, float(sums.denominator.sum())
        if n == 0 or total_d <= 0:
            continue
        ratio = abs(lx.estimate) if math.isfinite(lx.estimate) else 0.0
        scale = (np.abs(sums.numerator) + ratio * np.abs(sums.denominator)) / (total_d / n)
        floor += float(scale @ scale)
    return floor * COVARIATE_REL_TOL**2


def checked_covariate(
    covariate: Any, control: UnitSums, treatment: UnitSums
) -> tuple[UnitSums, UnitSums] | None:
    """The (control, treatment) covariate sums, checked against the arms' units."""
    if covariate is None:
        return None
    if not isinstance(covariate, (tuple, list)) or len(covariate) != 2:
        raise ConfigError(
            "covariate: expected a (control, treatment) pair of UnitSums, "
            f"got {type(covariate).__name__}"
        )
    pair = []
    for arm, sums, of in zip(("control", "treatment"), covariate, (control, treatment)):
        checked = checked_sums(f"covariate[{arm}]", sums, covariate=True)
        if checked.n_units != of.n_units:
            raise DataError(
                f"covariate[{arm}]: expected one value per unit of the {arm} arm "
                f"({of.n_units} units, same order), got {checked.n_units}"
            )
        pair.append(checked)
    return pair[0], pair[1]
