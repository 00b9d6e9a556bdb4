"""validate_experiment: open and check every input of an experiment, computing nothing.

What ``abrank validate`` runs. The inputs are opened as :func:`abrank.run_experiment`
opens them on the same engine (the config's, or ``engine``): the same loaders on the
memory engine, the same statements on DuckDB and Spark, where the files are counted where
they lie. Bad input raises the error a run would raise (a ConfigError or DataError, which
the command reports with exit 2); a good experiment gives a :class:`ValidationResult`
saying what its inputs hold.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abrank.analysis.engine import choose_engine
from abrank.config import Experiment, load_experiment
from abrank.design_registry import DESIGNS
from abrank.inputs import missing_input_error, resolve_inputs

#: what is found for a dated config validated without a date (only the config is checked)
DATED_WITHOUT_DATE = "dated config (give --date to check its files)"


@dataclass(frozen=True)
class ArmInputs:
    """What one arm's inputs hold.

    ``queries``: the distinct queries of its rankings (offline). ``impressions``: its
    impressions (online), or the impressions its team contributed results to
    (interleaved). ``units``: the distinct values of ``analysis.unit`` in its log (online).
    A count that does not apply to the experiment's kind is None.
    """

    name: str
    queries: int | None = None
    impressions: int | None = None
    units: int | None = None


@dataclass(frozen=True)
class ValidationResult:
    """The outcome of :func:`validate_experiment` for a good experiment.

    ``config`` is the config file as the user named it, ``experiment`` the experiment's
    name, ``kind`` its design's name (``offline``, ``online``, ``interleaved``, or one
    added with :func:`abrank.designs.register`); ``checked`` is False for a
    dated config validated without a date (its files are not opened: ``engine`` and the
    counts are then None / empty). ``judged_queries`` (offline), ``unit`` and
    ``mixed_units`` (online: units seen in more than one arm), ``impressions`` and
    ``units`` (interleaved: the whole log's) are None where they do not apply.
    """

    config: str
    experiment: str
    kind: str
    metrics: tuple[str, ...]
    checked: bool = True
    engine: str | None = None
    date: str | None = None
    arms: tuple[ArmInputs, ...] = ()
    judged_queries: int | None = None
    unit: str | None = None
    mixed_units: int | None = None
    impressions: int | None = None
    units: int | None = None

    @property
    def found(self) -> str:
        """What the inputs hold, in words (the part of ``abrank validate``'s line after
        the experiment's name)."""
        if not self.checked:
            return DATED_WITHOUT_DATE
        metrics = ", ".join(self.metrics)
        if self.kind == "offline":
            arms = ", ".join(f"{arm.name} ({arm.queries:,} queries)" for arm in self.arms)
            return f"{arms}; {self.judged_queries:,} judged queries; metrics {metrics}"
        if self.impressions is None:  # per-arm logs (online, counterfactual): no whole log
            arms = ", ".join(
                f"{arm.name} ({arm.impressions:,} impressions, {arm.units:,} {self.unit} values)"
                for arm in self.arms
            )
            mixed = self.mixed_units or 0
            more = f"; {mixed:,} {self.unit} values in more than one arm" if mixed else ""
            return f"{arms}{more}; metrics {metrics}"
        teams = ", ".join(f"{arm.name} ({arm.impressions:,} impressions)" for arm in self.arms)
        return (
            f"interleaved log of {self.impressions:,} impressions, {self.units:,} {self.unit} "
            f"values; teams {teams}; credits {metrics}"
        )

    def line(self, config: str | Path | None = None) -> str:
        """The line ``abrank validate`` prints: ``CONFIG: ok: NAME: what was found``
        (``config``: the config as the command was given it; default :attr:`config`)."""
        return f"{self.config if config is None else config}: ok: {self.experiment}: {self.found}"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-safe builtins (``found`` included)."""
        out = dataclasses.asdict(self)
        out["metrics"] = list(self.metrics)
        out["arms"] = [dataclasses.asdict(arm) for arm in self.arms]
        out["found"] = self.found
        return out


def validate_experiment(
    config: str | Path | Experiment,
    *,
    engine: Any = None,
    date: str | dt.date | None = None,
) -> ValidationResult:
    """Open and check every input of one experiment as a run would, computing nothing.

    ``config``: a config path or an :class:`~abrank.config.Experiment`. ``engine``
    overrides the config's, as in :func:`abrank.run_experiment`. ``date`` checks a dated
    config's files of that date (a DataError when one is not there yet); without it a
    dated config is checked as a config only (``checked`` False). Raises the ConfigError
    or DataError that a run of the same inputs raises.
    """
    experiment = config if isinstance(config, Experiment) else load_experiment(config)
    design = DESIGNS.of(experiment)
    kind = design.name
    metrics = tuple(experiment.metrics)
    inputs = None
    if date is not None:
        experiment = experiment.for_date(date)
        inputs = resolve_inputs(experiment)  # once, for this check and the design's loaders
        missing = inputs.missing()
        if missing:
            assert experiment.date is not None  # set by for_date
            raise missing_input_error(*missing[0], experiment.date.isoformat())
    elif experiment.dated:
        return ValidationResult(experiment.source, experiment.name, kind, metrics, checked=False)
    choice = choose_engine(experiment, engine)
    if inputs is None:
        inputs = resolve_inputs(experiment)
    return ValidationResult(
        config=experiment.source,
        experiment=experiment.name,
        kind=kind,
        metrics=metrics,
        engine=choice.name,
        date=None if experiment.date is None else experiment.date.isoformat(),
        **design.validate(experiment, inputs, choice),
    )
