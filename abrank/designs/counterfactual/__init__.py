"""The counterfactual design: predict the online click metrics of rankings never shown.

``analysis.design: counterfactual`` reads the click logs of the rankers that were shown
(the control and the treatments, as an online test's logs), estimates the examination of
each rank from them by intervention harvesting (or takes it from the config or a
``propensity`` column), and predicts each candidate's click metrics under the
position-based model, with IPS and SNIPS estimators clustered on ``analysis.unit``
(DESIGN.md "Counterfactual evaluation"). Each candidate is compared with the logging arm
(``control``) on the same units by the one comparison loop, so the comparison records,
decisions and history are those of every design.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from abrank.config import Experiment
from abrank.designs.base import DesignBase
from abrank.errors import ConfigError

#: the click metrics the position-based model predicts
FAMILIES: tuple[str, ...] = ("click_rr", "ctr", "clicks")


class CounterfactualDesign(DesignBase):
    """Candidates' click metrics predicted from the logs of the rankers that were shown."""

    name = "counterfactual"
    selected_by_name = True
    statistics = "paired"
    large_logs = True
    engines: tuple[str, ...] = ("memory", "duckdb", "spark")
    #: the control's logs alone will do when its lists vary (or propensities are given)
    needs_treatment = False

    def metric_name(self, name: str) -> str:
        """A click metric's canonical name (:func:`abrank.metrics.parse_metric`)."""
        from abrank.metrics import parse_metric

        return parse_metric(name).name

    def metric_label(self, experiment: Any, name: str) -> str:
        from abrank.metrics import parse_metric

        return parse_metric(name).label

    def check(self, checks: Any, experiment: Experiment, analysis: Any) -> Any:
        """A unit, candidates, click metrics of the PBM with a cut-off, valid propensities;
        no segments, covariates or judgments (not supported by this design); the t-test
        alone unless ``analysis.tests`` says otherwise."""
        from abrank.config.counterfactual import propensity_problems
        from abrank.metrics import parse_metric

        if analysis.unit is None:
            checks.add(
                ("analysis", "unit"),
                "expected the unit the logs cluster on (e.g. user_id), got none",
            )
        if not experiment.candidates:
            checks.add(
                ("candidates",),
                "expected at least one candidate ranking ({name, path}) to predict, got none",
            )
        for index, name in enumerate(experiment.metrics):
            try:
                metric = parse_metric(name)
            except ConfigError:
                continue  # the metric checks name it
            if metric.family not in FAMILIES or metric.k is None:
                checks.add(
                    ("metrics", index),
                    f"expected a click metric the position-based model predicts "
                    f"({', '.join(f + '@k' for f in FAMILIES)}), got {name!r}",
                )
        for loc, message in propensity_problems(experiment.propensities):
            checks.add(loc, message)
        written = experiment.analysis.model_fields_set  # the keys the config wrote
        if "tests" not in written and not analysis.sequential:
            # the units' linearised values make the t-test the delta method's; resampling
            # them re-estimates neither the attractiveness nor the propensities, so the
            # permutation and bootstrap add cost (a lot over many units), not evidence
            analysis = analysis.model_copy(update={"tests": ["t"]})
        not_read = {
            ("segments", "columns"): bool(experiment.segments.columns),
            ("analysis", "covariates"): analysis.covariates is not None,
            ("judgments",): experiment.judgments is not None,
        }
        for loc, given in not_read.items():
            if given:
                checks.add(loc, "expected nothing for the counterfactual design, got a value")
        return analysis

    def arm_holds(self, experiment: Any) -> tuple[str, bool]:
        return "impressions", True

    def run(
        self, experiment: Experiment, inputs: Any, say: Any, engine: Any, *, explain: bool = True
    ) -> Any:
        """Logs -> propensities -> per-unit sums of every candidate and the logging arm ->
        paired comparisons -> the readout with the design's diagnostics (it has no
        explanation tables, so ``explain`` changes nothing)."""
        from abrank.analysis.comparisons import compare_all
        from abrank.designs.counterfactual.pipeline import counterfactual_inputs, diagnostics_of
        from abrank.designs.counterfactual.readout import build_counterfactual_readout
        from abrank.designs.counterfactual.samples import CounterfactualSamples

        prepared = counterfactual_inputs(experiment, inputs, say, engine)
        say("comparing candidates with the logging arm on per-unit sums")
        comparisons, too_small = compare_all(
            prepared.scored, CounterfactualSamples(prepared.scored, prepared.evidence)
        )
        say("summarising")
        return build_counterfactual_readout(
            prepared.scored,
            experiment,
            prepared.evidence,
            comparisons,
            too_small,
            diagnostics_of(experiment, prepared),
            prepared.per_query,
        )

    def validate(self, experiment: Experiment, inputs: Any, engine: Any) -> dict[str, Any]:
        """The logged arms' impressions and units, once the logs and candidates are read."""
        from abrank.analysis.validate import ArmInputs
        from abrank.designs.counterfactual.pipeline import read_candidate, read_logs

        data, logs = read_logs(experiment, inputs, lambda message: None, engine)
        for index in range(len(experiment.candidates)):
            read_candidate(experiment, index, inputs)
        arms = []
        for index, name in enumerate(logs.arms):
            mine = logs.arm_of_impression == index
            units = np.unique(logs.rows.unit[mine[logs.rows.impression]]).size
            arms.append(ArmInputs(name, impressions=int(mine.sum()), units=int(units)))
        return {
            "arms": tuple(arms),
            "unit": experiment.analysis.unit,
            "mixed_units": int(data.mixed.count),
        }

    def report(self) -> Any:
        """The propensities (table and chart), the candidates' diagnostics."""
        from abrank.designs.counterfactual.sections import (
            counterfactual_facts,
            counterfactual_section,
            counterfactual_table,
        )
        from abrank.render.sections import KindSections

        return KindSections(counterfactual_section, counterfactual_table, counterfactual_facts)


DESIGN = CounterfactualDesign()

__all__ = ["DESIGN", "CounterfactualDesign"]
