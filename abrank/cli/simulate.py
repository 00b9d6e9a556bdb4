"""``abrank simulate``: plan an online test from an offline experiment (the users an A/B
test and a team-draft interleaving test need, :func:`abrank.simulate_power`)."""

from __future__ import annotations

import argparse
from typing import Any

from abrank.cli.exits import EXIT_OK

NAME = "simulate"
SUMMARY = (
    "Plan an online test from an offline experiment: the users an A/B test and a "
    "team-draft interleaving test need for 80% power, from simulated clicks; with metric "
    "roles, the units the decision rule needs to ship with its planned power."
)
EXAMPLE = (
    "abrank simulate experiments/demo-reranker.yaml --click-model pbm --users 50 100 200\n"
    "  abrank simulate experiments/demo-reranker.yaml "
    "--propensities-from experiments/demo-counterfactual.yaml"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank simulate``."""
    parser.add_argument("config", metavar="CONFIG", help="an offline experiment config")
    parser.add_argument("--click-model", help="pbm or cascade (default: the config's, else pbm)")
    parser.add_argument(
        "--users", nargs="+", type=int, metavar="N", help="traffic sizes (default: automatic)"
    )
    parser.add_argument("--simulations", type=int, help="experiments per size (default 200)")
    parser.add_argument("--seed", type=int, help="seed (default: the config's)")
    parser.add_argument(
        "--out", metavar="DIR", help="output folder (default reports/<name>-simulation)"
    )
    parser.add_argument(
        "--propensities-from",
        metavar="LOG_CONFIG",
        help="an online or counterfactual config whose click logs (with a query column) give "
        "the examination by rank, harvested, in place of the click model's default",
    )


def handle(args: argparse.Namespace) -> int:
    """Check the options, simulate, write the folder and print the table (a bad option or
    config leaves an earlier folder as it was)."""
    from abrank.analysis.write import check_output_folder
    from abrank.config import load_experiment
    from abrank.config.simulation import check_users
    from abrank.errors import ConfigError
    from abrank.planner import simulate_power, write_simulation
    from abrank.planner.output import simulation_folder, table_text
    from abrank.planner.rule import plan_for_rule
    from abrank.planner.simulate import can_simulate_clicks, check_click_model

    if args.users is not None:
        try:
            check_users(args.users)
        except ValueError as exc:
            raise ConfigError(
                f"--users: expected {exc}, got {' '.join(map(str, args.users))}"
            ) from None
    for flag, value, low in (("--simulations", args.simulations, 20), ("--seed", args.seed, 0)):
        if value is not None and value < low:
            raise ConfigError(f"{flag}: expected a whole number >= {low}, got {value}")
    experiment = load_experiment(args.config)
    folder = simulation_folder(experiment.name, args.out)
    check_output_folder(folder)
    if args.click_model is not None:
        check_click_model(args.click_model, "--click-model")
    if args.propensities_from is not None:
        experiment = with_harvested_examination(
            experiment, args.propensities_from, args.click_model
        )
    rule = plan_for_rule(experiment, seed=args.seed) if experiment.metric_roles else None
    result = None
    if rule is None or can_simulate_clicks(experiment):
        result = simulate_power(
            experiment,
            click_model=args.click_model,
            users=args.users,
            simulations=args.simulations,
            seed=args.seed,
        )
    write_simulation(result, folder, rule)
    if rule is not None:
        print(rule.text())
    if result is not None:
        print(table_text(result))
    print(f"written: {folder}")
    return EXIT_OK


def with_harvested_examination(experiment: Any, log_config: str, click_model: str | None) -> Any:
    """``experiment`` whose ``simulation.examination`` is harvested from ``log_config``'s
    click logs (relative to rank 1, so rank 1 is always examined); prints what it used."""
    from abrank.config import load_experiment
    from abrank.config.simulation import SimulationConfig
    from abrank.designs.counterfactual.pipeline import harvested_examination
    from abrank.errors import ConfigError

    options = experiment.simulation or SimulationConfig()
    model = click_model or options.click_model
    if model != "pbm":
        raise ConfigError(
            f"--propensities-from: expected the pbm click model (the cascade has no examination "
            f"by rank), got {model}"
        )
    found = harvested_examination(load_experiment(log_config))
    values = [float(v) for v in found.estimate]
    print(
        f"examination by rank harvested from {log_config}: " + " ".join(f"{v:.3f}" for v in values)
    )
    return experiment.model_copy(
        update={"simulation": options.model_copy(update={"examination": values})}
    )
