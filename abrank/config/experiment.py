"""The :class:`Experiment`: a validated config, and what follows from it.

Its keys are listed in the order a config writes them; each section is the model of its
concern (arms, offline judgments, online logs, analysis, segments, outputs, simulation,
engine). Its properties say what the rest of abrank asks of a config: the arms in order,
the input paths, whether the run needs a date and which dates it reads, and the kind of
experiment (online A/B, interleaving, or offline rankings).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field, model_validator

from abrank.config.analysis import AnalysisConfig
from abrank.config.arms import ArmConfig, with_arm_names
from abrank.config.counterfactual import CandidateConfig, Propensities
from abrank.config.dates import date_range, is_dated, parse_date
from abrank.config.decision import DecisionConfig, MetricRole
from abrank.config.engine import Engine, EngineConfig
from abrank.config.explain import ExplainConfig
from abrank.config.judgments import human_source, machine_source, source_keys
from abrank.config.keys import Slug, Strict
from abrank.config.offline import Duplicates, Gain, Judgments, JudgmentsConfig, NoRelevant
from abrank.config.online import LogConfig
from abrank.config.outputs import CumulativeWindow
from abrank.config.segments import SegmentsConfig
from abrank.config.simulation import SimulationConfig
from abrank.errors import ConfigError
from abrank.metrics.numeric import NumericMetric
from abrank.stats.registry import INTERLEAVED

#: Fields that abrank sets on a validated experiment, never a config.
SOURCE_FIELDS = {"source", "text", "date", "metric_roles", "numeric_metrics"}


class Experiment(Strict):
    """A validated experiment. Paths are absolute (resolved against the config's folder)."""

    name: Slug
    title: str | None = None
    description: str = ""
    owner: str | None = None
    control: ArmConfig
    #: at least one, unless the design reads the control's logs alone (the design checks)
    treatments: list[ArmConfig] = Field(default_factory=list)
    log: LogConfig | None = None
    #: one source (human labels) or a list of sources with kinds (abrank.config.judgments)
    judgments: Judgments | None = None
    metrics: list[str] = Field(min_length=1)
    primary_metric: str | None = None
    #: the decision rule over the metrics' roles (abrank.config.decision); None: no decision
    decision: DecisionConfig | None = None
    relevance_threshold: float = 1.0
    no_relevant: NoRelevant = "drop"
    gain: Gain = "linear"
    depth: int | None = Field(default=1000, ge=1)
    duplicates: Duplicates = "error"
    #: which arms are compared: each treatment against the control, or every pair of arms
    comparisons: Literal["control", "all-pairs"] = "control"
    analysis: AnalysisConfig = AnalysisConfig()
    segments: SegmentsConfig = SegmentsConfig()
    #: how deep the explanation tables keep the lists (abrank.config.explain)
    explain: ExplainConfig = ExplainConfig()
    output: str | None = None
    #: which dates a dated run reads: its own (daily), or every date from a start date
    window: Literal["daily"] | CumulativeWindow = "daily"
    simulation: SimulationConfig | None = None  # `abrank simulate` (abrank.config.simulation)
    #: rankings never shown, whose click metrics a counterfactual design predicts from the
    #: logs (abrank.config.counterfactual); empty for every other design
    candidates: list[CandidateConfig] = []
    #: examination by rank: harvested from the logs, the log's propensity column, or given
    propensities: Propensities = "harvest"
    #: where the logs become aggregates: memory (default), duckdb or spark, with options
    engine: Engine = EngineConfig()

    source: str = ""  # the config file, as the user named it
    text: str = ""  # the config as written
    #: the date of this run (set by :meth:`for_date`; None for an undated run)
    date: dt.date | None = None
    #: each metric's role by canonical name (set from ``metrics`` mappings; empty: no roles)
    metric_roles: dict[str, MetricRole] = {}
    #: the numeric metrics of log columns by name (set from ``metrics`` mappings with a
    #: ``stat`` or ``column``, abrank.config.numeric; empty: none)
    numeric_metrics: dict[str, NumericMetric] = {}

    @model_validator(mode="before")
    @classmethod
    def _name_arms(cls, data: Any) -> Any:
        """Every arm named and labelled (defaults filled in) before the arms are validated."""
        return with_arm_names(data)

    @property
    def arms(self) -> list[ArmConfig]:
        """Control first, then the treatments, each with its name and label."""
        return [self.control, *self.treatments]

    @property
    def human_judgments(self) -> JudgmentsConfig | None:
        """The human labels: ``judgments`` itself, or its list's source of kind human."""
        return human_source(self.judgments)

    @property
    def machine_judgments(self) -> JudgmentsConfig | None:
        """The machine labels: the ``judgments`` list's source of kind machine, or None."""
        return machine_source(self.judgments)

    @property
    def display_title(self) -> str:
        return self.title or self.name

    @property
    def dated(self) -> bool:
        """Some input path holds ``{date}``: every run needs a date."""
        return any(is_dated(path) for _, path in self.input_paths())

    @property
    def window_start(self) -> dt.date | None:
        """The first date of a cumulative window (None for daily readouts)."""
        return self.window.cumulative if isinstance(self.window, CumulativeWindow) else None

    @property
    def window_dates(self) -> list[dt.date]:
        """The dates whose logs this run reads: its date, or the cumulative window's."""
        if self.date is None:
            return []
        start = self.window_start
        return [self.date] if start is None else date_range(start, self.date, "window")

    def input_paths(self) -> list[tuple[str, str]]:
        """(config key, path) of every input file, as configured (templates unfilled)."""
        found = [("log.path", self.log.path)] if self.log is not None else []
        for index, arm in enumerate(self.arms):
            key = "control.path" if index == 0 else f"treatments[{index - 1}].path"
            if arm.path is not None:
                found.append((key, arm.path))
        found += [(key, source.path) for key, source in source_keys(self.judgments)]
        if self.segments.attributes is not None:
            found.append(("segments.attributes.path", self.segments.attributes.path))
        if self.analysis.covariates is not None:
            found.append(("analysis.covariates.path", self.analysis.covariates.path))
        for index, candidate in enumerate(self.candidates):
            found.append((f"candidates[{index}].path", candidate.path))
        return found

    def for_date(self, date: dt.date | str | None) -> Experiment:
        """This experiment run for ``date`` (its ``{date}`` paths read that date's files)."""
        if date is None:
            return self.model_copy(update={"date": None})
        day = parse_date(date, "--date")
        start = self.window_start
        if start is not None and day < start:
            raise ConfigError(
                f"{self.source}: window: expected --date on or after the cumulative window's "
                f"start {start}, got {day}"
            )
        return self.model_copy(update={"date": day})

    @property
    def ranking_metrics(self) -> list[str]:
        """The metrics whose names the parser of metric names knows: every metric but the
        numeric ones of log columns (:attr:`numeric_metrics`)."""
        return [m for m in self.metrics if m not in self.numeric_metrics]

    @property
    def interleaved(self) -> bool:
        """An interleaving test: one log of interleaved lists, credits as metrics."""
        return self.analysis.design == INTERLEAVED

    @property
    def online(self) -> bool:
        """The logs are impression logs of an A/B test (one ``log:``, or click metrics to
        compute); an interleaved log is not (:attr:`interleaved`)."""
        from abrank.metrics import parse_metric

        if self.interleaved:
            return False
        return self.log is not None or any(parse_metric(m).is_click for m in self.ranking_metrics)
