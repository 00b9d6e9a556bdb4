"""What a design added from outside abrank inherits: the defaults of a design over one log
clustered on ``analysis.unit`` (the online design's statistics), selected by its name."""

from __future__ import annotations

from typing import Any

from abrank.errors import ConfigError


class DesignBase:
    """A design selected by ``analysis.design: <name>``, whose metrics are compared on
    per-unit sums (:mod:`abrank.stats.clustered`) and whose readout has the online
    design's report sections. Subclasses set ``name`` and ``engines`` and define
    :meth:`run`; every other hook has a default that they may override."""

    #: the design's name: ``analysis.design``'s value, summary.json's ``design``
    name: str = ""
    #: the tests it uses (:mod:`abrank.stats.registry`), which ``analysis.tests`` name
    statistics: str = "independent"
    #: its runs read big logs (the CLI tunes the allocator for their temporaries)
    large_logs: bool = True
    #: the engines that run it
    engines: tuple[str, ...] = ("memory",)
    #: whether a config needs a treatment besides the control (one that reads the
    #: control's logs alone, such as the counterfactual design, does not)
    needs_treatment: bool = True

    def claims(self, experiment: Any) -> bool:
        """Configs with ``analysis.design: <name>``."""
        return bool(experiment.analysis.design == self.name)

    def reads(self, summary: Any) -> bool:
        """Readouts whose summary.json says ``design: <name>``."""
        return bool(getattr(summary, "design", None) == self.name)

    def metric_name(self, name: str) -> str:
        """Metric names as given (e.g. a log column's)."""
        return name

    def metric_label(self, experiment: Any, name: str) -> str:
        """A metric's name in a report's prose: as given."""
        return name

    def check(self, checks: Any, experiment: Any, analysis: Any) -> Any:
        """A unit to cluster on and one ``log:`` with every arm, or a log per arm."""
        if analysis.unit is None:
            checks.add(
                ("analysis", "unit"), "expected the unit to cluster on (e.g. user_id), got none"
            )
        return analysis

    def arm_holds(self, experiment: Any) -> tuple[str, bool]:
        """An arm's files are its log, a table (every date of a window; globs and folders)."""
        return "table", True

    def check_engine(self, experiment: Any, engine: str) -> None:
        """A ConfigError unless ``engine`` is one of :attr:`engines`."""
        if engine not in self.engines:
            raise ConfigError(
                f"engine: {engine}: expected one of the engines that run the {self.name} "
                f"design ({', '.join(self.engines)}), got {engine}"
            )

    def run(self, experiment: Any, inputs: Any, say: Any, engine: Any) -> Any:
        """The experiment's readout; every design defines its own."""
        raise NotImplementedError(f"the {self.name} design does not define run()")

    def validate(self, experiment: Any, inputs: Any, engine: Any) -> dict[str, Any]:
        """What ``abrank validate`` reports of the inputs: the arms (by default, each
        arm's name only, once every input file is found)."""
        from abrank.analysis.validate import ArmInputs
        from abrank.errors import DataError

        for key, path in inputs.missing():
            raise DataError(f"{path}: {key}: expected an input file, got no such file")
        return {"arms": tuple(ArmInputs(str(arm.name)) for arm in experiment.arms)}

    def report(self) -> Any:
        """The per-unit distribution of the primary metric, and the online design's per-arm
        diagnostics: units and rows, the sample-ratio check, units in several arms."""
        from abrank.designs.online.sections import online_facts, online_table, units_section
        from abrank.render.sections import KindSections

        return KindSections(units_section, online_table, online_facts)
