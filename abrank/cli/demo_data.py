"""``abrank demo-data``: write the bundled demos' data (:mod:`abrank.demo`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from abrank.cli.exits import EXIT_OK

NAME = "demo-data"
SUMMARY = (
    "Write the bundled demos' data: a simulated offline reranker replay, a simulated "
    "online A/B test of the same reranker (impressions and clicks) and a simulated "
    "team-draft interleaving of the two rankers."
)
EXAMPLE = "abrank demo-data --out experiments/data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank demo-data``."""
    parser.add_argument("--out", default="experiments/data", metavar="DIR")
    parser.add_argument("--seed", type=int, help="generator seed (default: each demo's own)")
    parser.add_argument(
        "--queries", type=int, default=2000, help="number of queries (default 2000)"
    )
    parser.add_argument(
        "--users", type=int, default=20_000, help="users of the online demo (default 20000)"
    )
    parser.add_argument(
        "--daily",
        metavar="DIR",
        help="instead: the dated demos for scheduled runs, in DIR: demo-daily.yaml (the "
        "offline demo, logs/<date>/) and reranker-daily.yaml (the online demo, "
        "logs/date=<date>/), 14 days from 2026-01-01",
    )


def handle(args: argparse.Namespace) -> int:
    """Write the three demos into ``--out`` (or the dated ones into ``--daily``); print
    each file written."""
    from abrank.demo import write_demo, write_interleaving_demo, write_online_demo
    from abrank.demo.counterfactual import write_counterfactual_demo
    from abrank.demo.machine_labels import write_machine_label_demo
    from abrank.demo.online import MIN_USERS
    from abrank.errors import ConfigError

    if args.users < MIN_USERS:  # checked first, so that a bad option writes nothing
        raise ConfigError(f"--users: expected a whole number >= {MIN_USERS}, got {args.users}")
    if args.daily is not None:
        return _daily(args)
    options: dict[str, Any] = {"n_queries": args.queries}
    online_options: dict[str, Any] = {"users": args.users}
    # the interleaving demo merges the offline demo's rankings: the same seed and size
    interleaving_options: dict[str, Any] = {"n_queries": args.queries}
    if args.seed is not None:
        options["seed"] = online_options["seed"] = args.seed
        interleaving_options["seed"] = interleaving_options["demo_seed"] = args.seed
    for path in write_demo(Path(args.out), **options):
        print(path)
    for path in write_machine_label_demo(Path(args.out), **options):
        print(path)
    for path in write_online_demo(Path(args.out), **online_options):
        print(path)
    # the counterfactual demo's fused ranking is made from the online demo's log
    print(write_counterfactual_demo(Path(args.out)))
    for path in write_interleaving_demo(Path(args.out), **interleaving_options):
        print(path)
    return EXIT_OK


def _daily(args: argparse.Namespace) -> int:
    """``abrank demo-data --daily DIR``: the dated demos the README's scheduling runs."""
    from abrank.demo import write_daily_demo, write_online_daily_demo
    from abrank.demo.online import EXPERIMENT_DAYS

    folder = Path(args.daily)
    seed = {} if args.seed is None else {"seed": args.seed}
    print(write_daily_demo(folder, days=EXPERIMENT_DAYS, n_queries=args.queries, **seed))
    print(write_online_daily_demo(folder, users=args.users, **seed))
    return EXIT_OK
