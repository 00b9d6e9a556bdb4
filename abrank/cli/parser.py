"""The argument parser of the ``abrank`` command, built from the verbs' modules.

Each verb module holds its ``NAME``, ``SUMMARY`` (the one line of the top-level help and
the verb's description), ``EXAMPLE`` (its help's epilog), ``add_arguments`` and ``handle``;
:data:`VERBS` lists them in the order the help shows them.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from types import ModuleType

from abrank.cli import (
    compare,
    demo_data,
    history,
    interleave,
    metrics,
    run,
    serve,
    simulate,
    validate,
)
from abrank.cli.options import regroup_metric_values

#: the verbs' modules, in the order of the help
VERBS: tuple[ModuleType, ...] = (
    run,
    validate,
    metrics,
    compare,
    history,
    serve,
    interleave,
    simulate,
    demo_data,
)
#: the verbs whose -m values are regrouped (:func:`regroup_metric_values`): their file count
METRIC_VERBS = {metrics.NAME: metrics.FILES, compare.NAME: compare.FILES}


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser(verb_named: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every verb (also used to check that each verb has help).

    With ``verb_named``, only that verb's own options are added (every verb is still
    listed): a command line parses without importing what the other verbs' options need,
    such as the statistics registry that ``compare`` offers its tests from.
    """
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
              abrank history demo-reranker --csv
            """),
    )
    parser.add_argument("--version", action="version", version=f"abrank {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in VERBS:
        sub = verbs.add_parser(
            verb.NAME,
            help=verb.SUMMARY.replace("%", "%%"),  # argparse %-formats help, not descriptions
            description=verb.SUMMARY,
            formatter_class=_formatter,
            epilog=f"Example:\n  {verb.EXAMPLE}",
        )
        sub.add_argument("--debug", action="store_true", help="show tracebacks on errors")
        if verb_named in (None, verb.NAME):
            verb.add_arguments(sub)
    return parser


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """The command's arguments read (a usage error exits 2, as argparse does); the metric
    verbs' -m values regrouped first."""
    argv = list(argv)
    named = argv[0] if argv and argv[0] in {verb.NAME for verb in VERBS} else None
    parser = build_parser(named)
    if argv and argv[0] in METRIC_VERBS:
        sub = parser._subparsers._group_actions[0].choices[argv[0]]  # type: ignore[union-attr,index]  # noqa: SLF001
        argv = [argv[0], *regroup_metric_values(argv[1:], sub, METRIC_VERBS[argv[0]])]
    return parser.parse_args(argv)
