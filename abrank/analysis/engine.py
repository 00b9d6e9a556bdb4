"""Which engine runs an experiment, and the online path on an SQL engine.

:func:`choose_engine` reads the choice (``run_experiment(engine=...)``, ``--engine``, or the
config's ``engine:``) and refuses what the engine cannot run yet, naming what each engine
runs. :func:`score_online_sql` is the online path of :mod:`abrank.analysis.online` on an SQL
engine: the logs are read where they lie and only the per-unit sums come back, in the same
:class:`~abrank.analysis.online.OnlineData` / :class:`~abrank.analysis.online.OnlineScores`
shapes, so that the comparisons and the readout run unchanged. What stays in Python is
what is small: the covariates table, the fingerprints of the files read.
"""

from __future__ import annotations

import dataclasses
import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from abrank.analysis.load import Progress, display_path, fingerprint, shown_files
from abrank.analysis.online import OnlineData, OnlineScores, load_covariates
from abrank.analysis.window import LOG_KEYS, check_dated, log_files, with_dated_files
from abrank.config import Experiment
from abrank.config.engine import ENGINE_NAMES, EngineConfig, is_pattern
from abrank.errors import ConfigError, DataError

__all__ = ["EngineChoice", "choose_engine", "expand_files", "score_online_sql"]


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
    from abrank.engines import check_supported

    check_supported(config.name, _kind(experiment, config.name))
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


def _kind(experiment: Experiment, engine: str) -> str:
    """The kind of experiment as :func:`abrank.engines.check_supported` names it."""
    from abrank.metrics import parse_metric

    if experiment.interleaved:
        return "interleaved"
    if not experiment.online:
        return "offline"
    if engine != "memory" and any(not parse_metric(m).is_click for m in experiment.metrics):
        return "online-judged"
    return "online"


def _log_paths(experiment: Experiment) -> list[tuple[str, str]]:
    """(config key, path) of the logs (not the judgments or covariates)."""
    return [(key, path) for key, path in experiment.input_paths() if key.startswith(LOG_KEYS)]


def expand_files(path: str, format: str | None, engine: str = "duckdb") -> tuple[list[str], str]:
    """A log path's files, sorted, and their format: the file itself, the files a glob
    matches, or every data file below a folder (hive partitions such as ``date=.../``);
    ``engine`` is the SQL engine that will read them (named in messages)."""
    from abrank.io.detect import detect_format
    from abrank.io.files import check_file, regular_files

    full = Path(path)
    if full.is_dir():
        files = regular_files(
            (p for p in full.rglob("*") if not p.name.startswith((".", "_"))), display_path(path)
        )
    elif any(char in path for char in "*?["):
        files = regular_files(glob.glob(path, recursive=True), display_path(path))
    else:
        check_file(path, "a regular data file", missing="an existing file")
        files = [path]
    if not files:
        raise DataError(f"{display_path(path)}: expected log files, got none matching")
    fmt = detect_format(files[0], format, judgments=True)
    if fmt not in ("parquet", "csv", "tsv"):
        raise ConfigError(
            f"{display_path(path)}: engine {engine}: expected parquet, csv or tsv logs, got format {fmt}"
        )
    return files, fmt


def score_online_sql(
    experiment: Experiment, choice: EngineChoice, say: Progress
) -> tuple[OnlineData, OnlineScores]:
    """The online inputs and per-unit sums of every arm, computed by an SQL engine."""
    from abrank.engines.sql import open_backend
    from abrank.engines.sql.clicks import ClickRequest, LogSource, click_aggregates
    from abrank.metrics import parse_metric

    check_dated(experiment)
    experiment = with_dated_files(experiment)
    names = [arm.name for arm in experiment.arms]
    unit = experiment.analysis.unit or "user_id"
    sources: list[tuple[LogSource, str, str | None]] = []  # source, role, arm

    def add(config: Any, arm: str | None, role: str) -> None:
        for template in log_files(experiment, config.path):
            files, fmt = expand_files(template, config.format, choice.name)
            source = LogSource(
                files=tuple(files),
                format=fmt,
                label=str(template),
                arm=arm,
                columns=config.columns.mapping(),
                sep=config.sep,
                decimal=config.decimal,
            )
            sources.append((source, role, arm))

    if experiment.log is not None:
        add(experiment.log, None, "log")
    else:
        for arm in experiment.arms:
            add(arm, arm.name, "control" if arm is experiment.control else "treatment")
    files = [file for source, _, _ in sources for file in source.files]
    say(f"aggregating on {choice.name} ({shown_files(files)})")
    request = ClickRequest(
        metrics=tuple(parse_metric(m) for m in experiment.metrics),
        arms=tuple(names),
        unit=unit,
        segments=tuple(experiment.segments.columns),
        sat_dwell=experiment.analysis.sat_dwell,
        drop_mixed=experiment.analysis.mixed_units == "drop",
    )
    backend = open_backend(choice.name, choice.options, choice.connection)
    try:
        result = click_aggregates(backend, [s for s, _, _ in sources], request)
    finally:
        backend.close()
    inputs = [
        fingerprint(file, role, arm, result.file_rows.get(file, 0))
        for source, role, arm in sources
        for file in source.files
    ]
    covariates = load_covariates(experiment, unit, say, inputs)
    paths = {name: next(s.label for s, _, arm in sources if arm in (None, name)) for name in names}
    data = OnlineData(
        impressions={name: pd.DataFrame() for name in names},
        judgments=None,
        covariates=covariates,
        mixed=result.mixed,
        dropped_units=result.dropped_units,
        inputs=inputs,
        paths=paths,
    )
    columns = [*experiment.metrics, unit, *[c for c in experiment.segments.columns if c != unit]]
    empty = pd.DataFrame(columns=columns, index=pd.Index([], name="impression_id", dtype="str"))
    scores = OnlineScores(
        values={name: empty for name in names},
        sums=result.sums,
        segment_sums=result.segment_sums,
        units={name: int(len(t)) for name, t in result.sums.items()},
        impressions={name: int(t["impressions"].sum()) for name, t in result.sums.items()},
        ctr_by_rank=result.ctr_by_rank,
        undefined={},
    )
    return data, scores
