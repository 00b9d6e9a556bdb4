"""``abrank history``: an experiment's history, every dated readout's comparisons by date
(:mod:`abrank.history`; pyarrow only, no pandas, so that it answers in a blink)."""

from __future__ import annotations

import argparse
import sys

from abrank.cli.exits import EXIT_OK

NAME = "history"
SUMMARY = "Print an experiment's history: every dated readout's comparisons, by date."
EXAMPLE = (
    "abrank history demo-reranker --json --root reports\n\n"
    "Without --json or --csv: an aligned table of date, treatment, metric, segment, the\n"
    "means, delta, interval, adjusted p-value, verdict and n (and, after the date, the\n"
    "readout's decision where its metrics have roles). --json: a list of row objects with\n"
    "every column of the history store; --csv: every column."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank history``."""
    parser.add_argument("name", metavar="NAME", help="the experiment's name (config name)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="every column, as a list of objects")
    shape.add_argument("--csv", action="store_true", help="every column, as CSV")
    parser.add_argument(
        "--root",
        default="reports",
        metavar="DIR",
        help="the reports root holding the history/ folder (default: reports)",
    )


def handle(args: argparse.Namespace) -> int:
    """Print the history as a table, JSON or CSV; name the store's unreadable files."""
    from abrank import runtime
    from abrank.history.output import (
        DECISION,
        TEXT_COLUMNS,
        csv_parts,
        json_parts,
        text_columns,
        text_parts,
    )
    from abrank.history.store import history_table

    if runtime.owns_process():
        runtime.small_buffers_pool()
    every = args.json or args.csv
    skipped: list[str] = []  # files of the store that could not be read: named, not fatal
    columns = None if every else (*TEXT_COLUMNS, DECISION)
    table = history_table(args.root, args.name, columns=columns, skipped=skipped)
    if args.json:
        parts = json_parts(table)
    elif args.csv:
        parts = csv_parts(table)
    else:
        parts = text_parts(table, text_columns(table))
    out = sys.stdout
    out.flush()
    for part in parts:
        out.buffer.write(part)
    out.buffer.flush()
    for message in skipped:
        print(f"abrank: warning: {message}", file=sys.stderr)
    return EXIT_OK
