"""The interleaving design: one log of interleaved lists, credited to the arms.

Each impression shows one list interleaved from both arms' rankings; its clicks are
credited to the arm that contributed each result, and the arms are compared on the
per-unit wins and losses by the preference test (DESIGN.md "Interleaving").
"""

from __future__ import annotations

from typing import Any

from abrank.config import Experiment


class InterleavedDesign:
    """Interleaving tests: ``analysis.design: interleaved``."""

    name = "interleaved"
    large_logs = False
    statistics = "interleaved"

    def claims(self, experiment: Experiment) -> bool:
        """Configs with ``analysis.design: interleaved``."""
        return bool(experiment.analysis.design == self.name)

    def reads(self, summary: Any) -> bool:
        """Readouts of the interleaved design."""
        return getattr(summary, "design", None) == self.name

    def metric_name(self, name: str) -> str:
        """A credit's canonical name (``wins``, ``wins_clicks``, ...)."""
        from abrank.config.interleaved import credit_name, credit_problem
        from abrank.errors import ConfigError

        credit = credit_name(name)
        if credit is None:
            raise ConfigError(credit_problem(name))
        return credit

    def metric_label(self, experiment: Experiment, name: str) -> str:
        """The credit's words, with the dwell of a satisfied click where it counts one."""
        from abrank.config.interleaved import credit_label

        return credit_label(name, experiment.analysis.sat_dwell)

    def check(self, checks: Any, experiment: Experiment, analysis: Any) -> Any:
        """One interleaved log, a unit, and none of the keys only A/B tests read."""
        from abrank.config.interleaved import interleaved_problems

        for loc, message in interleaved_problems(experiment):
            checks.add(loc, message)
        return analysis

    def arm_holds(self, experiment: Experiment) -> tuple[str, bool]:
        """An arm's file (when given) is the rankings its lists were interleaved from,
        read on the run date like the judgments."""
        return "rankings", False

    def check_engine(self, experiment: Experiment, engine: str) -> None:
        """Every engine runs interleaving experiments."""
        from abrank.engines import check_supported

        check_supported(engine, "interleaved")

    def run(
        self, experiment: Experiment, inputs: Any, say: Any, engine: Any, *, explain: bool = True
    ) -> Any:
        """The interleaved log, per-unit credits (from the chosen engine), the preference
        test, the readout with its explanation tables when ``explain``
        (:mod:`abrank.designs.interleaved.explain`)."""
        from abrank.designs.interleaved.explain import with_explanation
        from abrank.designs.interleaved.outcomes import (
            compare_interleaved_arms,
            load_interleaved,
            score_interleaved,
        )
        from abrank.designs.interleaved.sql import score_interleaved_sql
        from abrank.designs.interleaved.summary import build_interleaved_readout
        from abrank.designs.online.explain import from_log_in_memory, log_rows

        if engine.name == "memory":
            data = load_interleaved(experiment, say, inputs=inputs)
            say("crediting clicks to teams")
            scores = score_interleaved(experiment, data)
        else:
            data, scores = score_interleaved_sql(experiment, engine, say, inputs=inputs)
        say("comparing the preference on per-unit sums")
        comparisons, too_small = compare_interleaved_arms(experiment, scores)
        say("summarising")
        readout = build_interleaved_readout(experiment, data, scores, comparisons, too_small)
        if not explain:
            return readout
        if engine.name != "memory":

            def build() -> Any:
                held = load_interleaved(experiment, inputs=inputs)
                return with_explanation(
                    readout, experiment, held, score_interleaved(experiment, held), say
                )

            return from_log_in_memory(readout, log_rows(data.inputs), say, build)
        return with_explanation(readout, experiment, data, scores, say)

    def validate(self, experiment: Experiment, inputs: Any, engine: Any) -> dict[str, Any]:
        """The log's impressions and units, and the impressions each team contributed
        results to (read by the chosen engine: on an SQL engine, from the per-unit counts
        it returns)."""
        from abrank.analysis.validate import ArmInputs
        from abrank.designs.interleaved.outcomes import load_interleaved
        from abrank.designs.interleaved.sql import score_interleaved_sql

        unit = experiment.analysis.unit
        if engine.name != "memory":
            _, scores = score_interleaved_sql(experiment, engine, _quiet, inputs=inputs)
            impressions, units = scores.impressions, scores.units
            per_team = {arm: n for arm, (n, _) in scores.per_arm.items()}
        else:
            log = load_interleaved(experiment, inputs=inputs).log
            impressions, units = log["impression_id"].nunique(), log[unit].nunique()
            counted = log.groupby("team", observed=True)["impression_id"].nunique()
            per_team = {str(team): int(n) for team, n in counted.items()}
        teams = [str(arm.name) for arm in experiment.arms]  # resolved names, control first
        arms = tuple(ArmInputs(team, impressions=int(per_team.get(team, 0))) for team in teams)
        return {"arms": arms, "unit": unit, "impressions": int(impressions), "units": int(units)}

    def report(self) -> Any:
        """Outcomes per impression, the preference per unit, the interleaving checks."""
        from abrank.designs.interleaved.sections import (
            interleaving_facts,
            interleaving_table,
            preference_section,
        )
        from abrank.render.sections import KindSections

        return KindSections(preference_section, interleaving_table, interleaving_facts)


def _quiet(message: str) -> None:
    """Progress messages are not shown while validating."""


DESIGN = InterleavedDesign()

__all__ = ["DESIGN", "InterleavedDesign"]
