"""The regime of a clustered comparison whose impressions are concentrated in few units.

Where an arm's denominators are concentrated (Kish's effective number of units below
:data:`abrank.stats.concentration.CONCENTRATED_SHARE` of its units), the delta method's t
and the unit bootstrap do not hold their level, and the leave-one-unit-out jackknife
(:mod:`abrank.stats.unit_jackknife`) gives the verdict instead.
"""

from __future__ import annotations

import math
from typing import Any

from abrank.stats import registry
from abrank.stats.clustered_sample import ClusteredSample
from abrank.stats.concentration import CONCENTRATED_SHARE, concentration
from abrank.stats.estimation import TestOutcome
from abrank.stats.unit_jackknife import jackknife_regime, jackknife_test
from abrank.stats.unit_sums import UnitSums

REGIME_TESTS = ("t", "bootstrap")
"""Configured primary tests that give way to the jackknife when an arm's impressions are
concentrated in few units: on simulated A/A logs with 1% of 500 users per arm at 100 times
the impressions, the delta-method t rejected 14% of true nulls and the unit bootstrap 20%.
The unit permutation test keeps its verdict (it holds its level there: 5-6%), and so does
the sequential test (its confidence sequence is the verdict's own)."""


def concentrated_regime(
    s: ClusteredSample, control: UnitSums, treatment: UnitSums, configured: str
) -> tuple[dict[str, Any], TestOutcome] | None:
    """The regime of a comparison whose arms' denominators are concentrated in few units
    (:mod:`abrank.stats.concentration`), and the jackknife's outcome that then gives the
    verdict (:mod:`abrank.stats.unit_jackknife`); None when the configured test keeps it:
    a test other than :data:`REGIME_TESTS`, fewer than two units an arm, arms without
    variance (the exact test of constant arms stands in), or no arm concentrated."""
    if configured not in REGIME_TESTS or not s.enough:
        return None
    c, t = s.control, s.treatment
    if math.sqrt(c.variance + t.variance) <= s.tol:
        return None
    figures = {"control": concentration(control.denominator)}
    figures["treatment"] = concentration(treatment.denominator)
    if not any(f.concentrated for f in figures.values()):
        return None
    found = jackknife_test(s.obs, c, t, control.denominator, treatment.denominator)
    if found is None:
        return None
    outcome, se, df = found
    return jackknife_regime(figures, configured, se, df), outcome


def concentrated_note(configured: str) -> str:
    """The note that says why the jackknife gave the verdict and what the line shows; the
    figures are in the comparison's ``regime``, so that the same note on many comparisons
    reads once."""
    test = {"t": "delta method's t-test", "bootstrap": "unit bootstrap"}.get(
        configured, f"{registry.test_display_names()[configured]} test"
    )
    own = {"t": "t-test's", "bootstrap": "bootstrap's"}.get(configured, f"{configured} test's")
    return (
        "impressions concentrated in few units (see regime: in an arm, Kish's effective "
        f"number of units is below {CONCENTRATED_SHARE:.0%} of its units): the {test} does "
        "not hold its level there, so the verdict, its interval and the lift's interval are "
        "the jackknife's (leave one unit out, on the effective number of units as degrees "
        f"of freedom; the {own} p-value stays in p_values)"
    )
