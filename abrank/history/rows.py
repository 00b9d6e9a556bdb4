"""The history's rows of one dated readout, built from its summary.json.

One row per entry of ``summary["comparisons"]`` (the overall comparisons and the
segments'), in that order, with the readout's own facts beside them: the date and window,
the config's and the inputs' fingerprints, the SRM test, the decision (its status and first
reason), the abrank version and the run time. The columns are :data:`abrank.history.schema.HISTORY_SCHEMA`'s.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from abrank.errors import ConfigError, DataError
from abrank.history.schema import HISTORY_COLUMNS, HISTORY_SCHEMA

if TYPE_CHECKING:
    import pandas as pd

WINDOWS = ("daily", "cumulative")

#: Columns worked out from a comparison rather than copied: its control (the experiment's
#: unless it compares two treatments), whether it is the primary metric, the interval's
#: ends, and the arms' units where a clustered or interleaved comparison has them.
DERIVED_COLUMNS = ("control", "primary", "ci", "ci_low", "ci_high", "n_control", "n_treatment")


@functools.cache
def record_columns() -> tuple[str, ...]:
    """The history columns copied from the comparison record (:class:`abrank.stats.Comparison`),
    as summary.json holds it: every column that names one of its fields, except the derived
    (imported when rows are made: ``abrank history`` reads the store without the statistics)."""
    from abrank.stats.results import Comparison

    saved = Comparison.saved_fields()
    return tuple(name for name in HISTORY_COLUMNS if name in saved and name not in DERIVED_COLUMNS)


def check_date(value: Any, field: str) -> str:
    """``value`` if it is a real date written YYYY-MM-DD; ConfigError naming ``field`` else."""
    if isinstance(value, str) and len(value) == 10:
        try:
            if dt.date.fromisoformat(value).isoformat() == value:
                return value
        except ValueError:
            pass
    raise ConfigError(f"{field}: expected a date written YYYY-MM-DD, got {value!r}")


def inputs_fingerprint(inputs: Iterable[Mapping[str, Any]]) -> str:
    """sha256 of the input files' sha256s: sorted, one per line (``summary["inputs"]``).

    The same files give the same fingerprint whatever their order or roles, so that a date
    whose inputs are the previous date's very bytes can be recognised (``stale``).
    """
    digests = sorted(str(item["sha256"]) for item in inputs)
    return hashlib.sha256("\n".join(digests).encode("ascii")).hexdigest()


def history_rows(
    summary: Mapping[str, Any],
    *,
    date: str,
    window: str = "daily",
    window_start: str | None = None,
    stale: bool = False,
    config_sha256: str,
    run_time: dt.datetime | None = None,
) -> pd.DataFrame:
    """The history rows of one readout: one per comparison of ``summary`` (summary.json).

    ``date`` is the readout's date; ``window`` ``daily`` or ``cumulative`` (then
    ``window_start`` is the window's first date); ``stale`` whether the inputs are those of
    the previous date; ``run_time`` (timezone-aware; default now) when it was computed. The
    frame has the history's columns, in order; ``treatment`` and ``segment`` are
    summary.json's, ``control`` the comparison's own control arm (``comparisons:
    all-pairs``) or the experiment's, and ``n_control``/``n_treatment`` the units per arm of
    a clustered comparison, the arms' queries otherwise.
    """
    check_date(date, "date")
    if window not in WINDOWS:
        raise ConfigError(f"window: expected one of {', '.join(WINDOWS)}, got {window!r}")
    if window == "cumulative":
        window_start = check_date(window_start, "window_start")
        if window_start > date:
            raise ConfigError(
                f"window_start: expected a date on or before {date}, got {window_start}"
            )
    elif window_start is not None:
        raise ConfigError(f"window_start: expected none for a daily window, got {window_start!r}")
    if run_time is None:
        run_time = dt.datetime.now(dt.timezone.utc)
    elif run_time.tzinfo is None or run_time.utcoffset() is None:
        raise ConfigError(f"run_time: expected a timezone-aware time, got {run_time.isoformat()}")
    try:
        columns = _columns(summary)
        experiment = summary["experiment"]["name"]
        srm = split_check(summary["diagnostics"])
        decision, reason = readout_decision(summary)
        constants = {
            "experiment": experiment,
            "date": date,
            "sequential": summary.get("sequential") is not None,
            "srm_p_value": None if srm is None else srm["p_value"],
            "srm_alarm": None if srm is None else bool(srm["alarm"]),
            "decision": decision,
            "decision_reason": reason,
            "window": window,
            "window_start": window_start,
            "stale": bool(stale),
            "config_sha256": config_sha256,
            "inputs_sha256": inputs_fingerprint(summary["inputs"]),
            "abrank_version": summary["abrank_version"],
            "run_time": run_time.astimezone(dt.timezone.utc),
        }
    except (KeyError, TypeError) as exc:
        raise DataError(f"summary: expected the keys of summary.json, missing {exc}") from None
    count = len(columns["metric"])
    data = {
        name: columns[name] if name in columns else [constants[name]] * count
        for name in HISTORY_SCHEMA.names
    }
    table = pa.Table.from_pydict(data, schema=HISTORY_SCHEMA)
    return table.to_pandas()


def _columns(summary: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The columns that vary from one comparison to the next, from ``comparisons``."""
    comparisons = summary["comparisons"]
    control = next(arm["name"] for arm in summary["arms"] if arm["role"] == "control")
    primary = summary["primary_metric"]
    columns: dict[str, list[Any]] = {}
    for name in record_columns():
        columns[name] = [c.get(name) for c in comparisons]
    columns["control"] = [c.get("control") or control for c in comparisons]
    columns["primary"] = [c["metric"] == primary for c in comparisons]
    intervals = [list(c["ci"]) if c.get("ci") is not None else None for c in comparisons]
    columns["ci"] = intervals
    columns["ci_low"] = [None if ci is None else ci[0] for ci in intervals]
    columns["ci_high"] = [None if ci is None else ci[1] for ci in intervals]
    units = [c.get("n_units") for c in comparisons]
    # an interleaved comparison's units ("all") see both arms
    columns["n_control"] = [
        c["n_control"] if u is None else u.get("control", u.get("all"))
        for c, u in zip(comparisons, units)
    ]
    columns["n_treatment"] = [
        c["n_treatment"] if u is None else u.get("treatment", u.get("all"))
        for c, u in zip(comparisons, units)
    ]
    return columns


def readout_decision(summary: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The status of a readout's decision and its first reason (the readout's opening
    sentence), from summary.json's ``decision``; (None, None) when it has none (its metrics
    have no roles). DataError naming the key when the decision is malformed."""
    from abrank.readout.model import STATUS_TEXT, STATUSES

    decision = summary.get("decision")
    if decision is None:
        return None, None
    if not isinstance(decision, Mapping):
        raise DataError(f"summary: decision: expected an object, got {decision!r}")
    status = decision.get("status")
    if status not in STATUSES:
        raise DataError(
            f"summary: decision.status: expected one of {', '.join(STATUSES)}, got {status!r}"
        )
    reasons = decision.get("reasons") or []
    if not isinstance(reasons, list | tuple) or not all(isinstance(r, str) for r in reasons):
        raise DataError(f"summary: decision.reasons: expected a list of texts, got {reasons!r}")
    return status, reasons[0] if reasons else STATUS_TEXT[status]


def split_check(diagnostics: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The split test of a readout: the sample-ratio check of an online A/B test, the
    first-team check of an interleaving experiment (None offline)."""
    srm = diagnostics.get("srm")
    if srm is not None:
        return srm
    return (diagnostics.get("interleaving") or {}).get("first_team")
