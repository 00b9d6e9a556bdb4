"""The entry points: :func:`compare` one metric, :func:`compare_metrics` several of one pair
of arms.

Both check their arguments once (:mod:`abrank.stats.validation`), hand the values to the
design's module (:mod:`abrank.stats.paired`, :mod:`abrank.stats.independent`) and, in the
paired design, plan the resamples the metrics of one comparison share
(:mod:`abrank.stats.draws`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from abrank.errors import ConfigError
from abrank.stats.draws import SharedDraws, plan_shared_draws
from abrank.stats.independent import compare_independent
from abrank.stats.paired import compare_paired
from abrank.stats.results import Comparison
from abrank.stats.sequential import checked_tuning
from abrank.stats.settings import TestSettings
from abrank.stats.validation import paired_values, validate, values, with_primary_interval

DEFAULT_TESTS = ("t", "permutation", "bootstrap")


class _Context(TypedDict):
    """The checked keyword arguments that both designs' comparisons take."""

    sequential_tuning: int | None
    primary_test: str
    alpha: float
    confidence_level: float
    n_resamples: int
    seed: int | None
    metric: str
    treatment_name: str
    segment: str | None
    run: tuple[str, ...]


def series_name(control: Any, treatment: Any) -> str:
    """The metric's name from two Series that share one (``""`` otherwise)."""
    if isinstance(control, pd.Series) and isinstance(treatment, pd.Series):
        name = control.name
        if name is not None and name == treatment.name:
            return str(name)
    return ""


def compare(
    control: Any,
    treatment: Any,
    *,
    design: str = "paired",
    primary_test: str = "t",
    tests: Sequence[str] = DEFAULT_TESTS,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    missing: str = "zero",
    seed: int | None = 0,
    metric: str = "",
    treatment_name: str = "treatment",
    segment: str | None = None,
    sequential_tuning: int | None = None,
) -> Comparison:
    """Compare a treatment's per-query metric values with the control's.

    ``control`` and ``treatment`` are pandas Series indexed by query id (aligned on the
    index) or, for the paired design, plain sequences of equal length. In the paired
    design a query absent from one Series is scored 0 (``missing="zero"``: a ranker that
    returned nothing failed that query), dropped (``"drop"``) or rejected (``"error"``);
    NaN values (metric undefined) drop the pair. In the independent design the two
    samples are unrelated and NaN values are dropped.

    ``primary_test`` decides ``p_value``, ``ci`` and the verdict; it is computed even
    when absent from ``tests``. Test names are those of
    :data:`abrank.stats.registry.TESTS` for the design (or their aliases). ``metric``
    defaults to the Series' name when both share one. Resampling tests draw
    ``n_resamples`` resamples from a generator derived from (seed, metric,
    treatment_name, segment); ``seed=None`` draws fresh entropy. The ``sequential`` test
    (an always-valid confidence sequence, :mod:`abrank.stats.sequential`) is tightest
    after ``sequential_tuning`` observations (N*; None: the sample size). Raises ConfigError for
    bad arguments.
    """
    if metric == "":
        metric = series_name(control, treatment)
    run = validate(
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
    run = with_primary_interval(run)
    context = _Context(
        sequential_tuning=checked_tuning(sequential_tuning),
        primary_test=run[0],
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
        c, t, in_c, in_t = paired_values(control, treatment, missing)
        draws = plan_shared_draws(
            {metric: (c, t)}, {metric: run}, int(n_resamples), seed, treatment_name, segment
        )
        return compare_paired(
            c, t, int(in_c.sum()), int(in_t.sum()), draws=draws.get(metric), **context
        )
    c = values("control", control)
    t = values("treatment", treatment)
    return compare_independent(c[~np.isnan(c)], t[~np.isnan(t)], **context)


def compare_metrics(
    controls: Mapping[str, Any],
    treatments: Mapping[str, Any],
    *,
    design: str = "paired",
    primary_test: str = "t",
    tests: Sequence[str] = DEFAULT_TESTS,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    missing: str = "zero",
    seed: int | None = 0,
    treatment_name: str = "treatment",
    segment: str | None = None,
    sequential_tuning: int | None = None,
    settings: TestSettings | None = None,
) -> list[Comparison]:
    """:func:`compare` for several metrics of the same two arms, in the order of ``controls``.

    ``settings`` (a :class:`~abrank.stats.settings.TestSettings`), when given, stands for
    the keywords it holds (tests, level, resamples, seed, sequential tuning).

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
    if settings is not None:
        primary_test, tests, alpha = settings.primary_test, settings.tests, settings.alpha
        confidence_level, n_resamples = settings.confidence_level, settings.n_resamples
        seed, sequential_tuning = settings.seed, settings.sequential_tuning
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
        sequential_tuning=sequential_tuning,
    )
    if design != "paired":
        return [
            compare(controls[m], treatments[m], metric=m, **options)  # type: ignore[arg-type]
            for m in controls
        ]
    runs = {
        m: validate(
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
    tuning = checked_tuning(sequential_tuning)
    pairs = {m: paired_values(controls[m], treatments[m], missing) for m in controls}
    groups: dict[int, list[str]] = {}  # metrics on as many queries share draws
    for m, pair in pairs.items():
        groups.setdefault(pair[0].size, []).append(m)
    draws: dict[str, SharedDraws] = {}
    for names in groups.values():
        draws.update(
            plan_shared_draws(
                {m: pairs[m][:2] for m in names},
                {m: runs[m] for m in names},
                int(n_resamples),
                seed,
                treatment_name,
                segment,
            )
        )
    results = []
    for m, (c, t, in_c, in_t) in pairs.items():
        run = with_primary_interval(runs[m])
        results.append(
            compare_paired(
                c,
                t,
                int(in_c.sum()),
                int(in_t.sum()),
                draws=draws.get(m),
                primary_test=run[0],
                alpha=float(alpha),
                confidence_level=float(confidence_level),
                n_resamples=int(n_resamples),
                seed=seed,
                metric=m,
                treatment_name=treatment_name,
                segment=segment,
                run=run,
                sequential_tuning=tuning,
            )
        )
    return results
