"""The ``engine:`` of an experiment config: where its logs are turned into aggregates.

``engine: duckdb`` (a name) or a mapping with options,
``engine: {name: duckdb, memory_limit: 2GB, threads: 2, temp_directory: /tmp/spill}``.
The options apply to DuckDB only: ``memory_limit`` caps what it holds in memory (it spills
to ``temp_directory`` beyond it), ``threads`` caps its worker threads. ``memory`` is the
default. Which experiments each engine can run is the engines' business
(:func:`abrank.engines.check_supported`); this module only checks the config's shape.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

#: Engine names a config may give, in the order messages list them.
ENGINE_NAMES = ("memory", "duckdb", "spark")

#: A size as DuckDB reads it: a number and a unit (``500MB``, ``2GB``, ``1.5GiB``).
_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


def _size(value: Any) -> Any:
    if isinstance(value, str) and not _SIZE.match(value):
        raise ValueError("a size such as '500MB' or '2GB'")
    return value


class EngineConfig(BaseModel):
    """One engine and its options (DESIGN.md "Engines")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal[ENGINE_NAMES] = "memory"  # type: ignore[valid-type]
    #: the most memory DuckDB may hold (it spills to ``temp_directory`` beyond it)
    memory_limit: Annotated[str, BeforeValidator(_size)] | None = None
    #: DuckDB's worker threads (default: one per core)
    threads: int | None = Field(None, ge=1)
    #: where DuckDB spills what does not fit in ``memory_limit`` (as given: relative paths
    #: are relative to the working folder, as DuckDB takes them)
    temp_directory: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _options_of_duckdb(self) -> EngineConfig:
        given = [
            key
            for key in ("memory_limit", "threads", "temp_directory")
            if key in self.model_fields_set
        ]
        if given and self.name != "duckdb":
            raise ValueError(
                f"options for engine duckdb ({', '.join(given)}), not for engine {self.name}"
            )
        return self

    @property
    def options(self) -> dict[str, Any]:
        """The DuckDB settings that were given (name -> value)."""
        return {
            key: value
            for key, value in (
                ("memory_limit", self.memory_limit),
                ("threads", self.threads),
                ("temp_directory", self.temp_directory),
            )
            if value is not None
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: name and the options given."""
        return {"name": self.name, **self.options}


def engine_config(value: Any) -> Any:
    """``engine: NAME`` read as ``{name: NAME}`` (a mapping or a model passes as it is)."""
    return {"name": value} if isinstance(value, str) else value


#: The type of ``Experiment.engine``: a name or a mapping, validated as :class:`EngineConfig`.
Engine = Annotated[EngineConfig, BeforeValidator(engine_config)]


def exists(path: str) -> bool:
    """A log path names some file: the file itself, a match of a glob, a file in a folder."""
    full = Path(path)
    return full.exists() if not is_pattern(path, full) else pattern_problem(path, full) is None


def is_pattern(value: str, full: Path) -> bool:
    """A log path that names several files: a glob (``logs/date=*/part-*.parquet``) or a
    folder (every data file below it, hive partitions such as ``date=2024-05-01/`` too)."""
    return any(char in value for char in "*?[") or full.is_dir()


def pattern_problem(value: str, full: Path) -> str | None:
    """What is wrong with a glob or folder log path (None when it names some file)."""
    if full.is_dir():
        if not any(path.is_file() for path in full.rglob("*")):
            return f"expected a folder holding log files, got the empty folder {value!r}"
        return None
    if not any(Path(match).is_file() for match in glob.glob(str(full), recursive=True)):
        return f"expected a pattern matching some file, got {value!r}, which matches none"
    return None
