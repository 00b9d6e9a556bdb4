"""Prediction-powered inference (PPI++) of a mean from a few gold labels and many
predictions: Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (Science 2023) and its
power-tuned form, Angelopoulos, Duchi & Zrnic (PPI++, 2023); for IR metrics, Oosterhuis
et al. (2024).

Here the unit is the query: ``y`` holds a per-query quantity under human labels on the
``n`` queries humans judged, ``f`` the same quantity under machine labels on those
queries, and ``f_unlabelled`` it under machine labels on the ``N`` queries humans did not
judge. The estimate is

    theta = lam * mean(f_unlabelled) + mean(y - lam * f)

unbiased for the human-label mean at a fixed ``lam`` (and consistent with the tuned one)
whatever the machine labels are, *provided the human-judged queries are a uniform random
sample of the queries* (a human sample chosen
by hand, or the hardest queries, breaks it). Its variance is
lam^2 Var(f_unlabelled) / N + Var(y - lam f) / n (variances with denominator n, as the
reference package ``ppi-python`` computes them), and the interval and two-sided p-value
come from the normal approximation. ``lam`` is the power-tuning parameter that minimises
that variance, cov(y, f) / ((1 + n/N) Var(f over all queries)), clipped to [0, 1]:
lam = 0 is the human-only estimate, lam = 1 plain PPI; as ``ppi_mean_ci`` chooses it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy.stats import norm

from abrank.records import Record
from abrank.stats.power import normal_detectable_effect

__all__ = ["PPIEstimate", "compare_ppi", "power_tuning", "ppi_mean"]


@dataclasses.dataclass(frozen=True)
class PPIEstimate(Record):
    """A prediction-powered mean: ``estimate``, its standard error ``se``, the power
    tuning ``lam`` used, ``n`` human-labelled and ``n_unlabelled`` machine-only units."""

    estimate: float
    se: float
    lam: float
    n: int
    n_unlabelled: int

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """The two-sided normal interval at ``level``."""
        if not math.isfinite(self.se):
            return (math.nan, math.nan)
        half = float(norm.ppf(0.5 + level / 2.0)) * self.se
        return (self.estimate - half, self.estimate + half)

    def p_value(self, null: float = 0.0) -> float:
        """The two-sided p-value of ``estimate == null`` (NaN without a standard error)."""
        if not (math.isfinite(self.se) and math.isfinite(self.estimate)):
            return math.nan
        if self.se == 0.0:
            return 1.0 if self.estimate == null else 0.0
        return float(2.0 * norm.sf(abs(self.estimate - null) / self.se))

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": _finite(self.estimate),
            "se": _finite(self.se),
            "lambda": _finite(self.lam),
            "n": self.n,
            "n_unlabelled": self.n_unlabelled,
        }


def power_tuning(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lam`` for the mean, clipped to [0, 1]: the covariance
    of ``y`` and ``f`` (denominator n) over (1 + n/N) times the variance of the
    predictions on all units (denominator n + N - 1); 0 when the predictions do not vary."""
    y, f, f_unlabelled = _arrays(y, f, f_unlabelled)
    n, big_n = y.size, f_unlabelled.size
    if n < 2 or big_n < 1:
        return 0.0
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    spread = float(np.var(np.concatenate([f, f_unlabelled]), ddof=1))
    if spread <= 0.0 or not math.isfinite(spread):
        return 0.0
    return float(np.clip(covariance / ((1.0 + n / big_n) * spread), 0.0, 1.0))


def ppi_mean(
    y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray, *, lam: float | None = None
) -> PPIEstimate:
    """The prediction-powered mean of ``y`` (module text); ``lam`` None: power-tuned."""
    y, f, f_unlabelled = _arrays(y, f, f_unlabelled)
    if y.size != f.size:
        raise ValueError(f"f: expected one prediction per label ({y.size}), got {f.size}")
    n, big_n = y.size, f_unlabelled.size
    if n == 0:
        return PPIEstimate(math.nan, math.nan, math.nan, 0, big_n)
    if lam is None:
        lam = power_tuning(y, f, f_unlabelled)
    rectifier = y - lam * f
    imputed = float(lam * f_unlabelled.mean()) if big_n else 0.0
    estimate = imputed + float(rectifier.mean())
    variance = float(np.var(rectifier)) / n if n > 1 else math.nan
    if big_n:
        variance += float(np.var(lam * f_unlabelled)) / big_n
    return PPIEstimate(estimate, math.sqrt(variance), float(lam), n, big_n)


def _arrays(*values: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, dtype=np.float64).ravel() for v in values)


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def compare_ppi(
    human: tuple[np.ndarray, np.ndarray],
    machine: tuple[np.ndarray, np.ndarray],
    unlabelled: tuple[np.ndarray, np.ndarray],
    *,
    metric: str,
    treatment: str,
    segment: str | None,
    alpha: float = 0.05,
    confidence_level: float = 0.95,
) -> Any:
    """The paired comparison of two arms by prediction-powered inference on the per-query
    deltas, as a :class:`~abrank.stats.results.Comparison` (primary test ``ppi``).

    ``human`` is the (control, treatment) values under human labels on the queries humans
    judged, ``machine`` the values under machine labels on the same queries (in the same
    order), ``unlabelled`` the values under machine labels on the queries humans did not
    judge. The delta is :func:`ppi_mean` of treatment - control with the power-tuned
    ``lam`` of the deltas; each arm's mean uses the same ``lam``, so that the delta is
    their difference. Its interval is the normal one at every level (so that a correction
    redraws it), ``n`` the human-judged queries; the lift's interval is the delta
    method's on the two arms' prediction-powered means (their covariance included); the
    bootstrap, the effect size and the win/tie/loss counts do not apply (None or NaN).
    """
    from abrank.stats.results import build_comparison

    (y_c, y_t), (f_c, f_t), (u_c, u_t) = (_arrays(*human), _arrays(*machine), _arrays(*unlabelled))
    delta = ppi_mean(y_t - y_c, f_t - f_c, u_t - u_c)
    lam = delta.lam if math.isfinite(delta.lam) else 0.0
    control = ppi_mean(y_c, f_c, u_c, lam=lam)
    treatment_mean = ppi_mean(y_t, f_t, u_t, lam=lam)
    n = delta.n

    def mde_at(level_alpha: float) -> float | None:
        return normal_detectable_effect(delta.se, level_alpha)

    lift = None
    relative_at = None
    if math.isfinite(control.estimate) and control.estimate > 0:
        lift = treatment_mean.estimate / control.estimate - 1.0
        lift_se = _lift_se(
            (y_c - lam * f_c, y_t - lam * f_t),
            (lam * u_c, lam * u_t),
            control.estimate,
            treatment_mean.estimate,
        )
        relative_at = _normal_interval(lift, lift_se)
    comparison = build_comparison(
        metric=metric,
        treatment=treatment,
        segment=segment,
        design="paired",
        counts=(n, n, n),
        control_mean=control.estimate,
        treatment_mean=treatment_mean.estimate,
        delta=delta.estimate,
        relative_lift=lift,
        p_values={"ppi": delta.p_value()},
        primary_test="ppi",
        primary_at=delta.ci,
        ci_method="ppi",
        bootstrap_at=None,
        relative_at=relative_at,
        mde_at=mde_at,
        effect_size=math.nan,
        wins_ties_losses=None,
        alpha=alpha,
        confidence_level=confidence_level,
        n_resamples=0,
        approximations=(),
        notes=(),
        resampled_deltas=None,
    )
    return dataclasses.replace(comparison, extra={"ppi": delta.to_dict()})


def _lift_se(
    rectifiers: tuple[np.ndarray, np.ndarray],
    imputed: tuple[np.ndarray, np.ndarray],
    control: float,
    treatment: float,
) -> float:
    """The delta method's standard error of treatment / control - 1, where each arm's
    prediction-powered mean is mean(imputed) + mean(rectifier) over independent samples
    (the unlabelled units and the labelled ones), paired across arms within each."""
    (r_c, r_t), (u_c, u_t) = rectifiers, imputed
    n, big_n = r_c.size, u_c.size
    if n < 2:
        return math.nan

    def cov(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean((a - a.mean()) * (b - b.mean()))) if a.size else 0.0

    var_c = cov(r_c, r_c) / n + (cov(u_c, u_c) / big_n if big_n else 0.0)
    var_t = cov(r_t, r_t) / n + (cov(u_t, u_t) / big_n if big_n else 0.0)
    both = cov(r_c, r_t) / n + (cov(u_c, u_t) / big_n if big_n else 0.0)
    ratio = treatment / control
    variance = (var_t - 2.0 * ratio * both + ratio**2 * var_c) / control**2
    return math.sqrt(max(variance, 0.0))


def _normal_interval(center: float, se: float) -> Any:
    """level -> the normal interval center +- z se (None when se is not finite)."""

    def at(level: float) -> tuple[float, float] | None:
        if not math.isfinite(se):
            return None
        half = float(norm.ppf(0.5 + level / 2.0)) * se
        return (center - half, center + half)

    return at
