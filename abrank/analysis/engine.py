"""Which engine runs an experiment, and how an SQL engine reads a log's files.

:func:`choose_engine` reads the choice (``run_experiment(engine=...)``, ``--engine``, or the
config's ``engine:``) and refuses what the engine cannot run yet (the experiment's design
says which engines run it), naming what each engine runs. :func:`sql_log_files` lists a
log path's files and their format for an SQL engine, :func:`log_sources` an experiment's
logs as the engines read them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from abrank.config import Experiment
from abrank.config.engine import ENGINE_NAMES, EngineConfig, is_pattern
from abrank.design_registry import DESIGNS
from abrank.errors import ConfigError
from abrank.inputs import LOG_KEYS, InputFiles, Inputs, arm_key, display_path

__all__ = ["EngineChoice", "choose_engine", "log_sources", "sql_log_files"]


@dataclasses.dataclass(frozen=True)
class EngineChoice:
    """An engine by name, its options, and the caller's DuckDB connection or SparkSession
    when one was given (used as it is, left open)."""

    name: str
    options: dict[str, Any]
    connection: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: name, options, whether a connection was passed in."""
        return {
            "name": self.name,
            "options": dict(self.options),
            "connection": self.connection is not None,  # or session
        }


def choose_engine(experiment: Experiment, engine: Any = None) -> EngineChoice:
    """The engine of this run: ``engine`` (a name, a mapping of the config's shape, an
    :class:`~abrank.config.engine.EngineConfig`, a DuckDB connection or a SparkSession) or else the
    config's; a ConfigError for an unknown engine or one that cannot run this experiment."""
    connection = None
    if engine is None:
        config = experiment.engine
    elif _is_duckdb_connection(engine):
        config, connection = EngineConfig(name="duckdb"), engine
    elif _is_spark_session(engine):
        config, connection = EngineConfig(name="spark"), engine
    elif isinstance(engine, EngineConfig):
        config = engine
    elif isinstance(engine, (str, Mapping)):
        given = {"name": engine} if isinstance(engine, str) else dict(engine)
        if isinstance(engine, str) and engine == experiment.engine.name:
            given = experiment.engine.model_dump(exclude_unset=True) | {"name": engine}
        try:
            config = EngineConfig.model_validate(given)
        except ValidationError as exc:
            raise ConfigError(_engine_problem(engine, exc)) from None
    else:
        raise ConfigError(
            "engine: expected an engine name (" + ", ".join(ENGINE_NAMES) + "), a mapping of "
            f"engine options, a DuckDB connection or a SparkSession, got {type(engine).__name__}"
        )
    DESIGNS.of(experiment).check_engine(experiment, config.name)
    if config.name == "memory":
        for key, path in _log_paths(experiment):
            if is_pattern(path, Path(path)):
                raise ConfigError(
                    f"{experiment.source}: {key}: expected a file for engine memory, got "
                    f"{display_path(path)!r}, a glob or folder of files (engines duckdb and spark read those)"
                )
    return EngineChoice(config.name, config.options, connection)


def _engine_problem(engine: Any, exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "engine"
    if error["loc"] and error["loc"][0] == "name":
        return f"engine: expected one of {', '.join(ENGINE_NAMES)}, got {error.get('input')!r}"
    return f"engine: {where}: {error['msg']}, got {engine!r}"


def _is_duckdb_connection(value: Any) -> bool:
    module = type(value).__module__ or ""
    return type(value).__name__ == "DuckDBPyConnection" and "duckdb" in module


def _is_spark_session(value: Any) -> bool:
    """A ``pyspark.sql.SparkSession`` (classic or Spark Connect), told by its type's name
    so that pyspark is not imported to ask."""
    module = type(value).__module__ or ""
    return type(value).__name__ == "SparkSession" and module.startswith("pyspark")


def _log_paths(experiment: Experiment) -> list[tuple[str, str]]:
    """(config key, path) of the logs (not the judgments or covariates)."""
    return [(key, path) for key, path in experiment.input_paths() if key.startswith(LOG_KEYS)]


def sql_log_files(source: InputFiles, path: str, engine: str) -> tuple[list[str], str]:
    """The files of one of a log's paths (:meth:`~abrank.inputs.InputFiles.files_of`) and
    their format, for the SQL engine ``engine`` (named in messages): a path that names one
    file must be a regular file, and the format one that the engine reads logs in."""
    from abrank.io.files import check_file

    if not is_pattern(path, Path(path)):
        check_file(path, "a regular data file", missing="an existing file")
    files = source.files_of(path)
    fmt = source.format_of(files[0])
    if fmt not in ("parquet", "csv", "tsv"):
        raise ConfigError(
            f"{display_path(path)}: engine {engine}: expected parquet, csv or tsv logs, got format {fmt}"
        )
    return files, fmt


def log_sources(
    experiment: Experiment, inputs: Inputs, engine: str
) -> list[tuple[Any, InputFiles]]:
    """The experiment's logs as engine ``engine`` reads them: a
    :class:`~abrank.engines.sql.sources.LogSource` per path of each date of the window
    (the one ``log:``, whose arm column names each row's arm, or each arm's log), with the
    resolved files of its config key (whose :meth:`~abrank.inputs.InputFiles.entry` makes
    the readout's ``inputs``)."""
    from abrank.engines.sql.sources import LogSource

    sources: list[tuple[Any, InputFiles]] = []

    def add(config: Any, log: InputFiles) -> None:
        for path in log.paths:
            if engine == "memory":
                from abrank.io.files import check_file

                check_file(path, "a regular data file", missing="an existing file")
                files = log.files_of(path)
                fmt = log.format_of(files[0])
            else:
                files, fmt = sql_log_files(log, path, engine)
            source = LogSource(
                files=tuple(files),
                format=fmt,
                label=str(path),
                arm=log.arm,
                columns=config.columns.mapping(),
                sep=config.sep,
                decimal=config.decimal,
            )
            sources.append((source, log))

    if experiment.log is not None:
        add(experiment.log, inputs["log.path"])
    else:
        for index, arm in enumerate(experiment.arms):
            add(arm, inputs[arm_key(index)])
    return sources


@contextlib.contextmanager
def fingerprints_meanwhile(files: Iterable[tuple[InputFiles, str]]) -> Iterator[None]:
    """The sha256 of each (input, file) computed in a thread while the block runs (an SQL
    engine reading the same files): the readout's fingerprints read every byte of the
    files, and that reading then overlaps the engine's instead of following it. The values
    are the same, kept by each input (:meth:`abrank.inputs.InputFiles.sha256`); a file the
    thread cannot read is left to the run, whose own reading names the problem."""
    wait = fingerprints_in_background(files, lowest_priority=False)
    yield  # on a failure the thread is left to finish alone: nothing waits for it
    wait()


def fingerprints_in_background(
    files: Iterable[tuple[InputFiles, str]], *, lowest_priority: bool = True
) -> Callable[[], None]:
    """Start computing the sha256 of each (input, file) in a thread (of the lowest
    priority unless told); returns the function that waits for it. An SQL engine's
    statements keep both cores busy, the Python work after them one: at the lowest
    priority the fingerprints read the files in what time the engine leaves, then on the
    core that work leaves idle, and the readout waits for them last
    (:meth:`abrank.inputs.InputFiles.sha256` keeps each value). A file the thread cannot
    read is left to the readout's own reading, which names the problem."""
    pending = list(files)

    def work() -> None:
        if lowest_priority:
            with contextlib.suppress(AttributeError, OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for log, file in pending:
            try:
                log.sha256(file)
            except OSError:
                return

    thread = threading.Thread(target=work, name="abrank-fingerprints", daemon=True)
    thread.start()
    return thread.join
