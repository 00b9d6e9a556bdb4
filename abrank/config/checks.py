"""The checks across a config's keys, once the models have validated each key's value.

One named check per concern, run in a fixed order (the problems are then sorted by line;
problems on the same line keep this order): the experiment's name, the inputs (the one
log, the arms, the judgments, the segments' attributes), the metrics, the analysis, the
design's own keys (an interleaving test's, or an A/B test's online keys), the output
folder and the window. Each returns its part of the experiment resolved (canonical names,
absolute paths), and the whole is returned as one copy.
"""

from __future__ import annotations

from pathlib import Path

from abrank.config.analysis import checked_analysis
from abrank.config.arms import named_arms
from abrank.config.experiment import Experiment
from abrank.config.interleaved import interleaved_problems
from abrank.config.metrics import checked_metrics
from abrank.config.offline import resolved_judgments
from abrank.config.online import checked_online, resolved_log
from abrank.config.outputs import check_name, check_window, checked_output
from abrank.config.problems import Checks
from abrank.config.segments import resolved_segments
from abrank.errors import ConfigError


def check_semantics(
    exp: Experiment, source: str, lines: dict, base_dir: Path
) -> tuple[Experiment, list[str]]:
    """Cross-field checks, arm names, metric names and file paths; returns a resolved copy
    and the problems found."""
    checks = Checks(source, lines, base_dir)
    check_name(checks, exp.name)
    log = resolved_log(checks, exp.log)
    arms = named_arms(checks, exp.arms, one_log=log is not None, interleaved=exp.interleaved)
    judgments = resolved_judgments(checks, exp.judgments)
    segments = resolved_segments(checks, exp.segments)
    metrics, primary = checked_metrics(
        checks, exp.metrics, exp.primary_metric, interleaved=exp.interleaved
    )
    analysis = checked_analysis(checks, exp.analysis)
    if exp.interleaved:
        for loc, message in interleaved_problems(exp):
            checks.add(loc, message)
    else:
        analysis = checked_online(
            checks,
            analysis,
            design=analysis.design,
            online=reads_impressions(exp),
            arms=[str(arm.name) for arm in arms],
        )
    output = checked_output(checks, exp.output)
    logs = [exp.log.path] if exp.log is not None else [arm.path for arm in exp.arms]
    check_window(checks, exp.window, logs)
    resolved = exp.model_copy(
        update={
            "control": arms[0],
            "treatments": arms[1:],
            "judgments": judgments,
            "log": log,
            "segments": segments,
            "metrics": metrics,
            "primary_metric": primary,
            "analysis": analysis,
            "output": output,
        }
    )
    return resolved, checks.problems


def reads_impressions(exp: Experiment) -> bool:
    """Whether an A/B test reads impression logs (:attr:`Experiment.online`); with a metric
    name that does not parse (reported with its own line), whether it has one ``log:``."""
    try:
        return exp.online
    except ConfigError:
        return exp.log is not None
