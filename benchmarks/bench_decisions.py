"""Calibration of the decision rule ship-if-success-and-no-harm on simulated experiments.

Run (from the checkout, so that its abrank is imported):
      PYTHONPATH=. python benchmarks/bench_decisions.py                    (2,000 a case)
      PYTHONPATH=. python benchmarks/bench_decisions.py --experiments 200  (a quick look)

Each simulated experiment goes through the run's own pipeline: one comparison per metric
(``compare_clustered`` online, ``compare`` paired offline; the t-test), the families of
``overall_families`` (Holm over the success metrics, guardrails uncorrected), the verdicts
turned for a lower-is-better metric, ``annotate`` with the metric's role, and
``decide_comparisons``. Five metrics: two success metrics, three guardrails (one lower is
better, one with a relative margin).

Each metric is a probit of a Gaussian latent: a value Phi(X), X = base + shift + shared
loading x a factor shared by the metrics + own noise, so that its true mean and the true
covariances of the metrics follow in closed form (Phi2, the bivariate normal CDF):

* **online** (users randomized): a user has 1 + Poisson(Gamma) impressions (negative
  binomial: heavy-ish tailed, about 6 on average) and per metric a propensity Phi(X); the
  shared factor is the user's engagement. The metric's per-user sum M_u is Binomial(D_u,
  Phi(X)); the arm's value is sum M / sum D, tested by the clustered delta method. Its true
  variance is the delta method's, Var(M - R D) / (n E[D]^2), with Var(M - R D) =
  E[D] (E[p] - E[p^2]) + E[D^2] Var(p) and covariances E[D^2] Cov(p_k, p_l).
* **offline** (paired queries): a query's value in an arm is Phi(X) in [0, 1], X sharing
  the query's difficulty across the arms (shared by the metrics, and the metric's own) and
  the ranking's quality on that query in that arm (shared by the metrics); the test is the
  paired t-test of the per-query deltas, whose true variance follows from the arms'
  covariances.

A true change (a success metric's MDE, a guardrail's share of its margin) shifts the
treatment's latent so that the arm's true mean moves by exactly that change. The planner's
n is :func:`abrank.decision.sizing.units_for_power` on :class:`MetricPlan`s with the true
standard errors, the first success metric moving by its MDE, nothing else; every case runs
at that n. Cases:

1. no true change on any metric: P(ship) <= alpha (0.05);
2. the first success metric moves by its MDE: P(ship) >= the planned power (0.80);
3. that, and the lower-is-better guardrail worse by 1.5 x its margin: P(ship) <= 0.05;
4. that, with the guardrail worse by 0.5 x its margin: P(ship) below the planned power
   (printed beside it, with the gap);
5. case 2 with independent metrics (the shared loadings moved into each metric's own
   noise: the same marginals, so the same planner's n): P(ship) equals the planned power
   (``ship_probability``, which treats the metrics as independent) within 3 Monte-Carlo SE.

"formula" is ``ship_probability`` at the case's true changes (independent metrics).
A bound passes when the simulated rate is within 3 Monte-Carlo standard errors (taken at
the bound) of it, so that a rate that sits on its bound passes. Every figure is
deterministic from ``--seed``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import multivariate_normal

from abrank.analysis.comparisons import overall_families
from abrank.config import Experiment
from abrank.config.analysis import AnalysisConfig
from abrank.config.decision import DecisionConfig, MetricRole
from abrank.decision.checks import annotate
from abrank.decision.rule import RuleSettings, decide_comparisons
from abrank.decision.sizing import MetricPlan, ship_probability, units_for_power
from abrank.stats import UnitSums, compare, compare_clustered
from abrank.stats.results import Comparison

ALPHA = 0.05
POWER = 0.8
STATUSES = ("ship", "no-ship", "keep-running")


@dataclass(frozen=True)
class MetricSpec:
    """One simulated metric: its role and direction, its latent's mean (``base``), its
    loading on the factor the metrics share (``shared``; per user online, per query and arm
    offline), its own noise's sd (``own``), offline its loadings on the query's difficulty
    shared by the metrics (``query_shared``) and its own (``query_own``), and a guardrail's
    margin (``nim``; a share of the control's mean when ``relative``)."""

    name: str
    role: Literal["success", "guardrail"]
    lower_is_better: bool
    base: float
    shared: float
    own: float
    query_shared: float = 0.0
    query_own: float = 0.0
    nim: float | None = None
    relative: bool = False

    def independent(self) -> MetricSpec:
        """The metric with its shared loadings moved into its own noise: the same marginal
        distribution, uncorrelated with the other metrics."""
        return dataclasses.replace(
            self,
            shared=0.0,
            own=math.hypot(self.shared, self.own),
            query_shared=0.0,
            query_own=math.hypot(self.query_shared, self.query_own),
        )


@dataclass(frozen=True)
class Setup:
    """One simulated design: its metrics, the planned MDE of the first success metric and,
    online, the impressions per user: 1 + Poisson(rate), the rate Gamma(impressions_shape,
    extra_impressions / impressions_shape) (mean 1 + extra_impressions)."""

    design: Literal["online", "offline"]
    unit: str
    metrics: tuple[MetricSpec, ...]
    mde: float
    extra_impressions: float = 5.0
    impressions_shape: float = 0.8

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def moved(self) -> str:
        """The success metric a true effect moves (the first)."""
        return next(m.name for m in self.metrics if m.role == "success")

    @property
    def harmed(self) -> str:
        """The guardrail the harm cases move (the first lower-is-better one)."""
        return next(m.name for m in self.metrics if m.role == "guardrail" and m.lower_is_better)

    def independent(self) -> Setup:
        """The setup with uncorrelated metrics (:meth:`MetricSpec.independent`)."""
        return dataclasses.replace(self, metrics=tuple(m.independent() for m in self.metrics))

    def scaled(self, factor: float) -> Setup:
        """The setup with its MDE and margins ``factor`` times larger: the same experiment
        on about 1 / factor^2 of the units (a quicker one for the tests)."""
        metrics = tuple(
            dataclasses.replace(m, nim=m.nim * factor) if m.nim is not None else m
            for m in self.metrics
        )
        return dataclasses.replace(self, metrics=metrics, mde=self.mde * factor)


ONLINE = Setup(
    design="online",
    unit="users",
    metrics=(
        MetricSpec("ctr", "success", False, base=-0.4, shared=0.6, own=0.5),
        MetricSpec("long_click_rate", "success", False, base=-1.0, shared=0.6, own=0.4),
        # engaged users abandon less: its noise moves with the success metrics' good way
        MetricSpec("abandonment_rate", "guardrail", True, -0.6, -0.5, 0.5, nim=0.024),
        # and reformulate more: its noise moves against them
        MetricSpec("reformulation_rate", "guardrail", True, -1.2, 0.4, 0.4, nim=0.02),
        MetricSpec("satisfied_rate", "guardrail", False, -0.2, 0.5, 0.4, nim=0.07, relative=True),
    ),
    mde=0.04,
)

OFFLINE = Setup(
    design="offline",
    unit="queries",
    metrics=(
        MetricSpec("ndcg@10", "success", False, 0.3, 0.5, 0.3, query_shared=0.8, query_own=0.4),
        MetricSpec("mrr@10", "success", False, 0.6, 0.5, 0.4, query_shared=0.7, query_own=0.5),
        MetricSpec("bad@10", "guardrail", True, -0.8, -0.4, 0.3, 0.5, 0.4, nim=0.01),
        MetricSpec("recall@100", "guardrail", False, 0.4, 0.3, 0.3, 0.6, 0.4, nim=0.011),
        # a guardrail whose noise moves against the success metrics
        MetricSpec("diversity@10", "guardrail", False, 0.0, -0.3, 0.3, 0.0, 0.6, 0.03, True),
    ),
    mde=0.015,
)


# -- the true moments -----------------------------------------------------------------------


def bivariate_normal_cdf(h: float, k: float, rho: float) -> float:
    """Phi2(h, k; rho) = P(Z1 <= h, Z2 <= k) for standard normals of correlation rho."""
    if rho == 0.0:
        return float(ndtr(h) * ndtr(k))
    cov = [[1.0, rho], [rho, 1.0]]
    return float(multivariate_normal(mean=[0.0, 0.0], cov=cov).cdf([h, k]))


def probit_moments(mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The means and covariances of Phi(X_i) for a Gaussian vector X (mean, cov).

    E[Phi(X_i)] = P(Z_i <= X_i) = Phi(mu_i / s_i), s_i^2 = 1 + Var(X_i), and
    E[Phi(X_i) Phi(X_j)] = P(Z_i <= X_i, Z_j <= X_j) = Phi2(mu_i / s_i, mu_j / s_j; r) with
    r = Cov(X_i, X_j) / (s_i s_j) (Z independent standard normals; for i = j, two draws of
    Z against the same X, r = Var(X_i) / s_i^2)."""
    scale = np.sqrt(1.0 + np.diag(cov))
    h = mean / scale
    means = ndtr(h)
    size = mean.size
    out = np.empty((size, size))
    for i in range(size):
        for j in range(i, size):
            r = cov[i, j] / (scale[i] * scale[j])
            out[i, j] = out[j, i] = bivariate_normal_cdf(h[i], h[j], r) - means[i] * means[j]
    return means, out


def latent(setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    """The control's latent means and covariance: one user's metrics (online), or one
    query's metrics in the control then in the treatment (offline)."""
    base = np.array([m.base for m in setup.metrics])
    shared = np.array([m.shared for m in setup.metrics])
    arm = np.outer(shared, shared) + np.diag([m.own**2 for m in setup.metrics])
    if setup.design == "online":
        return base, arm
    query_shared = np.array([m.query_shared for m in setup.metrics])
    query = np.outer(query_shared, query_shared) + np.diag([m.query_own**2 for m in setup.metrics])
    return np.concatenate([base, base]), np.block([[query + arm, query], [query, query + arm]])


def control_means(setup: Setup) -> np.ndarray:
    """Each metric's true mean in the control."""
    mean, cov = latent(setup)
    k = len(setup.metrics)
    return ndtr(mean[:k] / np.sqrt(1.0 + np.diag(cov)[:k]))


def raw_changes(setup: Setup, changes: Mapping[str, float]) -> np.ndarray:
    """The true changes, treatment - control, of changes given the good way by metric."""
    return np.array(
        [changes.get(m.name, 0.0) * (-1.0 if m.lower_is_better else 1.0) for m in setup.metrics]
    )


def latent_shifts(setup: Setup, changes: Mapping[str, float]) -> np.ndarray:
    """The treatment's latent shifts that move each metric's true mean by its change:
    Phi((base + shift) / s) = Phi(base / s) + change."""
    mean, cov = latent(setup)
    k = len(setup.metrics)
    scale = np.sqrt(1.0 + np.diag(cov)[:k])
    target = control_means(setup) + raw_changes(setup, changes)
    return scale * ndtri(target) - mean[:k]


def change_covariance(setup: Setup, changes: Mapping[str, float], n: int) -> np.ndarray:
    """The true covariance of the metrics' estimated changes with n units in all (online:
    n / 2 users per arm, the delta method's; offline: n paired queries)."""
    mean, cov = latent(setup)
    k = len(setup.metrics)
    shifts = latent_shifts(setup, changes)
    if setup.design == "offline":
        means, moments = probit_moments(mean + np.concatenate([np.zeros(k), shifts]), cov)
        difference = np.hstack([-np.eye(k), np.eye(k)])
        return difference @ moments @ difference.T / n
    shape, extra = setup.impressions_shape, setup.extra_impressions
    d_mean = 1.0 + extra
    d_square = extra + extra**2 / shape + d_mean**2  # Var(D) + E[D]^2
    per_arm = n / 2.0
    total = np.zeros((k, k))
    for shift in (np.zeros(k), shifts):
        p_mean, p_cov = probit_moments(mean + shift, cov)
        p_square = np.diag(p_cov) + p_mean**2
        unit = d_mean * np.diag(p_mean - p_square) + d_square * p_cov
        total += unit / d_mean**2 / per_arm
    return total


def absolute_margins(setup: Setup) -> dict[str, float]:
    """Each guardrail's margin on the change's scale (a relative one times the control's
    true mean)."""
    means = control_means(setup)
    return {
        m.name: m.nim * means[i] if m.relative else m.nim
        for i, m in enumerate(setup.metrics)
        if m.nim is not None
    }


def metric_plans(setup: Setup, changes: Mapping[str, float], n: int) -> list[MetricPlan]:
    """The metrics as the sizing sees them at n units: true standard errors, true changes
    (the good way) and the guardrails' margins."""
    se = np.sqrt(np.diag(change_covariance(setup, changes, n)))
    margins = absolute_margins(setup)
    return [
        MetricPlan(m.role, float(se[i]), n, changes.get(m.name, 0.0), margins.get(m.name))
        for i, m in enumerate(setup.metrics)
    ]


def planned_units(setup: Setup, reference: int = 10_000) -> int:
    """The planner's n: the fewest units (online: an even number, both arms) that
    ``units_for_power`` gives with the first success metric at its MDE (P(ship) reaches
    POWER, the success metrics win with POWER and each guardrail holds with 1 - beta/G)."""
    plans = metric_plans(setup, {setup.moved: setup.mde}, reference)
    scale = units_for_power(plans, POWER, ALPHA, ALPHA)
    if scale is None:
        raise ValueError(f"{setup.design}: no sample size reaches a power of {POWER}")
    n = math.ceil(scale * reference)
    return n + n % 2 if setup.design == "online" else n


def planned_power(setup: Setup, changes: Mapping[str, float], n: int) -> float:
    """``ship_probability`` at n units with the true changes (and standard errors) given."""
    return ship_probability(metric_plans(setup, changes, n), 1.0, ALPHA, ALPHA)


# -- one simulated experiment, through the run's pipeline ------------------------------------


def experiment_of(setup: Setup) -> Experiment:
    """The config the pipeline reads: the metrics' roles and the decision section (a
    constructed Experiment: only the fields the families and the rule read)."""
    roles = {
        m.name: MetricRole(
            role=m.role,
            nim=m.nim,
            relative=m.relative,
            direction="lower" if m.lower_is_better else "higher",
        )
        for m in setup.metrics
    }
    return Experiment.model_construct(
        name=f"decision-calibration-{setup.design}",
        metrics=setup.names,
        analysis=AnalysisConfig(alpha=ALPHA),
        decision=DecisionConfig(mde={setup.moved: setup.mde}, power=POWER),
        metric_roles=roles,
    )


def decide(experiment: Experiment, comparisons: Sequence[Comparison], unit: str) -> str:
    """The decision's status, as a run reaches it (abrank.analysis.comparisons): the
    families, the verdicts turned for a lower-is-better metric, the roles' checks, the rule."""
    settings = RuleSettings.of(experiment)
    roles = experiment.metric_roles
    swap = {"win": "loss", "loss": "win"}
    annotated = []
    for comp in overall_families(experiment, list(comparisons)):
        role = roles[comp.metric]
        lower = role.direction == "lower"
        if lower and comp.verdict in swap:
            comp = dataclasses.replace(comp, verdict=swap[comp.verdict])
        annotated.append(annotate(comp, role, lower, settings.deterioration_alpha))
    return decide_comparisons(annotated, settings, unit=unit).status


def online_arm(
    rng: np.random.Generator, setup: Setup, shift: np.ndarray, users: int
) -> tuple[np.ndarray, np.ndarray]:
    """One arm's impressions per user (D_u) and per-user sums of each metric (M_u)."""
    shape = setup.impressions_shape
    rate = rng.gamma(shape, setup.extra_impressions / shape, users)
    impressions = 1.0 + rng.poisson(rate)
    base = np.array([m.base for m in setup.metrics]) + shift
    shared = np.array([m.shared for m in setup.metrics])
    own = np.array([m.own for m in setup.metrics])
    x = base + rng.standard_normal((users, 1)) * shared
    x += rng.standard_normal((users, len(own))) * own
    sums = rng.binomial(impressions.astype(np.int64)[:, None], ndtr(x)).astype(np.float64)
    return impressions, sums


def online_comparisons(
    rng: np.random.Generator, setup: Setup, shift: np.ndarray, n: int
) -> list[Comparison]:
    """One online experiment of n users (half per arm), one clustered comparison a metric."""
    d_c, m_c = online_arm(rng, setup, np.zeros_like(shift), n // 2)
    d_t, m_t = online_arm(rng, setup, shift, n // 2)
    return [
        compare_clustered(
            UnitSums(m_c[:, i], d_c),
            UnitSums(m_t[:, i], d_t),
            unit="user_id",
            tests=("t",),
            alpha=ALPHA,
            metric=name,
        )
        for i, name in enumerate(setup.names)
    ]


def offline_comparisons(
    rng: np.random.Generator, setup: Setup, shift: np.ndarray, n: int
) -> list[Comparison]:
    """One offline experiment of n queries replayed in both arms, one paired comparison
    a metric."""
    k = len(setup.metrics)

    def loadings(field: str) -> np.ndarray:
        return np.array([getattr(m, field) for m in setup.metrics])

    query = rng.standard_normal((n, 1)) * loadings("query_shared")
    query += rng.standard_normal((n, k)) * loadings("query_own")
    values = []
    for arm_shift in (np.zeros(k), shift):
        x = loadings("base") + arm_shift + query
        x += rng.standard_normal((n, 1)) * loadings("shared")
        x += rng.standard_normal((n, k)) * loadings("own")
        values.append(ndtr(x))
    control, treatment = values
    return [
        compare(
            control[:, i], treatment[:, i], design="paired", tests=("t",), alpha=ALPHA, metric=name
        )
        for i, name in enumerate(setup.names)
    ]


# -- the cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One calibration case: the true changes (the good way, by metric), whether the metrics
    are independent, and the bound on P(ship): ``at most`` / ``at least`` / ``below`` a
    number (``below``: the planned power, strictly) or ``equal`` to it within 3 MC SE."""

    name: str
    changes: dict[str, float]
    bound: Literal["at most", "at least", "below", "equal"]
    limit: float
    independent: bool = False


def cases(setup: Setup, n: int) -> list[Case]:
    """The five cases of the module text for a setup at the planner's n."""
    mde = {setup.moved: setup.mde}
    margin = absolute_margins(setup)[setup.harmed]
    planned = planned_power(setup, mde, n)
    return [
        Case("no true effect", {}, "at most", ALPHA),
        Case("success at its MDE", mde, "at least", POWER),
        Case(
            "guardrail worse by 1.5 x margin",
            {**mde, setup.harmed: -1.5 * margin},
            "at most",
            ALPHA,
        ),
        Case(
            "guardrail worse by 0.5 x margin",
            {**mde, setup.harmed: -0.5 * margin},
            "below",
            planned,
        ),
        Case("independent metrics, at MDE", mde, "equal", planned, independent=True),
    ]


def run_case(setup: Setup, case: Case, n: int, experiments: int, seed: int) -> dict[str, int]:
    """How many of ``experiments`` simulated experiments of n units end in each status."""
    simulated = setup.independent() if case.independent else setup
    experiment = experiment_of(simulated)
    shift = latent_shifts(simulated, case.changes)
    simulate = online_comparisons if setup.design == "online" else offline_comparisons
    rng = np.random.default_rng([seed, zlib.crc32(f"{setup.design}: {case.name}".encode())])
    counts = dict.fromkeys(STATUSES, 0)
    for _ in range(experiments):
        status = decide(experiment, simulate(rng, simulated, shift, n), setup.unit)
        counts[status] += 1
    return counts


def monte_carlo_se(rate: float, experiments: int) -> float:
    """The binomial standard error of a rate estimated from ``experiments`` runs."""
    return math.sqrt(rate * (1.0 - rate) / experiments)


def passes(case: Case, rate: float, experiments: int) -> bool:
    """Whether the simulated P(ship) keeps the case's bound, up to 3 Monte-Carlo standard
    errors taken at the bound."""
    slack = 3.0 * monte_carlo_se(case.limit, experiments)
    if case.bound == "at most":
        return rate <= case.limit + slack
    if case.bound == "at least":
        return rate >= case.limit - slack
    if case.bound == "below":
        return rate < case.limit - slack
    return abs(rate - case.limit) <= slack


def calibration(setup: Setup, experiments: int, seed: int = 0) -> list[dict]:
    """Every case's figures for one setup: statuses' shares, the formula's P(ship), the
    bound and whether it holds."""
    n = planned_units(setup)
    rows = []
    for case in cases(setup, n):
        counts = run_case(setup, case, n, experiments, seed)
        ship = counts["ship"] / experiments
        rows.append(
            {
                "case": case,
                "n": n,
                "experiments": experiments,
                "ship": ship,
                "ship_se": monte_carlo_se(ship, experiments),
                "no-ship": counts["no-ship"] / experiments,
                "keep-running": counts["keep-running"] / experiments,
                "formula": planned_power(setup, case.changes, n),
                "passes": passes(case, ship, experiments),
            }
        )
    return rows


def print_table(setup: Setup, rows: list[dict], took: float) -> None:
    """One design's table and the figures beside it."""
    n = rows[0]["n"]
    planned = planned_power(setup, {setup.moved: setup.mde}, n)
    margins = ", ".join(
        f"{m.name} {'+' if m.lower_is_better else '-'}{m.nim * 100:g}%"
        if m.relative
        else f"{m.name} {'+' if m.lower_is_better else '-'}{m.nim:g}"
        for m in setup.metrics
        if m.nim is not None
    )
    print(
        f"\n{setup.design}: planner's n = {n:,} {setup.unit} in all "
        f"(MDE {setup.mde:g} on {setup.moved}; margins {margins}); "
        f"planned power at n: {planned:.4f}  [{took:.0f} s]"
    )
    head = (
        f"{'case':<33} {'runs':>5} {'P(ship)':>7} {'+-SE':>6} {'no-ship':>7} "
        f"{'keep-run':>8} {'formula':>7}  {'bound':<14} {'':4}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        case = row["case"]
        bound = f"{case.bound} {case.limit:.3f}" if case.bound != "equal" else f"= {case.limit:.3f}"
        print(
            f"{case.name:<33} {row['experiments']:>5} {row['ship']:>7.4f} {row['ship_se']:>6.4f} "
            f"{row['no-ship']:>7.4f} {row['keep-running']:>8.4f} {row['formula']:>7.4f}  "
            f"{bound:<14} {'pass' if row['passes'] else 'FAIL'}"
        )
    half = next(r for r in rows if r["case"].bound == "below")
    independent = next(r for r in rows if r["case"].independent)
    print(
        f"guardrail worse by 0.5 x margin: P(ship) {half['ship']:.4f} vs planned power "
        f"{planned:.4f}, gap {half['ship'] - planned:+.4f}"
    )
    gap = independent["ship"] - planned
    print(
        f"independent metrics: P(ship) {independent['ship']:.4f} vs planned power {planned:.4f}, "
        f"gap {gap:+.4f} = {gap / monte_carlo_se(planned, independent['experiments']):+.2f} MC SE"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=2000, help="per case (2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--design", choices=("online", "offline", "both"), default="both", help="(both)"
    )
    args = parser.parse_args(argv)
    setups = {"online": [ONLINE], "offline": [OFFLINE], "both": [ONLINE, OFFLINE]}[args.design]
    print(
        f"decision rule ship-if-success-and-no-harm, alpha {ALPHA}, deterioration alpha "
        f"{ALPHA}, planned power {POWER}; {args.experiments:,} experiments a case, seed {args.seed}"
    )
    for setup in setups:
        start = time.perf_counter()
        rows = calibration(setup, args.experiments, args.seed)
        print_table(setup, rows, time.perf_counter() - start)


if __name__ == "__main__":
    main()
