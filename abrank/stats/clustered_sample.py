"""The sample of one clustered comparison: what its tests read.

Each arm's estimate and per-unit deviations (:class:`abrank.stats.unit_sums.ArmEstimate`;
CUPED-adjusted where a covariate is given), the raw (M, D) rows that the resampling tests
draw from, the observed delta with its tolerance, and the names that seed the
comparison's generators (:mod:`abrank.stats.seeding`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from abrank.stats.estimation import REL_TOL
from abrank.stats.seeding import generator
from abrank.stats.sequential import SequenceTuning
from abrank.stats.unit_draws import SharedUnitDraws
from abrank.stats.unit_sums import ArmEstimate, UnitSums, rows_of


@dataclass(frozen=True)
class ClusteredSample:
    """What the tests of one clustered comparison need: the arms' estimates and
    deviations (adjusted under CUPED), the raw (M, D) rows for resampling, and the
    comparison's names for its generators; ``sequential`` tunes the ``sequential``
    test's confidence sequence."""

    control: ArmEstimate
    treatment: ArmEstimate
    rows_c: np.ndarray
    rows_t: np.ndarray
    obs: float
    tol: float
    n_resamples: int
    seed: int | None
    metric: str
    treatment_name: str
    segment: str | None
    draws: SharedUnitDraws = SharedUnitDraws()
    sequential: SequenceTuning = SequenceTuning()

    @property
    def enough(self) -> bool:
        """Both arms have at least two units."""
        return self.control.n >= 2 and self.treatment.n >= 2

    @property
    def smallest(self) -> int:
        return min(self.control.n, self.treatment.n)

    def generator(self, stream: str) -> np.random.Generator:
        """This comparison's own generator for one kind of draw."""
        return generator(self.seed, self.metric, self.treatment_name, self.segment, stream)


def sample_of(
    c: ArmEstimate,
    t: ArmEstimate,
    control: UnitSums,
    treatment: UnitSums,
    *,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    draws: SharedUnitDraws | None = None,
    sequential: SequenceTuning | None = None,
) -> ClusteredSample:
    """The sample of two arms' estimates and sums (``draws``: resamples shared with other
    metrics, see :mod:`abrank.stats.unit_draws`)."""
    both = c.n > 0 and t.n > 0
    obs = t.estimate - c.estimate if both else math.nan
    scale = abs(control.ratio) + abs(treatment.ratio) if both else 0.0
    return ClusteredSample(
        control=c,
        treatment=t,
        rows_c=rows_of(control),
        rows_t=rows_of(treatment),
        obs=obs,
        tol=REL_TOL * (scale + (abs(obs) if both else 0.0)),
        n_resamples=n_resamples,
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
        draws=draws or SharedUnitDraws(),
        sequential=sequential or SequenceTuning(),
    )
