"""``abrank validate``: check experiment configs and their data files, computing nothing
(:func:`abrank.validate_experiment`)."""

from __future__ import annotations

import argparse

from abrank.cli.exits import EXIT_OK

NAME = "validate"
SUMMARY = "Check experiment configs and their data files; compute nothing."
EXAMPLE = "abrank validate experiments/*.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank validate``."""
    parser.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment YAML file(s)")
    parser.add_argument(
        "--date",
        metavar="YYYY-MM-DD",
        help="check a dated config's files of this date (without it, only the config)",
    )
    parser.add_argument(
        "--engine",
        metavar="NAME",
        help="override the config's engine: memory, duckdb or spark (the files are opened "
        "and checked as run opens them on that engine)",
    )


def handle(args: argparse.Namespace) -> int:
    """Every config first (all their errors before any file is opened), then each one's
    inputs, opened as ``run`` opens them on the same engine; one line per config."""
    from abrank.analysis.validate import validate_experiment
    from abrank.config import load_experiment

    experiments = [load_experiment(path) for path in args.configs]
    for path, experiment in zip(args.configs, experiments):
        result = validate_experiment(experiment, engine=args.engine, date=args.date)
        print(result.line(path))
    return EXIT_OK
