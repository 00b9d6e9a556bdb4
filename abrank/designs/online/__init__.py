"""The online design: an A/B test read from impression logs, clustered on its unit.

Units (``analysis.unit``) are randomized to arms; each arm's impressions are scored (click
metrics, and judged metrics with judgments) and summed per unit, and the arms are compared
on those sums by the delta method with unit-level resampling (DESIGN.md "Online logs",
"Clustered inference"), with the sample-ratio check beside them.
"""

from __future__ import annotations

from typing import Any

from abrank.config import Experiment
from abrank.errors import ConfigError


class OnlineDesign:
    """Online A/B tests: one ``log:`` or click metrics to compute."""

    name = "online"
    large_logs = True
    statistics = "independent"

    def claims(self, experiment: Experiment) -> bool:
        """An A/B config with one ``log:`` or a click metric (one whose metric names do
        not all parse: one with a ``log:``)."""
        try:
            return experiment.online
        except ConfigError:
            return experiment.log is not None

    def reads(self, summary: Any) -> bool:
        """Readouts clustered on a unit."""
        return getattr(summary, "unit", None) is not None and summary.design != "interleaved"

    def metric_name(self, name: str) -> str:
        """A metric's canonical name (:func:`abrank.metrics.parse_metric`)."""
        from abrank.metrics import parse_metric

        return parse_metric(name).name

    def metric_label(self, experiment: Experiment, name: str) -> str:
        """The metric's label (``CTR@3``; a numeric metric's name as the config gives it)."""
        from abrank.metrics import parse_metric

        numeric = experiment.numeric_metrics.get(name)
        return numeric.label if numeric is not None else parse_metric(name).label

    def check(self, checks: Any, experiment: Experiment, analysis: Any) -> Any:
        """The online keys: a unit, the independent design, a split over the arms,
        covariates with a unit."""
        from abrank.config.online import checked_online
        from abrank.errors import ConfigError
        from abrank.metrics import FAMILIES, parse_metric

        for index, name in enumerate(experiment.metrics):
            if name in experiment.numeric_metrics:
                continue
            try:
                family = parse_metric(name).family
            except ConfigError:  # a name no family has: the metric checks name it
                continue
            if FAMILIES[family].geometric:
                checks.add(
                    ("metrics", index),
                    f"expected a metric an online log can average over impressions, got "
                    f"{name}, a geometric mean over queries (offline replays only; map "
                    "is its arithmetic twin)",
                )
        return checked_online(
            checks,
            analysis,
            design=analysis.design,
            online=True,
            arms=[str(arm.name) for arm in experiment.arms],
        )

    def arm_holds(self, experiment: Experiment) -> tuple[str, bool]:
        """An arm's files are its impressions, read for every date of a window."""
        return "impressions", True

    def check_engine(self, experiment: Experiment, engine: str) -> None:
        """Every engine runs click metrics; judged metrics on a log run in memory."""
        from abrank.engines import check_supported
        from abrank.metrics import parse_metric

        judged = any(not parse_metric(m).is_click for m in experiment.ranking_metrics)
        check_supported(engine, "online-judged" if engine != "memory" and judged else "online")

    def run(
        self, experiment: Experiment, inputs: Any, say: Any, engine: Any, *, explain: bool = True
    ) -> Any:
        """Impression logs, per-unit sums (from the chosen engine), clustered comparisons,
        the sample-ratio check, the readout with its explanation tables when ``explain``
        (:mod:`abrank.designs.online.explain`)."""
        from abrank.designs.online.logs import load_online, online_evidence, score_online

        if engine.name == "memory":
            data = load_online(experiment, say, inputs=inputs)
            say("scoring impressions")
            scores = score_online(experiment, data)
        else:  # what follows the engine's work imports while it works
            from abrank.designs.online.sql import score_online_sql

            data, scores = score_online_sql(experiment, engine, say, inputs=inputs)
        from abrank.analysis.unit_readout import build_unit_readout
        from abrank.analysis.units import sample_ratio
        from abrank.designs.online.compare import compare_online
        from abrank.designs.online.explain import from_log_in_memory, log_rows, with_explanation
        from abrank.designs.online.numeric import memory_columns, sql_columns, with_numeric
        from abrank.designs.online.numeric_sketch import with_sketches

        evidence = online_evidence(experiment, data, scores)
        if experiment.numeric_metrics:
            say(f"reading the numeric metrics' log columns on {engine.name}")
            if engine.name == "memory":
                arms = memory_columns(experiment, data, evidence)
            else:
                arms = sql_columns(experiment, engine, inputs, evidence)
            evidence = with_numeric(experiment, evidence, arms)
            if engine.name != "memory":
                dropped = data.mixed.units if data.dropped_units else ()
                evidence = with_sketches(experiment, engine, inputs, evidence, tuple(dropped))
        say("comparing arms on per-unit sums")
        comparisons, too_small = compare_online(experiment, data, evidence)
        say("summarising")
        srm = sample_ratio(experiment, evidence)
        data.fingerprinted()  # the inputs' sha256, filled in place
        readout = build_unit_readout(experiment, evidence, comparisons, too_small, srm)
        if not explain:
            return readout
        if engine.name != "memory":

            def build() -> Any:
                held = load_online(experiment, inputs=inputs)
                return with_explanation(
                    readout, experiment, held, score_online(experiment, held), say
                )

            return from_log_in_memory(readout, log_rows(data.inputs), say, build)
        return with_explanation(readout, experiment, data, scores, say)

    def validate(self, experiment: Experiment, inputs: Any, engine: Any) -> dict[str, Any]:
        """Impressions and units per arm (read by the chosen engine: on an SQL engine, from
        the per-unit sums it returns) and the units seen in more than one arm; the numeric
        metrics' columns checked (present, numbers, one value per impression)."""
        from abrank.analysis.validate import ArmInputs
        from abrank.designs.online.logs import load_online
        from abrank.designs.online.numeric import check_columns
        from abrank.designs.online.sql import score_online_sql

        unit = experiment.analysis.unit
        if engine.name != "memory":
            data, scores = score_online_sql(experiment, engine, _quiet, inputs=inputs)
            counts = {name: (scores.impressions[name], scores.units[name]) for name in scores.sums}
        else:
            data = load_online(experiment, inputs=inputs)
            counts = {
                name: (frame["impression_id"].nunique(), frame[unit].nunique())
                for name, frame in data.impressions.items()
            }
        check_columns(experiment, data, engine, inputs)
        arms = tuple(
            ArmInputs(name, impressions=int(impressions), units=int(units))
            for name, (impressions, units) in counts.items()
        )
        return {"arms": arms, "unit": unit, "mixed_units": int(data.mixed.count)}

    def report(self) -> Any:
        """Click-through rate by position, units and impressions per arm."""
        from abrank.designs.online.sections import clicks_section, online_facts, online_table
        from abrank.render.sections import KindSections

        return KindSections(clicks_section, online_table, online_facts)


def _quiet(message: str) -> None:
    """Progress messages are not shown while validating."""


DESIGN = OnlineDesign()

__all__ = ["DESIGN", "OnlineDesign"]
