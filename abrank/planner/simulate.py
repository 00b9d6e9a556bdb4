"""``abrank simulate``: how many users an A/B test and an interleaving test need to detect
an offline difference, by simulating users who click by a click model.

For each traffic size of the grid, ``simulations`` experiments are simulated
(:mod:`abrank.planner.users`): the same users and impressions serve an A/B test (users
split 50/50; click_rr@10 and ctr@k per impression, tested by the delta method on per-user
sums, :func:`abrank.stats.compare_clustered`'s ``t``) and a team-draft interleaving test
(Delta_AB clustered on the user, :func:`abrank.stats.interleaved.compare_interleaved`'s
``t``). The power of a design at a size is the share of its experiments whose test
rejected at ``analysis.alpha``. The sizes of one simulated experiment are nested: the
first n users of the largest experiment form the experiment of n users, so each size
costs no extra draws and the curves are smooth (common random numbers).

Without a ``users`` grid, a pilot of :data:`PILOT_USERS` users estimates each design's
effect and per-user variance, and so the users the normal approximation says 80% power
needs; six geometric sizes from half the smaller to twice the larger figure follow
(capped at :data:`AUTO_MAX_USERS`). The pilot always runs: its effects are reported.

Seeds: the pilot draws from (seed, 1) and the experiments from (seed, 2), so a seed gives
the same numbers to the last digit.
"""

from __future__ import annotations

import difflib
import math
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

from abrank.analysis.load import load_data
from abrank.config import Experiment, load_experiment
from abrank.config.simulation import (
    CLICK_MODEL_NAMES,
    DEFAULT_CTR_K,
    GRID_SIZES,
    SimulationConfig,
    check_users,
)
from abrank.errors import ConfigError
from abrank.interleaving.clicks import CLICK_PROFILES, Cascade, ClickModel, PositionBased
from abrank.planner.result import (
    AB_CLICK_RR,
    AB_CTR,
    INTERLEAVING,
    DesignPower,
    PlannerResult,
    users_needed,
    users_ratio,
)
from abrank.planner.setup import ClickSetup, click_setup
from abrank.planner.users import CLICK_RR_K, SimulatedUnits, UserModel, simulate_units
from abrank.stats.unit_t import preference_test, ratio_difference_test

PILOT_USERS = 40_000
"""Users of the pilot experiment that places the automatic grid and estimates the effects."""
AUTO_MAX_USERS = 100_000
"""The automatic grid's largest size at most (a larger need is reported as more than it)."""
CHUNK_IMPRESSIONS = 400_000
"""About how many impressions are simulated per batch (bounds the memory)."""


def simulate_power(
    config: str | Path | Experiment,
    *,
    click_model: str | None = None,
    users: list[int] | None = None,
    simulations: int | None = None,
    seed: int | None = None,
) -> PlannerResult:
    """The power of an A/B test (click_rr@10, ctr@k) and of team-draft interleaving at each
    traffic size, and the users each needs for the target power (module text).

    ``config``: an offline experiment (a config path or an :class:`Experiment`) with two
    rankings and judgments; its ``simulation:`` section sets the options
    (:mod:`abrank.config.simulation`), and the keyword arguments override them. Raises
    ConfigError for bad options, DataError for bad data.
    """
    started = time.perf_counter()
    experiment = config if isinstance(config, Experiment) else load_experiment(config)
    options = experiment.simulation or SimulationConfig()
    model_name = check_click_model(options.click_model if click_model is None else click_model)
    if users is not None:
        try:
            users = check_users(list(users))
        except ValueError as exc:
            raise ConfigError(f"users: expected {exc}, got {users!r}") from None
    grid = users if users is not None else options.users
    grid_source = "argument" if users is not None else "config" if grid else "automatic"
    simulations = options.simulations if simulations is None else simulations
    if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 20:
        raise ConfigError(f"simulations: expected a whole number >= 20, got {simulations!r}")
    if seed is None:
        seed = options.seed if options.seed is not None else experiment.analysis.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed: expected a whole number >= 0, got {seed!r}")

    if experiment.online:
        raise ConfigError(
            f"{experiment.source}: expected an offline experiment (a ranking per arm and "
            "judgments) to simulate users on, got an online one (an impression log or click "
            "metrics)"
        )
    model = click_model_of(options, model_name)
    treatment = _treatment_arm(experiment, options)
    ctr_k = options.ctr_k or DEFAULT_CTR_K
    people = UserModel(options.impressions_per_user, options.propensity_sd)
    alpha, target = experiment.analysis.alpha, options.power

    data = load_data(experiment)
    control = experiment.control.name
    setup = click_setup(
        data.rankings[control],
        data.rankings[treatment],
        data.judgments,
        model,
        depth=options.depth,
        seed=seed,
    )

    pilot_rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    pilot_units = simulate_units(setup, PILOT_USERS, 1, people, ctr_k, pilot_rng)
    pilot = pilot_estimates(pilot_units, alpha, target)
    notes: list[str] = []
    if grid is None:
        grid, note = automatic_grid(pilot)
        if note:
            notes.append(note)

    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    p_values = simulated_p_values(setup, list(grid), simulations, people, ctr_k, rng)
    labels = {
        AB_CLICK_RR: (f"A/B click_rr@{CLICK_RR_K}", f"click_rr@{CLICK_RR_K}"),
        AB_CTR: (f"A/B ctr@{ctr_k}", f"ctr@{ctr_k}"),
        INTERLEAVING: ("team-draft interleaving", "preference (Δ_AB)"),
    }
    designs = []
    for name, p in p_values.items():
        rejected = np.where(np.isnan(p), False, p < alpha)
        power = rejected.mean(axis=0)
        se = np.sqrt(power * (1.0 - power) / simulations)
        designs.append(
            DesignPower(
                name=name,
                label=labels[name][0],
                metric=labels[name][1],
                power=tuple(float(x) for x in power),
                mc_se=tuple(float(x) for x in se),
                needed=users_needed(grid, list(power), target),
                effect=pilot[name]["effect"],
            )
        )
    by_name = {d.name: d for d in designs}
    ratio = users_ratio(by_name[AB_CLICK_RR].needed, by_name[INTERLEAVING].needed)
    for design in designs:
        if design.needed.note:
            notes.append(f"{design.label}: {design.needed.note}")
    t_label = next(a.label or treatment for a in experiment.treatments if a.name == treatment)
    return PlannerResult(
        experiment={"name": experiment.name, "title": experiment.display_title},
        arms={
            "control": control,
            "control_label": experiment.control.label or control,
            "treatment": treatment,
            "treatment_label": t_label,
        },
        click_model=model.to_dict(),
        user_model=people.to_dict(),
        queries=setup.n_queries,
        depth=setup.depth,
        ctr_k=ctr_k,
        alpha=float(alpha),
        target=float(target),
        simulations=int(simulations),
        seed=int(seed),
        users=tuple(int(n) for n in grid),
        grid_source=grid_source,
        designs=tuple(designs),
        ratio=ratio,
        pilot={"users": PILOT_USERS, "designs": pilot},
        notes=tuple(notes),
        elapsed=time.perf_counter() - started,
    )


def click_model_of(options: SimulationConfig, name: str) -> ClickModel:
    """The click model the options describe: the profile's per-grade tables, overridden
    by ``attractiveness`` / ``stop``; the PBM's examination by ``eta`` or ``examination``."""
    profile = CLICK_PROFILES[options.profile]
    attractiveness = options.attractiveness or profile["attractiveness"]
    if name == "cascade":
        return Cascade(attractiveness=attractiveness, stop=options.stop or profile["stop"])
    examination = tuple(options.examination) if options.examination else None
    return PositionBased(examination=examination, attractiveness=attractiveness, eta=options.eta)


def can_simulate_clicks(experiment: Experiment) -> bool:
    """Whether users can be simulated on the experiment: it holds rankings and judgments
    (an offline experiment), not logs of clicks already made."""
    return not (experiment.online or experiment.interleaved)


def check_click_model(name: object, field: str = "click_model") -> str:
    """The click model's name, normalised (``pbm`` or ``cascade``); a ConfigError naming
    ``field`` (the argument as the caller names it: ``--click-model`` on the command line)
    for any other value."""
    if isinstance(name, str) and name.strip().lower() in CLICK_MODEL_NAMES:
        return name.strip().lower()
    close = difflib.get_close_matches(str(name).lower(), CLICK_MODEL_NAMES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"{field}: expected one of {', '.join(CLICK_MODEL_NAMES)}, got {name!r}{hint}"
    )


def _treatment_arm(experiment: Experiment, options: SimulationConfig) -> str:
    names = [arm.name for arm in experiment.treatments]
    if options.treatment is None:
        return names[0]
    if options.treatment not in names:
        raise ConfigError(
            f"{experiment.source}: simulation.treatment: expected one of the treatments "
            f"({', '.join(names)}), got {options.treatment!r}"
        )
    return options.treatment


def design_tests(units: SimulatedUnits, n: int) -> dict[str, np.ndarray]:
    """Each design's p-values over the simulated experiments, on their first ``n`` users."""
    d, treated = units.impressions[:, :n], units.treated[:, :n]
    return {
        AB_CLICK_RR: ratio_difference_test(units.click_rr[:, :n], d, treated)[2],
        AB_CTR: ratio_difference_test(units.ctr[:, :n], d, treated)[2],
        INTERLEAVING: preference_test(units.wins[:, :n], units.losses[:, :n], d)[2],
    }


def simulated_p_values(
    setup: ClickSetup,
    grid: list[int],
    simulations: int,
    people: UserModel,
    ctr_k: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Per design, the p-values of every simulated experiment at every size:
    (simulations, sizes) arrays. Experiments are simulated in batches of about
    :data:`CHUNK_IMPRESSIONS` impressions, each at the largest size."""
    largest = max(grid)
    per_batch = max(1, int(CHUNK_IMPRESSIONS // (largest * people.impressions_per_user)))
    found: dict[str, np.ndarray] = {
        name: np.empty((simulations, len(grid))) for name in (AB_CLICK_RR, AB_CTR, INTERLEAVING)
    }
    for start in range(0, simulations, per_batch):
        count = min(per_batch, simulations - start)
        units = simulate_units(setup, largest, count, people, ctr_k, rng)
        for column, n in enumerate(grid):
            for name, p in design_tests(units, n).items():
                found[name][start : start + count, column] = p
    return found


def pilot_estimates(units: SimulatedUnits, alpha: float, target: float) -> dict[str, dict]:
    """Per design, the pilot's effect, per-user variance of the estimate (its variance
    times the users) and the users the normal approximation gives for ``target`` power:
    (z_{1 - alpha/2} + z_target)^2 * variance / effect^2."""
    n = units.impressions.shape[1]
    d, treated = units.impressions, units.treated
    found = {
        AB_CLICK_RR: ratio_difference_test(units.click_rr, d, treated),
        AB_CTR: ratio_difference_test(units.ctr, d, treated),
        INTERLEAVING: preference_test(units.wins, units.losses, d),
    }
    z = float(norm.ppf(1.0 - alpha / 2.0) + norm.ppf(target))
    estimates = {}
    for name, (delta, se, _) in found.items():
        effect, variance = float(delta[0]), float(se[0] ** 2 * n)
        needed = z * z * variance / effect**2 if effect != 0 else math.inf
        estimates[name] = {
            "effect": effect,
            "per_user_variance": variance,
            "analytic_users": needed if math.isfinite(needed) else None,
        }
    return estimates


def automatic_grid(pilot: dict[str, dict]) -> tuple[list[int], str | None]:
    """Six geometric sizes from half the smaller to twice the larger of the pilot's
    analytic sizes for A/B click_rr@10 and interleaving (module text), and a note when
    the cap cut the grid."""
    wanted = [pilot[name]["analytic_users"] for name in (AB_CLICK_RR, INTERLEAVING)]
    finite = [w for w in wanted if w is not None]
    low = max(min(finite) / 2.0, 20.0) if finite else 20.0
    high = max(finite) * 2.0 if len(finite) == len(wanted) else math.inf
    note = None
    if high > AUTO_MAX_USERS:
        note = (
            f"the automatic grid stops at {AUTO_MAX_USERS:,} users (the pilot asks for more); "
            "give --users for larger sizes"
        )
        high = AUTO_MAX_USERS
    high = max(high, low * 4.0)
    sizes = np.geomspace(low, high, GRID_SIZES)
    grid = sorted({max(20, _two_digits(s)) for s in sizes})
    return grid, note


def _two_digits(value: float) -> int:
    digits = max(int(math.floor(math.log10(value))) - 1, 0)
    return int(round(value / 10**digits) * 10**digits)
