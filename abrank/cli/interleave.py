"""``abrank interleave``: the interleaved result lists of two runs, written as a table
(:func:`abrank.interleave`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from abrank.cli.exits import EXIT_OK

NAME = "interleave"
SUMMARY = (
    "Interleaved result lists of two runs, one row per shown result and the team that "
    "contributed it (for serving tests and simulations)."
)
EXAMPLE = "abrank interleave qrels.txt bm25.run reranker.run -o shown.csv --method team_draft"

# output suffix -> pandas writer of the interleaved lists
_TABLE_WRITERS = {
    ".csv": lambda frame, path: frame.to_csv(path, index=False),
    ".tsv": lambda frame, path: frame.to_csv(path, index=False, sep="\t"),
    ".parquet": lambda frame, path: frame.to_parquet(path, index=False),
    ".jsonl": lambda frame, path: frame.to_json(path, orient="records", lines=True),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank interleave``."""
    parser.add_argument(
        "qrels",
        metavar="QRELS_OR_NONE",
        help="judgments (TREC qrels or a table): adds a relevance column; - or none: no judgments",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the control ranking (first team)")
    parser.add_argument("run_b", metavar="RUN_B", help="the treatment ranking (second team)")
    parser.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="FILE",
        help="output table; its format from the suffix: .csv, .tsv, .parquet or .jsonl",
    )
    parser.add_argument("--method", default="team_draft", help="team_draft (default) or balanced")
    parser.add_argument("--seed", type=int, default=0, help="coin-flip seed (default 0)")
    parser.add_argument("--depth", type=int, help="results shown per query (default: all)")
    parser.add_argument(
        "--names",
        default="control,treatment",
        metavar="A,B",
        help="the two team names (default control,treatment)",
    )


def handle(args: argparse.Namespace) -> int:
    """Interleave the two runs and write the shown results (every option is checked before
    any file is read)."""
    from abrank.errors import ConfigError
    from abrank.interleaving import grades_of_shown, interleave
    from abrank.interleaving.build import check_method
    from abrank.io import read_judgments, read_rankings

    suffix = Path(args.out).suffix.lower()
    writer = _TABLE_WRITERS.get(suffix)
    if writer is None:
        raise ConfigError(
            f"--out: expected a file ending in {', '.join(_TABLE_WRITERS)}, got {args.out}"
        )
    method = check_method(args.method, "--method")
    names = tuple(name.strip() for name in args.names.split(","))
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise ConfigError(f"--names: expected two different team names A,B, got {args.names!r}")
    if args.depth is not None and args.depth < 1:
        raise ConfigError(f"--depth: expected a whole number >= 1, got {args.depth}")
    no_judgments = args.qrels.strip().lower() in ("-", "none")
    judgments = None if no_judgments else read_judgments(args.qrels)
    shown = interleave(
        read_rankings(args.run_a),
        read_rankings(args.run_b),
        method=method,
        seed=args.seed,
        depth=args.depth,
        names=(names[0], names[1]),
    )
    if judgments is not None:
        shown["relevance"] = grades_of_shown(shown, judgments)
    writer(shown, args.out)
    print(
        f"{args.out}: {len(shown):,} shown results of {shown['query_id'].nunique():,} queries "
        f"({method}, seed {args.seed})"
    )
    return EXIT_OK
