"""The ``abrank`` command line: a thin layer over the library.

Exit codes: 0 success; 2 bad input (config, data, options), reported as one clean message
that names the file, line or field; 1 anything else. ``--debug`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from abrank.errors import AbrankError

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb (also used to check that each verb has help)."""
    from abrank import __version__

    parser = argparse.ArgumentParser(
        prog="abrank",
        formatter_class=_formatter,
        description="Is the new ranker better? Metrics, statistics and readouts for ranking A/B tests.",
        epilog=textwrap.dedent("""\
            Examples:
              abrank run experiments/demo-reranker.yaml
              abrank metrics qrels.txt run.txt -m ndcg@10 mrr@10 --per-query
              abrank compare qrels.txt bm25.run reranker.run -m ndcg@10 mrr@10
            """),
    )
    parser.add_argument("--version", action="version", version=f"abrank {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, summary: str, example: str) -> argparse.ArgumentParser:
        sub = verbs.add_parser(
            name,
            help=summary,
            description=summary,
            formatter_class=_formatter,
            epilog=f"Example:\n  {example}",
        )
        sub.add_argument("--debug", action="store_true", help="show tracebacks on errors")
        return sub

    run = verb(
        "run",
        "Analyse experiments and write their readouts (summary.json, per_query.csv, report).",
        "abrank run experiments/demo-reranker.yaml --out reports/demo --seed 7",
    )
    run.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment YAML file(s)")
    run.add_argument(
        "--out", metavar="DIR", help="readout folder (with several configs: their parent)"
    )
    run.add_argument("--seed", type=int, help="override the config's analysis.seed")
    run.add_argument(
        "--format",
        default="html,md,json,csv",
        metavar="LIST",
        help="comma-separated outputs among html, md, json, csv (default: all)",
    )
    run.add_argument("--quiet", "-q", action="store_true", help="no progress or headlines")

    validate = verb(
        "validate",
        "Check experiment configs and their data files; compute nothing.",
        "abrank validate experiments/*.yaml",
    )
    validate.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment YAML file(s)")

    metrics = verb(
        "metrics",
        "Per-query metrics of one run, printed like trec_eval (measure, query, value).",
        "abrank metrics qrels.txt run.txt -m ndcg@10 mrr@10 map --per-query",
    )
    metrics.add_argument("qrels", metavar="QRELS", help="judgments (TREC qrels or a table)")
    metrics.add_argument("run", metavar="RUN", help="ranking (TREC run or a table)")
    _metric_option(metrics)
    metrics.add_argument("--per-query", "-q", action="store_true", help="print a row per query")
    metrics.add_argument(
        "--complete",
        "-c",
        action="store_true",
        help="score judged queries missing from the run as 0 (trec_eval -c)",
    )
    metrics.add_argument(
        "--rel-level",
        "-l",
        type=float,
        default=1,
        help="lowest grade that counts as relevant (trec_eval -l; default 1)",
    )
    metrics.add_argument(
        "--depth",
        "-M",
        type=int,
        default=1000,
        help="documents kept per query (trec_eval -M; default 1000)",
    )
    metrics.add_argument(
        "--digits", type=int, help="round values to this many digits (4 = trec_eval)"
    )

    compare = verb(
        "compare",
        "Quick paired readout of two runs on the same judgments, without a config.",
        "abrank compare qrels.txt bm25.run reranker.run -m ndcg@10 mrr@10 --json",
    )
    compare.add_argument("qrels", metavar="QRELS", help="judgments (TREC qrels or a table)")
    compare.add_argument("control", metavar="CONTROL_RUN", help="the control ranking")
    compare.add_argument("treatment", metavar="TREATMENT_RUN", help="the treatment ranking")
    _metric_option(compare)
    compare.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    compare.add_argument("--rel-level", "-l", type=float, default=1, help="lowest relevant grade")
    compare.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    compare.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap/permutation resamples"
    )
    compare.add_argument(
        "--test",
        default="t",
        choices=("t", "permutation", "bootstrap", "wilcoxon"),
        help="primary test (default t)",
    )
    compare.add_argument(
        "--missing",
        default="zero",
        choices=("zero", "drop", "error"),
        help="a query missing from one run: score 0, drop it, or fail",
    )

    demo = verb(
        "demo-data",
        "Write the bundled demo experiment's data (a simulated reranker replay).",
        "abrank demo-data --out experiments/data",
    )
    demo.add_argument("--out", default="experiments/data", metavar="DIR")
    demo.add_argument("--seed", type=int, help="generator seed (default: the demo's own)")
    demo.add_argument("--queries", type=int, default=2000, help="number of queries (default 2000)")
    return parser


def _metric_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        nargs="+",
        action="extend",
        required=True,
        metavar="METRIC",
        help="metric names, e.g. ndcg@10 mrr@10 P@5 map",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    _one_blas_thread()
    handler = {
        "run": _run,
        "validate": _validate,
        "metrics": _metrics,
        "compare": _compare,
        "demo-data": _demo_data,
    }[args.verb]
    try:
        return handler(args)
    except AbrankError as exc:
        if args.debug:
            raise
        print(f"abrank: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("abrank: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # anything else is a bug or an environment failure
        if args.debug:
            raise
        print(
            f"abrank: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


def _one_blas_thread() -> None:
    """Keep OpenBLAS to one thread in this process, unless the user chose otherwise.

    abrank runs its comparisons in a thread per core (:mod:`abrank.workers`); OpenBLAS's
    own threads would then compete with them for the same cores, and they wait for work
    by spinning: on two cores they took a third of the comparisons' time. Its matrix
    products split the output, never a sum, so the numbers are the same with any number
    of threads. Only possible before NumPy is first imported (not when ``main`` is called
    from a Python process that already uses NumPy).
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def console() -> NoReturn:
    """The ``abrank`` command and ``python -m abrank``: :func:`main`, then a quick exit.

    Once ``main`` has returned, everything is written and closed; what is left is
    Python's teardown of NumPy, pandas and SciPy's modules, about 0.2 s that a finished
    run does not need, so the process flushes its output and exits at once. (A failure
    under ``--debug`` propagates as usual, and :func:`main` itself returns normally, for
    callers in Python.)
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
            stream.flush()
    os._exit(code)


# --------------------------------------------------------------------------- verbs


def _progress(quiet: bool):
    if quiet:
        return None
    return lambda message: print(message, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from abrank.config import load_experiment
    from abrank.pipeline import default_folder, run_experiment, write_readout
    from abrank.report import headline_lines
    from abrank.workers import start_chart_workers

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if {"html", "md"} & set(formats):
        start_chart_workers()  # they import matplotlib while this process computes
    experiments = [load_experiment(path) for path in args.configs]  # every config checked first
    status = EXIT_OK
    for experiment in experiments:
        if args.out and len(experiments) > 1:
            folder = Path(args.out) / experiment.name
        else:
            folder = default_folder(experiment.name, args.out, experiment.output)
        try:
            readout = run_experiment(experiment, seed=args.seed, progress=_progress(args.quiet))
            write_readout(readout, folder, formats=formats)
        except AbrankError as exc:
            if args.debug or len(experiments) == 1:
                raise
            print(f"abrank: error: {exc}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        if not args.quiet:
            print(f"{readout.summary['experiment']['title']}")
            for line in headline_lines(readout.summary):
                print(line)
            print(f"readout written to {folder}/")
    return status


def _validate(args: argparse.Namespace) -> int:
    from abrank.config import load_experiment
    from abrank.pipeline import load_data

    experiments = [load_experiment(path) for path in args.configs]
    for path, experiment in zip(args.configs, experiments):
        data = load_data(experiment)
        queries = {name: int(frame["query_id"].nunique()) for name, frame in data.rankings.items()}
        arms = ", ".join(f"{name} ({count:,} queries)" for name, count in queries.items())
        print(
            f"{path}: ok: {experiment.name}: {arms}; {data.judgments['query_id'].nunique():,} judged "
            f"queries; metrics {', '.join(experiment.metrics)}"
        )
    return EXIT_OK


def _metrics(args: argparse.Namespace) -> int:
    from abrank.io import detect_format
    from abrank.trec import format_trec_eval, trec_eval_text

    options = dict(rel_level=args.rel_level, depth=args.depth)
    trec_files = (
        detect_format(args.qrels, judgments=True) == "qrels" and detect_format(args.run) == "trec"
    )
    if trec_files:  # the fast path straight from the files' columns
        text = trec_eval_text(
            args.qrels,
            args.run,
            args.metrics,
            per_query=args.per_query,
            complete=args.complete,
            digits=args.digits,
            **options,
        )
    else:
        from abrank.io import read_judgments, read_rankings
        from abrank.metrics import evaluate

        table = evaluate(
            read_rankings(args.run),
            read_judgments(args.qrels),
            args.metrics,
            complete=args.complete,
            **options,
        )
        columns = {name: table[name].fillna(0.0).to_numpy() for name in table.columns}
        text = format_trec_eval(
            list(table.index), columns, per_query=args.per_query, digits=args.digits
        )
    sys.stdout.write(text)
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from abrank.config import build_experiment
    from abrank.pipeline import run_experiment
    from abrank.report import headline_lines

    config = {
        "name": "compare",
        "title": f"{Path(args.treatment).name} vs {Path(args.control).name}",
        "control": {"name": "control", "label": Path(args.control).name, "path": args.control},
        "treatments": [
            {"name": "treatment", "label": Path(args.treatment).name, "path": args.treatment}
        ],
        "judgments": {"path": args.qrels},
        "metrics": args.metrics,
        "relevance_threshold": args.rel_level,
        "analysis": {
            "seed": args.seed,
            "resamples": args.resamples,
            "primary_test": args.test,
            "missing_queries": args.missing,
        },
    }
    experiment = build_experiment(config, source="abrank compare")
    readout = run_experiment(experiment)
    if args.json:
        json.dump(readout.summary["comparisons"], sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        for line in headline_lines(readout.summary):
            print(line)
        for warning in readout.summary["diagnostics"]["warnings"]:
            print(f"note: {warning}", file=sys.stderr)
    return EXIT_OK


def _demo_data(args: argparse.Namespace) -> int:
    from abrank.demo import write_demo

    options = {"n_queries": args.queries}
    if args.seed is not None:
        options["seed"] = args.seed
    for path in write_demo(Path(args.out), **options):
        print(path)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    console()
