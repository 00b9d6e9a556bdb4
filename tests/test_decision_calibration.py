"""The decision rule's calibration (benchmarks/bench_decisions.py) at a small, fixed-seed
count: the simulation's true moments, the sizing's normal-theory figures, and the rule's
P(ship) on simulated offline (paired) and online (clustered) experiments at the planner's
n, the four bounds and the agreement of ``ship_probability`` with the simulation.

The experiments are the benchmark's with MDE and margins twice as large (about a quarter
of its units, so that each experiment is quick); the bounds allow three Monte-Carlo
standard errors, taken at the bound.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr

from abrank.decision.sizing import MetricPlan, ship_probability, units_for_power

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_decisions.py"

CASE_RUNS = {"offline": 200, "online": 120}
AGREEMENT_RUNS = {"offline": 800, "online": 600}
Z_975 = 1.959963984540054
Z_95 = 1.6448536269514722
Z_80 = 0.8416212335729143


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_decisions", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def setup_of(bench, design: str):
    return {"online": bench.ONLINE, "offline": bench.OFFLINE}[design].scaled(2.0)


def three_se(rate: float, runs: int) -> float:
    return 3.0 * math.sqrt(rate * (1.0 - rate) / runs)


def test_the_bivariate_normal_cdf_is_sheppards_at_the_origin_and_a_product_without_correlation(
    bench,
) -> None:
    for rho in (-0.7, -0.2, 0.3, 0.9):
        # Sheppard: P(Z1 <= 0, Z2 <= 0) = 1/4 + asin(rho) / (2 pi)
        expected = 0.25 + math.asin(rho) / (2.0 * math.pi)
        assert bench.bivariate_normal_cdf(0.0, 0.0, rho) == pytest.approx(expected, abs=1e-9)
    assert bench.bivariate_normal_cdf(0.4, -1.1, 0.0) == pytest.approx(
        float(ndtr(0.4) * ndtr(-1.1)), abs=1e-12
    )


def test_the_probit_moments_are_the_integrals_over_the_latent(bench) -> None:
    mean = np.array([-0.4, 0.7])
    cov = np.array([[0.61, -0.3], [-0.3, 0.5]])
    means, moments = bench.probit_moments(mean, cov)
    sd = np.sqrt(np.diag(cov))
    for i in range(2):

        def density(x: float, i: int = i) -> float:
            return math.exp(-0.5 * ((x - mean[i]) / sd[i]) ** 2) / (sd[i] * math.sqrt(2 * math.pi))

        first = quad(lambda x: float(ndtr(x)) * density(x), -12, 12, epsabs=1e-12)[0]
        second = quad(lambda x: float(ndtr(x)) ** 2 * density(x), -12, 12, epsabs=1e-12)[0]
        assert means[i] == pytest.approx(first, abs=1e-8)
        assert moments[i, i] == pytest.approx(second - first**2, abs=1e-7)
    # the cross moment: X2 = mean2 + beta (X1 - mean1) + noise, Phi(X2) averaged over the
    # noise in closed form, then X1 integrated
    beta = cov[0, 1] / cov[0, 0]
    rest = cov[1, 1] - beta * cov[0, 1]

    def joint(x: float) -> float:
        given = float(ndtr((mean[1] + beta * (x - mean[0])) / math.sqrt(1.0 + rest)))
        weight = math.exp(-0.5 * (x - mean[0]) ** 2 / cov[0, 0]) / math.sqrt(
            2 * math.pi * cov[0, 0]
        )
        return float(ndtr(x)) * given * weight

    cross = quad(joint, -12, 12, epsabs=1e-12)[0] - means[0] * means[1]
    assert moments[0, 1] == pytest.approx(cross, abs=1e-7)


@pytest.mark.parametrize("design", ["offline", "online"])
def test_one_large_experiment_has_the_true_changes_and_standard_errors(bench, design) -> None:
    """The planner's standard errors are the simulation's: one experiment of 200,000 units,
    each comparison's t-interval read back as a standard error (about 1% sampling error),
    each change within 4 standard errors of the true one."""
    setup = setup_of(bench, design)
    margin = bench.absolute_margins(setup)[setup.harmed]
    changes = {setup.moved: setup.mde, setup.harmed: -0.5 * margin}
    n = 200_000
    simulate = bench.online_comparisons if design == "online" else bench.offline_comparisons
    found = simulate(np.random.default_rng(7), setup, bench.latent_shifts(setup, changes), n)
    cov = bench.change_covariance(setup, changes, n)
    true = bench.raw_changes(setup, changes)
    assert true[0] == pytest.approx(setup.mde) and true[2] == pytest.approx(0.5 * margin)
    for i, comp in enumerate(found):
        se = math.sqrt(cov[i, i])
        assert (comp.ci[1] - comp.ci[0]) / (2.0 * Z_975) == pytest.approx(se, rel=0.03)
        assert abs(comp.delta - true[i]) < 4.0 * se, comp.metric


def test_ship_probability_is_the_normal_theory_power() -> None:
    # one success metric with d / se = 2.8: Phi(2.8 - z_.975) (the other tail and the
    # deterioration check weigh below 1e-5); 80% power at (z_.975 + z_.8)^2 (se / d)^2 n
    alone = [MetricPlan("success", se=0.01, n=1000, effect=0.028)]
    assert ship_probability(alone, 1.0, 0.05, 0.05) == pytest.approx(
        float(ndtr(2.8 - Z_975)), abs=1e-5
    )
    scale = units_for_power(alone, 0.8, 0.05, 0.05)
    assert scale == pytest.approx(((Z_975 + Z_80) * 0.01 / 0.028) ** 2, rel=1e-4)
    # beside a sure win, a guardrail 3 se inside its margin passes its one-sided test at
    # 0.05 with Phi(3 - z_.95); moved half its margin the bad way, Phi(1.5 - z_.95); far
    # inside its margin only the deterioration check (0.025 the bad way) stops it
    sure = MetricPlan("success", se=0.01, n=1000, effect=0.2)
    for margin, effect, expected in (
        (0.03, 0.0, ndtr(3.0 - Z_95)),
        (0.03, -0.015, ndtr(1.5 - Z_95)),
        (0.5, 0.0, 0.975),
    ):
        guard = MetricPlan("guardrail", se=0.01, n=1000, effect=effect, margin=margin)
        assert ship_probability([sure, guard], 1.0, 0.05, 0.05) == pytest.approx(
            float(expected), abs=1e-6
        )
    # two success metrics, one moving: Holm's first step at alpha / 2
    other = MetricPlan("success", se=0.01, n=1000)
    win = ndtr(2.8 - 2.241402727604947)  # z_(1 - 0.05 / 4)
    either = 1.0 - (1.0 - win) * (1.0 - 0.0125)
    assert ship_probability([*alone, other], 1.0, 0.05, 0.05) == pytest.approx(
        float(either * 0.975), abs=1e-5
    )


CASES = ["no true effect", "success at its MDE", "guardrail worse by 1.5 x margin"]
CASES += ["guardrail worse by 0.5 x margin"]


@pytest.mark.parametrize("design", ["offline", "online"])
@pytest.mark.parametrize("name", CASES)
def test_the_rule_keeps_its_bounds_at_the_planners_n(bench, design, name) -> None:
    setup = setup_of(bench, design)
    n = bench.planned_units(setup)
    case = next(c for c in bench.cases(setup, n) if c.name == name)
    runs = CASE_RUNS[design]
    counts = bench.run_case(setup, case, n, runs, seed=0)
    assert sum(counts.values()) == runs
    ship = counts["ship"] / runs
    if name in ("no true effect", "guardrail worse by 1.5 x margin"):
        assert ship <= 0.05 + three_se(0.05, runs), counts
    elif name == "success at its MDE":
        assert ship >= 0.8 - three_se(0.8, runs), counts
    else:
        planned = bench.planned_power(setup, {setup.moved: setup.mde}, n)
        assert planned >= 0.8 - 1e-9  # P(ship) reaches 80% at the planner's n, or passes it
        assert ship < planned - three_se(planned, runs), counts


@pytest.mark.parametrize("design", ["offline", "online"])
def test_ship_probability_agrees_with_the_simulation_for_independent_metrics(bench, design) -> None:
    """With uncorrelated metrics at the planner's n, the rule ships as often as
    ``ship_probability`` says (within 3 Monte-Carlo SE of 800 offline,
    600 online experiments)."""
    setup = setup_of(bench, design)
    n = bench.planned_units(setup)
    changes = {setup.moved: setup.mde}
    planned = ship_probability(bench.metric_plans(setup.independent(), changes, n), 1.0, 0.05, 0.05)
    assert planned >= 0.8 - 1e-9  # where a guardrail's 1 - beta/G binds, above 80%
    case = next(c for c in bench.cases(setup, n) if c.independent)
    runs = AGREEMENT_RUNS[design]
    counts = bench.run_case(setup, case, n, runs, seed=0)
    ship = counts["ship"] / runs
    assert abs(ship - planned) <= three_se(planned, runs), counts


def test_the_script_prints_a_table_per_design(bench, capsys) -> None:
    bench.main(["--experiments", "5", "--design", "offline"])
    out = capsys.readouterr().out
    assert "offline: planner's n = " in out and "queries in all" in out
    assert out.count("independent metrics") == 2 and "online" not in out
