"""The Spark backend of the SQL definitions: click logs on a Spark cluster (or local mode).

Spark reads Parquet and CSV files, hive-partitioned folders (``logs/date=*/part-*.parquet``:
``date`` becomes a column) and the many files of a day's log in parallel, on ``local[*]``
or on a cluster. This module opens the logs as temporary views and runs the statements
of :mod:`abrank.engines.sql.clicks`, compiled to Spark SQL; it computes nothing of its own.

Each row's file (``abrank_file``) is the path as abrank was given it, not Spark's
``file:`` URI, so that messages and the fingerprints of the inputs name the files as the
DuckDB backend does; ``abrank_row`` is the 0-based row of a Parquet file (Spark's
``_metadata.row_index``) and NULL in a CSV file, as DuckDB gives it. Spark's failures
(its analysis errors, a job that fails, the JVM out of memory) become abrank errors that
name the log.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from abrank.errors import ConfigError, DataError
from abrank.io.files import open_bytes

__all__ = [
    "DEFAULT_MASTER",
    "SparkBackend",
    "driver_memory",
    "hive_base",
    "java_runtime",
    "kind_of",
    "local_cores",
    "start_session",
]

#: what to install when pyspark is missing
INSTALL = "pip install 'abrank[spark]'"
#: what to install when Java is missing
JAVA = "a Java runtime (17 or later: e.g. Debian's openjdk-17-jre-headless)"
#: the master of a session abrank starts when none is given: every core of this machine
DEFAULT_MASTER = "local[*]"

#: the characters Hadoop reads as a glob in a path
_GLOB = re.compile(r"([*?\[\]{}\\])")
#: the columns every view adds to the log's own
_ORIGIN = ("abrank_file", "abrank_row")
_INTEGERS = {"byte", "short", "integer", "long"}
_FLOATS = {"float", "double", "decimal"}
_TEXT = {"string", "varchar", "char"}
#: a size as the config gives it, and its unit in bytes (DuckDB's units: KB = 1000, KiB = 1024)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)\s*$", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
#: pyspark's own notice about pandas versions, which says nothing about the run
_PANDAS_NOTICE = "PySpark does not yet fully support pandas"


def _modules() -> Any:
    """The pyspark.sql module (and sqlglot, which compiles the definitions), or a
    ConfigError saying what to install."""
    try:
        import pyspark  # noqa: F401  (first: a missing pyspark is missing whatever is cached)
        import pyspark.sql
        import sqlglot  # noqa: F401
    except ImportError as exc:
        name = (exc.name or "pyspark").split(".")[0]
        raise ConfigError(
            f"engine: spark: expected the {name} package to be installed, got it missing "
            f"({INSTALL})"
        ) from None
    return pyspark.sql


def java_runtime() -> str:
    """The ``java`` that Spark will start (``$JAVA_HOME/bin/java`` or the one on the PATH),
    or a ConfigError saying that a Java runtime is needed."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found:
        return found
    raise ConfigError(
        f"engine: spark: expected {JAVA} on the PATH or in JAVA_HOME, got none (Spark runs "
        "on the JVM)"
    )


def driver_memory(size: str) -> str:
    """A size as the config gives it (``2GB``, ``1.5GiB``) in Spark's notation (MiB, ``2048m``
    for 2 GiB): the ``spark.driver.memory`` of engine.memory_limit."""
    match = _SIZE.match(size)
    if match is None:
        raise ConfigError(
            f"engine.memory_limit: expected a size such as '500MB' or '2GB', got {size!r}"
        )
    number = float(match.group(1)) * _UNITS[match.group(2).lower()]
    return f"{max(1, round(number / 1024**2))}m"


def local_cores(master: str) -> int | None:
    """The cores of a local master (``local`` 1, ``local[4]`` 4, ``local[*]`` this
    machine's), None for a cluster's."""
    match = re.match(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$", master.strip())
    if match is None:
        return None
    if match.group(1) in (None, ""):
        return 1
    if match.group(1) == "*":
        return os.cpu_count() or 1
    return int(match.group(1))


def start_session(options: Mapping[str, Any] | None = None) -> Any:
    """A new SparkSession with the engine options: ``master`` (default ``local[*]``),
    ``memory_limit`` (as ``spark.driver.memory``, which in local mode is all that Spark's
    tasks may hold) and ``spark_conf`` (further settings, which win over abrank's). Its web
    UI and console progress bar are off, its warehouse (which abrank does not use) lies in
    the temporary folder, and in local mode its shuffles have 4 partitions per core rather
    than Spark's 200 (a fifth less time on a 2-core machine).
    ConfigError without pyspark or Java, or for settings Spark refuses."""
    sql = _modules()
    options = dict(options or {})
    java_runtime()
    builder = sql.SparkSession.builder.master(options.get("master") or DEFAULT_MASTER)
    settings = {
        "spark.app.name": "abrank",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # abrank makes temporary views only: no spark-warehouse folder in the working one
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), "abrank-spark-warehouse"),
    }
    cores = local_cores(options.get("master") or DEFAULT_MASTER)
    if cores is not None:  # Spark's 200 shuffle partitions are tiny tasks on one machine
        settings["spark.sql.shuffle.partitions"] = str(4 * cores)
    if options.get("memory_limit"):
        settings["spark.driver.memory"] = driver_memory(str(options["memory_limit"]))
    settings.update({str(k): _setting(v) for k, v in (options.get("spark_conf") or {}).items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        with _quiet():
            session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: its message says why
        text = _first_line(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text:
            raise ConfigError(
                f"engine: spark: expected {JAVA} that starts Spark, got: {text}"
            ) from None
        raise ConfigError(f"engine: expected Spark settings it accepts, got {text}") from None
    session.sparkContext.setLogLevel("FATAL")  # failures come back as abrank messages
    return session


def kind_of(data_type: Any) -> str:
    """A Spark column type (a ``pyspark.sql.types.DataType``) as the definitions' kind:
    bool, int, float, text or other."""
    name = data_type.typeName()
    if name == "boolean":
        return "bool"
    if name in _INTEGERS:
        return "int"
    if name in _FLOATS:
        return "float"
    if name in _TEXT:
        return "text"
    return "other"


def hive_base(files: Sequence[str]) -> str | None:
    """The folder above the hive partitions (``key=value`` folders) of every file, as a
    local URI (``file:///...``), when they share one (Spark's ``basePath``: the partitions
    below it become columns); None when the files lie in no partition folder."""
    bases = set()
    for file in files:
        parts = Path(file).parent.parts
        first = next((i for i, part in enumerate(parts) if "=" in part), None)
        if first is None:
            return None
        bases.add(_local_uri(os.path.join(*parts[:first]) if first else ".", escaped=False))
    return bases.pop() if len(bases) == 1 else None


class SparkBackend:
    """Runs the neutral definitions on one SparkSession.

    ``session`` is used as it is when given (the views registered are dropped by
    :meth:`close`, the session left running). Otherwise the process's active session is
    used the same way when there is one (Spark runs one per process), or a session is
    started with ``options`` (:func:`start_session`) and stopped by :meth:`close`.
    """

    dialect = "spark"

    def __init__(self, session: Any = None, options: Mapping[str, Any] | None = None):
        sql = _modules()
        self.options = dict(options or {})
        if session is None:
            session = _running_session(sql)
            self.own = session is None
            if session is None:
                session = start_session(self.options)
        else:
            self.own = False
        self.spark = session
        self.labels: list[str] = []
        self.views: list[str] = []

    # ----------------------------------------------------------------- relations

    def register(self, name: str, source: Any) -> list[tuple[str, str]]:
        """Open ``source`` (a :class:`~abrank.engines.sql.clicks.LogSource`) as the
        temporary view ``name``; its columns and their kinds."""
        functions = _functions()
        self.labels.append(source.label)
        if source.format not in ("parquet", "csv", "tsv"):
            raise ConfigError(
                f"{source.label}: engine spark: expected a parquet, csv or tsv log, got "
                f"format {source.format}"
            )
        with self._failures(source.label):
            reader = self._reader(source.files)
            if source.format == "parquet":
                frame = reader.parquet(*_absolute(source.files))
                view = _with_origin(functions, frame, source.files, "_metadata.row_index")
            else:
                sep = source.sep or ("\t" if source.format == "tsv" else ",")
                reader = reader.options(
                    header="true",
                    inferSchema="false",
                    sep=sep,
                    quote='"',
                    escape='"',
                    enforceSchema="false",  # each file's header checked, not taken by position
                )
                # files of different headers are read apart and joined by column name
                parts = [
                    _with_origin(functions, reader.csv(_absolute(group)), group, None)
                    for group in _by_header(source.files)
                ]
                view = functools.reduce(
                    lambda a, b: a.unionByName(b, allowMissingColumns=True), parts
                )
            own = [field for field in view.schema.fields if field.name not in _ORIGIN]
            described = [(field.name, kind_of(field.dataType)) for field in own]
            view.createOrReplaceTempView(name)
        self.views.append(name)
        return described

    def register_table(self, name: str, table: pa.Table) -> None:
        """Make a small Arrow table (e.g. the units to leave out) the view ``name``."""
        with self._failures(self._label()):
            frame = self.spark.createDataFrame(table.to_pandas())
            frame.createOrReplaceTempView(name)
        self.views.append(name)

    def register_lines(self, name: str, files: Sequence[str]) -> None:
        """The text lines of ``files`` as the view ``name``: columns ``abrank_file`` (the
        file as given), ``abrank_row`` (the 0-based line in that file) and ``line``.

        Spark reads a large file in splits (byte ranges, each line in exactly one) that
        may run on different tasks; a line's number is the lines of the file's earlier
        splits plus its position in its own split. Both come from one small aggregate
        per split (its first row id and its count), never from per-line Python.
        """
        functions = _functions()
        window = _window()
        label = ", ".join(map(str, files)) or "the lines"
        self.labels.append(label)
        with self._failures(label):
            lines = self.spark.read.text(_absolute(files)).select(
                functions.col("value").alias("line"),
                _given_file(functions, files).alias("abrank_file"),
                functions.col("_metadata.file_block_start").alias("split"),
                functions.monotonically_increasing_id().alias("position"),
            )
            earlier = window.partitionBy("abrank_file").orderBy("split")
            earlier = earlier.rowsBetween(window.unboundedPreceding, -1)
            splits = (
                lines.groupBy("abrank_file", "split")
                .agg(
                    functions.min("position").alias("first"),
                    functions.count(functions.lit(1)).alias("lines"),
                )
                .select(
                    "abrank_file",
                    "split",
                    (
                        functions.coalesce(
                            functions.sum("lines").over(earlier), functions.lit(0)
                        ).cast("bigint")
                        - functions.col("first")
                    ).alias("offset"),
                )
            )
            numbered = lines.join(functions.broadcast(splits), ["abrank_file", "split"]).select(
                "abrank_file",
                (functions.col("position") + functions.col("offset")).alias("abrank_row"),
                "line",
            )
            numbered.createOrReplaceTempView(name)
        self.views.append(name)

    # ----------------------------------------------------------------- statements

    def run(self, sql: str) -> pa.Table:
        """The result of one statement as an Arrow table."""
        with self._failures(self._label()):
            result = self.spark.sql(sql)
            if hasattr(result, "toArrow"):  # pyspark 4
                return result.toArrow()
            return pa.Table.from_pandas(result.toPandas(), preserve_index=False)

    def close(self) -> None:
        """Stop the session started here, or drop the views registered on the caller's."""
        if self.own:
            self.spark.stop()
            self.views.clear()
            return
        for name in reversed(self.views):
            try:
                self.spark.catalog.dropTempView(name)
            except Exception:  # a view already gone, or a session stopped meanwhile
                continue
        self.views.clear()

    def _reader(self, files: Sequence[str]) -> Any:
        """``spark.read`` with the hive partitions of ``files`` as columns, and Parquet files
        of different columns read by name (a column missing in a file is NULL there)."""
        reader = self.spark.read.option("mergeSchema", "true")
        base = hive_base(files)
        return reader.option("basePath", base) if base is not None else reader

    def _label(self) -> str:
        return ", ".join(dict.fromkeys(self.labels)) or "the log"

    @contextmanager
    def _failures(self, label: str) -> Iterator[None]:
        """Spark's failures as abrank errors naming the log: out of memory (with what to
        raise), a driver that stopped, anything else Spark refused to read or run."""
        try:
            with _quiet():
                yield
        except (DataError, ConfigError):
            raise
        except Exception as exc:
            if not _is_spark_failure(exc):
                raise
            text = _first_line(exc)
            if "OutOfMemoryError" in str(exc) or "SPARK_DRIVER_OOM" in str(exc):
                limit = self.options.get("memory_limit")
                given = f"engine.memory_limit {limit}" if limit else "the memory of Spark's driver"
                raise DataError(
                    f"{label}: engine spark: expected the aggregation to fit in {given}, got "
                    f"out of memory ({text}); raise engine.memory_limit (spark.driver.memory) "
                    "or run on a cluster (engine.master)"
                ) from None
            if _is_connection_failure(exc):
                raise DataError(
                    f"{label}: engine spark: expected the Spark driver to keep running, got it "
                    f"stopped ({text}); it may have run out of memory: raise engine.memory_limit"
                ) from None
            raise DataError(f"{label}: expected a log Spark can read, got {text}") from None


# --------------------------------------------------------------------------- helpers


def _running_session(sql: Any) -> Any:
    """The session already running in this process, if any: the thread's active one, or
    the one on the process's SparkContext (another thread's), which is not abrank's to stop."""
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    import pyspark

    if getattr(pyspark.SparkContext, "_active_spark_context", None) is not None:
        return sql.SparkSession.builder.getOrCreate()
    return None


def _functions() -> Any:
    from pyspark.sql import functions

    return functions


def _window() -> Any:
    from pyspark.sql import Window

    return Window


def _absolute(files: Sequence[str]) -> list[str]:
    """The files as Spark reads them: absolute (Spark resolves relative paths against the
    folder its JVM started in, which need not be the working folder now), on the local
    file system whatever the session's default one (abrank found them there), and with
    the characters of Hadoop's globs escaped (a file may be named ``part[1].csv``)."""
    return [_local_uri(file) for file in files]


def _local_uri(path: str, *, escaped: bool = True) -> str:
    absolute = os.path.abspath(path)
    return "file://" + (_GLOB.sub(r"\\\1", absolute) if escaped else absolute)


def _with_origin(functions: Any, frame: Any, files: Sequence[str], row: str | None) -> Any:
    """``frame`` (read from ``files``) with each row's file as given (``abrank_file``) and
    its row in that file (``abrank_row``: the column ``row`` of Spark's, or NULL)."""
    number = functions.col(row) if row else functions.lit(None).cast("bigint")
    return frame.select(
        "*", _given_file(functions, files).alias("abrank_file"), number.alias("abrank_row")
    )


def _by_header(files: Sequence[str]) -> list[list[str]]:
    """CSV files grouped by their first line (the header), groups in order of first file."""
    groups: dict[bytes, list[str]] = {}
    for file in files:
        try:
            with open_bytes(file) as handle:
                header = handle.readline().rstrip(b"\r\n")
        except (OSError, EOFError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise DataError(f"{file}: expected a readable log file, got {reason}") from None
        groups.setdefault(header, []).append(file)
    return list(groups.values())


def _given_file(functions: Any, files: Sequence[str]) -> Any:
    """The file of each row as given to abrank. Spark's ``_metadata.file_path`` is a URI
    (``file:/logs/my%20log/part-0.parquet``): its scheme is cut, it is percent-decoded
    where it holds a ``%``, and the absolute path is spelled as ``files`` spell it (cut to
    the working folder when they are relative to it; else looked up). Cheap string
    operations per row: the URI is the same for every row of a file, but Spark computes
    it row by row, so the common case avoids url_decode and lookups."""
    uri = "_metadata.file_path"
    path = (
        f"CASE WHEN startswith({uri}, 'file:///') THEN substr({uri}, 8) "
        f"WHEN startswith({uri}, 'file:/') THEN substr({uri}, 6) ELSE {uri} END"
    )
    # url_decode reads '+' as a space: a path's own '+' is encoded first
    decoded = functions.expr(
        f"CASE WHEN contains({path}, '%') THEN url_decode(replace({path}, '+', '%2B')) "
        f"ELSE {path} END"
    )
    given = [str(file) for file in files]
    if all(os.path.isabs(f) and os.path.normpath(f) == f for f in given):
        return decoded
    folder = os.getcwd()
    if all(not os.path.isabs(f) and os.path.normpath(f) == f for f in given):
        return functions.substring(decoded, len(folder.rstrip("/")) + 2, 1 << 30)
    renamed = {os.path.abspath(file): file for file in given}
    pairs = [functions.lit(part) for item in renamed.items() for part in item]
    return functions.coalesce(
        functions.try_element_at(functions.create_map(*pairs), decoded), decoded
    )


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_spark_failure(exc: BaseException) -> bool:
    """An exception raised by pyspark or by its bridge to the JVM (py4j)."""
    module = type(exc).__module__ or ""
    if module.startswith(("pyspark", "py4j")):
        return True
    return isinstance(exc, ConnectionError)


def _is_connection_failure(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError) or type(exc).__name__ == "Py4JNetworkError"


def _first_line(exc: BaseException) -> str:
    """The first line of Spark's message that says something (not py4j's "An error
    occurred while calling o42.sql" nor a JVM stack frame)."""
    text = str(exc)
    for line in text.strip().splitlines():
        line = line.strip().removeprefix(": ")
        if not line or line.startswith(("An error occurred while calling", "at ", "\tat ")):
            continue
        if line.startswith(("org.apache.spark.", "java.")) and ": " in line:
            line = line.split(": ", 1)[1]
        return line
    return type(exc).__name__


@contextmanager
def _quiet() -> Iterator[None]:
    """pyspark's notice about the pandas version, and its logging of each failure (a JSON
    record with the JVM's stack, on stderr), left out while abrank runs a statement: the
    failure comes back as an abrank message instead."""
    loggers = _failure_loggers()
    before = [logger.disabled for logger in loggers]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PANDAS_NOTICE, category=FutureWarning)
        for logger in loggers:
            logger.disabled = True
        try:
            yield
        finally:
            for logger, disabled in zip(loggers, before):
                logger.disabled = disabled


def _failure_loggers() -> list[Any]:
    """The loggers pyspark (4 and later) writes a failed statement's context to."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return []
    names = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
    return [PySparkLogger.getLogger(name) for name in names]
