"""Comparing a treatment arm with the control on one metric: deltas, tests, intervals.

``compare`` turns two sets of per-query values into one :class:`Comparison`: the mean
delta (always treatment - control), the primary test's p-value and interval, the
randomization test, BCa bootstrap intervals for the delta and the relative lift, effect
size, minimum detectable effect and win/tie/loss counts. ``adjust`` applies a
multiple-testing correction over a family of comparisons.

Two designs:

* ``paired`` (the same queries replayed through both rankers): a one-sample analysis of
  the per-query deltas; paired t-test, sign-flip randomization test, paired bootstrap,
  Wilcoxon signed-rank (opt-in).
* ``independent`` (different queries per arm, as in an online A/B test): Welch t-test,
  label-permutation test, per-arm bootstrap, Mann-Whitney U (opt-in).

Degenerate data never produce NaN or a crash: identical arms give delta 0, interval
[0, 0] and p = 1; fewer than two pairs give p = 1 and an unbounded interval; a constant
delta has a zero-width interval. Resampling is seeded per comparison from (seed, metric,
treatment, segment) and per test, so results are reproducible to the last digit and do
not depend on which other tests or comparisons were run. Where a metric's own draws
would be costly (many queries, many distinct values), it draws from resamples of its
queries seeded from (seed, number of queries, treatment, segment) instead, which
``compare_metrics`` computes once for all the metrics of a comparison. See
:mod:`abrank.stats.resampling` for how resampling stays fast at a million queries.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from abrank.errors import ConfigError
from abrank.stats import fast as fast_stats
from abrank.stats import resampling as rs

DESIGNS = ("paired", "independent")
TESTS = {
    "paired": ("t", "permutation", "bootstrap", "wilcoxon"),
    "independent": ("t", "permutation", "bootstrap", "mannwhitney"),
}
MISSING = ("zero", "drop", "error")
CORRECTIONS = {
    "holm": "holm",
    "bonferroni": "bonferroni",
    "sidak": "sidak",
    "holm-sidak": "holm-sidak",
    "simes-hochberg": "simes-hochberg",
    "hochberg": "simes-hochberg",
    "hommel": "hommel",
    "fdr_bh": "fdr_bh",
    "bh": "fdr_bh",
    "benjamini-hochberg": "fdr_bh",
    "fdr_by": "fdr_by",
    "by": "fdr_by",
    "none": "none",
}
POWER = 0.8
GRID_BINS_DELTA = (4096,)
GRID_BINS_RATIO = (4096, 4)
_STREAMS = {"permutation": 1, "bootstrap": 2, "relative": 3}
_REL_TOL = 1e-12
MIN_BOOTSTRAP = 30
"""Fewest queries (per arm, in the independent design) for a bootstrap test or interval.

Below it even Hesterberg's expanded BCa interval covers 92-93% instead of 95% on lumpy
metric deltas (MRR-like values, simulated A/A at n = 10 and 20) and the bootstrap test
rejects 6.5-9% of true nulls; at n <= 5 no bootstrap interval can reach past the sample's
range, so one sign on every delta always "wins". Below it the readout leaves the bootstrap
out (p-value and intervals null) and says so; the relative lift's interval is Fieller's."""
MIN_LIFT_SHARE = 0.01
"""A relative lift is reported only when the control mean is at least this share of the
larger arm mean (a lift of at most +9,900%): beyond that the ratio says only that the
control scores about 0."""


@dataclass(frozen=True)
class Comparison:
    """One metric x treatment (x segment) comparison against the control arm.

    Attributes follow the ``comparisons`` entries of ``summary.json``. ``delta`` is always
    treatment - control. ``ci`` is the primary interval: the t-interval (Welch's in the
    independent design) when the primary test is ``t``, else the (expanded) BCa bootstrap
    interval. Its level ``ci_level`` is ``confidence_level`` until :func:`adjust` widens it
    by the same factor as the p-value (1 - (1 - level) * p_value / p_adjusted), so that the
    interval excludes 0 exactly when the adjusted verdict is a win or a loss; the interval
    at the nominal level is always in ``ci_unadjusted``, and ``relative_ci`` and ``mde``
    follow the same level. ``ci_agrees`` is False when the interval and the verdict still
    disagree (a permutation or rank test beside a bootstrap interval), and ``notes`` name
    every small-sample rule applied. ``p_values`` holds every test that was run (``t``,
    ``permutation``, ``bootstrap``, ``wilcoxon`` / ``mannwhitney``; None where a test was
    refused, e.g. the bootstrap below :data:`MIN_BOOTSTRAP` queries); ``p_value`` is the
    primary test's, ``p_adjusted`` its multiplicity-adjusted value (equal to ``p_value``
    until :func:`adjust`). ``relative_lift`` is None when the control mean is below
    :data:`MIN_LIFT_SHARE` of the larger mean, ``relative_ci`` also when the ratio is
    unbounded. ``p_value`` and ``effect_size`` are None (NaN) with fewer than two
    queries. For the paired design,
    ``n_control`` / ``n_treatment`` count pairs whose value was observed in that arm (the
    rest were scored 0 under ``missing="zero"``); for the independent design they are the
    arms' sizes. ``approximation`` names a grid-cell resampling approximation and its
    error bound when one was used (very large samples of mostly distinct values).
    """

    metric: str
    treatment: str
    segment: str | None
    design: str
    n: int
    n_control: int
    n_treatment: int
    control_mean: float
    treatment_mean: float
    delta: float
    relative_lift: float | None
    ci: tuple[float, float]
    ci_method: str
    ci_level: float
    bootstrap_ci: tuple[float, float] | None
    relative_ci: tuple[float, float] | None
    p_value: float
    p_values: dict[str, float]
    p_adjusted: float
    correction: str | None
    effect_size: float
    mde: float | None
    wins: int
    ties: int
    losses: int
    verdict: str
    primary_test: str
    alpha: float
    confidence_level: float
    n_resamples: int
    approximation: str | None = None
    ci_unadjusted: tuple[float, float] | None = None
    ci_agrees: bool = True
    notes: tuple[str, ...] = ()
    resampled_deltas: np.ndarray | None = field(default=None, compare=False, repr=False)
    levels: _Levels | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins only: tuples become lists, NaN and infinities become None."""
        return {
            f.name: _json_safe(getattr(self, f.name))
            for f in fields(self)
            if f.name not in _INTERNAL
        }


_INTERNAL = {"resampled_deltas", "levels"}


@dataclass(frozen=True)
class _Levels:
    """How to redraw a comparison's intervals and MDE at another level, so that after a
    multiple-testing correction the interval shown agrees with the adjusted verdict."""

    primary: Any  # level -> (low, high)
    relative: Any  # level -> (low, high) | None, or None
    mde: Any  # alpha -> float | None


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


# --------------------------------------------------------------------------- validation


def _choice(argument: str, value: Any, choices: Sequence[str], extra: str = "") -> str:
    if isinstance(value, str) and value in choices:
        return value
    listed = ", ".join(repr(c) for c in choices)
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, list(choices), n=1)
        if close:
            hint = f" (did you mean {close[0]!r}?)"
    raise ConfigError(f"{argument}: expected one of {listed}{extra}, got {value!r}{hint}")


def _probability(argument: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError(f"{argument}: expected a number between 0 and 1, got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ConfigError(f"{argument}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def _validate(
    design: Any,
    primary_test: Any,
    tests: Any,
    alpha: Any,
    confidence_level: Any,
    n_resamples: Any,
    missing: Any,
    seed: Any,
    metric: Any,
    treatment_name: Any,
    segment: Any,
) -> tuple[str, ...]:
    _choice("design", design, DESIGNS)
    allowed = TESTS[design]
    _choice("primary_test", primary_test, allowed, f" for the {design} design")
    if isinstance(tests, str):
        tests = (tests,)
    if not isinstance(tests, Sequence):
        raise ConfigError(f"tests: expected a list of test names, got {tests!r}")
    for test in tests:
        _choice("tests", test, allowed, f" for the {design} design")
    _probability("alpha", alpha)
    _probability("confidence_level", confidence_level)
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 1
    ):
        raise ConfigError(f"n_resamples: expected a positive integer, got {n_resamples!r}")
    _choice("missing", missing, MISSING)
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
    ):
        raise ConfigError(f"seed: expected a non-negative integer or None, got {seed!r}")
    for argument, value in (("metric", metric), ("treatment_name", treatment_name)):
        if not isinstance(value, str):
            raise ConfigError(f"{argument}: expected a string, got {value!r}")
    if segment is not None and not isinstance(segment, str):
        raise ConfigError(
            f"segment: expected a string such as 'device=mobile' or None, got {segment!r}"
        )
    ordered = [primary_test] + [t for t in allowed if t in tests and t != primary_test]
    return tuple(ordered)


def _values(argument: str, values: Any) -> np.ndarray:
    try:
        if isinstance(values, pd.Series):
            array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        kind = getattr(values, "dtype", type(values).__name__)
        raise ConfigError(f"{argument}: expected numbers, got values of type {kind}") from None
    if array.ndim != 1:
        raise ConfigError(
            f"{argument}: expected a one-dimensional sequence, got shape {array.shape}"
        )
    bad = np.isinf(array)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"{argument}: position {position}: expected a finite number, got {array[position]}"
        )
    return array


def _first_ids(index: pd.Index, limit: int = 5) -> str:
    shown = ", ".join(repr(v) for v in index[:limit].tolist())
    more = f" and {len(index) - limit} more" if len(index) > limit else ""
    return shown + more


def _paired_values(control: Any, treatment: Any, missing: str) -> tuple[np.ndarray, ...]:
    """Aligned (control, treatment) arrays plus masks of observed values."""
    if isinstance(control, pd.Series) and isinstance(treatment, pd.Series):
        for argument, series in (("control", control), ("treatment", treatment)):
            if not series.index.is_unique:
                dupes = series.index[series.index.duplicated()].unique()
                raise ConfigError(
                    f"{argument}: index: expected unique query ids, "
                    f"got duplicates {_first_ids(dupes)}"
                )
        c_values = _values("control", control)
        t_values = _values("treatment", treatment)
        c_series = pd.Series(c_values, index=control.index)
        t_series = pd.Series(t_values, index=treatment.index)
        if not c_series.index.equals(t_series.index):
            only_c = c_series.index.difference(t_series.index)
            only_t = t_series.index.difference(c_series.index)
            if missing == "error" and (len(only_c) or len(only_t)):
                parts = []
                if len(only_t):
                    parts.append(f"{len(only_t)} missing from control ({_first_ids(only_t)})")
                if len(only_c):
                    parts.append(f"{len(only_c)} missing from treatment ({_first_ids(only_c)})")
                raise ConfigError(
                    "missing: expected every query in both arms (missing='error'), got "
                    + "; ".join(parts)
                )
            if missing == "drop":
                index = c_series.index.intersection(t_series.index)
            else:
                index = c_series.index.union(t_series.index)
            at_c = c_series.index.get_indexer(index)
            at_t = t_series.index.get_indexer(index)
            in_c, in_t = at_c >= 0, at_t >= 0
            c, t = np.zeros(index.size), np.zeros(index.size)
            c[in_c] = c_values[at_c[in_c]]
            t[in_t] = t_values[at_t[in_t]]
        else:
            c, t = c_values.astype(np.float64), t_values.astype(np.float64)
            in_c = in_t = np.ones(c.size, dtype=bool)
    else:
        c = _values("control", control)
        t = _values("treatment", treatment)
        if c.shape != t.shape:
            raise ConfigError(
                f"treatment: expected {c.size} values (as many as control, paired design), "
                f"got {t.size}"
            )
        in_c = np.ones(c.size, dtype=bool)
        in_t = in_c
    keep = ~(np.isnan(c) | np.isnan(t))
    return c[keep], t[keep], in_c[keep], in_t[keep]


# --------------------------------------------------------------------------- seeding


def _generator(
    seed: int | None,
    metric: str | list[str],
    treatment: str,
    segment: str | None,
    stream: str,
) -> np.random.Generator:
    """A generator derived from (seed, metric, treatment, segment, test) by a stable hash;
    ``metric`` is a list of names for draws shared by those metrics."""
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)
    text = json.dumps([int(seed), metric, treatment, segment], ensure_ascii=False)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    entropy = int.from_bytes(digest, "little")
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(_STREAMS[stream],)))


# --------------------------------------------------------------------------- helpers


def _mde(n: int, sd: float, alpha: float, ratio: float | None = None) -> float | None:
    """Smallest |delta| detectable with POWER at this alpha, n and standard deviation."""
    if n < 2 or not math.isfinite(sd):
        return None
    if sd == 0:
        return 0.0
    # statsmodels' TTestPower / TTestIndPower.solve_power, the same bits, cached per design
    es = fast_stats.ttest_effect_size(n, alpha, POWER, ratio)
    return es * sd if es is not None else None


def _finite_or(value: float, default: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else default


def _verdict(p: float, alpha: float, delta: float) -> str:
    if p < alpha and delta > 0:
        return "win"
    if p < alpha and delta < 0:
        return "loss"
    return "inconclusive"


def _count_extreme(null: np.ndarray, observed: float, tol: float) -> int:
    return int(np.count_nonzero(np.abs(null) >= abs(observed) - tol))


def _approx_note(parts: list[str]) -> str | None:
    if not parts:
        return None
    return (
        "grid-cell resampling for "
        + "; ".join(parts)
        + f" (each bound holds per resample with probability >= 1 - {rs.FAILURE_PROB:g})"
    )


# --------------------------------------------------------------------------- compare


def compare(
    control: Any,
    treatment: Any,
    *,
    design: str = "paired",
    primary_test: str = "t",
    tests: Sequence[str] = ("t", "permutation", "bootstrap"),
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    missing: str = "zero",
    seed: int | None = 0,
    metric: str = "",
    treatment_name: str = "treatment",
    segment: str | None = None,
) -> Comparison:
    """Compare a treatment's per-query metric values with the control's.

    ``control`` and ``treatment`` are pandas Series indexed by query id (aligned on the
    index) or, for the paired design, plain sequences of equal length. In the paired
    design a query absent from one Series is scored 0 (``missing="zero"``: a ranker that
    returned nothing failed that query), dropped (``"drop"``) or rejected (``"error"``);
    NaN values (metric undefined) drop the pair. In the independent design the two
    samples are unrelated and NaN values are dropped.

    ``primary_test`` decides ``p_value``, ``ci`` and the verdict; it is computed even
    when absent from ``tests``. Resampling tests draw ``n_resamples`` resamples from a
    generator derived from (seed, metric, treatment_name, segment); ``seed=None`` draws
    fresh entropy. Raises ConfigError for bad arguments.
    """
    run = _validate(
        design,
        primary_test,
        tests,
        alpha,
        confidence_level,
        n_resamples,
        missing,
        seed,
        metric,
        treatment_name,
        segment,
    )
    if primary_test != "t" and "bootstrap" not in run:
        run = (*run, "bootstrap")  # the primary interval of a non-t test is the BCa one
    context = dict(
        design=design,
        primary_test=primary_test,
        alpha=float(alpha),
        confidence_level=float(confidence_level),
        n_resamples=int(n_resamples),
        seed=seed,
        metric=metric,
        treatment_name=treatment_name,
        segment=segment,
        run=run,
    )
    if design == "paired":
        c, t, in_c, in_t = _paired_values(control, treatment, missing)
        draws = _shared_draws(
            {metric: (c, t)}, {metric: run}, int(n_resamples), seed, treatment_name, segment
        )
        return _compare_paired(
            c, t, int(in_c.sum()), int(in_t.sum()), draws=draws.get(metric), **context
        )
    c = _values("control", control)
    t = _values("treatment", treatment)
    return _compare_independent(c[~np.isnan(c)], t[~np.isnan(t)], **context)


def compare_metrics(
    controls: Mapping[str, Any],
    treatments: Mapping[str, Any],
    *,
    design: str = "paired",
    primary_test: str = "t",
    tests: Sequence[str] = ("t", "permutation", "bootstrap"),
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    missing: str = "zero",
    seed: int | None = 0,
    treatment_name: str = "treatment",
    segment: str | None = None,
) -> list[Comparison]:
    """:func:`compare` for several metrics of the same two arms, in the order of ``controls``.

    ``controls`` and ``treatments`` map each metric name to its per-query values, as
    :func:`compare` takes them. In the paired design, metrics whose values are defined on
    the same queries share one set of sign flips and one set of bootstrap resamples of
    those queries (one draw then serves every metric, its delta and its relative lift).
    The numbers are exactly those of :func:`compare` on each metric alone: sharing saves
    time, never changes a result.
    """
    if list(controls) != list(treatments):
        raise ConfigError(
            f"treatments: expected the metrics of controls ({', '.join(map(str, controls))}), "
            f"got {', '.join(map(str, treatments))}"
        )
    options = dict(
        design=design,
        primary_test=primary_test,
        tests=tests,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        missing=missing,
        seed=seed,
        treatment_name=treatment_name,
        segment=segment,
    )
    if design != "paired":
        return [
            compare(controls[m], treatments[m], metric=m, **options)  # type: ignore[arg-type]
            for m in controls
        ]
    runs = {
        m: _validate(
            design,
            primary_test,
            tests,
            alpha,
            confidence_level,
            n_resamples,
            missing,
            seed,
            m,
            treatment_name,
            segment,
        )
        for m in controls
    }
    pairs = {m: _paired_values(controls[m], treatments[m], missing) for m in controls}
    groups: dict[int, list[str]] = {}  # metrics on as many queries share draws
    for m, pair in pairs.items():
        groups.setdefault(pair[0].size, []).append(m)
    draws: dict[str, _SharedDraws] = {}
    for names in groups.values():
        draws.update(
            _shared_draws(
                {m: pairs[m][:2] for m in names},
                {m: runs[m] for m in names},
                int(n_resamples),
                seed,
                treatment_name,
                segment,
            )
        )
    context = dict(
        design=design,
        primary_test=primary_test,
        alpha=float(alpha),
        confidence_level=float(confidence_level),
        n_resamples=int(n_resamples),
        seed=seed,
        treatment_name=treatment_name,
        segment=segment,
    )
    results = []
    for m, (c, t, in_c, in_t) in pairs.items():
        run = runs[m]
        if primary_test != "t" and "bootstrap" not in run:
            run = (*run, "bootstrap")
        results.append(
            _compare_paired(
                c,
                t,
                int(in_c.sum()),
                int(in_t.sum()),
                draws=draws.get(m),
                metric=m,
                run=run,
                **context,
            )
        )
    return results


SHARE_FACTOR = 2.0
"""A metric draws from the shared resamples of its queries when drawing its own would
cost at least 1 / SHARE_FACTOR of what the shared draws cost: at worst it then pays
SHARE_FACTOR times its own cost, and every other metric that joins divides the cost."""


def _shared_draws(
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    runs: Mapping[str, tuple[str, ...]],
    n_resamples: int,
    seed: int | None,
    treatment_name: str,
    segment: str | None,
) -> dict[str, _SharedDraws]:
    """Resampled sums drawn once for the metrics of one comparison on n queries each.

    The shared sign flips and bootstrap resamples are seeded from (seed, n, treatment,
    segment) alone, and whether a metric uses them depends on its own values only (its
    cost of drawing alone, against :data:`SHARE_FACTOR`), so a metric's numbers never
    depend on which other metrics are compared beside it.
    """
    n = next(iter(pairs.values()))[0].size
    if n < 2:
        return {}
    flip_cost = rs.shared_signflip_cost(n, n_resamples)
    boot_cost = rs.shared_bootstrap_cost(n, n_resamples)
    flips: dict[str, np.ndarray] = {}
    boots: dict[str, np.ndarray] = {}
    for m, (c, t) in pairs.items():
        run = runs[m]
        d = t - c
        if "permutation" in run and flip_cost <= rs.WORK_BUDGET_NS:
            a = np.abs(d)
            if SHARE_FACTOR * rs.exact_cost(a, n_resamples) >= flip_cost:
                flips[m] = a
        wants_boot = "bootstrap" in run or run[0] != "t"
        if wants_boot and n >= MIN_BOOTSTRAP and boot_cost <= rs.WORK_BUDGET_NS:
            # one block of three columns per metric: d, then the relative lift's (u, c)
            block = np.zeros((n, 3))
            block[:, 0] = d
            own = rs.exact_cost(d, n_resamples)
            if _lift(float(c.mean()), float(t.mean()), True) is not None:
                block[:, 1:] = _ratio_columns(c, t)
                own += rs.exact_cost(block[:, 1:], n_resamples)
            if SHARE_FACTOR * own >= boot_cost:
                boots[m] = block
    shared: dict[str, dict[str, np.ndarray]] = {m: {} for m in pairs}
    key = ["shared", int(n)]
    if flips:
        rng = _generator(seed, key, treatment_name, segment, "permutation")
        sums = rs.shared_signflip_sums(list(flips.values()), n_resamples, rng)
        for m, column in zip(flips, sums, strict=True):
            shared[m]["flip"] = column
    if boots:
        rng = _generator(seed, key, treatment_name, segment, "bootstrap")
        sums = rs.shared_bootstrap_sums(list(boots.values()), n_resamples, rng)
        for m, block in zip(boots, sums, strict=True):
            shared[m]["delta"] = block[:, 0]
            if np.any(boots[m][:, 2]):
                shared[m]["ratio"] = block[:, 1:]
    return {m: _SharedDraws(**parts) for m, parts in shared.items() if parts}


def _ratio_columns(c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(u, c) with u = t - ratio * c, so that mean(t*) / mean(c*) = ratio + mean(u*) / mean(c*)."""
    ratio = float(t.sum()) / float(c.sum())
    return np.column_stack([t - ratio * c, c])


def _ratio_bootstrap(
    c: np.ndarray,
    t: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator | None,
    shared: np.ndarray | None = None,
) -> tuple[rs.BCa | None, str | None]:
    """Paired BCa distribution of mean(t) / mean(c) - 1, resampling query pairs.

    ``shared`` holds the bootstrap sums of :func:`_ratio_columns` when they were drawn
    together with other statistics (``rng`` is then unused).
    """
    n = c.size
    total_c, total_t = float(c.sum()), float(t.sum())
    ratio = total_t / total_c
    if shared is None:
        sample = rs.prepare(_ratio_columns(c, t), n_resamples, GRID_BINS_RATIO)
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
    tol = _REL_TOL * (abs(theta) + 1.0)
    corrected = rs.bca(theta, boot, [(jack, weights)], tol)
    note = None
    if sample is not None and sample.method == "grid":
        eps_u = rs.grid_error_bound(sample.atoms.widths[0], n)
        eps_c = rs.grid_error_bound(sample.atoms.widths[1], n)
        mean_c_min = float(np.min(np.abs(sum_c))) / n - eps_c
        spread = float(np.max(np.abs(sum_u / sum_c)))
        if mean_c_min > 0:
            bound = (eps_u + spread * eps_c) / mean_c_min
            note = f"the relative-lift bootstrap ({sample.atoms.m} cells, within ±{bound:.2g})"
        else:
            return None, None
    return corrected, note


def fieller_interval(
    mean_c: float,
    mean_t: float,
    var_c: float,
    var_t: float,
    cov: float,
    df: float,
    confidence_level: float,
) -> tuple[float, float] | None:
    """Fieller's interval for the relative lift mean_t / mean_c - 1.

    The set of ratios r for which mean_t - r * mean_c is not significantly different from
    0 by a t-test with ``df`` degrees of freedom; ``var_c``, ``var_t`` and ``cov`` are the
    variances and covariance of the two *means*. It accounts for the control's own noise
    and holds at small n; None when the set is unbounded (the control mean itself is not
    clearly away from 0).
    """
    if not (df > 0 and all(map(math.isfinite, (mean_c, mean_t, var_c, var_t, cov)))):
        return None
    q2 = float(stdtrit(df, 0.5 + confidence_level / 2.0)) ** 2
    a = mean_c**2 - q2 * var_c
    b = -2.0 * (mean_t * mean_c - q2 * cov)
    c = mean_t**2 - q2 * var_t
    disc = b * b - 4.0 * a * c
    if a <= 0 or disc < 0:
        return None
    root = math.sqrt(disc)
    low, high = (-b - root) / (2.0 * a), (-b + root) / (2.0 * a)
    return low - 1.0, high - 1.0


def _lift(mean_c: float, mean_t: float, n_ok: bool) -> float | None:
    """mean_t / mean_c - 1, when the control mean is a usable base (MIN_LIFT_SHARE)."""
    if not n_ok or not (math.isfinite(mean_c) and math.isfinite(mean_t)) or mean_c == 0:
        return None
    if abs(mean_c) < MIN_LIFT_SHARE * max(abs(mean_c), abs(mean_t)):
        return None
    return mean_t / mean_c - 1.0


def _t_interval(mean: float, se: float, df: float, level: float) -> tuple[float, float]:
    if not (math.isfinite(se) and df > 0):
        return (-math.inf, math.inf)
    half = float(stdtrit(df, 0.5 + level / 2.0)) * se
    return (mean - half, mean + half)


def _constant_interval(value: float, n: int, level: float) -> tuple[float, float]:
    """The exact sign-flip test inverted for n equal deltas: every other shift leaves all
    n shifted deltas with one sign, which the test calls with p = 2^(1 - n)."""
    if n < 1 or 2.0 ** (1 - n) >= 1.0 - level:
        return (-math.inf, math.inf)
    return (value, value)


def _effect_size(mean: float, sd: float, n: int) -> float:
    """Cohen's d_z: NaN with fewer than 2 queries or when every query moved by the same
    nonzero amount (no variance to scale by); 0 when nothing moved."""
    if n < 2:
        return math.nan
    if sd > 0:
        return mean / sd
    return 0.0 if mean == 0 else math.nan


def _primary_interval(primary_test: str, t_at: Any, boot_at: Any) -> tuple[Any, str]:
    """The primary interval (as a function of its level) and its method: the t-interval
    for the t-test, else the bootstrap's (unbounded where the bootstrap was left out)."""
    if primary_test == "t":
        return t_at, "t"
    if boot_at is not None:
        return boot_at, "bca"
    return (lambda level: (-math.inf, math.inf)), "bca"


def _excludes_zero(ci: tuple[float, float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def _agrees(ci: tuple[float, float], verdict: str) -> bool:
    return _excludes_zero(ci) == (verdict != "inconclusive")


NOTE_SMALL = (
    f"fewer than {MIN_BOOTSTRAP} queries: the bootstrap test and intervals are left out "
    "(they are too narrow at this size); the relative lift's interval is Fieller's"
)
NOTE_CONSTANT = (
    "every query moved by the same amount: the t-test is undefined (no variance), so its "
    "p-value and interval are the exact sign-flip test's (p = 2^(1 - n))"
)
NOTE_ONE = "fewer than 2 queries: no test or interval is possible"
NOTE_LIFT = (
    f"the control mean is under {MIN_LIFT_SHARE:.0%} of the treatment's: no relative lift "
    "is reported (it would say only that the control scores about 0)"
)


@dataclass(frozen=True)
class _SharedDraws:
    """Resampled sums for one paired comparison, drawn together with other metrics'.

    ``flip``: (B,) sign-flip sums of |d|; ``delta``: (B,) bootstrap sums of d;
    ``ratio``: (B, 2) bootstrap sums of :func:`_ratio_columns`. None where the
    comparison draws its own.
    """

    flip: np.ndarray | None = None
    delta: np.ndarray | None = None
    ratio: np.ndarray | None = None


def _compare_paired(
    c: np.ndarray,
    t: np.ndarray,
    n_control: int,
    n_treatment: int,
    *,
    draws: _SharedDraws | None = None,
    design: str,
    primary_test: str,
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    run: tuple[str, ...],
) -> Comparison:
    n = int(c.size)
    d = t - c
    mean_c = float(c.mean()) if n else math.nan
    mean_t = float(t.mean()) if n else math.nan
    delta = mean_t - mean_c if n else math.nan
    mean_d = float(d.mean()) if n else 0.0
    sd = float(d.std(ddof=1)) if n >= 2 else math.nan
    scale = float(np.abs(d).mean()) if n else 0.0
    tol = _REL_TOL * (scale + abs(mean_d))
    constant = n >= 2 and float(np.ptp(d)) <= tol
    if constant:
        sd = 0.0
    p_values: dict[str, float] = {}
    notes: list[str] = []
    approx: list[str] = []
    unbounded = (-math.inf, math.inf)
    nan = math.nan

    # paired t-test and its interval
    se = sd / math.sqrt(n) if n >= 2 else nan
    if n < 2:
        t_p = nan
        notes.append(NOTE_ONE)

        def t_at(level: float) -> tuple[float, float]:
            return unbounded
    elif constant:
        t_p = 1.0 if mean_d == 0 else min(1.0, 2.0 ** (1 - n))
        notes.append(NOTE_CONSTANT)

        def t_at(level: float) -> tuple[float, float]:
            return _constant_interval(mean_d, n, level)
    else:
        # scipy.stats.ttest_1samp(d, 0.0).pvalue, the same bits
        t_p = _finite_or(fast_stats.ttest_1samp(d, confidence_level)[0], 1.0)

        def t_at(level: float) -> tuple[float, float]:
            return _t_interval(mean_d, se, n - 1, level)

    if "t" in run:
        p_values["t"] = t_p

    draws = draws or _SharedDraws()
    if "permutation" in run:
        if n < 2:
            p_values["permutation"] = nan
        else:
            if draws.flip is not None:
                sample, null = None, draws.flip
            else:
                rng = _generator(seed, metric, treatment_name, segment, "permutation")
                sample = rs.prepare(np.abs(d), n_resamples, GRID_BINS_DELTA)
                null = rs.signflip_sums(sample, n_resamples, rng)
            b = _count_extreme(null, float(d.sum()), tol * max(n, 1))
            p_values["permutation"] = (b + 1) / (n_resamples + 1)
            if sample is not None and sample.method == "grid":
                bound = rs.grid_error_bound(sample.atoms.widths[0], n)
                approx.append(
                    f"the sign-flip test ({sample.atoms.m} cells, means within ±{bound:.2g})"
                )

    enough = n >= MIN_BOOTSTRAP
    boot_at = None
    resampled = None
    if "bootstrap" in run:
        if not enough:
            p_values["bootstrap"] = nan
            if n >= 2:
                notes.append(NOTE_SMALL)
        else:
            if draws.delta is not None:
                sample, resampled = None, draws.delta / n
            else:
                rng = _generator(seed, metric, treatment_name, segment, "bootstrap")
                sample = rs.prepare(d, n_resamples, GRID_BINS_DELTA)
                resampled = rs.bootstrap_sums(sample, n_resamples, rng)[:, 0] / n
            if sample is None or sample.method != "exact":
                jack_rows, weights = d, np.ones(n)
            else:
                jack_rows, weights = sample.atoms.values[:, 0], sample.atoms.counts
            if sample is not None and sample.method == "grid":
                bound = rs.grid_error_bound(sample.atoms.widths[0], n)
                approx.append(f"the delta bootstrap ({sample.atoms.m} cells, within ±{bound:.2g})")
            total = float(d.sum())
            jack = (total - jack_rows) / (n - 1)
            corrected = rs.bca(mean_d, resampled, [(jack, weights)], tol)
            p_values["bootstrap"] = corrected.p_value(0.0, expand=n)

            def boot_at(level: float, corrected=corrected) -> tuple[float, float]:
                return corrected.interval(level, expand=n)

    if "wilcoxon" in run:
        p_values["wilcoxon"] = _wilcoxon(d) if n >= 2 else nan

    relative = _lift(mean_c, mean_t, n >= 1)
    if n >= 1 and relative is None and mean_c != 0:
        notes.append(NOTE_LIFT)
    relative_at = None
    if relative is not None and constant:

        def relative_at(level: float) -> tuple[float, float]:
            return _constant_interval(relative, n, level)
    elif relative is not None and n >= 2:
        if enough and "bootstrap" in run:
            if draws.ratio is not None:
                corrected, note = _ratio_bootstrap(c, t, n_resamples, None, draws.ratio)
            else:
                rng = _generator(seed, metric, treatment_name, segment, "relative")
                corrected, note = _ratio_bootstrap(c, t, n_resamples, rng)
            if note:
                approx.append(note)
            if corrected is not None:

                def relative_at(level: float, corrected=corrected) -> tuple[float, float]:
                    return corrected.interval(level, expand=n)
        elif not enough:
            cov = np.cov(c, t, ddof=1) / n

            def relative_at(level: float, cov=cov) -> tuple[float, float] | None:
                return fieller_interval(
                    mean_c, mean_t, cov[0, 0], cov[1, 1], cov[0, 1], n - 1, level
                )

    primary_at, ci_method = _primary_interval(primary_test, t_at, boot_at)

    def mde_at(a: float) -> float | None:
        return _mde(n, sd, a)

    p_value = p_values[primary_test]
    ci = primary_at(confidence_level)
    verdict = _verdict(p_value, alpha, delta if n else 0.0)
    return Comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design=design,
        n=n,
        n_control=n_control,
        n_treatment=n_treatment,
        control_mean=mean_c,
        treatment_mean=mean_t,
        delta=delta,
        relative_lift=relative,
        ci=ci,
        ci_method=ci_method,
        ci_level=confidence_level,
        bootstrap_ci=boot_at(confidence_level) if boot_at else None,
        relative_ci=relative_at(confidence_level) if relative_at else None,
        p_value=p_value,
        p_values=p_values,
        p_adjusted=p_value,
        correction=None,
        effect_size=_effect_size(mean_d, sd, n),
        mde=mde_at(alpha),
        wins=int(np.count_nonzero(d > 0)),
        ties=int(np.count_nonzero(d == 0)),
        losses=int(np.count_nonzero(d < 0)),
        verdict=verdict,
        primary_test=primary_test,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximation=_approx_note(approx),
        ci_unadjusted=ci,
        ci_agrees=_agrees(ci, verdict),
        notes=tuple(notes),
        resampled_deltas=resampled,
        levels=_Levels(primary_at, relative_at, mde_at),
    )


def _wilcoxon(d: np.ndarray) -> float:
    from scipy import stats as sps

    if np.count_nonzero(d) == 0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = sps.wilcoxon(d, zero_method="wilcox").pvalue
        except ValueError:
            return 1.0
    return _finite_or(p, 1.0)


def _compare_independent(
    c: np.ndarray,
    t: np.ndarray,
    *,
    design: str,
    primary_test: str,
    alpha: float,
    confidence_level: float,
    n_resamples: int,
    seed: int | None,
    metric: str,
    treatment_name: str,
    segment: str | None,
    run: tuple[str, ...],
) -> Comparison:
    from scipy import stats as sps

    n_c, n_t = int(c.size), int(t.size)
    mean_c = float(c.mean()) if n_c else math.nan
    mean_t = float(t.mean()) if n_t else math.nan
    both = n_c > 0 and n_t > 0
    delta = mean_t - mean_c if both else math.nan
    obs = delta if both else 0.0
    var_c = float(c.var(ddof=1)) if n_c >= 2 else math.nan
    var_t = float(t.var(ddof=1)) if n_t >= 2 else math.nan
    scale = (float(np.abs(c).mean()) if n_c else 0.0) + (float(np.abs(t).mean()) if n_t else 0.0)
    tol = _REL_TOL * (scale + abs(obs))
    p_values: dict[str, float] = {}
    notes: list[str] = []
    approx: list[str] = []
    unbounded = (-math.inf, math.inf)
    nan = math.nan
    enough = n_c >= 2 and n_t >= 2
    smallest = min(n_c, n_t)

    # Welch t-test and interval
    if not enough:
        t_p = nan
        notes.append(NOTE_ONE.replace("queries", "values in an arm"))

        def t_at(level: float) -> tuple[float, float]:
            return unbounded
    elif var_c == 0 and var_t == 0:
        # no variance in either arm: the Welch test is undefined; the exact label
        # permutation test of two constant samples has p = 1 / C(n_c + n_t, n_t)
        shifted = min(1.0, 2.0 / math.comb(n_c + n_t, n_t))  # p of any shift but obs
        t_p = shifted if obs != 0 else 1.0
        notes.append(
            "no variance in either arm: the Welch test is undefined, so its p-value and "
            "interval are the exact label-permutation test's"
        )

        def t_at(level: float) -> tuple[float, float]:
            return (obs, obs) if shifted < 1.0 - level else unbounded
    else:
        se = math.sqrt(var_c / n_c + var_t / n_t)
        df = (var_c / n_c + var_t / n_t) ** 2 / (
            (var_c / n_c) ** 2 / (n_c - 1) + (var_t / n_t) ** 2 / (n_t - 1)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t_p = _finite_or(sps.ttest_ind(t, c, equal_var=False).pvalue, 1.0)

        def t_at(level: float, se=se, df=df) -> tuple[float, float]:
            return _t_interval(obs, se, df, level)

    if "t" in run:
        p_values["t"] = t_p

    if "permutation" in run:
        if not both:
            p_values["permutation"] = nan
        else:
            rng = _generator(seed, metric, treatment_name, segment, "permutation")
            pooled = np.concatenate([t, c])
            sample = rs.prepare(pooled, n_resamples, GRID_BINS_DELTA)
            sum_t = rs.relabel_sums(sample, n_t, n_resamples, rng)
            null = sum_t / n_t - (float(pooled.sum()) - sum_t) / n_c
            b = _count_extreme(null, obs, tol)
            p_values["permutation"] = (b + 1) / (n_resamples + 1)
            if sample.method == "grid":
                bound = rs.grid_error_bound(sample.atoms.widths[0], n_t) * (1 + n_t / n_c)
                approx.append(f"the permutation test ({sample.atoms.m} cells, within ±{bound:.2g})")

    boot_at = None
    relative_at = None
    resampled = None
    large = smallest >= MIN_BOOTSTRAP
    relative = _lift(mean_c, mean_t, both)
    if both and relative is None and mean_c != 0:
        notes.append(NOTE_LIFT)
    if "bootstrap" in run:
        if not large:
            p_values["bootstrap"] = nan
            if enough:
                notes.append(NOTE_SMALL.replace("queries", "values in an arm"))
        else:
            rng = _generator(seed, metric, treatment_name, segment, "bootstrap")
            means, jacks, bounds = [], [], []
            for x in (c, t):
                sample = rs.prepare(x, n_resamples, GRID_BINS_DELTA)
                means.append(rs.bootstrap_sums(sample, n_resamples, rng)[:, 0] / x.size)
                if sample.method == "grid":
                    jacks.append((x, np.ones(x.size)))
                    bounds.append(rs.grid_error_bound(sample.atoms.widths[0], x.size))
                else:
                    jacks.append((sample.atoms.values[:, 0], sample.atoms.counts))
                    bounds.append(0.0)
            boot_c, boot_t = means
            resampled = boot_t - boot_c
            (vc, wc), (vt, wt) = jacks
            jack_c = (float(c.sum()) - vc) / (n_c - 1)
            jack_t = (float(t.sum()) - vt) / (n_t - 1)
            corrected = rs.bca(obs, resampled, [(mean_t - jack_c, wc), (jack_t - mean_c, wt)], tol)
            p_values["bootstrap"] = corrected.p_value(0.0, expand=smallest)

            def boot_at(level: float, corrected=corrected) -> tuple[float, float]:
                return corrected.interval(level, expand=smallest)

            if any(bounds):
                approx.append(f"the bootstrap (means within ±{sum(bounds):.2g})")
            if relative is not None and not np.any(boot_c * np.sign(mean_c) <= 0):
                theta = mean_t / mean_c - 1.0
                ratio = rs.bca(
                    theta,
                    boot_t / boot_c - 1.0,
                    [(mean_t / jack_c - 1.0, wc), (jack_t / mean_c - 1.0, wt)],
                    _REL_TOL * (abs(theta) + 1.0),
                )

                def relative_at(level: float, ratio=ratio) -> tuple[float, float] | None:
                    ci = ratio.interval(level, expand=smallest)
                    return ci if all(math.isfinite(v) for v in ci) else None

    if relative is not None and enough and not large:

        def relative_at(level: float) -> tuple[float, float] | None:
            return fieller_interval(
                mean_c, mean_t, var_c / n_c, var_t / n_t, 0.0, smallest - 1, level
            )

    if "mannwhitney" in run:
        p_values["mannwhitney"] = _mannwhitney(c, t)

    primary_at, ci_method = _primary_interval(primary_test, t_at, boot_at)
    pooled_sd = (
        math.sqrt(((n_c - 1) * var_c + (n_t - 1) * var_t) / (n_c + n_t - 2)) if enough else nan
    )

    def mde_at(a: float) -> float | None:
        return _mde(n_c, pooled_sd, a, ratio=n_t / n_c) if enough else None

    p_value = p_values[primary_test]
    ci = primary_at(confidence_level)
    verdict = _verdict(p_value, alpha, obs)
    return Comparison(
        metric=metric,
        treatment=treatment_name,
        segment=segment,
        design=design,
        n=n_c + n_t,
        n_control=n_c,
        n_treatment=n_t,
        control_mean=mean_c,
        treatment_mean=mean_t,
        delta=delta,
        relative_lift=relative,
        ci=ci,
        ci_method=ci_method,
        ci_level=confidence_level,
        bootstrap_ci=boot_at(confidence_level) if boot_at else None,
        relative_ci=relative_at(confidence_level) if relative_at else None,
        p_value=p_value,
        p_values=p_values,
        p_adjusted=p_value,
        correction=None,
        effect_size=obs / pooled_sd if enough and pooled_sd > 0 else nan,
        mde=mde_at(alpha),
        wins=0,
        ties=0,
        losses=0,
        verdict=verdict,
        primary_test=primary_test,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        approximation=_approx_note(approx),
        ci_unadjusted=ci,
        ci_agrees=_agrees(ci, verdict),
        notes=tuple(notes),
        resampled_deltas=resampled,
        levels=_Levels(primary_at, relative_at, mde_at),
    )


def _mannwhitney(c: np.ndarray, t: np.ndarray) -> float:
    from scipy import stats as sps

    if c.size == 0 or t.size == 0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = sps.mannwhitneyu(t, c, alternative="two-sided").pvalue
        except ValueError:
            return 1.0
    return _finite_or(p, 1.0)


# --------------------------------------------------------------------------- adjust


def adjust(comparisons: Sequence[Comparison], method: str = "holm") -> list[Comparison]:
    """Adjust the primary p-values of one family of comparisons for multiple testing.

    ``method`` is a statsmodels ``multipletests`` method (``holm``, ``fdr_bh``,
    ``bonferroni``, ...; aliases ``bh``, ``by``, ``hochberg``; ``none`` leaves p-values
    as they are). Returns copies with ``p_adjusted``, ``correction`` and ``verdict``
    filled in: ``win`` / ``loss`` when the adjusted p-value is below the comparison's
    alpha in that direction. Comparisons without a p-value (too few queries) stay out of
    the family. The interval, the relative interval and the MDE are redrawn at the level
    that matches the adjusted p-value (``ci_level``), so an interval excludes 0 exactly
    when the adjusted verdict is a win or a loss. The input order is kept.
    """
    from abrank.stats.fast import multipletests  # statsmodels' numbers, without its import

    canonical = CORRECTIONS[_choice("method", method, sorted(CORRECTIONS))]
    items = list(comparisons)
    if not items:
        return []
    raw = np.array([item.p_value for item in items], dtype=np.float64)
    adjusted = raw.copy()
    tested = np.isfinite(raw)
    if canonical != "none" and tested.any():
        adjusted[tested] = multipletests(raw[tested], alpha=items[0].alpha, method=canonical)[1]
    return [
        _at_adjusted_level(item, float(p), None if canonical == "none" else canonical)
        for item, p in zip(items, adjusted, strict=True)
    ]


def _at_adjusted_level(item: Comparison, p: float, correction: str | None) -> Comparison:
    """One comparison with its adjusted p-value, verdict and intervals at the matching level."""
    verdict = _verdict(p, item.alpha, item.delta if math.isfinite(item.delta) else 0.0)
    changes: dict[str, Any] = {"p_adjusted": p, "correction": correction, "verdict": verdict}
    share = item.p_value / p if math.isfinite(p) and p > 0 else 1.0
    if item.levels is not None and correction is not None and math.isfinite(share) and share < 1:
        level = 1.0 - (1.0 - item.confidence_level) * share
        changes.update(
            ci=item.levels.primary(level),
            ci_level=level,
            mde=item.levels.mde(item.alpha * share),
        )
        if item.levels.relative is not None:
            changes["relative_ci"] = item.levels.relative(level)
    changes["ci_agrees"] = _agrees(changes.get("ci", item.ci), verdict)
    return replace(item, **changes)
