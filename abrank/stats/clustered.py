"""Clustered inference: users are randomized, so users (units), not impressions, are independent.

An arm's value is the mean of a metric over its impressions (or queries), written as a
ratio of per-unit sums R = sum_u M_u / sum_u D_u, where M_u is unit u's sum of the metric
and D_u its number of impressions with a value (:class:`UnitSums`). The impressions of one
user are correlated (the same person, the same habits), so a test that treats them as
independent is far too confident; every test here works on units:

* ``t``: the delta method (Deng, Knoblich & Lu, KDD 2018). Each unit's linearized value
  L_u = (M_u - R D_u) / mean(D) has mean 0 and sample variance
  (s_M^2 - 2 R s_MD + R^2 s_D^2) / mean(D)^2 (unbiased per-unit sample (co)variances), so
  Var(R) ~ var(L) / n; the difference's variance is the sum of the arms'. The test and
  its interval are Welch-style: t quantiles with Welch-Satterthwaite degrees of freedom
  from the two arms' linearized variances (at a few hundred units this is the normal
  test; at a few dozen it is less over-confident). The relative lift R_t / R_c - 1 has a
  delta-method interval on the log ratio, exp(log(R_t / R_c) +- q se) - 1 with
  se^2 = Var(R_t) / R_t^2 + Var(R_c) / R_c^2.
* ``permutation``: unit labels are permuted (a unit keeps all its impressions);
  p = (b + 1) / (B + 1).
* ``bootstrap``: units are resampled with replacement within each arm; a BCa interval
  (Hesterberg's expanded quantiles, as the other designs) and its p-value; left out below
  ``MIN_BOOTSTRAP`` units per arm.
* ``sequential``: the always-valid confidence sequence of the delta-method difference
  (:mod:`abrank.stats.sequential`; n = units in both arms, per-unit variance
  n (Var R_c + Var R_t)), and the relative lift's on the log ratio.
* ``jackknife`` (not configured: a regime rule): where an arm's impressions are
  concentrated in few units (Kish's effective number of units below 25% of them,
  :mod:`abrank.stats.concentration`), the delta method's t and the unit bootstrap do not
  hold their level, and the verdict, its interval and the lift's interval (Fieller's) come
  from the leave-one-unit-out jackknife on the effective units as degrees of freedom
  (:mod:`abrank.stats.unit_jackknife`); the comparison's ``regime`` holds the figures.

Resampling never touches rows one by one. While exact resampling of an arm (or of the
pooled arms) costs at most :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, the (M_u, D_u)
rows go through :func:`abrank.stats.resampling.prepare` (distinct rows or index draws) and
each resample is a pair of column sums. Above it, both tests work on the ratio's
delta-method linearization, which is 1-D (:mod:`abrank.stats.unit_lattice`): the bootstrap
draws each arm's resampled ratio from the exact bootstrap distribution of its linearized
values on a fine lattice (one FFT, whatever the number of units and resamples), the
permutation test relabels cells of the pooled linearization; each states its Bernstein
bound and the linearization's O(1/n) in the comparison's ``approximation``. The metrics of
one comparison run side by side on the usable cores.

CUPED (Deng, Xu, Kohavi & Walker, WSDM 2013) with a pre-period covariate of the same
metric per unit: both the metric and the covariate are linearized per unit as above, and
each arm's estimate is adjusted by theta = Cov(L_Y, L_X) / Var(L_X), pooled over both arms
(within-arm deviations). A unit without pre-period data (numerator and denominator 0)
has a covariate deviation of exactly 0: it contributes no adjustment (this is the
covariate's arm mean standing in for it). The adjusted comparison is tested by the delta
method only; the unit-level resampling tests are reported on the unadjusted data, in
``cuped["unadjusted"]``, beside the unadjusted delta, interval and p-value.

The parts: :mod:`~abrank.stats.clustered_sample` (what the tests read),
:mod:`~abrank.stats.clustered_delta` (``t`` and ``sequential``),
:mod:`~abrank.stats.clustered_resampling` (``permutation`` and ``bootstrap``),
:mod:`~abrank.stats.clustered_regime` (the jackknife where impressions are concentrated),
:mod:`~abrank.stats.clustered_result` (one comparison run and assembled, CUPED included);
this module checks the arguments and runs the metrics of two arms side by side.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from abrank.cores import MAX_THREADS, usable_cores
from abrank.errors import ConfigError
from abrank.stats.clustered_delta import DELTA_METHOD_TESTS
from abrank.stats.clustered_result import clustered_comparison
from abrank.stats.cuped import checked_covariate
from abrank.stats.results import Comparison
from abrank.stats.sequential import checked_tuning
from abrank.stats.settings import TestSettings
from abrank.stats.unit_draws import SharedUnitDraws, plan_unit_draws
from abrank.stats.unit_sums import UnitSums, checked_sums, rows_of
from abrank.stats.validation import validate, with_primary_interval

DEFAULT_TESTS = ("t", "permutation", "bootstrap")
CLUSTERED_TEST_NAMES = ("t", "permutation", "bootstrap", "sequential")
"""The tests a clustered comparison can run (rank tests of impressions cannot)."""


def checked_run(
    primary_test: Any,
    tests: Any,
    alpha: Any,
    confidence_level: Any,
    n_resamples: Any,
    seed: Any,
    metric: Any,
    treatment_name: Any,
    segment: Any,
    unit: Any,
    cuped: bool,
) -> tuple[str, ...]:
    """The tests to run, primary first (the bootstrap added when the primary test is not
    t); ConfigError naming the argument for a bad one."""
    run = validate(
        "independent",
        primary_test,
        tests,
        alpha,
        confidence_level,
        n_resamples,
        "zero",
        seed,
        metric,
        treatment_name,
        segment,
    )
    for argument, name in (("primary_test", run[0]), *(("tests", name) for name in run[1:])):
        if name not in CLUSTERED_TEST_NAMES:
            listed = ", ".join(repr(n) for n in CLUSTERED_TEST_NAMES)
            raise ConfigError(
                f"{argument}: expected one of {listed} for a clustered comparison (a rank "
                f"test of impressions treats them as independent), got {name!r}"
            )
    if not isinstance(unit, str) or not unit:
        raise ConfigError(f"unit: expected the name of the clustering column, got {unit!r}")
    if cuped and run[0] not in DELTA_METHOD_TESTS:
        raise ConfigError(
            f"primary_test: expected 't' or 'sequential' with a CUPED covariate (the "
            f"adjustment is a delta-method one), got {run[0]!r}"
        )
    return with_primary_interval(run)


def compare_clustered(
    control: UnitSums,
    treatment: UnitSums,
    *,
    unit: str = "user_id",
    primary_test: str = "t",
    tests: Sequence[str] = DEFAULT_TESTS,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    metric: str = "",
    treatment_name: str = "treatment",
    segment: str | None = None,
    covariate: tuple[UnitSums, UnitSums] | None = None,
    sequential_tuning: int | None = None,
) -> Comparison:
    """Compare a treatment's ratio-of-sums metric with the control's, clustered by ``unit``.

    ``control`` and ``treatment`` hold each arm's per-unit sums (:class:`UnitSums`). The
    result is an ``independent``-design :class:`Comparison` whose ``n`` counts units
    (``n_units`` per arm), ``n_control`` / ``n_treatment`` impressions (sum of D), and
    whose means are the arms' ratios. Tests: ``t`` (delta method, Welch-style),
    ``permutation`` (unit labels), ``bootstrap`` (units within each arm, BCa); see the
    module's text. ``effect_size`` is the delta over the pooled per-unit standard
    deviation of the linearized values, sqrt((Var(R_c) + Var(R_t)) / (1/n_c + 1/n_t)) (a
    Cohen's d on the impression scale); ``mde`` the smallest delta a t-test on this many
    units with that standard deviation detects with 80% power. Where an arm's impressions
    are concentrated in few units the jackknife gives the verdict, the interval, the lift's
    interval and the MDE instead of ``t`` or ``bootstrap`` (``primary_test`` and ``regime``
    say so; see the module's text).

    ``covariate`` = (control's, treatment's) pre-period sums of the same metric, in the
    same unit order: the main fields are then the CUPED-adjusted ones (the means stay the
    raw ratios) and ``cuped`` holds theta, the variance reduction of the delta, the units
    with pre-period data and the unadjusted comparison. Resampling is seeded from (seed,
    metric, treatment_name, segment), or, where the unit resamples are shared with other
    metrics (see :mod:`abrank.stats.unit_draws`), from (seed, units per arm,
    treatment_name, segment). ``sequential_tuning`` is the N* of the ``sequential`` test
    (None: tuned at the comparison's own sample size). Raises
    ConfigError / DataError for bad arguments.
    """
    return compare_clustered_metrics(
        {metric: control},
        {metric: treatment},
        covariates=None if covariate is None else {metric: covariate},
        unit=unit,
        primary_test=primary_test,
        tests=tests,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        treatment_name=treatment_name,
        segment=segment,
        sequential_tuning=sequential_tuning,
    )[0]


def checked_arguments(
    control: Any,
    treatment: Any,
    covariate: Any,
    *,
    unit: Any,
    primary_test: Any,
    tests: Any,
    alpha: Any,
    confidence_level: Any,
    n_resamples: Any,
    seed: Any,
    metric: Any,
    treatment_name: Any,
    segment: Any,
) -> tuple[tuple[str, ...], UnitSums, UnitSums, tuple[UnitSums, UnitSums] | None]:
    """The tests to run and the checked sums of one metric (see :func:`checked_run`)."""
    run = checked_run(
        primary_test,
        tests,
        alpha,
        confidence_level,
        n_resamples,
        seed,
        metric,
        treatment_name,
        segment,
        unit,
        covariate is not None,
    )
    control = checked_sums("control", control)
    treatment = checked_sums("treatment", treatment)
    return run, control, treatment, checked_covariate(covariate, control, treatment)


def compare_clustered_metrics(
    controls: Mapping[str, UnitSums],
    treatments: Mapping[str, UnitSums],
    *,
    covariates: Mapping[str, tuple[UnitSums, UnitSums]] | None = None,
    unit: str = "user_id",
    primary_test: str = "t",
    tests: Sequence[str] = DEFAULT_TESTS,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    treatment_name: str = "treatment",
    segment: str | None = None,
    sequential_tuning: int | None = None,
    settings: TestSettings | None = None,
) -> list[Comparison]:
    """:func:`compare_clustered` for several metrics of the same two arms, in the order of
    ``controls``; ``covariates`` maps some (or all) metrics to their pre-period sums.
    ``settings`` (a :class:`~abrank.stats.settings.TestSettings`), when given, stands for
    the keywords it holds.

    Each metric's numbers are exactly those of :func:`compare_clustered` on it alone.
    Metrics on as many units per arm (the same users) share one set of unit bootstrap
    draws and one set of unit-label permutations where drawing their own would cost
    more (:mod:`abrank.stats.unit_draws`): sharing saves time, never changes a result.
    The metrics' comparisons then run side by side on the usable cores
    (:func:`side_by_side`).
    """
    if list(controls) != list(treatments):
        raise ConfigError(
            f"treatments: expected the metrics of controls ({', '.join(map(str, controls))}), "
            f"got {', '.join(map(str, treatments))}"
        )
    if settings is not None:
        primary_test, tests, alpha = settings.primary_test, settings.tests, settings.alpha
        confidence_level, n_resamples = settings.confidence_level, settings.n_resamples
        seed, sequential_tuning = settings.seed, settings.sequential_tuning
    covariates = dict(covariates or {})
    unknown = [m for m in covariates if m not in controls]
    if unknown:
        raise ConfigError(
            f"covariates: expected metrics of controls ({', '.join(map(str, controls))}), "
            f"got {', '.join(map(str, unknown))}"
        )
    options = dict(
        unit=unit,
        primary_test=primary_test,
        tests=tests,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        treatment_name=treatment_name,
        segment=segment,
    )
    tuning = checked_tuning(sequential_tuning)
    checked = {
        m: checked_arguments(controls[m], treatments[m], covariates.get(m), metric=m, **options)
        for m in controls
    }
    groups: dict[tuple[int, int], list[str]] = {}  # metrics on as many units share draws
    for m, (_, c, t, _) in checked.items():
        groups.setdefault((c.n_units, t.n_units), []).append(m)
    draws: dict[str, SharedUnitDraws] = {}
    for names in groups.values():
        draws.update(
            plan_unit_draws(
                {m: (rows_of(checked[m][1]), rows_of(checked[m][2])) for m in names},
                {m: checked[m][0] for m in names},
                int(n_resamples),
                seed,
                treatment_name,
                segment,
            )
        )
    jobs = [
        functools.partial(
            clustered_comparison,
            c,
            t,
            pre,
            unit=unit,
            run=run,
            alpha=float(alpha),
            confidence_level=float(confidence_level),
            n_resamples=int(n_resamples),
            seed=seed,
            metric=m,
            treatment_name=treatment_name,
            segment=segment,
            draws=draws.get(m),
            sequential_tuning=tuning,
        )
        for m, (run, c, t, pre) in checked.items()
    ]
    return side_by_side(jobs)


def side_by_side(jobs: Sequence[Callable[[], Comparison]]) -> list[Comparison]:
    """The jobs' results in order, computed in one thread per usable core (up to
    MAX_THREADS): each job seeds its own generators and its resampling draws run in NumPy
    without the GIL, so the results are the same to the last digit on any number of
    cores."""
    threads = min(usable_cores(), MAX_THREADS, len(jobs))
    if threads < 2:
        return [job() for job in jobs]
    with ThreadPoolExecutor(threads, thread_name_prefix="abrank-clustered") as pool:
        return list(pool.map(lambda job: job(), jobs))
