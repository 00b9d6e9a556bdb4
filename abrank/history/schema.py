"""The history store's columns: one Arrow schema, each column with what it holds.

Every file of the store has exactly :data:`HISTORY_SCHEMA` (same names, order and types),
so that ``pd.read_parquet("<root>/history")`` reads all of them in one call. A row is one
comparison of one dated readout: (experiment, date, metric, treatment, segment), as the
``comparisons`` of that readout's summary.json hold it. The README's schema table is made
from :data:`COLUMN_DOCS` (a test keeps the two in sync).
"""

from __future__ import annotations

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
