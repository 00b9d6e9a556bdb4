"""The history store's columns: one Arrow schema, each column with what it holds.

Every file of the store has exactly :data:`HISTORY_SCHEMA` (same names, order and types),
so that ``pd.read_parquet("<root>/history")`` reads all of them in one call. A row is one
comparison of one dated readout: (experiment, date, metric, treatment, segment), as the
``comparisons`` of that readout's summary.json hold it. The README's schema table is made
from :data:`COLUMN_DOCS` (a test keeps the two in sync).

The store outlives abrank's versions: a later version adds columns (:data:`ADDED_COLUMNS`),
never removes or retypes one, so that a store written before keeps being read and appended
to. A file of an earlier version has the schema without the columns added since; its rows
read with those columns null (:func:`missing_columns`, :func:`with_missing_columns`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

# the item field of a list column is named as Parquet stores it, so that a file read back
# has this very schema
_INTERVAL = pa.list_(pa.field("element", pa.float64()))

# (name, Arrow type, what it holds), in the store's column order
_COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("experiment", pa.string(), "the experiment's name (config `name`)"),
    ("date", pa.string(), "the readout's date, YYYY-MM-DD"),
    ("metric", pa.string(), "the metric's canonical name (`mrr@10`)"),
    (
        "treatment",
        pa.string(),
        "the arm compared, as in summary.json (`B vs A` when two treatments are compared)",
    ),
    ("control", pa.string(), "the arm it is compared with"),
    ("segment", pa.string(), "the segment (`device=mobile`); null for the overall comparison"),
    ("primary", pa.bool_(), "true for the experiment's primary metric"),
    (
        "role",
        pa.string(),
        "the metric's role in the decision (success, guardrail or secondary) on an overall "
        "comparison; null for segments and without metric roles",
    ),
    ("design", pa.string(), "paired, independent or interleaved"),
    ("primary_test", pa.string(), "the test behind `p_value` (t, permutation, bootstrap, ...)"),
    ("unit", pa.string(), "the unit of randomisation of a clustered comparison; null offline"),
    ("control_mean", pa.float64(), "the control arm's mean of the metric"),
    ("treatment_mean", pa.float64(), "the treatment arm's mean of the metric"),
    ("delta", pa.float64(), "treatment - control"),
    ("ci", _INTERVAL, "the confidence interval of `delta`, [low, high]"),
    ("ci_low", pa.float64(), "the interval's lower end"),
    ("ci_high", pa.float64(), "the interval's upper end"),
    ("ci_level", pa.float64(), "the interval's confidence level (after any correction)"),
    ("relative_lift", pa.float64(), "delta / control_mean"),
    ("p_value", pa.float64(), "the primary test's p-value"),
    ("p_adjusted", pa.float64(), "the p-value after the multiple-testing correction"),
    ("verdict", pa.string(), "win, loss or inconclusive"),
    ("n", pa.int64(), "the comparison's n, as in summary.json"),
    (
        "n_control",
        pa.int64(),
        "the control arm's units (clustered comparisons) or queries (otherwise)",
    ),
    (
        "n_treatment",
        pa.int64(),
        "the treatment arm's units (clustered comparisons) or queries (otherwise)",
    ),
    ("sequential", pa.bool_(), "true when the p-values and intervals are always-valid"),
    ("srm_p_value", pa.float64(), "the sample-ratio-mismatch test's p-value; null without one"),
    ("srm_alarm", pa.bool_(), "true when that test raised its alarm; null without one"),
    (
        "decision",
        pa.string(),
        "the readout's decision (ship, no-ship, keep-running or unhealthy), on each of its "
        "rows; null without metric roles",
    ),
    (
        "decision_reason",
        pa.string(),
        "the decision's first reason (the readout's opening sentence); null without a decision",
    ),
    ("window", pa.string(), "daily (the date's inputs) or cumulative (from window_start on)"),
    ("window_start", pa.string(), "the first date of a cumulative window; null for daily"),
    (
        "stale",
        pa.bool_(),
        "true when the inputs are byte-identical to those of the previous date in the history",
    ),
    ("config_sha256", pa.string(), "sha256 of the experiment config"),
    (
        "inputs_sha256",
        pa.string(),
        "sha256 of the input files' sha256s (sorted, one per line)",
    ),
    ("abrank_version", pa.string(), "the abrank version that computed the row"),
    ("run_time", pa.timestamp("us", tz="UTC"), "when the row was computed (UTC)"),
)

HISTORY_SCHEMA: pa.Schema = pa.schema([pa.field(name, kind) for name, kind, _ in _COLUMNS])
"""The Arrow schema of every history file (names, order and types)."""

HISTORY_COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in _COLUMNS)
"""The history's column names, in order."""

COLUMN_DOCS: dict[str, str] = {name: doc for name, _, doc in _COLUMNS}
"""What each column holds, by name (the README's schema table)."""

ADDED_COLUMNS: tuple[tuple[str, ...], ...] = (("role", "decision", "decision_reason"),)
"""The columns each version of the store added after the first, oldest first: a file
written by an earlier version lacks the columns of every later entry."""


def _earlier_schemas() -> tuple[tuple[pa.Schema, tuple[str, ...]], ...]:
    """Each earlier version's schema with the columns it lacks, the newest version first."""
    versions = []
    for first in reversed(range(len(ADDED_COLUMNS))):
        lacking = tuple(name for added in ADDED_COLUMNS[first:] for name in added)
        schema = pa.schema([field for field in HISTORY_SCHEMA if field.name not in lacking])
        versions.append((schema, lacking))
    return tuple(versions)


_EARLIER_SCHEMAS = _earlier_schemas()


def missing_columns(schema: pa.Schema) -> tuple[str, ...] | None:
    """The columns a history file of ``schema`` lacks: none for this version's schema, the
    columns added since for an earlier version's; None when it is no version's schema."""
    if schema.equals(HISTORY_SCHEMA):
        return ()
    for earlier, lacking in _EARLIER_SCHEMAS:
        if schema.equals(earlier):
            return lacking
    return None


def with_missing_columns(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``table`` (rows read from a file of an earlier version) as ``columns``, in that
    order: its own columns, and a null one, of this version's type, for each it lacks."""
    fields = [HISTORY_SCHEMA.field(name) for name in columns]
    arrays = [
        table.column(field.name)
        if field.name in table.column_names
        else pa.nulls(table.num_rows, field.type)
        for field in fields
    ]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def type_name(column: str) -> str:
    """A column's type as the README writes it (``string``, ``list<float64>``, ...)."""
    return _type_name(HISTORY_SCHEMA.field(column).type)


def _type_name(kind: pa.DataType) -> str:
    if pa.types.is_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    return "float64" if kind == pa.float64() else str(kind)


def schema_table() -> str:
    """The README's Markdown table of the history's columns: name, type, what it holds."""
    lines = ["| column | type | holds |", "|---|---|---|"]
    lines += [f"| `{name}` | {type_name(name)} | {COLUMN_DOCS[name]} |" for name in HISTORY_COLUMNS]
    return "\n".join(lines)
