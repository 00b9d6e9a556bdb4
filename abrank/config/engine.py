"""The ``engine:`` of an experiment config: where its logs are turned into aggregates.

``engine: duckdb`` (a name) or a mapping with options,
``engine: {name: duckdb, memory_limit: 2GB, threads: 2, temp_directory: /tmp/spill}`` or
``engine: {name: spark, master: "local[*]", memory_limit: 4GB, spark_conf: {...}}``.
Each option belongs to the engines listed in :data:`ENGINE_OPTIONS`: for DuckDB,
``memory_limit`` caps what it holds in memory (it spills to ``temp_directory`` beyond it)
and ``threads`` caps its worker threads; for Spark, ``master`` says where it runs and
``memory_limit`` becomes ``spark.driver.memory``. ``memory`` is the default. Which
experiments each engine can run is the engines' business
(:func:`abrank.engines.check_supported`); this module only checks the config's shape.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

#: Engine names a config may give, in the order messages list them.
ENGINE_NAMES = ("memory", "duckdb", "spark")

#: Option -> the engines that take it, in the order messages list them.
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "memory_limit": ("duckdb", "spark"),
    "threads": ("duckdb",),
    "temp_directory": ("duckdb",),
    "master": ("spark",),
    "spark_conf": ("spark",),
}

#: A Spark master URL: local mode (``local``, ``local[4]``, ``local[*]``, ``local[4,2]``),
#: a standalone, Kubernetes or Mesos cluster's URL, or ``yarn``.
_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]"
    r"|(spark|k8s|mesos)://\S+|yarn)$"
)

#: A size as DuckDB reads it: a number and a unit (``500MB``, ``2GB``, ``1.5GiB``).
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


#: The most worker threads ``engine.threads`` may ask for: far more than any machine's cores,
#: far fewer than the threads whose stacks would exhaust the process (DuckDB aborts then).
MAX_THREADS = 1024


def _threads(value: int) -> int:
    if not 1 <= value <= MAX_THREADS:
        raise ValueError(
            f"a number of worker threads from 1 to {MAX_THREADS} (this machine has "
            f"{os.cpu_count() or 1} cores)"
        )
    return value


def _size(value: Any) -> Any:
    if isinstance(value, str) and not _SIZE.match(value):
        raise ValueError("a size such as '500MB' or '2GB'")
    return value


def _master(value: Any) -> Any:
    if isinstance(value, str) and not _MASTER.match(value.strip()):
        raise ValueError(
            "a Spark master such as 'local[*]', 'local[4]', 'spark://host:7077', 'yarn' or "
            "'k8s://https://host:443'"
        )
    return value.strip() if isinstance(value, str) else value


def _spark_conf(value: Any) -> Any:
    if isinstance(value, dict):
        wrong = [str(key) for key in value if not str(key).startswith("spark.")]
        if wrong:
            raise ValueError(
                "Spark settings whose names start with 'spark.' (such as "
                f"spark.sql.shuffle.partitions), not {', '.join(map(repr, wrong))}"
            )
    return value


class EngineConfig(BaseModel):
    """One engine and its options (DESIGN.md "Engines")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal[ENGINE_NAMES] = "memory"  # type: ignore[valid-type]
    #: the most memory the engine may hold: DuckDB's ``memory_limit`` (it spills to
    #: ``temp_directory`` beyond it), or Spark's ``spark.driver.memory`` (in local mode,
    #: all that its tasks share) for a session abrank starts
    memory_limit: Annotated[str, BeforeValidator(_size)] | None = None
    #: DuckDB's worker threads (default: one per core), 1 to :data:`MAX_THREADS`
    threads: Annotated[int, AfterValidator(_threads)] | None = None
    #: where DuckDB spills what does not fit in ``memory_limit`` (as given: relative paths
    #: are relative to the working folder, as DuckDB takes them)
    temp_directory: str | None = Field(None, min_length=1)
    #: where Spark runs a session abrank starts: ``local[*]`` (the default: every core of
    #: this machine), ``local[4]``, ``spark://host:7077``, ``yarn``, ``k8s://...``
    master: Annotated[str, BeforeValidator(_master)] | None = None
    #: further settings of a Spark session abrank starts (``spark.sql.shuffle.partitions:
    #: 64``, ``spark.executor.memory: 8g``, ...); a session passed in is used as it is
    spark_conf: (
        Annotated[dict[str, str | int | float | bool], BeforeValidator(_spark_conf)] | None
    ) = None

    @model_validator(mode="after")
    def _options_of_the_engine(self) -> EngineConfig:
        wrong: dict[tuple[str, ...], list[str]] = {}
        for key, engines in ENGINE_OPTIONS.items():
            if key in self.model_fields_set and self.name not in engines:
                wrong.setdefault(engines, []).append(key)
        if wrong:
            engines, keys = next(iter(wrong.items()))
            raise ValueError(
                f"options for engine {' or '.join(engines)} ({', '.join(keys)}), not for "
                f"engine {self.name}"
            )
        if self.memory_limit is not None and "spark.driver.memory" in (self.spark_conf or {}):
            raise ValueError(
                "memory_limit or spark_conf's spark.driver.memory (memory_limit is "
                "spark.driver.memory), not both"
            )
        return self

    @property
    def options(self) -> dict[str, Any]:
        """The engine's settings that were given (name -> value)."""
        given = {key: getattr(self, key) for key in ENGINE_OPTIONS}
        return {key: value for key, value in given.items() if value is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: name and the options given."""
        return {"name": self.name, **self.options}


def engine_config(value: Any) -> Any:
    """``engine: NAME`` read as ``{name: NAME}`` (a mapping or a model passes as it is)."""
    return {"name": value} if isinstance(value, str) else value


#: The type of ``Experiment.engine``: a name or a mapping, validated as :class:`EngineConfig`.
Engine = Annotated[EngineConfig, BeforeValidator(engine_config)]


def is_pattern(value: str, full: Path) -> bool:
    """A log path that names several files: a glob (``logs/date=*/part-*.parquet``) or a
    folder (every data file below it, hive partitions such as ``date=2024-05-01/`` too)."""
    return any(char in value for char in "*?[") or full.is_dir()


def pattern_problem(value: str, full: Path) -> str | None:
    """What is wrong with a glob or folder log path (None when it names some file): no
    file (hidden ones do not count: :func:`abrank.io.files.expand_pattern`, the one rule
    of every engine), or a match that is not a regular file (a FIFO, which a reader would
    wait on)."""
    from abrank.errors import DataError
    from abrank.io.files import expand_pattern

    try:
        files = expand_pattern(str(full), value)
    except DataError as exc:
        return str(exc)
    if not files and full.is_dir():
        if any(path.is_file() for path in full.rglob("*")):
            return (
                f"expected a folder holding log files, got {value!r}, whose files are all "
                "hidden (names starting with '.' or '_')"
            )
        return f"expected a folder holding log files, got the empty folder {value!r}"
    if not files:
        return f"expected a pattern matching some file, got {value!r}, which matches none"
    return None
