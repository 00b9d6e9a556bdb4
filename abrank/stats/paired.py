"""The paired design: the same queries replayed through both rankers.

A paired comparison is a one-sample analysis of the per-query deltas d = treatment -
control. Each test is one function of a :class:`PairedSample`, registered in
:data:`PAIRED_TESTS` under its :mod:`abrank.stats.registry` name: the paired t-test (and
its t-interval), the sign-flip randomization test, the BCa bootstrap of the pairs (and of
the relative lift), Wilcoxon's signed-rank test, the always-valid confidence sequence of
the mean delta (:mod:`abrank.stats.sequential`). :func:`compare_paired` runs the tests a
comparison asks for and builds its :class:`~abrank.stats.results.Comparison`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from abrank.stats import fast as fast_stats
from abrank.stats import registry
from abrank.stats import resampling as rs
from abrank.stats.draws import SharedDraws, ratio_columns
from abrank.stats.estimation import (
    GRID_BINS_DELTA,
    GRID_BINS_RATIO,
    MIN_BOOTSTRAP,
    NOTE_CONSTANT,
    NOTE_LIFT,
    NOTE_ONE,
    NOTE_SMALL,
    REL_TOL,
    UNBOUNDED,
    DesignTests,
    TestOutcome,
    constant_interval,
    count_extreme,
    fieller_interval,
    finite_or,
    lift,
    primary_interval,
    t_interval,
)
from abrank.stats.power import minimum_detectable_effect
from abrank.stats.results import Comparison, Interval, build_comparison
from abrank.stats.seeding import generator
from abrank.stats.sequential import (
    SequenceTuning,
    detectable_delta,
    log_ratio_sequence,
    mean_sequence,
)


@dataclass(frozen=True)
class PairedSample:
    """The aligned values of one paired comparison and what its tests need to know.

    ``c`` and ``t`` are the control's and the treatment's values on the same queries,
    ``d`` their deltas; ``sd`` is 0 when every delta is the same (``constant``), NaN with
    fewer than two pairs; ``tol`` the tolerance of equal resampled statistics; ``lift``
    the relative lift (None where it is not reported). ``draws`` holds resamples shared
    with other metrics of the comparison (see :mod:`abrank.stats.draws`); ``sequential``
    tunes the ``sequential`` test's confidence sequence.
    """

    c: np.ndarray
    t: np.ndarray
    d: np.ndarray
    n: int
    mean_c: float
    mean_t: float
    mean_d: float
    sd: float
    tol: float
    constant: bool
    lift: float | None
    draws: SharedDraws
    confidence_level: float
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
        draws: SharedDraws | None,
        confidence_level: float,
        n_resamples: int,
        seed: int | None,
        metric: str,
        treatment_name: str,
        segment: str | None,
        sequential: SequenceTuning | None = None,
    ) -> PairedSample:
        """The sample of the pairs (c[i], t[i]), with its summary statistics."""
        n = int(c.size)
        d = t - c
        # pairs equal but for their last bits are ties, whichever order an engine summed a
        # query's terms in (2/3 - 1/3 against 1/3): deltas within rs.SAME_VALUE of the
        # largest value are 0, for the wins, ties and losses and for every test alike
        noise = rs.SAME_VALUE * max(float(np.abs(c).max()), float(np.abs(t).max())) if n else 0
        if 0 < noise < math.inf:
            d[np.abs(d) <= noise] = 0.0
        mean_c = float(c.mean()) if n else math.nan
        mean_t = float(t.mean()) if n else math.nan
        mean_d = float(d.mean()) if n else 0.0
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        scale = float(np.abs(d).mean()) if n else 0.0
        tol = REL_TOL * (scale + abs(mean_d))
        constant = n >= 2 and float(np.ptp(d)) <= tol
        return cls(
            c=c,
            t=t,
            d=d,
            n=n,
            mean_c=mean_c,
            mean_t=mean_t,
            mean_d=mean_d,
            sd=0.0 if constant else sd,
            tol=tol,
            constant=constant,
            lift=lift(mean_c, mean_t, n >= 1),
            draws=draws or SharedDraws(),
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            seed=seed,
            metric=metric,
            treatment_name=treatment_name,
            segment=segment,
            sequential=sequential or SequenceTuning(alpha=1.0 - confidence_level),
        )

    def generator(self, stream: str) -> np.random.Generator:
        """This comparison's own generator for one kind of draw."""
        return generator(self.seed, self.metric, self.treatment_name, self.segment, stream)


PAIRED_TESTS: DesignTests[PairedSample] = DesignTests("paired")


@PAIRED_TESTS.register("t")
def paired_t_test(s: PairedSample) -> TestOutcome:
    """Two-sided paired t-test and its t-interval; with no variance in the deltas, the
    exact sign-flip test of n equal deltas stands in."""
    n = s.n
    if n < 2:
        return TestOutcome(math.nan, lambda level: UNBOUNDED, "t")
    if s.constant:
        p = 1.0 if s.mean_d == 0 else min(1.0, 2.0 ** (1 - n))
        return TestOutcome(p, lambda level: constant_interval(s.mean_d, n, level), "t")
    se = s.sd / math.sqrt(n)
    # scipy.stats.ttest_1samp(d, 0.0).pvalue, the same bits
    p = finite_or(fast_stats.ttest_1samp(s.d, s.confidence_level)[0], 1.0)
    return TestOutcome(p, lambda level: t_interval(s.mean_d, se, n - 1, level), "t")


@PAIRED_TESTS.register("sequential")
def paired_sequence(s: PairedSample) -> TestOutcome:
    """The always-valid test of the mean delta: its confidence sequence (n queries,
    per-query variance sd^2) and the relative lift's on the log ratio. Fewer than two
    pairs or no variance in the deltas: the t-test's stand-ins."""
    if s.n < 2 or s.constant:
        return paired_t_test(s)
    relative = None
    if s.lift is not None:
        cov = np.cov(s.c, s.t, ddof=1) / s.n
        relative = log_ratio_sequence(
            s.mean_c, s.mean_t, cov[0, 0], cov[1, 1], cov[0, 1], s.n, s.sequential
        )
    return mean_sequence(s.mean_d, s.n, s.sd**2, s.sequential, relative=relative)


@PAIRED_TESTS.register("permutation")
def paired_signflip_test(s: PairedSample) -> TestOutcome:
    """Sign-flip randomization test of the summed deltas, p = (b + 1) / (B + 1)."""
    n = s.n
    if n < 2:
        return TestOutcome(math.nan)
    approx: tuple[str, ...] = ()
    if s.draws.flip is not None:
        null = s.draws.flip
    else:
        sample = rs.prepare(np.abs(s.d), s.n_resamples, GRID_BINS_DELTA)
        null = rs.signflip_sums(sample, s.n_resamples, s.generator("permutation"))
        if sample.method == "grid":
            bound = rs.grid_error_bound(sample.grid_widths[0], n)
            approx = (f"the sign-flip test ({sample.atoms.m} cells, means within ±{bound:.2g})",)
    b = count_extreme(null, float(s.d.sum()), s.tol * max(n, 1))
    return TestOutcome((b + 1) / (s.n_resamples + 1), approximations=approx)


@PAIRED_TESTS.register("bootstrap")
def paired_bootstrap(s: PairedSample) -> TestOutcome:
    """BCa bootstrap of the query pairs (Hesterberg's expanded interval): the p-value and
    interval of the mean delta, and the interval of the relative lift; left out below
    MIN_BOOTSTRAP pairs."""
    n = s.n
    if n < MIN_BOOTSTRAP:
        return TestOutcome(math.nan, notes=(NOTE_SMALL,) if n >= 2 else ())
    approx: list[str] = []
    if s.draws.delta is not None:
        sample, resampled = None, s.draws.delta / n
    else:
        sample = rs.prepare(s.d, s.n_resamples, GRID_BINS_DELTA)
        resampled = rs.bootstrap_sums(sample, s.n_resamples, s.generator("bootstrap"))[:, 0] / n
    if sample is None or sample.method != "exact":
        jack_rows, weights = s.d, np.ones(n)
    else:
        jack_rows, weights = sample.atoms.values[:, 0], sample.atoms.counts
    if sample is not None and sample.method == "grid":
        bound = rs.grid_error_bound(sample.grid_widths[0], n)
        approx.append(f"the delta bootstrap ({sample.atoms.m} cells, within ±{bound:.2g})")
    total = float(s.d.sum())
    jack = (total - jack_rows) / (n - 1)
    corrected = rs.bca(s.mean_d, resampled, [(jack, weights)], s.tol)

    relative = None
    if s.lift is not None and not s.constant:
        if s.draws.ratio is not None:
            ratio, note = ratio_bootstrap(s.c, s.t, s.n_resamples, None, s.draws.ratio)
        else:
            ratio, note = ratio_bootstrap(s.c, s.t, s.n_resamples, s.generator("relative"))
        if note:
            approx.append(note)
        if ratio is not None:

            def relative(level: float) -> tuple[float, float]:
                return ratio.interval(level, expand=n)

    return TestOutcome(
        corrected.p_value(0.0, expand=n),
        lambda level: corrected.interval(level, expand=n),
        "bca",
        relative=relative,
        resampled=resampled,
        approximations=tuple(approx),
    )


EXACT_MAX_MOVED = 20
"""Most moved queries for which the ``signflip`` test lists every sign pattern (2^20, a
million, at most); beyond, it is the randomization test of ``permutation``."""
SPARSE_MOVED = 30
"""Deltas are sparse when fewer than this many queries moved, and at most SPARSE_SHARE of
them: the t-test then leans on a handful of values, whatever n is."""
SPARSE_SHARE = 0.5
COCHRAN_FACTOR = 25.0
"""Cochran's rule for the mean of a skewed sample: its normal approximation holds once
n > 25 * skewness^2 (Cochran, Sampling Techniques, 1977; Boos & Hughes-Oliver 2000)."""
MOMENTS_MIN_N = 20
"""Fewest queries for the rules on sample moments (skewness, the largest share of the
variance): below it those moments are too noisy to read (at n = 10, normal deltas break
Cochran's rule one time in four)."""
DOMINANT_SHARE = 0.5
"""Deltas are dominated when one query holds more than this share of their squared
deviations: the t-test's variance, and the bootstrap, then hang on that query."""
REGIME_TESTS = ("t", "bootstrap", "permutation")
"""Configured primary tests that give way to the sign-flip test on sparse, skewed or
dominated deltas (Wilcoxon's rank test and the sequential test keep their own verdicts)."""


def exact_signflip_p(d: np.ndarray, tol: float) -> float:
    """Two-sided exact sign-flip p-value of the summed deltas: the share of the 2^m sign
    patterns of the m moved deltas (|d| > tol) whose |sum| reaches the observed one.

    Equal magnitudes are grouped: c deltas of size v add v * (2k - c) with k ~ Bin(c, 1/2),
    so the patterns are enumerated as products of binomial counts (at most 2^m sums)."""
    d = np.asarray(d, dtype=np.float64)
    moved = np.abs(d[np.abs(d) > tol])
    if moved.size == 0:
        return 1.0
    from scipy.special import comb

    atoms = rs.exact_atoms(moved)
    sums, weights = np.zeros(1), np.ones(1)
    for value, count in zip(atoms.values[:, 0], atoms.counts, strict=True):
        heads = np.arange(count + 1)
        sums = (sums[:, None] + value * (2 * heads - count)[None, :]).ravel()
        weights = (weights[:, None] * comb(count, heads)[None, :]).ravel()
    observed = abs(float(d.sum()))
    hits = float(weights[np.abs(sums) >= observed - tol * max(d.size, 1)].sum())
    return min(1.0, hits / 2.0**moved.size)


def regime_figures(d: np.ndarray, tol: float = 0.0) -> dict:
    """What the regime rules read from the deltas: n, the moved queries and their share,
    the sample skewness g1 = m3 / m2^1.5 and the largest query's share of the squared
    deviations."""
    n = int(d.size)
    moved = int(np.count_nonzero(np.abs(d) > tol))
    dev = d - d.mean() if n else d
    m2 = float(np.mean(dev**2)) if n else 0.0
    skew = float(np.mean(dev**3)) / m2**1.5 if m2 > 0 else 0.0
    total = float(np.sum(dev**2))
    largest = float(np.max(dev**2)) / total if total > 0 else 0.0
    return {
        "n": n,
        "nonzero": moved,
        "nonzero_share": moved / n if n else 0.0,
        "skewness": skew,
        "largest_share": largest,
    }


def sparse_regime_reasons(d: np.ndarray, tol: float = 0.0) -> tuple[str, ...]:
    """Why the t-test and the bootstrap cannot be trusted on these deltas: ``sparse`` (few
    queries moved), ``skewed`` (Cochran's rule fails), ``dominated`` (one query holds most
    of the variance); empty when none applies."""
    f = regime_figures(np.asarray(d, dtype=np.float64), tol)
    n, reasons = f["n"], []
    if f["nonzero"] < SPARSE_MOVED and f["nonzero"] <= SPARSE_SHARE * n:
        reasons.append("sparse")
    if n >= MOMENTS_MIN_N and n < COCHRAN_FACTOR * f["skewness"] ** 2:
        reasons.append("skewed")
    if n >= MOMENTS_MIN_N and f["largest_share"] > DOMINANT_SHARE:
        reasons.append("dominated")
    return tuple(reasons)


@PAIRED_TESTS.register("signflip")
def paired_exact_signflip(s: PairedSample) -> TestOutcome:
    """The exact sign-flip test: every sign pattern of the moved queries when at most
    EXACT_MAX_MOVED moved, else the randomization test (``permutation``). It holds its
    level whenever the deltas are symmetric around 0 (an A/A test), however few moved."""
    if s.n < 2:
        return TestOutcome(math.nan)
    if np.count_nonzero(np.abs(s.d) > s.tol) > EXACT_MAX_MOVED:
        return paired_signflip_test(s)
    return TestOutcome(exact_signflip_p(s.d, s.tol))


def _regime_note(regime: dict) -> str:
    """The note that says why the verdict's test changed and what the line shows; the
    figures behind it are in the comparison's ``regime``, so that the same note on many
    comparisons reads once."""
    configured = registry.test_display_names()[regime["configured_test"]]
    return (
        f"sparse, skewed or outlier-dominated deltas (see regime): the {configured} test "
        "does not hold its level on them, so the verdict is the exact sign-flip test's "
        f"(every sign pattern of the queries that moved; the randomization test beyond "
        f"{EXACT_MAX_MOVED}); it has no interval, so the line shows none (ci keeps the "
        f"{configured} test's interval)"
    )


@PAIRED_TESTS.register("wilcoxon")
def paired_wilcoxon(s: PairedSample) -> TestOutcome:
    """Wilcoxon's signed-rank test (scipy, zero deltas dropped); p = 1 when nothing moved."""
    if s.n < 2:
        return TestOutcome(math.nan)
    from scipy import stats as sps

    if np.count_nonzero(s.d) == 0:
        return TestOutcome(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = sps.wilcoxon(s.d, zero_method="wilcox").pvalue
        except ValueError:
            return TestOutcome(1.0)
    return TestOutcome(finite_or(p, 1.0))


def ratio_bootstrap(
    c: np.ndarray,
    t: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator | None,
    shared: np.ndarray | None = None,
) -> tuple[rs.BCa | None, str | None]:
    """Paired BCa distribution of mean(t) / mean(c) - 1, resampling query pairs.

    ``shared`` holds the bootstrap sums of :func:`~abrank.stats.draws.ratio_columns` when
    they were drawn together with other statistics (``rng`` is then unused). Returns the
    distribution (None when a resampled control mean reaches 0 or the grid bound fails)
    and the grid approximation's note, if any.
    """
    n = c.size
    total_c, total_t = float(c.sum()), float(t.sum())
    ratio = total_t / total_c
    if shared is None:
        if rng is None:
            raise ValueError("ratio_bootstrap: expected an rng or shared sums, got neither")
        sample = rs.prepare(ratio_columns(c, t), n_resamples, GRID_BINS_RATIO)
        sums = rs.bootstrap_sums(sample, n_resamples, rng)
    else:
        sample, sums = None, shared
    sum_u, sum_c = sums[:, 0], sums[:, 1]
    if np.any(sum_c * np.sign(total_c) <= 0):
        return None, None
    boot = ratio + sum_u / sum_c - 1.0
    if sample is None or sample.method != "exact":
        rows, weights = np.column_stack([c, t]), np.ones(n)
    else:
        atoms = sample.atoms
        rows = np.column_stack(
            [atoms.values[:, 1], atoms.values[:, 0] + ratio * atoms.values[:, 1]]
        )
        weights = atoms.counts
    with np.errstate(divide="ignore", invalid="ignore"):
        jack = (total_t - rows[:, 1]) / (total_c - rows[:, 0]) - 1.0
    if not np.all(np.isfinite(jack)):
        return None, None
    theta = ratio - 1.0
    tol = REL_TOL * (abs(theta) + 1.0)
    corrected = rs.bca(theta, boot, [(jack, weights)], tol)
    note = None
    if sample is not None and sample.method == "grid":
        eps_u = rs.grid_error_bound(sample.grid_widths[0], n)
        eps_c = rs.grid_error_bound(sample.grid_widths[1], n)
        mean_c_min = float(np.min(np.abs(sum_c))) / n - eps_c
        spread = float(np.max(np.abs(sum_u / sum_c)))
        if mean_c_min > 0:
            bound = (eps_u + spread * eps_c) / mean_c_min
            note = f"the relative-lift bootstrap ({sample.atoms.m} cells, within ±{bound:.2g})"
        else:
            return None, None
    return corrected, note


def effect_size(mean: float, sd: float, n: int) -> float:
    """Cohen's d_z: NaN with fewer than 2 queries or when every query moved by the same
    nonzero amount (no variance to scale by); 0 when nothing moved."""
    if n < 2:
        return math.nan
    if sd > 0:
        return mean / sd
    return 0.0 if mean == 0 else math.nan


def compare_paired(
    c: np.ndarray,
    t: np.ndarray,
    n_control: int,
    n_treatment: int,
    *,
    draws: SharedDraws | None = None,
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
    """The paired comparison of aligned values ``c`` and ``t`` (NaN pairs already dropped).

    ``n_control`` / ``n_treatment`` count the pairs observed in each arm; ``run`` names
    the tests to run (validated; the bootstrap included when the primary test is not t);
    ``sequential_tuning`` is the ``sequential`` test's N* (None: the default).
    """
    s = PairedSample.of(
        c,
        t,
        draws=draws,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
        sequential=SequenceTuning.of(sequential_tuning, confidence_level),
    )
    n = s.n
    notes: list[str] = []
    if n < 2:
        notes.append(NOTE_ONE)
    elif s.constant:
        notes.append(NOTE_CONSTANT)
    outcomes = PAIRED_TESTS.run(run, s)
    for outcome in outcomes.values():
        notes.extend(outcome.notes)
    if n >= 1 and s.lift is None and s.mean_c != 0:
        notes.append(NOTE_LIFT)

    regime = None
    verdict_test = primary_test
    if primary_test in REGIME_TESTS and n >= 2 and not s.constant:
        reasons = sparse_regime_reasons(s.d, s.tol)
        if reasons:
            figures = regime_figures(s.d, s.tol)
            exact = figures["nonzero"] <= EXACT_MAX_MOVED
            verdict_test = "signflip" if exact else "permutation"
            regime = {
                "reasons": list(reasons),
                **figures,
                "configured_test": primary_test,
                "test": verdict_test,
                "exact": exact,
            }
            notes.append(_regime_note(regime))
            if verdict_test not in outcomes:
                outcomes[verdict_test] = PAIRED_TESTS.functions[verdict_test](s)
                outcomes = {k: outcomes[k] for k in registry.test_names("paired") if k in outcomes}

    relative_at: Callable[[float], Interval | None] | None = None
    boot = outcomes.get("bootstrap")
    relative_bootstrap_at = boot.relative if boot and not s.constant else None
    if s.lift is not None and s.constant:
        constant_lift = s.lift

        def constant_lift_at(level: float) -> Interval | None:
            return constant_interval(constant_lift, n, level)

        relative_at = constant_lift_at
    elif regime is not None:
        relative_at = None  # the sign-flip test has no interval
    elif s.lift is not None and n >= 2:
        if primary_test != "t" and n >= MIN_BOOTSTRAP and boot is not None:
            relative_at = boot.relative
        elif primary_test == "t" or n < MIN_BOOTSTRAP:
            cov = np.cov(c, t, ddof=1) / n

            def fieller_at(level: float) -> Interval | None:
                return fieller_interval(
                    s.mean_c, s.mean_t, cov[0, 0], cov[1, 1], cov[0, 1], n - 1, level
                )

            relative_at = fieller_at

    if primary_test == "sequential" and s.lift is not None and not s.constant and n >= 2:
        relative_at = outcomes["sequential"].relative
    primary_at, ci_method = primary_interval(primary_test, outcomes)

    def mde_at(a: float) -> float | None:
        if primary_test == "sequential":  # the MDE of the test that gives the verdict
            return detectable_delta(n, s.sd**2, a, s.sequential)
        return minimum_detectable_effect(n, s.sd, a)

    return build_comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design="paired",
        counts=(n, n_control, n_treatment),
        control_mean=s.mean_c,
        treatment_mean=s.mean_t,
        delta=s.mean_t - s.mean_c if n else math.nan,
        relative_lift=s.lift,
        p_values={name: outcome.p_value for name, outcome in outcomes.items()},
        primary_test=verdict_test,
        primary_at=primary_at,
        ci_method=ci_method,
        bootstrap_at=boot.interval if boot else None,
        relative_at=relative_at,
        mde_at=mde_at,
        relative_bootstrap_at=relative_bootstrap_at,
        regime=regime,
        effect_size=effect_size(s.mean_d, s.sd, n),
        wins_ties_losses=(
            int(np.count_nonzero(s.d > 0)),
            int(np.count_nonzero(s.d == 0)),
            int(np.count_nonzero(s.d < 0)),
        ),
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximations=[a for outcome in outcomes.values() for a in outcome.approximations],
        notes=notes,
        resampled_deltas=boot.resampled if boot else None,
    )


if PAIRED_TESTS.missing():  # pragma: no cover - a registry entry without its function
    raise ImportError(f"paired tests without a function: {', '.join(PAIRED_TESTS.missing())}")
