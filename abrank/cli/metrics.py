"""``abrank metrics``: per-query metrics of one run, printed like trec_eval.

With trec_eval's measure names only it takes trec_eval's command line and prints what
trec_eval prints (:func:`abrank.treceval.output.trec_eval_report`); with abrank's names,
``measure<TAB>query<TAB>value`` at full precision
(:func:`abrank.treceval.output.trec_eval_text`, :func:`abrank.evaluate`, or an SQL engine's
:func:`abrank.designs.offline.sql.score_files`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from abrank.cli.exits import EXIT_OK
from abrank.cli.options import engine_option, judged_only_option, metric_option

if TYPE_CHECKING:
    from abrank.treceval import TrecMeasures

NAME = "metrics"
SUMMARY = "Per-query metrics of one run, printed like trec_eval (measure, query, value)."
EXAMPLE = (
    "abrank metrics qrels.txt run.txt -m ndcg@10 mrr@10 map --per-query\n"
    "  abrank metrics -q -c -l 2 -m ndcg_cut.10,20 -m recip_rank qrels.txt run.txt\n\n"
    "With trec_eval's measure names only (recip_rank, map, ndcg, P.5,10, recall.100,\n"
    "ndcg_cut.10, map_cut.100, success.1, infAP, Rprec_mult.0.5, utility.2,-1,0,0,\n"
    "ndcg.1=3,2=9, rbp.p=0.8, unj, num_q, runid..., or a bare family P, recall, ndcg_cut,\n"
    "map_cut, success for trec_eval's default cutoffs) it takes trec_eval's own command\n"
    "line and prints exactly what trec_eval 10 prints (names, order, layout, 4 decimals;\n"
    "-M unlimited unless given). With abrank's names (ndcg@10, mrr@10, ...) it prints\n"
    "measure<TAB>query<TAB>value at full precision. Without -m it prints trec_eval's\n"
    "default measures (-m official); -m all_trec prints every measure of trec_eval 10's\n"
    "all_trec set (the prefs_* measures and yaap, outside that set, are not computed)."
)
#: the file arguments (QRELS, RUN), which may stand anywhere among the -m values
FILES = 2
#: --digits beyond 17 decimals adds nothing a float holds
MAX_DIGITS = 17


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank metrics`` (trec_eval's short options among them)."""
    parser.add_argument("qrels", metavar="QRELS", help="judgments (TREC qrels or a table)")
    parser.add_argument("run", metavar="RUN", help="ranking (TREC run or a table)")
    metric_option(parser, required=False)
    judged_only_option(parser)
    engine_option(parser)
    parser.add_argument("--per-query", "-q", action="store_true", help="print a row per query")
    parser.add_argument(
        "--complete",
        "-c",
        action="store_true",
        help="score judged queries missing from the run as 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--rel-level",
        "-l",
        type=float,
        default=1,
        help="lowest grade that counts as relevant (trec_eval -l; default 1)",
    )
    parser.add_argument(
        "--depth",
        "-M",
        type=int,
        help="documents kept per query (trec_eval -M; default 1000, or no limit with "
        "trec_eval's names, as in trec_eval)",
    )
    parser.add_argument(
        "--digits",
        type=int,
        help="round values to this many digits (default: full precision; 4 with trec_eval's "
        "names, as trec_eval prints)",
    )


def handle(args: argparse.Namespace) -> int:
    """Score the run and print the values (options checked before any file is read)."""
    from abrank import runtime

    _check_options(args)
    if runtime.owns_process():  # before the imports below load pyarrow
        runtime.reuse_freed_memory()
    from abrank._lazy import import_pandas_in_background
    from abrank.io import detect_format
    from abrank.treceval import expand_cutoff_lists, parse_trec_measures, split_metric_lists
    from abrank.treceval.output import trec_eval_report, trec_eval_text

    # no -m: trec_eval's default measures, as trec_eval prints them
    names = split_metric_lists(args.metrics or ["official"])
    measures = parse_trec_measures(names)  # None: abrank's own names
    for note in measures.notes if measures else ():
        print(f"abrank: note: {note}", file=sys.stderr)
    if args.depth is None:  # trec_eval evaluates every document unless told (-M)
        args.depth = None if measures else 1000
    if measures is None:
        names = expand_cutoff_lists(names)
    digits = args.digits if args.digits is not None or measures is None else 4
    if args.engine not in (None, "memory"):
        import_pandas_in_background()
        return _on_engine(args, names, measures, digits)
    trec_files = (
        detect_format(args.qrels, judgments=True) == "qrels" and detect_format(args.run) == "trec"
    )
    # TREC files scored by abrank's metric families and counts load no pandas (their
    # conversions go through abrank.io.buffers); the rest loads it on the other core while
    # the first file parses
    if not trec_files or (measures is not None and not measures.computed_without_pandas()):
        import_pandas_in_background()
    options = dict(rel_level=args.rel_level, depth=args.depth, judged_only=args.judged_only)
    if trec_files and measures is not None:
        text = trec_eval_report(
            args.qrels,
            args.run,
            measures,
            per_query=args.per_query,
            complete=args.complete,
            digits=digits,
            **options,
        )
    elif trec_files:  # the fast path straight from the files' columns
        text = trec_eval_text(
            args.qrels,
            args.run,
            names,
            per_query=args.per_query,
            complete=args.complete,
            digits=digits,
            **options,
        )
    else:
        text = _of_tables(args, names, measures, digits)
    sys.stdout.write(text)
    return EXIT_OK


def _of_tables(
    args: argparse.Namespace, names: list[str], measures: TrecMeasures | None, digits: int | None
) -> str:
    """The output for rankings and judgments read from tables (not TREC files)."""
    from abrank.io import read_judgments, read_rankings
    from abrank.treceval.output import format_trec_eval, trec_eval_report_of_tables

    rankings, judgments = read_rankings(args.run), read_judgments(args.qrels)
    if measures is not None:
        return trec_eval_report_of_tables(
            rankings,
            judgments,
            measures,
            run=args.run,
            qrels=args.qrels,
            default_set=not args.metrics,
            per_query=args.per_query,
            complete=args.complete,
            rel_level=args.rel_level,
            depth=args.depth,
            digits=4 if digits is None else digits,
            judged_only=args.judged_only,
        )
    from abrank.engines.evaluate import evaluate

    table = evaluate(
        rankings,
        judgments,
        names,
        complete=args.complete,
        judged_only=args.judged_only,
        rel_level=args.rel_level,
        depth=args.depth,
    )
    columns = {name: table[name].fillna(0.0).to_numpy() for name in table.columns}
    return format_trec_eval(list(table.index), columns, per_query=args.per_query, digits=digits)


def _on_engine(
    args: argparse.Namespace,
    names: list[str],
    measures: TrecMeasures | None,
    digits: int | None,
) -> int:
    """``abrank metrics --engine NAME`` on an SQL engine: abrank's metric names only."""
    from abrank.designs.offline.sql import score_files
    from abrank.errors import ConfigError
    from abrank.treceval.output import format_trec_eval

    if measures is not None:
        raise ConfigError(
            f"--engine {args.engine}: expected abrank metric names (-m ndcg@10 mrr@10 map), "
            f"got trec_eval measure names ({', '.join(names)}); engine memory (the default) "
            "prints trec_eval's own report"
        )
    qids, columns = score_files(
        args.engine,
        args.qrels,
        args.run,
        names,
        rel_level=args.rel_level,
        depth=args.depth,
        complete=args.complete,
        judged_only=args.judged_only,
    )
    sys.stdout.write(format_trec_eval(qids, columns, per_query=args.per_query, digits=digits))
    return EXIT_OK


def _check_options(args: argparse.Namespace) -> None:
    """Reject option values that cannot mean anything, before any file is read."""
    import math

    from abrank.errors import ConfigError
    from abrank.metrics.registry import MAX_REL

    if args.digits is not None and not 0 <= args.digits <= MAX_DIGITS:
        raise ConfigError(
            f"--digits: expected a whole number from 0 to {MAX_DIGITS}, got {args.digits}"
        )
    if args.depth is not None and args.depth < 1:
        raise ConfigError(f"--depth (-M): expected a whole number >= 1, got {args.depth}")
    if not (math.isfinite(args.rel_level) and abs(args.rel_level) <= MAX_REL):
        raise ConfigError(
            f"--rel-level (-l): expected a number from {-int(MAX_REL)} to {int(MAX_REL)}, "
            f"got {args.rel_level}"
        )
