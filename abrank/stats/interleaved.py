"""The statistics of an interleaving test: the treatment's preference, clustered on the user.

An interleaved log gives one outcome per impression (win +1, tie 0, loss -1 for the
treatment; :func:`abrank.interleaving.impression_outcomes`). Scoring each impression
y = win + tie / 2 (1, 1/2 or 0), the treatment's preference is

    Δ_AB = (wins + ties / 2) / N - 1/2 = sum_u M_u / sum_u D_u - 1/2

(Chapelle, Joachims, Radlinski & Yue, TOIS 2012), with M_u = sum of y over unit u's
impressions and D_u its number of impressions. One user's impressions are correlated
(the same person prefers the same ranker again), so the tests work on units:

* ``t``: the ratio estimator's delta-method variance over the G units,

      Var(Δ) = sum_u (M_u - R D_u)^2 / (sum_u D_u)^2 * G / (G - 1),    R = sum M / sum D,

  which is the cluster-robust (CR1) variance of an OLS of y on a constant with the units
  as groups: statsmodels' ``cov_type="cluster"`` multiplies the sandwich by
  G / (G - 1) * (N - 1) / (N - K), and with K = 1 regressor the second factor is 1, so the
  two agree exactly. A t interval and a two-sided p-value with G - 1 degrees of freedom.
* ``bootstrap``: units resampled with replacement (each resample is a pair of column sums
  of the units' (M_u, D_u) rows: multinomial counts of their distinct rows, which are
  few since M_u is a multiple of 1/2 and D_u a small count; see
  :func:`abrank.stats.unit_grid.prepared_units`), and a BCa interval with Hesterberg's
  expanded quantiles and its p-value, as every other design; left out below
  ``MIN_BOOTSTRAP`` units.

``unit=None`` makes each impression its own unit: the per-impression (naive) test, too
confident when users see several impressions; it is there to show that.

* ``jackknife`` (not configured: a regime rule): where the log's impressions are
  concentrated in few units (Kish's effective number of units (sum D)^2 / sum D^2 below
  25% of them, :mod:`abrank.stats.concentration`), the delta method's t and the unit
  bootstrap do not hold their level (on simulated A/A logs with 5 of 500 users at 100
  times the impressions the t rejected 7% of true nulls with 82% coverage, with 2 of 100
  users 10% and 66%; ``benchmarks/bench_calibration_interleaving_heavy.py``), and the
  verdict and its interval come from the leave-one-unit-out jackknife on the effective
  number of units as degrees of freedom
  (:func:`abrank.stats.unit_jackknife.jackknife_one_sample_test`); the comparison's
  ``regime`` holds the figures.

Degenerate logs: when every impression is a tie (no credited click) Δ = 0, p = 1 and the
interval is [0, 0]; when every unit has the same preference R != 1/2 (no variance), the
exact sign-flip test of the units' M_u - D_u / 2 stands in (p = 2^(1 - G)).

:func:`first_team_balance` checks the validity of the interleaving itself: the team that
contributed each impression's first result should be each team's half the time (tested
as the sample ratio check is: the exact binomial test below 1,000 expected impressions per
team, Pearson's chi-square above).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError, DataError
from abrank.stats import registry
from abrank.stats import resampling as rs
from abrank.stats.concentration import CONCENTRATED_SHARE, concentration
from abrank.stats.estimation import (
    MIN_BOOTSTRAP,
    REL_TOL,
    UNBOUNDED,
    TestOutcome,
    constant_interval,
    primary_interval,
    t_interval,
)
from abrank.stats.power import POWER, minimum_detectable_effect
from abrank.stats.results import Comparison, build_comparison
from abrank.stats.seeding import generator
from abrank.stats.settings import TestSettings
from abrank.stats.srm import SRM_ALPHA, SampleRatioCheck, sample_ratio_mismatch
from abrank.stats.unit_grid import prepared_units
from abrank.stats.unit_jackknife import (
    JACKKNIFE,
    jackknife_one_sample_test,
    jackknife_regime,
    t_test_mde,
)
from abrank.stats.unit_sums import UnitSums, linearized
from abrank.stats.unit_t import preference_p
from abrank.stats.validation import probability, resample_count, seed_value, test_list

DESIGN = registry.INTERLEAVED
DEFAULT_TESTS = registry.INTERLEAVED_TESTS
OUTCOME = "outcome"
"""The column of per-impression outcomes (+1 win, 0 tie, -1 loss for the treatment)."""

NOTE_ALL_TIES = (
    "every impression is a tie (no credited click): no preference can be measured, so "
    "delta = 0, p = 1 and the interval is [0, 0]"
)
NOTE_CONSTANT = (
    "every unit has the same preference: the t-test is undefined (no variance), so its "
    "p-value and interval are the exact sign-flip test's of the units (p = 2^(1 - units))"
)
NOTE_FEW_UNITS = "fewer than 2 units: no test or interval is possible"
NOTE_SMALL_UNITS = (
    f"fewer than {MIN_BOOTSTRAP} units: the unit bootstrap is left out "
    "(it is too narrow at this size)"
)
NOTE_CONCENTRATED = (
    "impressions concentrated in few units (see regime: Kish's effective number of units "
    f"is below {CONCENTRATED_SHARE:.0%} of the units): the {{test}} does not hold its level "
    "there, so the verdict and its interval are the jackknife's (leave one unit out, on the "
    "effective number of units as degrees of freedom; the {own} p-value stays in p_values)"
)
NOTE_PER_IMPRESSION = (
    "each impression is its own unit: the test treats a user's impressions as independent "
    "and is too confident when users see several impressions"
)


# --------------------------------------------------------------------------- per-unit counts


@dataclass(frozen=True)
class PreferenceCounts:
    """Per unit, the impressions the treatment won, tied and lost (int64 arrays of one
    length), and optionally how many of them had any click. ``numerator`` M_u = wins +
    ties / 2 and ``denominator`` D_u = impressions; the preference is sum(M) / sum(D) - 1/2.
    """

    wins: np.ndarray
    ties: np.ndarray
    losses: np.ndarray
    clicked: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = ("wins", "ties", "losses") + (("clicked",) if self.clicked is not None else ())
        arrays = {name: _counts(name, getattr(self, name)) for name in names}
        lengths = {array.size for array in arrays.values()}
        if len(lengths) != 1:
            shown = ", ".join(f"{name} {array.size}" for name, array in arrays.items())
            raise DataError(f"counts: expected one value per unit in every array, got {shown}")
        impressions = arrays["wins"] + arrays["ties"] + arrays["losses"]
        bad = np.flatnonzero(impressions == 0)
        if bad.size:
            raise DataError(f"counts: unit {bad[0]}: expected at least one impression, got 0")
        if self.clicked is not None:
            bad = np.flatnonzero(arrays["clicked"] > impressions)
            if bad.size:
                raise DataError(
                    f"counts: clicked[{bad[0]}]: expected at most the unit's "
                    f"{impressions[bad[0]]} impressions, got {arrays['clicked'][bad[0]]}"
                )
        for name, array in arrays.items():
            object.__setattr__(self, name, array)

    @property
    def n_units(self) -> int:
        return int(self.wins.size)

    @property
    def numerator(self) -> np.ndarray:
        """M_u = wins + ties / 2."""
        return self.wins + self.ties / 2.0

    @property
    def denominator(self) -> np.ndarray:
        """D_u = the unit's impressions."""
        return (self.wins + self.ties + self.losses).astype(np.float64)

    def to_dict(self) -> dict[str, Any]:
        """Totals: {units, wins, ties, losses, clicked (None when not known)}."""
        return {
            "units": self.n_units,
            "wins": int(self.wins.sum()),
            "ties": int(self.ties.sum()),
            "losses": int(self.losses.sum()),
            "clicked": None if self.clicked is None else int(self.clicked.sum()),
        }


def _counts(name: str, values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise DataError(f"counts: {name}: expected one value per unit, got shape {array.shape}")
    if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
        raise DataError(f"counts: {name}: expected whole numbers >= 0, got dtype {array.dtype}")
    number = array.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(number) | (number < 0) | (number != np.round(number)))
    if bad.size:
        raise DataError(
            f"counts: {name}[{bad[0]}]: expected a whole number >= 0, got {array[bad[0]]}"
        )
    return number.astype(np.int64)


def preference_counts(outcomes: pd.DataFrame, unit: str | None = "user_id") -> PreferenceCounts:
    """Per-unit win / tie / loss counts of per-impression ``outcomes`` (the frame of
    :func:`abrank.interleaving.impression_outcomes`: an ``outcome`` column of +1 / 0 / -1,
    the ``unit`` column, optionally ``clicked``). Units in the order they first appear;
    ``unit=None``: each impression its own unit. DataError naming the row and column of
    a bad outcome or a missing unit, or a missing column."""
    if not isinstance(outcomes, pd.DataFrame):
        raise ConfigError(
            f"outcomes: expected a DataFrame of impressions or PreferenceCounts, "
            f"got {type(outcomes).__name__}"
        )
    needed = (OUTCOME,) + ((unit,) if unit is not None else ())
    missing = [c for c in needed if c not in outcomes.columns]
    if missing:
        raise DataError(
            f"outcomes: columns: expected {', '.join(needed)}, got no {', '.join(missing)} "
            f"(columns: {', '.join(map(str, outcomes.columns))})"
        )
    raw = outcomes[OUTCOME]
    value = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isin(value, (-1.0, 0.0, 1.0)))
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"outcomes: row {row + 1}: outcome: expected +1 (win), 0 (tie) or -1 (loss), "
            f"got {_cell(raw.iloc[row])!r}"
        )
    if unit is None:
        codes, n = np.arange(value.size), value.size
    else:
        codes, uniques = pd.factorize(outcomes[unit], sort=False)
        if (codes < 0).any():
            row = int(np.flatnonzero(codes < 0)[0])
            raise DataError(f"outcomes: row {row + 1}: {unit}: expected a unit id, got nothing")
        n = len(uniques)
    clicked = None
    if "clicked" in outcomes.columns:
        flags = outcomes["clicked"]
        clicks = pd.to_numeric(flags, errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isin(clicks, (0.0, 1.0)))
        if bad.size:
            row = int(bad[0])
            raise DataError(
                f"outcomes: row {row + 1}: clicked: expected 0/1 or true/false, "
                f"got {_cell(flags.iloc[row])!r}"
            )
        clicked = np.bincount(codes, weights=clicks, minlength=n)
    return PreferenceCounts(
        wins=np.bincount(codes, weights=value == 1.0, minlength=n),
        ties=np.bincount(codes, weights=value == 0.0, minlength=n),
        losses=np.bincount(codes, weights=value == -1.0, minlength=n),
        clicked=clicked,
    )


def _cell(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- the sample


@dataclass(frozen=True)
class InterleavedSample:
    """What the tests need: the units' (M_u, D_u) rows, the preference, its delta-method
    variance, and the names that seed the comparison's generator."""

    rows: np.ndarray
    delta: float
    variance: float
    all_ties: bool
    n_resamples: int
    seed: int | None
    metric: str
    treatment_name: str
    segment: str | None

    @property
    def n_units(self) -> int:
        return int(self.rows.shape[0])


def preference_variance(counts: PreferenceCounts) -> float:
    """The delta-method variance of Δ_AB clustered on the units:
    sum_u (M_u - R D_u)^2 / (sum D)^2 * G / (G - 1) (NaN below 2 units)."""
    return linearized(UnitSums(counts.numerator, counts.denominator)).variance


def _t_test(s: InterleavedSample) -> TestOutcome:
    g, obs = s.n_units, s.delta
    found = preference_p(obs, s.variance, g, s.all_ties)
    se, p = (float(value) for value in found)
    if s.all_ties:
        return TestOutcome(p, lambda level: (0.0, 0.0), "t", notes=(NOTE_ALL_TIES,))
    if g < 2:
        return TestOutcome(p, lambda level: UNBOUNDED, "t", notes=(NOTE_FEW_UNITS,))
    if se <= REL_TOL:
        return TestOutcome(
            p, lambda level: constant_interval(obs, g, level), "t", notes=(NOTE_CONSTANT,)
        )
    return TestOutcome(p, lambda level: t_interval(obs, se, g - 1, level), "t")


def _bootstrap(s: InterleavedSample) -> TestOutcome:
    g, obs = s.n_units, s.delta
    if s.all_ties:
        return TestOutcome(1.0, lambda level: (0.0, 0.0), "bca")
    if g < MIN_BOOTSTRAP:
        return TestOutcome(math.nan, notes=(NOTE_SMALL_UNITS,) if g >= 2 else ())
    rng = generator(s.seed, s.metric, s.treatment_name, s.segment, "bootstrap")
    rows = s.rows
    total = rows.sum(axis=0)
    sample, bound = prepared_units(rows, s.n_resamples, g)
    sums = rs.bootstrap_sums(sample, s.n_resamples, rng)
    resampled = sums[:, 0] / sums[:, 1] - 0.5
    atoms = sample.atoms if bound is None else rs.Atoms(rows, np.ones(g, dtype=np.int64))
    # leave-one-unit-out preferences, at each distinct row
    jack = (total[0] - atoms.values[:, 0]) / (total[1] - atoms.values[:, 1]) - 0.5
    corrected = rs.bca(obs, resampled, [(jack, atoms.counts)], REL_TOL)
    approx: tuple[str, ...] = ()
    if bound is not None:
        within = bound(g, float(total[0] / total[1]), float(total[1]) / g)
        approx = (f"the unit bootstrap ({sample.atoms.m} cells, within ±{within:.2g})",)
    return TestOutcome(
        corrected.p_value(0.0, expand=g),
        lambda level: corrected.interval(level, expand=g),
        "bca",
        resampled=resampled,
        approximations=approx,
    )


_TESTS = {"t": _t_test, "bootstrap": _bootstrap}


def concentrated_regime(
    s: InterleavedSample, counts: PreferenceCounts, configured: str
) -> tuple[dict[str, Any], TestOutcome] | None:
    """The regime of a log whose impressions are concentrated in few units
    (:mod:`abrank.stats.concentration`), and the jackknife's outcome that then gives the
    verdict; None when the configured test keeps it: fewer than two units, every
    impression a tie, units without variance (the exact sign-flip test stands in), or
    impressions not concentrated (always so for per-impression units)."""
    if s.all_ties or s.n_units < 2 or math.sqrt(s.variance) <= REL_TOL:
        return None
    figures = concentration(counts.denominator)
    if not figures.concentrated:
        return None
    arm = linearized(UnitSums(counts.numerator, counts.denominator))
    found = jackknife_one_sample_test(s.delta, arm, counts.denominator)
    if found is None:
        return None
    outcome, se, df = found
    return jackknife_regime({"all": figures}, configured, se, df), outcome


# --------------------------------------------------------------------------- entry points


def compare_interleaved(
    outcomes: pd.DataFrame | PreferenceCounts,
    *,
    unit: str | None = "user_id",
    primary_test: str = "t",
    tests: Sequence[str] = DEFAULT_TESTS,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    metric: str = "preference",
    treatment_name: str = "treatment",
    segment: str | None = None,
    teams: tuple[str, str] | None = None,
    first_team: Mapping[str, int] | None = None,
    settings: TestSettings | None = None,
) -> Comparison:
    """The treatment's preference Δ_AB in an interleaving test, clustered on ``unit``.

    ``settings`` (a :class:`~abrank.stats.settings.TestSettings`), when given, stands for
    the keywords it holds (its ``sequential_tuning`` is not read: no confidence sequence).

    ``outcomes``: one row per impression (an ``outcome`` column, +1 / 0 / -1 for the
    treatment, the ``unit`` column, optionally ``clicked`` and ``first_team``; the frame of
    :func:`abrank.interleaving.impression_outcomes`), or its :class:`PreferenceCounts`.
    ``unit=None``: each impression its own unit (the per-impression test).

    The :class:`Comparison` has design ``"interleaved"``; ``n``, ``n_control`` and
    ``n_treatment`` all count impressions (each shows both rankers); ``control_mean`` /
    ``treatment_mean`` are the shares of impressions each team won, ties counted half to
    each (they sum to 1); ``delta`` = Δ_AB = treatment_mean - 1/2 (half their difference);
    ``wins`` / ``ties`` / ``losses`` count impressions; ``relative_lift`` is None;
    ``unit`` is the clustering column (``"impression"`` for ``unit=None``) and
    ``n_units`` = {"all": units}. ``effect_size`` is Δ over the standard deviation of the
    units' linearized preferences (M_u - R D_u) / mean(D); ``mde`` the smallest Δ a t-test
    on this many units detects with 80% power. ``interleaving`` holds the units, the
    impressions with any click and their share (None without a ``clicked`` column), and,
    when ``teams`` = (control, treatment) names and the frame has ``first_team``, the
    :func:`first_team_balance` check; with :class:`PreferenceCounts`, ``first_team``
    (team -> impressions whose first result it contributed) gives that check instead of
    the frame's column. Tests: ``t`` (delta method, G - 1 df) and
    ``bootstrap`` (units, BCa), seeded from (seed, metric, treatment_name, segment).
    ConfigError / DataError for bad arguments or data.
    """
    if settings is not None:
        primary_test, tests, alpha = settings.primary_test, settings.tests, settings.alpha
        confidence_level, n_resamples, seed = (
            settings.confidence_level,
            settings.n_resamples,
            settings.seed,
        )
    run = _checked_run(primary_test, tests, alpha, confidence_level, n_resamples, seed)
    for argument, value in (("metric", metric), ("treatment_name", treatment_name)):
        if not isinstance(value, str):
            raise ConfigError(f"{argument}: expected a string, got {value!r}")
    if segment is not None and not isinstance(segment, str):
        raise ConfigError(f"segment: expected a string or None, got {segment!r}")
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise ConfigError(f"unit: expected the name of the clustering column or None, got {unit!r}")
    balance = None
    if isinstance(outcomes, PreferenceCounts):
        counts = outcomes
        if teams is not None and first_team is None:
            raise ConfigError(
                "teams: expected None with PreferenceCounts unless first_team gives the "
                "impressions each team started (the first-team check needs them)"
            )
        if teams is not None:
            balance = first_team_check(first_team or {}, teams)
    else:
        counts = preference_counts(outcomes, unit)
        if teams is not None:
            balance = first_team_balance(outcomes, teams)
    if counts.n_units == 0:
        raise DataError("outcomes: expected at least one impression, got none")
    rows = np.column_stack([counts.numerator, counts.denominator])
    total = rows.sum(axis=0)
    share = float(total[0] / total[1])
    wins, ties, losses = (int(a.sum()) for a in (counts.wins, counts.ties, counts.losses))
    sample = InterleavedSample(
        rows=rows,
        delta=share - 0.5,
        variance=preference_variance(counts),
        all_ties=wins == 0 and losses == 0,
        n_resamples=int(n_resamples),
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
    )
    outcomes_by_test = {name: _TESTS[name](sample) for name in run}
    return _build(
        sample,
        outcomes_by_test,
        counts,
        run=run,
        unit=unit,
        wtl=(wins, ties, losses),
        alpha=float(alpha),
        confidence_level=float(confidence_level),
        balance=balance,
    )


def _checked_run(
    primary_test: Any,
    tests: Any,
    alpha: Any,
    confidence_level: Any,
    n_resamples: Any,
    seed: Any,
) -> tuple[str, ...]:
    """The tests to run, primary first (the bootstrap added when it is primary anyway)."""
    primary = _test_name("primary_test", primary_test)
    wanted = {_test_name("tests", test) for test in test_list(tests)} | {primary}
    probability("alpha", alpha)
    probability("confidence_level", confidence_level)
    resample_count(n_resamples)
    seed_value(seed)
    return (primary, *(name for name in DEFAULT_TESTS if name in wanted and name != primary))


def _test_name(argument: str, value: Any) -> str:
    listed = ", ".join(repr(name) for name in DEFAULT_TESTS)
    try:
        name = registry.test_spec(value).name if isinstance(value, str) else None
    except KeyError:
        name = None
    if name not in DEFAULT_TESTS:
        raise ConfigError(
            f"{argument}: expected one of {listed} for an interleaved comparison, got {value!r}"
        )
    return name


def _build(
    s: InterleavedSample,
    outcomes: dict[str, TestOutcome],
    counts: PreferenceCounts,
    *,
    run: tuple[str, ...],
    unit: str | None,
    wtl: tuple[int, int, int],
    alpha: float,
    confidence_level: float,
    balance: SampleRatioCheck | None,
) -> Comparison:
    g = s.n_units
    n = int(round(float(s.rows[:, 1].sum())))
    notes: list[str] = [NOTE_PER_IMPRESSION] if unit is None else []
    for outcome in outcomes.values():
        notes.extend(note for note in outcome.notes if note not in notes)
    verdict_test = run[0]
    concentrated = concentrated_regime(s, counts, run[0])
    if concentrated is not None:
        regime, jackknife = concentrated
        outcomes = {**outcomes, JACKKNIFE: jackknife}
        verdict_test = JACKKNIFE
        test, own = ("delta method's t-test", "t-test's")
        if run[0] == "bootstrap":
            test, own = ("unit bootstrap", "bootstrap's")
        notes.append(NOTE_CONCENTRATED.format(test=test, own=own))
    primary_at, method = primary_interval(verdict_test, outcomes)
    clustered_by = "impression" if unit is None else unit
    how = {"bca": "unit bootstrap (BCa)", JACKKNIFE: JACKKNIFE}.get(method, "delta method")
    sd = math.sqrt(s.variance * g) if g >= 2 else math.nan

    def mde_at(a: float) -> float | None:
        if concentrated is not None:  # the MDE of the test that gives the verdict
            return t_test_mde(regime["se"], regime["df"], a, POWER)
        return minimum_detectable_effect(g, sd, a) if g >= 2 else None

    boot = outcomes.get("bootstrap")
    clicked = None if counts.clicked is None else int(counts.clicked.sum())
    details: dict[str, Any] = {
        "units": g,
        "clicked": clicked,
        "clicked_share": None if clicked is None else clicked / n,
    }
    if balance is not None:
        details["first_team"] = balance.to_dict()
    result = build_comparison(
        metric=s.metric,
        treatment=s.treatment_name,
        segment=s.segment,
        design=DESIGN,
        counts=(n, n, n),
        control_mean=0.5 - s.delta,
        treatment_mean=0.5 + s.delta,
        delta=s.delta,
        relative_lift=None,
        p_values={name: outcome.p_value for name, outcome in outcomes.items()},
        primary_test=verdict_test,
        primary_at=primary_at,
        ci_method=f"{how}, clustered by {clustered_by}",
        bootstrap_at=boot.interval if boot is not None and boot.interval else None,
        relative_at=None,
        regime=None if concentrated is None else regime,
        mde_at=mde_at,
        effect_size=s.delta / sd if g >= 2 and sd > 0 else math.nan,
        wins_ties_losses=wtl,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=s.n_resamples,
        approximations=[a for outcome in outcomes.values() for a in outcome.approximations],
        notes=notes,
        resampled_deltas=boot.resampled if boot is not None else None,
    )
    return dataclasses.replace(result, unit=clustered_by, n_units={"all": g}, interleaving=details)


# --------------------------------------------------------------------------- validity


def first_team_balance(
    outcomes: pd.DataFrame, teams: Sequence[str], *, alpha: float = SRM_ALPHA
) -> SampleRatioCheck:
    """The share of impressions whose first result came from each of ``teams``, tested
    against equal shares as the sample ratio check does
    (:func:`abrank.stats.sample_ratio_mismatch`: the exact binomial test below 1,000
    expected per team, else Pearson's chi-square; ``units`` then counts impressions). A fair interleaving (team draft's coin flip, the
    balanced method's alternating start) puts each team first half the time; impressions
    whose first result came from another team (multileaving) are not counted. DataError
    without a ``first_team`` column or when no impression starts with one of ``teams``."""
    if not isinstance(outcomes, pd.DataFrame):
        raise ConfigError(f"outcomes: expected a DataFrame, got {type(outcomes).__name__}")
    if isinstance(teams, str) or not isinstance(teams, Sequence) or len(teams) < 2:
        raise ConfigError(f"teams: expected the names of at least two teams, got {teams!r}")
    names = [str(team) for team in teams]
    if len(set(names)) != len(names):
        raise ConfigError(f"teams: expected different team names, got {teams!r}")
    if "first_team" not in outcomes.columns:
        raise DataError(
            "outcomes: columns: expected first_team, got no first_team "
            f"(columns: {', '.join(map(str, outcomes.columns))})"
        )
    per_team = outcomes["first_team"].astype(str).value_counts()
    return first_team_check({str(k): int(v) for k, v in per_team.items()}, names, alpha=alpha)


def first_team_check(
    first_team: Mapping[str, int], teams: Sequence[str], *, alpha: float = SRM_ALPHA
) -> SampleRatioCheck:
    """:func:`first_team_balance` from counts: ``first_team`` maps each team to the
    impressions whose first result it contributed; only ``teams`` are tested (against
    equal shares). DataError when none of ``teams`` started an impression."""
    names = [str(team) for team in teams]
    counts = {name: int(first_team.get(name, 0)) for name in names}
    if sum(counts.values()) == 0:
        shown = ", ".join(sorted(str(k) for k, v in first_team.items() if v)[:10]) or "none"
        raise DataError(
            f"outcomes: first_team: expected impressions starting with {', '.join(names)}, "
            f"got first teams {shown}"
        )
    return sample_ratio_mismatch(counts, alpha=alpha)
