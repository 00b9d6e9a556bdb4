"""The main job: experiment config -> data -> per-query metrics -> comparisons -> readout.

:func:`run_experiment` computes everything a readout shows and returns a
:class:`~abrank.readout.Readout`; :func:`write_readout` writes it atomically, so a failed run
never leaves a half-written folder and never damages an earlier readout.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abrank._lazy import lazy_attribute
from abrank.config import Experiment, load_experiment
from abrank.design_registry import DESIGNS, run_design
from abrank.errors import ConfigError
from abrank.inputs import Inputs, display_path, resolve_inputs

if TYPE_CHECKING:
    from abrank.analysis.load import Progress
    from abrank.readout import Readout

#: Names this package offers from its modules, each imported on first use: a run on an
#: SQL engine reaches the engine's statements without the comparisons' stack, which then
#: imports while the engine works (:func:`abrank._lazy.import_in_background`).
_LAZY = {
    "compare_arms": "abrank.analysis.compare",
    "LoadedData": "abrank.analysis.load",
    "Progress": "abrank.analysis.load",
    "load_data": "abrank.analysis.load",
    "CURVE_POINTS": "abrank.analysis.score",
    "JUDGED_K": "abrank.analysis.score",
    "ScoredArms": "abrank.analysis.score",
    "score_arms": "abrank.analysis.score",
    "JUDGED_GAP_WARNING": "abrank.analysis.summarise",
    "build_readout": "abrank.analysis.summarise",
    "OUTPUT_FORMATS": "abrank.analysis.write",
    "READOUT_MARKER": "abrank.analysis.write",
    "check_output_folder": "abrank.analysis.write",
    "default_folder": "abrank.analysis.write",
    "readout_folder": "abrank.analysis.write",
    "write_readout": "abrank.analysis.write",
}

__all__ = ["display_path", "run_experiment", *_LAZY]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def run_experiment(
    config: str | Path | Experiment,
    *,
    seed: int | None = None,
    date: str | dt.date | None = None,
    progress: Progress | None = None,
    engine: Any = None,
    inputs: Inputs | None = None,
    explain: bool = True,
) -> Readout:
    """Load, score and compare the arms of one experiment; return its readout (nothing written).

    ``engine`` overrides the config's ``engine:``: a name (``memory``, ``duckdb``,
    ``spark``), a mapping of engine options, or a ``duckdb.DuckDBPyConnection`` or
    ``pyspark.sql.SparkSession`` to run on (used as it is, left open). ``duckdb`` and
    ``spark`` run offline experiments on judged metrics, online experiments on click
    metrics and interleaving experiments; an engine that
    cannot run the experiment is a ConfigError naming what each engine runs now.

    ``date`` (``YYYY-MM-DD``) runs a dated config for that date: its ``{date}`` paths read
    that date's files (every date of a cumulative ``window``), and the readout records the
    date in ``schedule``. A config whose paths hold ``{date}`` needs one.

    The files are resolved once (:func:`abrank.inputs.resolve_inputs`) and every loader
    reads them from there; ``inputs`` passes them in when the caller has resolved them
    already (for the experiment as dated here), e.g. to check that they exist.

    ``explain=False`` leaves out the explanation tables (``readout.queries`` and
    ``readout.rankings``, and so ``readout.query`` and ``readout.explain``), for a caller
    that reads only the summary: ``abrank run --format json`` makes none, as no output it
    writes holds them (about a third of the run at 100,000 queries x 100 results, and on
    an SQL engine no ranking rows fetched). The summary is the same either way.
    """
    experiment = config if isinstance(config, Experiment) else load_experiment(config)
    if date is not None:
        experiment = experiment.for_date(date)
    if seed is not None:
        if seed < 0:
            raise ConfigError(f"--seed: expected a non-negative integer, got {seed}")
        experiment = experiment.model_copy(
            update={"analysis": experiment.analysis.model_copy(update={"seed": seed})}
        )
    from abrank.analysis.engine import choose_engine

    choice = choose_engine(experiment, engine)
    if inputs is None:
        inputs = resolve_inputs(experiment)
    elif inputs.date != experiment.date:
        raise ValueError(
            f"inputs: expected the inputs of the run dated {experiment.date}, got those of "
            f"{inputs.date}"
        )
    say = _timed(progress)
    readout = run_design(DESIGNS.of(experiment), experiment, inputs, say, choice, explain=explain)
    return _completed(readout, choice.name, experiment)


def _completed(readout: Readout, engine: str, experiment: Experiment) -> Readout:
    """The readout with summary.json's ``engine``: the engine that ran (memory, duckdb or
    spark), whose numbers agree with the others' but whose cost and limits do not; and
    with metric roles its ``decision`` (:func:`abrank.decision.rule.decide`)."""
    import dataclasses

    from abrank.decision.rule import decide

    model = dataclasses.replace(readout.model, engine=engine)
    model = dataclasses.replace(model, decision=decide(model, experiment))
    out = dataclasses.replace(readout, summary=model.to_dict())
    vars(out)["model"] = model  # what the cached property would compute
    return out


def _timed(progress: Progress | None) -> Progress:
    """A progress callback that prefixes each message with the seconds since the start."""
    start = time.perf_counter()

    def say(message: str) -> None:
        if progress is not None:
            progress(f"[{time.perf_counter() - start:6.1f}s] {message}")

    return say
