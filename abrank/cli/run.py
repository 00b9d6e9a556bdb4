"""``abrank run``: analyse experiments and write their readouts (:mod:`abrank.batch`)."""

from __future__ import annotations

import argparse

NAME = "run"
SUMMARY = "Analyse experiments and write their readouts (summary.json, per_query.csv, report)."
EXAMPLE = "abrank run experiments/demo-reranker.yaml --out reports/demo --seed 7"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank run``."""
    parser.add_argument(
        "configs",
        nargs="+",
        metavar="CONFIG",
        help="experiment YAML file(s), or folders: every *.yaml in them",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="readout folder (with several configs: their parent)"
    )
    parser.add_argument(
        "--date",
        metavar="YYYY-MM-DD",
        help="run for this date: {date} in the config's paths; readout in <folder>/<date>/",
    )
    parser.add_argument(
        "--from", dest="start", metavar="YYYY-MM-DD", help="backfill: every date from this one"
    )
    parser.add_argument(
        "--to", dest="end", metavar="YYYY-MM-DD", help="through this one (default: today)"
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help="do not record the run in the reports root's history (nor rebuild its index.html)",
    )
    parser.add_argument(
        "--missing",
        choices=("error", "skip"),
        default="error",
        help="an input of the date that does not exist yet: exit 2 (error, default), or "
        "write nothing and exit 99 (skip: Airflow's skip code)",
    )
    parser.add_argument("--seed", type=int, help="override the config's analysis.seed")
    parser.add_argument(
        "--engine",
        metavar="NAME",
        help="override the config's engine: memory, duckdb or spark",
    )
    parser.add_argument(
        "--format",
        default="html,md,json,csv",
        metavar="LIST",
        help="comma-separated outputs among html, md, json, csv (default: all)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress or headlines")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="say where the time went: each stage's seconds (start-up, reading and checking "
        "the inputs, aggregating, comparing, writing), the engine's statements within it",
    )
    parser.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="ALERTS",
        help="exit 3, after writing the readout, when one of these alerts fires "
        "(comma-separated: srm, loss, inconclusive, stale; no-ship, unhealthy: the "
        "decision of a config whose metrics have roles)",
    )


def handle(args: argparse.Namespace) -> int:
    """Run every config for every date; the batch's exit code."""
    from abrank import runtime
    from abrank.analysis.alerts import parse_alerts
    from abrank.batch import RunOptions, run_batch
    from abrank.timings import process_started

    options = RunOptions(
        out=args.out,
        seed=args.seed,
        formats=tuple(f.strip() for f in args.format.split(",") if f.strip()),
        fail_on=parse_alerts(args.fail_on),
        missing=args.missing,
        history=not args.no_history,
        quiet=args.quiet,
        debug=args.debug,
        engine=args.engine,
        verbose=args.verbose,
        started=process_started() if args.verbose and runtime.owns_process() else None,
    )
    # large logs' temporaries: in the command's own process only
    memory = runtime.reuse_freed_memory if runtime.owns_process() else None
    return run_batch(args.configs, (args.date, args.start, args.end), options, large_logs=memory)
