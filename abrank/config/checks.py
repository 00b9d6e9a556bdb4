"""The checks across a config's keys, once the models have validated each key's value.

One named check per concern, run in a fixed order (the problems are then sorted by line;
problems on the same line keep this order): the experiment's name, the inputs (the one
log, the arms, the judgments, the segments' attributes), the metrics, the analysis, the
design's own keys (:meth:`abrank.designs.Design.check`: an interleaving test's, an A/B
test's online keys), the output folder and the window. The experiment's design
(:data:`abrank.designs.DESIGNS`) names its metrics and says what its arms' files hold. Each returns its part of the experiment resolved (canonical names,
absolute paths), and the whole is returned as one copy.
"""

from __future__ import annotations

from pathlib import Path

from abrank.config.analysis import checked_analysis
from abrank.config.arms import named_arms
from abrank.config.counterfactual import resolved_candidates
from abrank.config.decision import checked_roles
from abrank.config.experiment import Experiment
from abrank.config.explain import check_explain
from abrank.config.judgments import check_sources
from abrank.config.metrics import checked_metrics
from abrank.config.numeric import checked_numeric, role_entries
from abrank.config.offline import resolved_judgments
from abrank.config.online import resolved_log
from abrank.config.outputs import check_name, check_window, checked_output
from abrank.config.problems import Checks
from abrank.config.segments import resolved_segments
from abrank.design_registry import DESIGNS
from abrank.metrics.numeric import is_numeric_entry


def check_semantics(
    exp: Experiment, source: str, lines: dict, base_dir: Path, entries: dict | None = None
) -> tuple[Experiment, list[str]]:
    """Cross-field checks, arm names, metric names and roles (``entries``: the mappings of
    ``metrics`` by index, :func:`abrank.config.decision.split_metric_entries`) and file
    paths; returns a resolved copy and the problems found."""
    checks = Checks(source, lines, base_dir)
    check_name(checks, exp.name)
    design = DESIGNS.of(exp)
    numeric = checked_numeric(checks, entries or {}, design.name)
    exp = exp.model_copy(update={"numeric_metrics": numeric})

    own = {e.get("name") for e in (entries or {}).values() if is_numeric_entry(e)}

    def metric_name(name: str) -> str:  # a numeric metric's name is the config's own
        return name if name in own else design.metric_name(name)

    if not exp.treatments and getattr(design, "needs_treatment", True):
        checks.add(
            ("treatments",),
            "expected at least one treatment arm ({name, path}, or {name} beside a log:), got none",
        )
    log = resolved_log(checks, exp.log)
    _, arm_logs = design.arm_holds(exp)
    arms = named_arms(checks, exp.arms, one_log=log is not None, optional_paths=not arm_logs)
    judgments = resolved_judgments(checks, exp.judgments)
    check_sources(
        checks,
        exp.judgments,
        judgments_estimate=exp.analysis.judgments_estimate,
        machine_labels=getattr(design, "machine_labels", False),
    )
    candidates = resolved_candidates(checks, exp.candidates)
    segments = resolved_segments(checks, exp.segments)
    metrics, primary = checked_metrics(checks, exp.metrics, exp.primary_metric, metric_name)
    named = len(metrics) == len(exp.metrics)  # else a name failed: its problem is reported
    roles, decision = checked_roles(
        checks, role_entries(entries or {}) if named else {}, metrics, exp.decision, metric_name
    )
    if roles and exp.primary_metric is None:  # the first success metric leads the readout
        primary = next((m for m, r in roles.items() if r.role == "success"), primary)
    analysis = checked_analysis(checks, exp.analysis, design.statistics)
    analysis = design.check(checks, exp, analysis)
    output = checked_output(checks, exp.output)
    check_explain(checks, exp.explain, [m for m in metrics if m not in own] if named else [])
    logs = [exp.log.path] if exp.log is not None else [arm.path for arm in exp.arms]
    check_window(checks, exp.window, logs)
    resolved = exp.model_copy(
        update={
            "control": arms[0],
            "treatments": arms[1:],
            "judgments": judgments,
            "candidates": candidates,
            "log": log,
            "segments": segments,
            "metrics": metrics,
            "primary_metric": primary,
            "metric_roles": roles,
            "decision": decision,
            "analysis": analysis,
            "output": output,
        }
    )
    return resolved, checks.problems
