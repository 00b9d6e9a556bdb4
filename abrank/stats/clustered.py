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
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import stdtr, stdtrit

from abrank.cores import MAX_THREADS, usable_cores
from abrank.errors import ConfigError
from abrank.stats import registry
from abrank.stats import resampling as rs
from abrank.stats.concentration import CONCENTRATED_SHARE, concentration
from abrank.stats.constant_arms import constant_arms_p
from abrank.stats.cuped import checked_covariate, cuped_adjustment
from abrank.stats.estimation import (
    MIN_BOOTSTRAP,
    NOTE_LIFT,
    REL_TOL,
    UNBOUNDED,
    DesignTests,
    TestOutcome,
    count_extreme,
    lift,
    primary_interval,
    t_interval,
)
from abrank.stats.power import POWER, minimum_detectable_effect
from abrank.stats.results import Comparison, Interval, build_comparison, json_safe
from abrank.stats.seeding import generator
from abrank.stats.sequential import CI_METHOD as SEQUENCE_METHOD
from abrank.stats.sequential import (
    SequenceTuning,
    checked_tuning,
    detectable_delta,
    lift_of_log,
    log_ratio_sequence,
    mean_sequence,
)
from abrank.stats.unit_draws import SharedUnitDraws, plan_unit_draws, relabel_row_sums
from abrank.stats.unit_grid import prepared_units
from abrank.stats.unit_jackknife import (
    JACKKNIFE,
    jackknife_regime,
    jackknife_test,
    t_test_mde,
)
from abrank.stats.unit_lattice import (
    UNIT_BUDGET_NS,
    LinearCells,
    lattice_bootstrap,
    linear_cells,
)
from abrank.stats.unit_sums import ArmEstimate, UnitSums, checked_sums, linearized, rows_of
from abrank.stats.validation import validate, with_primary_interval

DEFAULT_TESTS = ("t", "permutation", "bootstrap")
CLUSTERED_TEST_NAMES = ("t", "permutation", "bootstrap", "sequential")
"""The tests a clustered comparison can run (rank tests of impressions cannot)."""
DELTA_METHOD_TESTS = ("t", "sequential")
"""The tests of the delta-method estimate: the only ones a CUPED adjustment applies to."""

NOTE_FEW_UNITS = "fewer than 2 units in an arm: no test or interval is possible"
NOTE_SMALL_UNITS = (
    f"fewer than {MIN_BOOTSTRAP} units in an arm: the unit bootstrap is left out "
    "(it is too narrow at this size)"
)
NOTE_CUPED = (
    "CUPED: the delta, interval, p-value and relative lift are adjusted by the pre-period "
    "covariate (delta method); the permutation and bootstrap tests are not adjusted and "
    "are reported, with the unadjusted comparison, under cuped.unadjusted"
)
NOTE_NO_COVARIATE = (
    "CUPED: the pre-period covariate has no variance (no unit has pre-period data, or every "
    "unit's is the same value), so nothing was adjusted (theta 0, variance reduction 0)"
)


# --------------------------------------------------------------------------- the sample


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


# --------------------------------------------------------------------------- the tests


CLUSTERED_TESTS: DesignTests[ClusteredSample] = DesignTests("independent")


def welch_df(v_c: float, v_t: float, n_c: int, n_t: int) -> float:
    """Welch-Satterthwaite degrees of freedom of the sum of two variances of means."""
    denominator = v_c**2 / (n_c - 1) + v_t**2 / (n_t - 1)
    return (v_c + v_t) ** 2 / denominator if denominator > 0 else math.inf


def log_exact_p(n_c: int, n_t: int) -> float:
    """The exact permutation p of two constant arms: (1 + [n_c = n_t]) / C(n_c + n_t, n_t),
    capped at 1 (:func:`abrank.stats.constant_arms.constant_arms_p`)."""
    return constant_arms_p(n_c, n_t)


@CLUSTERED_TESTS.register("t")
def delta_method_test(s: ClusteredSample) -> TestOutcome:
    """The delta-method test of the difference of the arms' estimates (Welch-style t).

    When no unit deviates from its arm's ratio (no variance), the exact unit-label
    permutation test of two constant arms stands in (p = 1 / C(n_c + n_t, n_t), twice that
    for arms of equal size).
    """
    if not s.enough:
        return TestOutcome(math.nan, lambda level: UNBOUNDED, "t")
    c, t, obs = s.control, s.treatment, s.obs
    v_c, v_t = c.variance, t.variance
    se = math.sqrt(v_c + v_t)
    if se <= s.tol:
        if abs(obs) <= s.tol:
            return TestOutcome(1.0, lambda level: (obs, obs), "t")
        shifted = log_exact_p(c.n, t.n)

        def exact_at(level: float) -> Interval:
            return (obs, obs) if shifted < 1.0 - level else UNBOUNDED

        return TestOutcome(shifted, exact_at, "t")
    df = welch_df(v_c, v_t, c.n, t.n)
    p = float(2.0 * stdtr(df, -abs(obs) / se))
    return TestOutcome(
        min(1.0, p),
        lambda level: t_interval(obs, se, df, level),
        "t",
        relative=log_ratio_interval(c, t),
    )


def log_ratio_interval(c: ArmEstimate, t: ArmEstimate) -> Callable[[float], Interval | None] | None:
    """The delta-method interval of t / c - 1 on the log ratio, as a function of its
    level; None when the lift is not reported or the ratio is not positive."""
    rc, rt = c.estimate, t.estimate
    if lift(rc, rt, True) is None or not rt / rc > 0:
        return None
    a, b = t.variance / rt**2, c.variance / rc**2
    se = math.sqrt(a + b)
    df = welch_df(b, a, c.n, t.n)
    centre = math.log(rt / rc)

    def relative(level: float) -> Interval | None:
        if not math.isfinite(se):
            return None
        half = float(stdtrit(df, 0.5 + level / 2.0)) * se if se > 0 else 0.0
        return (lift_of_log(centre - half), lift_of_log(centre + half))

    return relative


@CLUSTERED_TESTS.register("sequential")
def delta_method_sequence(s: ClusteredSample) -> TestOutcome:
    """The always-valid test of the difference of the arms' estimates: the confidence
    sequence over n = units in both arms with per-unit variance n (Var R_c + Var R_t), and
    the relative lift's on the log ratio. Too few units or no variance: the delta-method
    test's stand-ins."""
    c, t = s.control, s.treatment
    if not s.enough or math.sqrt(c.variance + t.variance) <= s.tol:
        return delta_method_test(s)
    n = c.n + t.n
    relative = None
    if lift(c.estimate, t.estimate, True) is not None:
        relative = log_ratio_sequence(
            c.estimate, t.estimate, c.variance, t.variance, 0.0, n, s.sequential
        )
    variance = n * (c.variance + t.variance)
    return mean_sequence(s.obs, n, variance, s.sequential, relative=relative)


@CLUSTERED_TESTS.register("permutation")
def unit_permutation_test(s: ClusteredSample) -> TestOutcome:
    """Unit-label permutation test of R_t - R_c: a unit moves with all its impressions.

    The relabelled sums come from the shared draws, from the pooled (M, D) rows' own draws
    while they cost at most :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, else from
    relabelling cells of the pooled ratio's linearization where they are fewer than its
    distinct rows (:func:`linear_permutation_test`), else from the rows' own draws or
    grid cells.
    """
    n_c, n_t = s.control.n, s.treatment.n
    if n_c == 0 or n_t == 0:
        return TestOutcome(math.nan)
    pooled = np.concatenate([s.rows_t, s.rows_c])
    total = pooled.sum(axis=0)
    if s.draws.relabel is None and rs.exact_cost(pooled, s.n_resamples) > UNIT_BUDGET_NS:
        values = linearized(UnitSums(pooled[:, 0], pooled[:, 1])).deviations
        cells = linear_cells(values, min(n_c, n_t))
        if cells.sample.method == "grid":
            return linear_permutation_test(s, values, cells)
    bound = None
    if s.draws.relabel is not None:
        first = s.draws.relabel
    else:
        sample, bound = prepared_units(pooled, s.n_resamples, min(n_c, n_t))
        first = relabel_row_sums(sample, n_t, s.n_resamples, s.generator("permutation"))
    rest = total - first
    null = first[:, 0] / first[:, 1] - rest[:, 0] / rest[:, 1]
    b = count_extreme(null, s.obs, s.tol)
    approx: tuple[str, ...] = ()
    if bound is not None:
        ratio = float(total[0] / total[1])
        mean_d = float(total[1]) / (n_c + n_t)
        within = bound(n_t, ratio, mean_d) + bound(n_c, ratio, mean_d)
        approx = (f"the unit permutation test ({sample.atoms.m} cells, within ±{within:.2g})",)
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


def linear_permutation_test(
    s: ClusteredSample, values: np.ndarray, cells: LinearCells
) -> TestOutcome:
    """The unit-label permutation test on the pooled linearization ``values``, L_u =
    (M_u - R D_u) / d (R and d pooled; treatment's units first), relabelled through
    ``cells``: a relabelled R_first - R_rest is S / n_t - (sum(L) - S) / n_c to O(1/n),
    with S the sum of L over the units labelled treatment."""
    n_c, n_t = s.control.n, s.treatment.n
    first = relabel_row_sums(cells.sample, n_t, s.n_resamples, s.generator("permutation"))[:, 0]
    null = first / n_t - (float(values.sum()) - first) / n_c
    b = count_extreme(null, s.obs, s.tol)
    within = cells.bound(n_t) * (1.0 + n_t / n_c)
    approx = (
        f"the unit permutation test (the pooled ratio's delta-method linearization, "
        f"{cells.sample.atoms.m} cells, within ±{within:.2g}, plus the linearization's "
        "O(1/n))",
    )
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


@CLUSTERED_TESTS.register("bootstrap")
def unit_bootstrap(s: ClusteredSample) -> TestOutcome:
    """BCa bootstrap of R_t - R_c resampling units within each arm (its p-value and
    interval); left out below MIN_BOOTSTRAP units per arm.

    Each arm's resampled ratios come from the shared draws, from its own exact draws
    while they cost at most :data:`abrank.stats.unit_lattice.UNIT_BUDGET_NS`, else from
    the exact bootstrap distribution of its linearization on a lattice
    (:mod:`abrank.stats.unit_lattice`), else from grid cells.
    """
    if s.smallest < MIN_BOOTSTRAP:
        return TestOutcome(math.nan, notes=(NOTE_SMALL_UNITS,) if s.enough else ())
    rng = s.generator("bootstrap")
    ratios, jacks, bounds, linear = [], [], [], False
    shared = (s.draws.boot_c, s.draws.boot_t)
    arms = (s.control, s.treatment)
    for rows, drawn, arm in zip((s.rows_c, s.rows_t), shared, arms, strict=True):
        total = rows.sum(axis=0)
        n = rows.shape[0]
        ratio = float(total[0] / total[1])
        atoms = rs.exact_atoms(rows)
        lattice = None
        if drawn is None and rs.atoms_cost(atoms, rows.size, s.n_resamples) > UNIT_BUDGET_NS:
            lattice = lattice_bootstrap(arm.deviations)
        if drawn is not None:
            ratios.append(drawn[:, 0] / drawn[:, 1])
            bounds.append(0.0)
        elif lattice is not None:
            ratios.append(ratio + lattice.draw(s.n_resamples, rng))
            bounds.append(lattice.bound)
            linear = True
        else:
            sample, bound = prepared_units(rows, s.n_resamples, n)
            sums = rs.bootstrap_sums(sample, s.n_resamples, rng)
            ratios.append(sums[:, 0] / sums[:, 1])
            if bound is not None:
                atoms = rs.Atoms(rows, np.ones(n, dtype=np.int64))
                bounds.append(bound(n, ratio, float(total[1]) / n))
            else:
                atoms = sample.atoms
                bounds.append(0.0)
        # leave-one-unit-out ratios, at each distinct row
        values = atoms.values
        jacks.append(((total[0] - values[:, 0]) / (total[1] - values[:, 1]), atoms.counts))
    boot_c, boot_t = ratios
    resampled = boot_t - boot_c
    (jack_c, wc), (jack_t, wt) = jacks
    rc, rt = s.control.estimate, s.treatment.estimate
    corrected = rs.bca(s.obs, resampled, [(rt - jack_c, wc), (jack_t - rc, wt)], s.tol)
    smallest = s.smallest
    approx: tuple[str, ...] = ()
    if linear:
        approx = (
            f"the unit bootstrap (each arm's ratio by its delta-method linearization, "
            f"resampled exactly on a lattice: within ±{sum(bounds):.2g}, plus the "
            f"linearization's O(1/n))",
        )
    elif any(bounds):
        approx = (f"the unit bootstrap (ratios within ±{sum(bounds):.2g})",)
    return TestOutcome(
        corrected.p_value(0.0, expand=smallest),
        lambda level: corrected.interval(level, expand=smallest),
        "bca",
        resampled=resampled,
        approximations=approx,
    )


# --------------------------------------------------------------------------- entry points


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


def clustered_comparison(
    control: UnitSums,
    treatment: UnitSums,
    covariate: tuple[UnitSums, UnitSums] | None,
    *,
    unit: str,
    run: tuple[str, ...],
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    draws: SharedUnitDraws | None,
    sequential_tuning: int | None = None,
) -> Comparison:
    """The comparison of checked arguments (see :func:`compare_clustered`)."""
    names = dict(
        n_resamples=n_resamples,
        seed=seed,
        metric=metric,
        segment=segment,
        sequential=SequenceTuning.of(sequential_tuning, confidence_level),
    )
    y_c, y_t = linearized(control), linearized(treatment)
    raw = sample_of(
        y_c, y_t, control, treatment, treatment_name=treatment_name, draws=draws, **names
    )
    outcomes = CLUSTERED_TESTS.run(run, raw)
    labels = dict(
        unit=unit,
        run=run,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
    )
    unadjusted = build(raw, outcomes, control, treatment, cuped=False, **labels)
    if covariate is None:
        return unadjusted
    adjustment = cuped_adjustment(y_c, y_t, *covariate)
    sample = sample_of(
        adjustment.control,
        adjustment.treatment,
        control,
        treatment,
        treatment_name=treatment_name,
        **names,
    )
    adjusted = CLUSTERED_TESTS.run([name for name in run if name in DELTA_METHOD_TESTS], sample)
    adjusted_outcomes = {  # resampling tests: unadjusted only
        name: adjusted.get(name, TestOutcome(math.nan)) for name in outcomes
    }
    adjusted = build(sample, adjusted_outcomes, control, treatment, cuped=True, **labels)
    var_raw = y_c.variance + y_t.variance
    var_adj = adjustment.control.variance + adjustment.treatment.variance
    reduction = 1.0 - var_adj / var_raw if var_raw > 0 else math.nan
    notes = list(adjusted.notes)
    if adjustment.theta == 0.0:
        notes.append(NOTE_NO_COVARIATE)
    cuped = {
        "theta": adjustment.theta,
        "variance_reduction": reduction,
        "units_with_covariate": adjustment.units_with_covariate,
        "unadjusted": {
            "delta": unadjusted.delta,
            "ci": unadjusted.ci,
            "p_value": unadjusted.p_value,
            "relative_lift": unadjusted.relative_lift,
            "relative_ci": unadjusted.relative_ci,
            "ci_method": unadjusted.ci_method,
            "p_values": dict(unadjusted.p_values),
            "bootstrap_ci": unadjusted.bootstrap_ci,
            "mde": unadjusted.mde,
            "effect_size": unadjusted.effect_size,
        },
    }
    return dataclasses.replace(adjusted, cuped=json_safe(cuped), notes=tuple(notes))


def build(
    s: ClusteredSample,
    outcomes: dict[str, TestOutcome],
    control: UnitSums,
    treatment: UnitSums,
    *,
    unit: str,
    run: tuple[str, ...],
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    metric: str,
    treatment_name: str,
    segment: str | None,
    cuped: bool,
) -> Comparison:
    """The :class:`Comparison` of a clustered sample and its tests' outcomes."""
    c, t = s.control, s.treatment
    n_c, n_t = c.n, t.n
    notes: list[str] = []
    if not s.enough:
        notes.append(NOTE_FEW_UNITS)
    if cuped:
        notes.append(NOTE_CUPED)
    relative = lift(c.estimate, t.estimate, n_c > 0 and n_t > 0)
    if n_c > 0 and n_t > 0 and relative is None and c.estimate != 0:
        notes.append(NOTE_LIFT)
    for outcome in outcomes.values():
        notes.extend(outcome.notes)
    verdict_test = run[0]
    concentrated = concentrated_regime(s, control, treatment, run[0])
    if concentrated is not None:
        regime, jackknife = concentrated
        outcomes = {**outcomes, JACKKNIFE: jackknife}
        verdict_test = JACKKNIFE
        notes.append(concentrated_note(run[0]))
    primary_at, method = primary_interval(verdict_test, outcomes)
    how = "delta method + CUPED" if cuped else "delta method"
    if method == SEQUENCE_METHOD:
        how = f"{SEQUENCE_METHOD} ({how})"
    elif method == "bca":
        how = "unit bootstrap (BCa)"
    elif method == JACKKNIFE:
        how = "jackknife + CUPED" if cuped else "jackknife"
    ci_method = f"{how}, clustered by {unit}"
    variance = c.variance + t.variance
    sd = math.sqrt(variance / (1.0 / n_c + 1.0 / n_t)) if s.enough else math.nan

    def mde_at(a: float) -> float | None:
        if not s.enough:
            return None
        if run[0] == "sequential":  # the MDE of the test that gives the verdict
            return detectable_delta(n_c + n_t, (n_c + n_t) * variance, a, s.sequential)
        if concentrated is not None:
            return t_test_mde(regime["se"], regime["df"], a, POWER)
        return minimum_detectable_effect(n_c, sd, a, ratio=n_t / n_c)

    boot = outcomes.get("bootstrap")
    result = build_comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design="independent",
        counts=(
            n_c + n_t,
            int(round(float(control.denominator.sum()))),
            int(round(float(treatment.denominator.sum()))),
        ),
        control_mean=control.ratio,
        treatment_mean=treatment.ratio,
        delta=s.obs,
        relative_lift=relative,
        p_values={name: outcome.p_value for name, outcome in outcomes.items()},
        primary_test=verdict_test,
        primary_at=primary_at,
        ci_method=ci_method,
        bootstrap_at=boot.interval if boot is not None and boot.interval else None,
        relative_at=relative_at(verdict_test, outcomes),
        regime=None if concentrated is None else regime,
        mde_at=mde_at,
        effect_size=s.obs / sd if s.enough and sd > 0 else math.nan,
        wins_ties_losses=(0, 0, 0),
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximations=[a for outcome in outcomes.values() for a in outcome.approximations],
        notes=notes,
        resampled_deltas=boot.resampled if boot is not None else None,
    )
    return dataclasses.replace(result, unit=unit, n_units={"control": n_c, "treatment": n_t})


def relative_at(
    primary_test: str, outcomes: dict[str, TestOutcome]
) -> Callable[[float], Interval | None] | None:
    """The relative lift's interval: the jackknife's (Fieller's) or the confidence
    sequence's when it gives the verdict, else the delta-method t-interval's."""
    if primary_test == JACKKNIFE:
        return outcomes[JACKKNIFE].relative
    for name in (primary_test, "t"):
        if name in DELTA_METHOD_TESTS and name in outcomes:
            return outcomes[name].relative
    return None


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
) -> list[Comparison]:
    """:func:`compare_clustered` for several metrics of the same two arms, in the order of
    ``controls``; ``covariates`` maps some (or all) metrics to their pre-period sums.

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
