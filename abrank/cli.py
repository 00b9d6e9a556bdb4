"""The ``abrank`` command line: a thin layer over the library.

Exit codes: 0 success; 2 bad input (config, data, options), reported as one clean message
that names the file, line or field; 3 an alert named by ``--fail-on`` fired (the readout
written); 99 an input of the run's date does not exist yet and ``--missing skip`` was given;
143 stopped by SIGTERM; 1 anything else (:mod:`abrank.batch`). ``--debug`` shows tracebacks.
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

from abrank.errors import AbrankError, DataError, write_failure

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports it
#: --digits beyond 17 decimals adds nothing a float holds
MAX_DIGITS = 17


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb (also used to check that each verb has help)."""
    from abrank import __version__
    from abrank.stats import registry as stats_registry

    parser = argparse.ArgumentParser(
        prog="abrank",
        formatter_class=_formatter,
        description="Is the new ranker better? Metrics, statistics and readouts for ranking A/B tests.",
        epilog=textwrap.dedent("""\
            Examples:
              abrank run experiments/demo-reranker.yaml
              abrank metrics qrels.txt run.txt -m ndcg@10 mrr@10 --per-query
              abrank compare qrels.txt bm25.run reranker.run -m ndcg@10 mrr@10
              abrank history demo-reranker --csv
            """),
    )
    parser.add_argument("--version", action="version", version=f"abrank {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, summary: str, example: str) -> argparse.ArgumentParser:
        sub = verbs.add_parser(
            name,
            help=summary.replace("%", "%%"),  # argparse %-formats help strings, not descriptions
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
    run.add_argument(
        "configs",
        nargs="+",
        metavar="CONFIG",
        help="experiment YAML file(s), or folders: every *.yaml in them",
    )
    run.add_argument(
        "--out", metavar="DIR", help="readout folder (with several configs: their parent)"
    )
    run.add_argument(
        "--date",
        metavar="YYYY-MM-DD",
        help="run for this date: {date} in the config's paths; readout in <folder>/<date>/",
    )
    run.add_argument(
        "--from", dest="start", metavar="YYYY-MM-DD", help="backfill: every date from this one"
    )
    run.add_argument(
        "--to", dest="end", metavar="YYYY-MM-DD", help="through this one (default: today)"
    )
    run.add_argument(
        "--no-history",
        action="store_true",
        help="do not record the run in the reports root's history (nor rebuild its index.html)",
    )
    run.add_argument(
        "--missing",
        choices=("error", "skip"),
        default="error",
        help="an input of the date that does not exist yet: exit 2 (error, default), or "
        "write nothing and exit 99 (skip: Airflow's skip code)",
    )
    run.add_argument("--seed", type=int, help="override the config's analysis.seed")
    run.add_argument(
        "--engine",
        metavar="NAME",
        help="override the config's engine: memory, duckdb or spark",
    )
    run.add_argument(
        "--format",
        default="html,md,json,csv",
        metavar="LIST",
        help="comma-separated outputs among html, md, json, csv (default: all)",
    )
    run.add_argument("--quiet", "-q", action="store_true", help="no progress or headlines")
    run.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="ALERTS",
        help="exit 3, after writing the readout, when one of these alerts fires "
        "(comma-separated: srm, loss, inconclusive, stale)",
    )

    validate = verb(
        "validate",
        "Check experiment configs and their data files; compute nothing.",
        "abrank validate experiments/*.yaml",
    )
    validate.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment YAML file(s)")
    validate.add_argument(
        "--date",
        metavar="YYYY-MM-DD",
        help="check a dated config's files of this date (without it, only the config)",
    )
    validate.add_argument(
        "--engine",
        metavar="NAME",
        help="override the config's engine: memory, duckdb or spark (the files are opened "
        "and checked as run opens them on that engine)",
    )

    metrics = verb(
        "metrics",
        "Per-query metrics of one run, printed like trec_eval (measure, query, value).",
        "abrank metrics qrels.txt run.txt -m ndcg@10 mrr@10 map --per-query\n"
        "  abrank metrics -q -c -l 2 -m ndcg_cut.10,20 -m recip_rank qrels.txt run.txt\n\n"
        "With trec_eval's measure names only (recip_rank, map, ndcg, P.5,10, recall.100,\n"
        "ndcg_cut.10, map_cut.100, success.1, num_q, num_ret, num_rel, num_rel_ret, runid,\n"
        "or a bare family P, recall, ndcg_cut, map_cut, success for trec_eval's default\n"
        "cutoffs) it takes trec_eval's own command line and prints exactly what trec_eval 9\n"
        "prints (names, order, layout, 4 decimals; -M unlimited unless given). With abrank's\n"
        "names (ndcg@10, mrr@10, ...) it prints measure<TAB>query<TAB>value at full precision.\n"
        "Without -m it prints trec_eval's default measures (-m official); -m all_trec prints\n"
        "every trec_eval measure abrank computes and names the others on stderr.",
    )
    metrics.add_argument("qrels", metavar="QRELS", help="judgments (TREC qrels or a table)")
    metrics.add_argument("run", metavar="RUN", help="ranking (TREC run or a table)")
    _metric_option(metrics, required=False)
    _judged_only_option(metrics)
    _engine_option(metrics)
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
        help="documents kept per query (trec_eval -M; default 1000, or no limit with "
        "trec_eval's names, as in trec_eval)",
    )
    metrics.add_argument(
        "--digits",
        type=int,
        help="round values to this many digits (default: full precision; 4 with trec_eval's "
        "names, as trec_eval prints)",
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
    _judged_only_option(compare)
    _engine_option(compare)
    compare.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    compare.add_argument("--rel-level", "-l", type=float, default=1, help="lowest relevant grade")
    compare.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    compare.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap/permutation resamples"
    )
    compare.add_argument(
        "--test",
        default="t",
        help=f"primary test: {' | '.join(stats_registry.test_names('paired'))} (default t)",
    )
    compare.add_argument(
        "--correction",
        default="holm",
        help="multiple-testing correction across the metrics: "
        f"{' | '.join(stats_registry.correction_names())} (default holm)",
    )
    compare.add_argument(
        "--no-relevant",
        default="drop",
        choices=("drop", "zero"),
        help="a query with nothing relevant for a metric: leave it out (default) or score 0 "
        "(trec_eval)",
    )
    compare.add_argument(
        "--missing",
        default="zero",
        choices=("zero", "drop", "error"),
        help="a query missing from one run: score 0, drop it, or fail",
    )

    history = verb(
        "history",
        "Print an experiment's history: every dated readout's comparisons, by date.",
        "abrank history demo-reranker --json --root reports\n\n"
        "Without --json or --csv: an aligned table of date, treatment, metric, segment, the\n"
        "means, delta, interval, adjusted p-value, verdict and n. --json: a list of row\n"
        "objects with every column of the history store; --csv: every column.",
    )
    history.add_argument("name", metavar="NAME", help="the experiment's name (config name)")
    shape = history.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="every column, as a list of objects")
    shape.add_argument("--csv", action="store_true", help="every column, as CSV")
    history.add_argument(
        "--root",
        default="reports",
        metavar="DIR",
        help="the reports root holding the history/ folder (default: reports)",
    )

    inter = verb(
        "interleave",
        "Interleaved result lists of two runs, one row per shown result and the team that "
        "contributed it (for serving tests and simulations).",
        "abrank interleave qrels.txt bm25.run reranker.run -o shown.csv --method team_draft",
    )
    inter.add_argument(
        "qrels",
        metavar="QRELS_OR_NONE",
        help="judgments (TREC qrels or a table): adds a relevance column; - or none: no judgments",
    )
    inter.add_argument("run_a", metavar="RUN_A", help="the control ranking (first team)")
    inter.add_argument("run_b", metavar="RUN_B", help="the treatment ranking (second team)")
    inter.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="FILE",
        help="output table; its format from the suffix: .csv, .tsv, .parquet or .jsonl",
    )
    inter.add_argument("--method", default="team_draft", help="team_draft (default) or balanced")
    inter.add_argument("--seed", type=int, default=0, help="coin-flip seed (default 0)")
    inter.add_argument("--depth", type=int, help="results shown per query (default: all)")
    inter.add_argument(
        "--names",
        default="control,treatment",
        metavar="A,B",
        help="the two team names (default control,treatment)",
    )

    sim = verb(
        "simulate",
        "Plan an online test from an offline experiment: the users an A/B test and a "
        "team-draft interleaving test need for 80% power, from simulated clicks.",
        "abrank simulate experiments/demo-reranker.yaml --click-model pbm --users 50 100 200",
    )
    sim.add_argument("config", metavar="CONFIG", help="an offline experiment config")
    sim.add_argument("--click-model", help="pbm or cascade (default: the config's, else pbm)")
    sim.add_argument(
        "--users", nargs="+", type=int, metavar="N", help="traffic sizes (default: automatic)"
    )
    sim.add_argument("--simulations", type=int, help="experiments per size (default 200)")
    sim.add_argument("--seed", type=int, help="seed (default: the config's)")
    sim.add_argument(
        "--out", metavar="DIR", help="output folder (default reports/<name>-simulation)"
    )

    demo = verb(
        "demo-data",
        "Write the bundled demos' data: a simulated offline reranker replay, a simulated "
        "online A/B test of the same reranker (impressions and clicks) and a simulated "
        "team-draft interleaving of the two rankers.",
        "abrank demo-data --out experiments/data",
    )
    demo.add_argument("--out", default="experiments/data", metavar="DIR")
    demo.add_argument("--seed", type=int, help="generator seed (default: each demo's own)")
    demo.add_argument("--queries", type=int, default=2000, help="number of queries (default 2000)")
    demo.add_argument(
        "--users", type=int, default=20_000, help="users of the online demo (default 20000)"
    )
    demo.add_argument(
        "--daily",
        metavar="DIR",
        help="instead: the dated demos for scheduled runs, in DIR: demo-daily.yaml (the "
        "offline demo, logs/<date>/) and reranker-daily.yaml (the online demo, "
        "logs/date=<date>/), 14 days from 2026-01-01",
    )
    return parser


def _judged_only_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judged-only",
        "-J",
        action="store_true",
        help="score every metric on the judged documents only: unjudged ones are removed "
        "from each ranking first (trec_eval -J; ndcg@10 becomes ndcg@10(judged))",
    )


def _engine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        metavar="NAME",
        help="where the runs are scored: memory (default), duckdb or spark (files read and "
        "scored in the engine; abrank metric names only)",
    )


def _metric_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        action="append",
        required=required,
        metavar="METRIC",
        help="metric names: one per -m (-m ndcg@10 -m mrr@10), a comma list (-m P.5,10), "
        "or several after one -m (-m ndcg@10 mrr@10 map)",
    )


# how many file arguments each verb with -m takes
_FILES = {"metrics": 2, "compare": 3}


def _regroup_metric_values(
    tokens: Sequence[str], sub: argparse.ArgumentParser, files: int
) -> list[str]:
    """A verb's arguments with every metric name after its own -m and the files last.

    Two conventions meet here. trec_eval's: each -m takes one value and the files may come
    anywhere (``-q -m ndcg_cut.10 -m P.5 qrels run``). abrank's: one -m may be followed by
    several names (``qrels run -m ndcg@10 mrr@10 --per-query``). Bare words that follow an
    -m value are metric names, except the last ones when fewer than ``files`` bare words
    stand elsewhere: those are the files. Options keep their values; anything unknown is
    left for argparse to report.
    """
    actions = sub._option_string_actions  # noqa: SLF001 - argparse keeps no public table
    kept: list[str] = []
    metrics: list[tuple[int, str]] = []
    bare: list[tuple[int, str, bool]] = []  # (position, token, follows a metric)
    follows = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            bare += [(j, t, False) for j, t in enumerate(tokens[i + 1 :], start=i + 1)]
            break
        if not token.startswith("-") or token == "-" or _is_number(token):
            bare.append((i, token, follows))
            i += 1
            continue
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            action = _long_option(actions, name)
            takes = action is not None and action.nargs != 0
            if takes and not eq and i + 1 < len(tokens):
                i += 1
                value, eq = tokens[i], "="
            follows = takes and action.dest == "metrics" and bool(eq)
            if follows:
                metrics.append((i, value))
            else:  # one token: argparse then reads a value such as "-5" as a value
                kept.append(f"{name}={value}" if takes and eq else token)
            i += 1
            continue
        # short options, possibly grouped (-qc) or with an attached value (-l2, -mP.5)
        j, consumed = 1, [token]
        metric = None
        while j < len(token):
            action = actions.get("-" + token[j])
            if action is None or action.nargs == 0:
                j += 1
                continue
            value = token[j + 1 :]
            if not value and i + 1 < len(tokens):
                i += 1
                value = tokens[i]
                consumed = [token + value]  # attached: argparse reads "-5" as a value
            if action.dest == "metrics":
                metric = value
                consumed = [token[:j]] if j > 1 else []
            break
        kept += consumed
        if metric is not None:
            metrics.append((i, metric))
        follows = metric is not None
        i += 1
    fixed = [(p, t) for p, t, after in bare if not after]
    trailing = [(p, t) for p, t, after in bare if after]
    cut = max(len(trailing) - max(files - len(fixed), 0), 0)
    paths = fixed + trailing[cut:]
    metrics += trailing[:cut]
    out = kept + [f"--metric={name}" for _, name in sorted(metrics)]
    return out + ["--"] + [t for _, t in sorted(paths)]


def _long_option(actions: dict, name: str) -> argparse.Action | None:
    """The action of a long option, or of the one long option it abbreviates."""
    if name in actions:
        return actions[name]
    matches = {a for option, a in actions.items() if option.startswith(name) and name != "--"}
    return matches.pop() if len(matches) == 1 else None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _FILES:
        sub = parser._subparsers._group_actions[0].choices[argv[0]]  # noqa: SLF001
        argv = [argv[0], *_regroup_metric_values(argv[1:], sub, _FILES[argv[0]])]
    args = parser.parse_args(argv)
    _one_blas_thread()
    with _stopped_by_sigterm():
        return _handle(args)


class Terminated(BaseException):
    """SIGTERM arrived: the run unwinds (staging folders removed) and exits 143."""


@contextlib.contextmanager
def _stopped_by_sigterm():
    """SIGTERM (a cron timeout, a stopped Airflow task) raises :class:`Terminated` in the
    main thread for as long as the command runs, so that the run unwinds like any failure:
    its staging folder is removed, the previous readout and the history stay as they were."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _handle(args: argparse.Namespace) -> int:
    """Run one verb; turn errors into their exit codes."""
    handler = {
        "run": _run,
        "validate": _validate,
        "metrics": _metrics,
        "compare": _compare,
        "history": _history,
        "interleave": _interleave,
        "simulate": _simulate,
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
    except Terminated:
        print("abrank: stopped by SIGTERM; no readout was left half-written", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # anything else is a bug or an environment failure
        if args.debug:
            raise
        failure = write_failure(exc)
        if failure is not None:  # a file abrank could not write: the path and the reason
            print(f"abrank: error: {failure}", file=sys.stderr)
            return EXIT_BAD_INPUT
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
    global _OWN_PROCESS
    _OWN_PROCESS = True
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
            stream.flush()
    os._exit(code)


# --------------------------------------------------------------------------- verbs


def _run(args: argparse.Namespace) -> int:
    from abrank.analysis.alerts import parse_alerts
    from abrank.batch import RunOptions, run_batch

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
    )
    memory = reuse_freed_memory if _OWN_PROCESS else None
    return run_batch(args.configs, (args.date, args.start, args.end), options, online=memory)


def _validate(args: argparse.Namespace) -> int:
    """Open and check every input as ``run`` does on the same engine (the config's, or
    ``--engine``), computing no comparison."""
    from abrank.analysis.engine import choose_engine
    from abrank.batch import missing_input_error
    from abrank.config import load_experiment
    from abrank.inputs import missing_inputs

    experiments = [load_experiment(path) for path in args.configs]
    for path, experiment in zip(args.configs, experiments):
        if args.date is not None:
            experiment = experiment.for_date(args.date)
            missing = missing_inputs(experiment)
            if missing:
                raise missing_input_error(*missing[0], experiment.date.isoformat())
        elif experiment.dated:
            print(f"{path}: ok: {experiment.name}: dated config (give --date to check its files)")
            continue
        choice = choose_engine(experiment, args.engine)
        if experiment.interleaved:
            found = _interleaved_inputs(experiment, choice)
        elif experiment.online:
            found = _online_inputs(experiment, choice)
        else:
            found = _offline_inputs(experiment, choice)
        print(f"{path}: ok: {experiment.name}: {found}")
    return EXIT_OK


def _offline_inputs(experiment, choice) -> str:
    """What an offline experiment's rankings and judgments hold: queries per arm and judged
    queries (opened by the chosen engine: on an SQL engine, counted where the files lie)."""
    from abrank.analysis.offline_sql import check_offline_inputs

    counts = check_offline_inputs(experiment, choice, lambda message: None)
    arms = ", ".join(f"{name} ({count:,} queries)" for name, count in counts.queries.items())
    return f"{arms}; {counts.judged:,} judged queries; metrics {', '.join(experiment.metrics)}"


def _online_inputs(experiment, choice) -> str:
    """What an online experiment's logs hold: impressions and units per arm (read by the
    chosen engine: on an SQL engine, from the per-unit sums it returns)."""
    from abrank.analysis.engine import score_online_sql
    from abrank.analysis.online import load_online

    unit = experiment.analysis.unit
    if choice.name != "memory":
        data, scores = score_online_sql(experiment, choice, lambda message: None)
        counts = {name: (scores.impressions[name], scores.units[name]) for name in scores.sums}
    else:
        data = load_online(experiment)
        counts = {
            name: (frame["impression_id"].nunique(), frame[unit].nunique())
            for name, frame in data.impressions.items()
        }
    arms = ", ".join(
        f"{name} ({impressions:,} impressions, {units:,} {unit} values)"
        for name, (impressions, units) in counts.items()
    )
    mixed = f"; {data.mixed.count:,} {unit} values in more than one arm" if data.mixed.count else ""
    return f"{arms}{mixed}; metrics {', '.join(experiment.metrics)}"


def _interleaved_inputs(experiment, choice) -> str:
    """What an interleaved log holds: impressions, units, the impressions each team
    contributed results to, and the credits compared (read by the chosen engine: on an
    SQL engine, from the per-unit counts it returns)."""
    from abrank.analysis.interleaved import load_interleaved

    unit = experiment.analysis.unit
    if choice.name != "memory":
        from abrank.analysis.interleaved_sql import score_interleaved_sql

        _, scores = score_interleaved_sql(experiment, choice, lambda message: None)
        impressions, units = scores.impressions, scores.units
        per_team = {arm: n for arm, (n, _) in scores.per_arm.items()}
    else:
        log = load_interleaved(experiment).log
        impressions, units = log["impression_id"].nunique(), log[unit].nunique()
        counted = log.groupby("team", observed=True)["impression_id"].nunique()
        per_team = {str(team): int(n) for team, n in counted.items()}
    teams = ", ".join(
        f"{arm.name} ({int(per_team.get(arm.name, 0)):,} impressions)" for arm in experiment.arms
    )
    return (
        f"interleaved log of {impressions:,} impressions, {units:,} {unit} values; teams "
        f"{teams}; credits {', '.join(experiment.metrics)}"
    )


# True when the process is the command's own (``console``), not a Python program calling
# ``main``: process-wide settings (the memory allocators) are made only then
_OWN_PROCESS = False


def reuse_freed_memory() -> None:
    """Let a short process that builds and drops large arrays reuse the memory it frees.

    ``abrank metrics`` and ``abrank run`` on an online log make temporaries of hundreds of
    MB, one after another. By default glibc maps each one afresh, NumPy advises huge pages
    for it, and Arrow's mimalloc commits its arenas eagerly, so that every page is faulted
    and zeroed again and, on a busy machine, the kernel stalls compacting memory for huge
    pages. Arrow's buffers from the system allocator, freed blocks kept in the heap for
    reuse (M_MMAP_MAX 0, no trimming) and the page size left to the kernel save one to three
    seconds of system time on 10 million run lines (benchmarks/bench_metrics.py), and about
    half of the data path's time on a 20-million-row click log
    (benchmarks/bench_online_io.py); values are unaffected. Made only in the command's own
    process (:func:`console`), never for a Python program that calls :func:`main`;
    elsewhere than glibc the allocator settings do nothing.
    """
    import ctypes

    import numpy as np
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    with contextlib.suppress(AttributeError):
        np._core.multiarray._set_madvise_hugepage(False)  # noqa: SLF001
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(-4, 0)  # M_MMAP_MAX: large blocks come from the heap, and return to it
            libc.mallopt(-1, 2**31 - 1)  # M_TRIM_THRESHOLD: keep freed heap memory


def _metrics(args: argparse.Namespace) -> int:
    from abrank._lazy import import_pandas_in_background
    from abrank.io import detect_format
    from abrank.treceval import expand_cutoff_lists, parse_trec_measures, split_metric_lists
    from abrank.treceval.output import format_trec_eval, trec_eval_report, trec_eval_text

    # every module this needs is loaded; pandas (which pyarrow wants for its first NumPy
    # conversion) loads on the other core while the first file parses
    import_pandas_in_background()

    _check_metric_options(args)
    if _OWN_PROCESS:
        reuse_freed_memory()
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
        return _metrics_on_engine(args, names, measures, digits)
    trec_files = (
        detect_format(args.qrels, judgments=True) == "qrels" and detect_format(args.run) == "trec"
    )
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
        from abrank.io import read_judgments, read_rankings

        rankings, judgments = read_rankings(args.run), read_judgments(args.qrels)
        del options["judged_only"]
        if measures is not None:
            text = _trec_eval_report_of_tables(rankings, judgments, measures, args, digits)
        else:
            from abrank.engines.evaluate import evaluate

            table = evaluate(
                rankings,
                judgments,
                names,
                complete=args.complete,
                judged_only=args.judged_only,
                **options,
            )
            columns = {name: table[name].fillna(0.0).to_numpy() for name in table.columns}
            text = format_trec_eval(
                list(table.index), columns, per_query=args.per_query, digits=digits
            )
    sys.stdout.write(text)
    return EXIT_OK


def _metrics_on_engine(args: argparse.Namespace, names, measures, digits: int | None) -> int:
    """``abrank metrics --engine NAME`` on an SQL engine: abrank's metric names only."""
    from abrank.analysis.offline_sql import score_files
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


def _check_metric_options(args: argparse.Namespace) -> None:
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


def _trec_eval_report_of_tables(rankings, judgments, measures, args, digits: int) -> str:
    """trec_eval's output for rankings and judgments read from tables (no run tag)."""
    from abrank.engines.memory import check_options, prepare
    from abrank.errors import ConfigError
    from abrank.treceval import format_report

    if "runid" in measures.cutoffs:
        if not args.metrics:  # no -m: trec_eval's default set, which opens with runid
            raise ConfigError(
                f"{args.run}: without -m, abrank metrics prints trec_eval's default set, "
                "whose runid needs a TREC run file (its sixth column names the run); got a "
                "table: name the measures with -m (trec_eval's: -m map -m recip_rank -m "
                "P.5,10; or abrank's: -m ndcg@10 mrr@10 map)"
            )
        raise ConfigError(
            f"-m runid: expected a TREC run file (its sixth column names the run), "
            f"got {args.run}, a table"
        )
    check_options(args.rel_level, "linear", args.depth)
    prep = prepare(rankings, judgments, args.depth)
    if args.judged_only:
        from abrank.engines.condensed import condense

        prep = condense(prep, keep_negative=False)
    if not (prep.in_run & prep.in_judgments).any():
        raise DataError(
            f"{args.run}: query ids: expected queries that are also in {args.qrels}, got none"
        )
    return format_report(
        prep,
        measures,
        rel_level=args.rel_level,
        complete=args.complete,
        per_query=args.per_query,
        digits=digits,
    )


def _compare(args: argparse.Namespace) -> int:
    from abrank.analysis import run_experiment
    from abrank.config import build_experiment
    from abrank.render import headline_lines
    from abrank.stats import registry as stats_registry
    from abrank.treceval import expand_cutoff_lists, split_metric_lists

    primary_test = stats_registry.resolve_test(args.test, "paired", "--test")
    correction = stats_registry.resolve_correction(args.correction, "--correction")
    control, treatment = _compare_arm_names(args.control, args.treatment)
    config = {
        "name": "compare",
        "title": f"{treatment} vs {control}",
        "control": {"name": control, "label": control, "path": args.control},
        "treatments": [{"name": treatment, "label": treatment, "path": args.treatment}],
        "judgments": {"path": args.qrels},
        "metrics": _judged_only_names(
            expand_cutoff_lists(split_metric_lists(args.metrics)), args.judged_only
        ),
        "relevance_threshold": args.rel_level,
        "no_relevant": args.no_relevant,
        "analysis": {
            "seed": args.seed,
            "resamples": args.resamples,
            "primary_test": primary_test,
            "correction": correction,
            "missing_queries": args.missing,
        },
    }
    experiment = build_experiment(config, source="abrank compare")
    readout = run_experiment(experiment, engine=args.engine)
    if args.json:
        json.dump(readout.summary["comparisons"], sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        for line in headline_lines(readout.summary):
            print(line)
        for warning in readout.summary["diagnostics"]["warnings"]:
            print(f"note: {warning}", file=sys.stderr)
    return EXIT_OK


def _compare_arm_names(control: str, treatment: str) -> tuple[str, str]:
    """One name per arm of ``abrank compare``, used alike in the headline, the notes and the
    JSON: the run's file name, with any character an arm name cannot hold (outside letters,
    digits, ``.``, ``_`` and ``-``) as ``_``; ``control`` and ``treatment`` when the two
    file names are the same."""
    import re

    def name(path: str) -> str:
        text = re.sub(r"[^A-Za-z0-9._-]", "_", Path(path).name)[:100]
        return text if re.match(r"^[A-Za-z0-9]", text) else f"run{text}"[:100]

    names = name(control), name(treatment)
    return ("control", "treatment") if names[0] == names[1] else names


def _judged_only_names(names: list[str], judged_only: bool) -> list[str]:
    """The metric names, each as its judged-only variant under -J (judged@k stays)."""
    if not judged_only:
        return names
    from abrank.metrics import as_judged_only, parse_metrics

    return [m.name for m in as_judged_only(parse_metrics(names))]


def _history(args: argparse.Namespace) -> int:
    """``abrank history``: pyarrow only (no pandas), so that it answers in a blink."""
    from abrank.history.output import TEXT_COLUMNS, csv_parts, json_parts, text_parts
    from abrank.history.store import history_table

    if _OWN_PROCESS:
        _small_buffers_pool()
    every = args.json or args.csv
    skipped: list[str] = []  # files of the store that could not be read: named, not fatal
    columns = None if every else TEXT_COLUMNS
    table = history_table(args.root, args.name, columns=columns, skipped=skipped)
    parts = json_parts if args.json else csv_parts if args.csv else text_parts
    out = sys.stdout
    out.flush()
    for part in parts(table):
        out.buffer.write(part)
    out.buffer.flush()
    for message in skipped:
        print(f"abrank: warning: {message}", file=sys.stderr)
    return EXIT_OK


def _small_buffers_pool() -> None:
    """Arrow's jemalloc pool for ``abrank history``, when pyarrow has it.

    Reading hundreds of small Parquet files makes tens of thousands of small buffers; with
    the default pool a fresh process spent more time in the kernel committing their pages
    than reading (about 1 s of system time for 100,000 rows in 500 files, 0.4 s with
    jemalloc; benchmarks/bench_history.py). Made only in the command's own process.
    """
    import pyarrow as pa

    with contextlib.suppress(NotImplementedError):
        pa.set_memory_pool(pa.jemalloc_memory_pool())


# output suffix -> pandas writer of the interleaved lists
_TABLE_WRITERS = {
    ".csv": lambda frame, path: frame.to_csv(path, index=False),
    ".tsv": lambda frame, path: frame.to_csv(path, index=False, sep="\t"),
    ".parquet": lambda frame, path: frame.to_parquet(path, index=False),
    ".jsonl": lambda frame, path: frame.to_json(path, orient="records", lines=True),
}


def _interleave(args: argparse.Namespace) -> int:
    from abrank.errors import ConfigError
    from abrank.interleaving import interleave
    from abrank.interleaving.build import check_method
    from abrank.io import read_judgments, read_rankings

    # every option is checked before any file is read
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
        names=names,
    )
    if judgments is not None:
        shown["relevance"] = _grades_of_shown(shown, judgments)
    writer(shown, args.out)
    print(
        f"{args.out}: {len(shown):,} shown results of {shown['query_id'].nunique():,} queries "
        f"({method}, seed {args.seed})"
    )
    return EXIT_OK


def _simulate(args: argparse.Namespace) -> int:
    from abrank.analysis.write import check_output_folder
    from abrank.config import load_experiment
    from abrank.config.simulation import check_users
    from abrank.errors import ConfigError
    from abrank.planner import simulate_power, write_simulation
    from abrank.planner.output import simulation_folder, table_text

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
    try:
        result = simulate_power(
            experiment,
            click_model=args.click_model,
            users=args.users,
            simulations=args.simulations,
            seed=args.seed,
        )
    except ConfigError as exc:
        flag = str(exc).split(":", 1)[0]
        if flag in ("click_model", "users", "simulations", "seed"):
            raise ConfigError(f"--{flag.replace('_', '-')}:{str(exc).split(':', 1)[1]}") from None
        raise
    write_simulation(result, folder)
    print(table_text(result))
    print(f"written: {folder}")
    return EXIT_OK


def _grades_of_shown(shown, judgments):
    """Each shown result's grade in the judgments (NaN when unjudged)."""
    import pandas as pd

    keys = pd.MultiIndex.from_arrays(
        [judgments["query_id"].astype(str), judgments["doc_id"].astype(str)]
    )
    at = keys.get_indexer(pd.MultiIndex.from_arrays([shown["query_id"], shown["doc_id"]]))
    grades = judgments["relevance"].to_numpy(dtype=float)
    return pd.Series(grades[at], index=shown.index).where(at >= 0)


def _demo_data(args: argparse.Namespace) -> int:
    from abrank.demo import write_demo
    from abrank.errors import ConfigError
    from abrank.interleaving_demo import write_interleaving_demo
    from abrank.online_demo import MIN_USERS, write_online_demo

    if args.users < MIN_USERS:  # checked first, so that a bad option writes nothing
        raise ConfigError(f"--users: expected a whole number >= {MIN_USERS}, got {args.users}")
    if args.daily is not None:
        return _daily_demo_data(args)
    options = {"n_queries": args.queries}
    online_options = {"users": args.users}
    # the interleaving demo merges the offline demo's rankings: the same seed and size
    interleaving_options = {"n_queries": args.queries}
    if args.seed is not None:
        options["seed"] = online_options["seed"] = args.seed
        interleaving_options["seed"] = interleaving_options["demo_seed"] = args.seed
    for path in write_demo(Path(args.out), **options):
        print(path)
    for path in write_online_demo(Path(args.out), **online_options):
        print(path)
    for path in write_interleaving_demo(Path(args.out), **interleaving_options):
        print(path)
    return EXIT_OK


def _daily_demo_data(args: argparse.Namespace) -> int:
    """``abrank demo-data --daily DIR``: the dated demos the README's scheduling runs."""
    from abrank.daily_demo import write_daily_demo, write_online_daily_demo
    from abrank.online_demo import EXPERIMENT_DAYS

    folder = Path(args.daily)
    seed = {} if args.seed is None else {"seed": args.seed}
    print(write_daily_demo(folder, days=EXPERIMENT_DAYS, n_queries=args.queries, **seed))
    print(write_online_daily_demo(folder, users=args.users, **seed))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    console()
