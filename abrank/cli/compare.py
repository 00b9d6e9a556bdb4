"""``abrank compare``: a quick paired readout of two runs on the same judgments, without a
config (the experiment is built from the arguments and run as ``abrank run`` runs one)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from abrank.cli.exits import EXIT_OK
from abrank.cli.options import engine_option, judged_only_option, metric_option

NAME = "compare"
SUMMARY = "Quick paired readout of two runs on the same judgments, without a config."
EXAMPLE = "abrank compare qrels.txt bm25.run reranker.run -m ndcg@10 mrr@10 --json"
#: the file arguments (QRELS, CONTROL_RUN, TREATMENT_RUN), which may stand among the -m values
FILES = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank compare`` (the tests and corrections from the registry)."""
    from abrank.stats import registry as stats_registry

    parser.add_argument("qrels", metavar="QRELS", help="judgments (TREC qrels or a table)")
    parser.add_argument("control", metavar="CONTROL_RUN", help="the control ranking")
    parser.add_argument("treatment", metavar="TREATMENT_RUN", help="the treatment ranking")
    metric_option(parser)
    judged_only_option(parser)
    engine_option(parser)
    parser.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    parser.add_argument("--rel-level", "-l", type=float, default=1, help="lowest relevant grade")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap/permutation resamples"
    )
    parser.add_argument(
        "--test",
        default="t",
        help=f"primary test: {' | '.join(stats_registry.test_names('paired'))} (default t)",
    )
    parser.add_argument(
        "--correction",
        default="holm",
        help="multiple-testing correction across the metrics: "
        f"{' | '.join(stats_registry.correction_names())} (default holm)",
    )
    parser.add_argument(
        "--no-relevant",
        default="drop",
        choices=("drop", "zero"),
        help="a query with nothing relevant for a metric: leave it out (default) or score 0 "
        "(trec_eval)",
    )
    parser.add_argument(
        "--missing",
        default="zero",
        choices=("zero", "drop", "error"),
        help="a query missing from one run: score 0, drop it, or fail",
    )


def handle(args: argparse.Namespace) -> int:
    """Build the experiment from the arguments, run it, print its headlines (or JSON)."""
    from abrank.analysis import run_experiment
    from abrank.config import build_experiment
    from abrank.render.headline import headline_lines
    from abrank.stats import registry as stats_registry
    from abrank.treceval import expand_cutoff_lists, split_metric_lists

    primary_test = stats_registry.resolve_test(args.test, "paired", "--test")
    correction = stats_registry.resolve_correction(args.correction, "--correction")
    control, treatment = _arm_names(args.control, args.treatment)
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
    readout = run_experiment(experiment, engine=args.engine, explain=False)  # headlines only
    if args.json:
        json.dump(readout.summary["comparisons"], sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        for line in headline_lines(readout.summary):
            print(line)
        for warning in readout.summary["diagnostics"]["warnings"]:
            print(f"note: {warning}", file=sys.stderr)
    return EXIT_OK


def _arm_names(control: str, treatment: str) -> tuple[str, str]:
    """One name per arm of ``abrank compare``, used alike in the headline, the notes and the
    JSON: the run's file name, with any character an arm name cannot hold (outside letters,
    digits, ``.``, ``_`` and ``-``) as ``_``; ``control`` and ``treatment`` when the two
    file names are the same."""

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
