"""The independent design: different queries (or users) in each arm, as in an online A/B test.

Each test is one function of an :class:`IndependentSample`, registered in
:data:`INDEPENDENT_TESTS` under its :mod:`abrank.stats.registry` name: Welch's t-test (and
its interval), the label-permutation test, the per-arm BCa bootstrap (and the relative
lift's interval), the Mann-Whitney U test, the always-valid confidence sequence of the
difference (:mod:`abrank.stats.sequential`). :func:`compare_independent` runs the tests a
comparison asks for and builds its :class:`~abrank.stats.results.Comparison`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from abrank.stats import resampling as rs
from abrank.stats.constant_arms import constant_arms_p
from abrank.stats.estimation import (
    GRID_BINS_DELTA,
    MIN_BOOTSTRAP,
    NOTE_LIFT,
    NOTE_ONE,
    NOTE_SMALL,
    REL_TOL,
    UNBOUNDED,
    DesignTests,
    TestOutcome,
    count_extreme,
    fieller_interval,
    finite_or,
    lift,
    primary_interval,
    t_interval,
)
from abrank.stats.power import minimum_detectable_effect
from abrank.stats.results import Comparison, build_comparison
from abrank.stats.seeding import generator
from abrank.stats.sequential import (
    SequenceTuning,
    detectable_delta,
    log_ratio_sequence,
    mean_sequence,
)

NOTE_NO_VARIANCE = (
    "no variance in either arm: the Welch test is undefined, so its p-value and "
    "interval are the exact label-permutation test's"
)


@dataclass(frozen=True)
class IndependentSample:
    """The two arms' values (NaN dropped) and what the tests need to know.

    ``obs`` is the observed delta, 0 when an arm is empty; ``enough``: both arms have at
    least two values; ``smallest`` the smaller arm's size; ``sequential`` tunes the
    ``sequential`` test's confidence sequence.
    """

    c: np.ndarray
    t: np.ndarray
    n_c: int
    n_t: int
    mean_c: float
    mean_t: float
    obs: float
    var_c: float
    var_t: float
    tol: float
    both: bool
    enough: bool
    smallest: int
    lift: float | None
    n_resamples: int
    seed: int | None
    metric: str
    treatment_name: str
    segment: str | None
    sequential: SequenceTuning = SequenceTuning()

    @classmethod
    def of(
        cls,
        c: np.ndarray,
        t: np.ndarray,
        *,
        n_resamples: int,
        seed: int | None,
        metric: str,
        treatment_name: str,
        segment: str | None,
        sequential: SequenceTuning | None = None,
    ) -> IndependentSample:
        """The sample of arms ``c`` and ``t``, with their summary statistics."""
        n_c, n_t = int(c.size), int(t.size)
        mean_c = float(c.mean()) if n_c else math.nan
        mean_t = float(t.mean()) if n_t else math.nan
        both = n_c > 0 and n_t > 0
        obs = mean_t - mean_c if both else 0.0
        scale = (float(np.abs(c).mean()) if n_c else 0.0) + (
            float(np.abs(t).mean()) if n_t else 0.0
        )
        return cls(
            c=c,
            t=t,
            n_c=n_c,
            n_t=n_t,
            mean_c=mean_c,
            mean_t=mean_t,
            obs=obs,
            var_c=float(c.var(ddof=1)) if n_c >= 2 else math.nan,
            var_t=float(t.var(ddof=1)) if n_t >= 2 else math.nan,
            tol=REL_TOL * (scale + abs(obs)),
            both=both,
            enough=n_c >= 2 and n_t >= 2,
            smallest=min(n_c, n_t),
            lift=lift(mean_c, mean_t, both),
            n_resamples=n_resamples,
            seed=seed,
            metric=metric,
            treatment_name=treatment_name,
            segment=segment,
            sequential=sequential or SequenceTuning(),
        )

    @property
    def no_variance(self) -> bool:
        """Both arms hold at least two values, all equal within each arm."""
        return self.enough and self.var_c == 0 and self.var_t == 0

    def generator(self, stream: str) -> np.random.Generator:
        """This comparison's own generator for one kind of draw."""
        return generator(self.seed, self.metric, self.treatment_name, self.segment, stream)


INDEPENDENT_TESTS: DesignTests[IndependentSample] = DesignTests("independent")


@INDEPENDENT_TESTS.register("t")
def welch_t_test(s: IndependentSample) -> TestOutcome:
    """Welch's t-test and interval; with no variance in either arm, the exact
    label-permutation test of two constant samples stands in (p = 1 / C(n_c + n_t, n_t),
    twice that for samples of equal size: :func:`abrank.stats.constant_arms.constant_arms_p`)."""
    from scipy import stats as sps

    n_c, n_t, obs = s.n_c, s.n_t, s.obs
    if not s.enough:
        return TestOutcome(math.nan, lambda level: UNBOUNDED, "t")
    if s.no_variance:
        shifted = constant_arms_p(n_c, n_t)

        def exact_at(level: float) -> tuple[float, float]:
            return (obs, obs) if shifted < 1.0 - level else UNBOUNDED

        return TestOutcome(shifted if obs != 0 else 1.0, exact_at, "t")
    var_c, var_t = s.var_c, s.var_t
    se = math.sqrt(var_c / n_c + var_t / n_t)
    df = (var_c / n_c + var_t / n_t) ** 2 / (
        (var_c / n_c) ** 2 / (n_c - 1) + (var_t / n_t) ** 2 / (n_t - 1)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = finite_or(sps.ttest_ind(s.t, s.c, equal_var=False).pvalue, 1.0)
    return TestOutcome(p, lambda level: t_interval(obs, se, df, level), "t")


@INDEPENDENT_TESTS.register("sequential")
def welch_sequence(s: IndependentSample) -> TestOutcome:
    """The always-valid test of the difference of means: its confidence sequence over
    n = n_c + n_t observations of per-observation variance n (s_c^2 / n_c + s_t^2 / n_t)
    (Welch's standard error), and the relative lift's on the log ratio. Too few values or
    no variance: Welch's test's stand-ins."""
    if not s.enough or s.no_variance:
        return welch_t_test(s)
    n = s.n_c + s.n_t
    v_c, v_t = s.var_c / s.n_c, s.var_t / s.n_t
    relative = None
    if s.lift is not None:
        relative = log_ratio_sequence(s.mean_c, s.mean_t, v_c, v_t, 0.0, n, s.sequential)
    return mean_sequence(s.obs, n, n * (v_c + v_t), s.sequential, relative=relative)


@INDEPENDENT_TESTS.register("permutation")
def label_permutation_test(s: IndependentSample) -> TestOutcome:
    """Label-permutation test of the difference in means, p = (b + 1) / (B + 1)."""
    if not s.both:
        return TestOutcome(math.nan)
    n_c, n_t = s.n_c, s.n_t
    pooled = np.concatenate([s.t, s.c])
    sample = rs.prepare(pooled, s.n_resamples, GRID_BINS_DELTA)
    sum_t = rs.relabel_sums(sample, n_t, s.n_resamples, s.generator("permutation"))
    null = sum_t / n_t - (float(pooled.sum()) - sum_t) / n_c
    b = count_extreme(null, s.obs, s.tol)
    approx: tuple[str, ...] = ()
    if sample.method == "grid":
        bound = rs.grid_error_bound(sample.grid_widths[0], n_t) * (1 + n_t / n_c)
        approx = (f"the permutation test ({sample.atoms.m} cells, within ±{bound:.2g})",)
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


@INDEPENDENT_TESTS.register("bootstrap")
def unpaired_bootstrap(s: IndependentSample) -> TestOutcome:
    """BCa bootstrap resampling each arm on its own: the p-value and interval of the
    delta and the relative lift's interval; left out below MIN_BOOTSTRAP values per arm."""
    if s.smallest < MIN_BOOTSTRAP:
        note = NOTE_SMALL.replace("queries", "values in an arm")
        return TestOutcome(math.nan, notes=(note,) if s.enough else ())
    c, t, n_c, n_t = s.c, s.t, s.n_c, s.n_t
    mean_c, mean_t, smallest = s.mean_c, s.mean_t, s.smallest
    rng = s.generator("bootstrap")
    means, jacks, bounds = [], [], []
    for x in (c, t):
        sample = rs.prepare(x, s.n_resamples, GRID_BINS_DELTA)
        means.append(rs.bootstrap_sums(sample, s.n_resamples, rng)[:, 0] / x.size)
        if sample.method == "grid":
            jacks.append((x, np.ones(x.size)))
            bounds.append(rs.grid_error_bound(sample.grid_widths[0], x.size))
        else:
            jacks.append((sample.atoms.values[:, 0], sample.atoms.counts))
            bounds.append(0.0)
    boot_c, boot_t = means
    resampled = boot_t - boot_c
    (vc, wc), (vt, wt) = jacks
    jack_c = (float(c.sum()) - vc) / (n_c - 1)
    jack_t = (float(t.sum()) - vt) / (n_t - 1)
    corrected = rs.bca(s.obs, resampled, [(mean_t - jack_c, wc), (jack_t - mean_c, wt)], s.tol)
    approx = (f"the bootstrap (means within ±{sum(bounds):.2g})",) if any(bounds) else ()

    relative = None
    if s.lift is not None and not np.any(boot_c * np.sign(mean_c) <= 0):
        theta = mean_t / mean_c - 1.0
        ratio = rs.bca(
            theta,
            boot_t / boot_c - 1.0,
            [(mean_t / jack_c - 1.0, wc), (jack_t / mean_c - 1.0, wt)],
            REL_TOL * (abs(theta) + 1.0),
        )

        def relative(level: float) -> tuple[float, float] | None:
            ci = ratio.interval(level, expand=smallest)
            return ci if all(math.isfinite(v) for v in ci) else None

    return TestOutcome(
        corrected.p_value(0.0, expand=smallest),
        lambda level: corrected.interval(level, expand=smallest),
        "bca",
        relative=relative,
        resampled=resampled,
        approximations=approx,
    )


@INDEPENDENT_TESTS.register("mannwhitney")
def mann_whitney_test(s: IndependentSample) -> TestOutcome:
    """Two-sided Mann-Whitney U test (scipy); p = 1 when an arm is empty."""
    from scipy import stats as sps

    if s.n_c == 0 or s.n_t == 0:
        return TestOutcome(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = sps.mannwhitneyu(s.t, s.c, alternative="two-sided").pvalue
        except ValueError:
            return TestOutcome(1.0)
    return TestOutcome(finite_or(p, 1.0))


def compare_independent(
    c: np.ndarray,
    t: np.ndarray,
    *,
    primary_test: str,
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    run: tuple[str, ...],
    sequential_tuning: int | None = None,
) -> Comparison:
    """The independent comparison of arms ``c`` and ``t`` (NaN values already dropped);
    ``run`` names the tests to run (validated; the bootstrap included when the primary
    test is not t); ``sequential_tuning`` is the ``sequential`` test's N* (None: the
    sample size)."""
    s = IndependentSample.of(
        c,
        t,
        n_resamples=n_resamples,
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
        sequential=SequenceTuning.of(sequential_tuning, confidence_level),
    )
    n_c, n_t = s.n_c, s.n_t
    notes: list[str] = []
    if not s.enough:
        notes.append(NOTE_ONE.replace("queries", "values in an arm"))
    elif s.no_variance:
        notes.append(NOTE_NO_VARIANCE)
    if s.both and s.lift is None and s.mean_c != 0:
        notes.append(NOTE_LIFT)
    outcomes = INDEPENDENT_TESTS.run(run, s)
    for outcome in outcomes.values():
        notes.extend(outcome.notes)

    boot = outcomes.get("bootstrap")
    relative_at = boot.relative if boot else None
    if s.lift is not None and s.enough and s.smallest < MIN_BOOTSTRAP:

        def relative_at(level: float) -> tuple[float, float] | None:
            return fieller_interval(
                s.mean_c, s.mean_t, s.var_c / n_c, s.var_t / n_t, 0.0, s.smallest - 1, level
            )

    if primary_test == "sequential" and s.enough and not s.no_variance:
        relative_at = outcomes["sequential"].relative if s.lift is not None else None
    primary_at, ci_method = primary_interval(primary_test, outcomes)
    enough = s.enough
    pooled_sd = (
        math.sqrt(((n_c - 1) * s.var_c + (n_t - 1) * s.var_t) / (n_c + n_t - 2))
        if enough
        else math.nan
    )

    def mde_at(a: float) -> float | None:
        if not enough:
            return None
        if primary_test == "sequential":  # the MDE of the test that gives the verdict
            n = n_c + n_t
            return detectable_delta(n, n * (s.var_c / n_c + s.var_t / n_t), a, s.sequential)
        return minimum_detectable_effect(n_c, pooled_sd, a, ratio=n_t / n_c)

    return build_comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design="independent",
        counts=(n_c + n_t, n_c, n_t),
        control_mean=s.mean_c,
        treatment_mean=s.mean_t,
        delta=s.obs if s.both else math.nan,
        relative_lift=s.lift,
        p_values={name: outcome.p_value for name, outcome in outcomes.items()},
        primary_test=primary_test,
        primary_at=primary_at,
        ci_method=ci_method,
        bootstrap_at=boot.interval if boot else None,
        relative_at=relative_at,
        mde_at=mde_at,
        effect_size=s.obs / pooled_sd if enough and pooled_sd > 0 else math.nan,
        wins_ties_losses=None,  # unpaired samples: no query wins or loses
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximations=[a for outcome in outcomes.values() for a in outcome.approximations],
        notes=notes,
        resampled_deltas=boot.resampled if boot else None,
    )


if INDEPENDENT_TESTS.missing():  # pragma: no cover - a registry entry without its function
    raise ImportError(
        f"independent tests without a function: {', '.join(INDEPENDENT_TESTS.missing())}"
    )
