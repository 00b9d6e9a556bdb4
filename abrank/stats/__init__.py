"""Comparing a treatment arm with the control on one metric: deltas, tests, intervals.

``compare`` turns two sets of per-query values into one :class:`Comparison`: the mean
delta (always treatment - control), the primary test's p-value and interval, the
randomization test, BCa bootstrap intervals for the delta and the relative lift, effect
size, minimum detectable effect and win/tie/loss counts. ``adjust`` applies a
multiple-testing correction over a family of comparisons.

Two designs, one module each:

* ``paired`` (:mod:`~abrank.stats.paired`; the same queries replayed through both
  rankers): a one-sample analysis of the per-query deltas; paired t-test, sign-flip
  randomization test, paired bootstrap, Wilcoxon signed-rank (opt-in).
* ``independent`` (:mod:`~abrank.stats.independent`; different queries per arm, as in an
  online A/B test): Welch t-test, label-permutation test, per-arm bootstrap, Mann-Whitney
  U (opt-in).

``compare_clustered`` (:mod:`~abrank.stats.clustered`) is the independent design when
users, not impressions, are randomized: each arm's value is a ratio of per-unit sums
(:class:`UnitSums`), tested by the delta method, unit-label permutation and the unit
bootstrap, optionally CUPED-adjusted (:mod:`~abrank.stats.cuped`), on the per-unit sums
and linearization of :mod:`~abrank.stats.unit_sums`; its metrics share unit resamples
(:mod:`~abrank.stats.unit_draws`) and, at very many distinct units, resample grid cells
with a variance-based error bound (:mod:`~abrank.stats.unit_grid`).
``compare_interleaved`` (:mod:`~abrank.stats.interleaved`) tests the treatment's preference
Δ_AB in an interleaving test, clustered on the user (delta method and unit bootstrap), and
``first_team_balance`` checks that each team contributed the first result half the time.
``sample_ratio_mismatch`` (:mod:`~abrank.stats.srm`) checks the units per arm against the
expected split.

The tests and corrections are listed once, in :mod:`~abrank.stats.registry`
(:data:`TESTS`, :data:`CORRECTIONS`); each design registers one function per test. The
rest: :mod:`~abrank.stats.results` (the result and its one constructor),
:mod:`~abrank.stats.validation` (the argument checks), :mod:`~abrank.stats.multitest`
(``adjust``), :mod:`~abrank.stats.power` (the MDE), :mod:`~abrank.stats.seeding` (the
generators), :mod:`~abrank.stats.draws` (resamples shared by the metrics of one
comparison), :mod:`~abrank.stats.resampling` and :mod:`~abrank.stats.fast`.

Degenerate data never produce NaN or a crash: identical arms give delta 0, interval
[0, 0] and p = 1; fewer than two pairs give p = 1 and an unbounded interval; a constant
delta has a zero-width interval. Resampling is seeded per comparison from (seed, metric,
treatment, segment) and per test, so results are reproducible to the last digit and do
not depend on which other tests or comparisons were run. Where a metric's own draws
would be costly (many queries, many distinct values), it draws from resamples of its
queries seeded from (seed, number of queries, treatment, segment) instead, which
``compare_metrics`` computes once for all the metrics of a comparison. See
:mod:`abrank.stats.resampling` for how resampling stays fast at a million queries.

The tables are imported at once (they are light); the computing parts on first use, so
that the CLI and the config can read the tables without importing NumPy and pandas.
"""

from __future__ import annotations

from typing import Any

from abrank._lazy import lazy_attribute
from abrank.stats.registry import CORRECTIONS, DESIGNS, TESTS, CorrectionSpec, TestSpec

_LAZY = {
    "compare": "abrank.stats.api",
    "compare_metrics": "abrank.stats.api",
    "adjust": "abrank.stats.multitest",
    "Comparison": "abrank.stats.results",
    "fieller_interval": "abrank.stats.estimation",
    "MIN_BOOTSTRAP": "abrank.stats.estimation",
    "MIN_LIFT_SHARE": "abrank.stats.estimation",
    "POWER": "abrank.stats.power",
    "MISSING": "abrank.stats.validation",
    "UnitSums": "abrank.stats.unit_sums",
    "compare_clustered": "abrank.stats.clustered",
    "compare_clustered_metrics": "abrank.stats.clustered",
    "SampleRatioCheck": "abrank.stats.srm",
    "sample_ratio_mismatch": "abrank.stats.srm",
    "SRM_ALPHA": "abrank.stats.srm",
    "PreferenceCounts": "abrank.stats.interleaved",
    "compare_interleaved": "abrank.stats.interleaved",
    "first_team_balance": "abrank.stats.interleaved",
    "first_team_check": "abrank.stats.interleaved",
    "preference_counts": "abrank.stats.interleaved",
}

__all__ = ["CORRECTIONS", "DESIGNS", "TESTS", "CorrectionSpec", "TestSpec", *_LAZY]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
