"""Engines: where logs become per-query values or per-unit sums.

An engine takes rankings (and judgments) and returns per-query metric values; everything
after that (statistics, readouts) works on those few numbers per query and does not care
where they were computed. :mod:`abrank.engines.memory` is the in-memory engine (Arrow and
NumPy, whole columns at once), and runs every kind of experiment; :mod:`abrank.engines.sql`
defines the online click aggregations, the interleaving credits and the judged metrics
once for the SQL engines (DuckDB and Spark), which return per-unit sums or per-query
values only (:data:`SUPPORTED` says which engine runs what). Its vectorized kernels (trec_eval's ordering rule, dense query codes,
64-bit document keys, the sort-based matcher of equal (query, doc) pairs) live in
:mod:`abrank.io.arrow`, below both the readers and the engines, which share them.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING

from abrank.errors import ConfigError

if TYPE_CHECKING:
    from abrank.metrics import Metric

#: Engine name -> the module that implements it. An engine module provides
#: ``score_arm(rankings, judgments, metrics, *, rel_level, gain, depth, complete, judged_k)``
#: returning :class:`abrank.engines.evaluate.ArmScores` (per-query values, judged@k and the
#: first relevant rank of one arm); the analysis asks nothing else of it. A new engine is
#: one module and one entry here.
ENGINES: dict[str, str] = {"memory": "abrank.engines.evaluate"}


def get_engine(name: str = "memory") -> ModuleType:
    """The module of engine ``name`` (imported on first use); ConfigError for an unknown one."""
    module = ENGINES.get(name) if isinstance(name, str) else None
    if module is None:
        listed = ", ".join(repr(n) for n in ENGINES)
        close = difflib.get_close_matches(str(name), list(ENGINES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"engine: expected one of {listed}, got {name!r}{hint}")
    return importlib.import_module(module)


#: What each engine runs now: kinds of experiment (see :func:`check_supported`). The SQL
#: engines' backends are :data:`abrank.engines.sql.BACKENDS`.
SUPPORTED: dict[str, tuple[str, ...]] = {
    "memory": ("offline", "online", "interleaved"),
    "duckdb": ("offline", "online", "interleaved"),
    "spark": ("offline", "online", "interleaved"),
}

#: Judged metric families an engine does not compute (the memory engine computes every one
#: of the registry: :func:`abrank.engines.memory.missing_kernels`). infAP's estimate reads
#: three running counts per relevant row that the SQL definitions do not carry.
UNSUPPORTED_FAMILIES: dict[str, tuple[str, ...]] = {
    "duckdb": ("infap",),
    "spark": ("infap",),
}

#: The words of each kind in messages.
KINDS = {
    "offline": "offline experiments on judged metrics",
    "online": "online experiments on click metrics",
    "interleaved": "interleaving experiments",
    "online-judged": "judged metrics on an online log",
}


def check_supported(name: str, kind: str) -> None:
    """ConfigError unless engine ``name`` runs experiments of ``kind`` (``offline``,
    ``online``, ``interleaved``, ``online-judged``), naming what each engine runs now."""
    if kind in SUPPORTED.get(name, ()):
        return
    now = "; ".join(
        f"{engine}: {', '.join(KINDS[k] for k in kinds)}"
        for engine, kinds in SUPPORTED.items()
        if kinds
    )
    if not SUPPORTED.get(name):
        raise ConfigError(
            f"engine: expected an engine this version runs ({now}), got {name!r}, which is not available yet"
        )
    raise ConfigError(
        f"engine: {name}: expected {' or '.join(KINDS[k] for k in SUPPORTED[name])}, got "
        f"{KINDS[kind]} (engines now: {now})"
    )


def check_metrics(name: str, metrics: Iterable[str | Metric]) -> None:
    """ConfigError when engine ``name`` does not compute a family of ``metrics`` (names or
    :class:`abrank.metrics.Metric`), naming the metric and the engine that does."""
    from abrank.metrics import parse_metric

    left_out = UNSUPPORTED_FAMILIES.get(name, ())
    if not left_out:
        return
    for metric in metrics:
        parsed = parse_metric(metric)
        if parsed.family in left_out:
            raise ConfigError(
                f"metric {parsed.name}: expected a metric engine {name} computes, got "
                f"{parsed.family}, which only engine memory computes (engine: memory, or "
                "--engine memory)"
            )
