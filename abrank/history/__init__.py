"""The history store of dated readouts: what every scheduled run recorded, by date.

:func:`history_rows` turns a readout's summary.json into rows, :func:`write_history`
stores one (experiment, date) atomically, :func:`read_history` reads the store back (one
pandas call does too: ``pd.read_parquet("<root>/history")``). The columns are
:data:`HISTORY_SCHEMA`'s. ``abrank history NAME`` prints an experiment's history.
"""

from abrank.history.files import HistoryWarning
from abrank.history.rows import check_date, history_rows, inputs_fingerprint
from abrank.history.schema import COLUMN_DOCS, HISTORY_COLUMNS, HISTORY_SCHEMA, schema_table
from abrank.history.store import (
    history_folder,
    history_table,
    previous_inputs,
    read_history,
    remove_abandoned_files,
    write_history,
)

__all__ = [
    "COLUMN_DOCS",
    "HISTORY_COLUMNS",
    "HISTORY_SCHEMA",
    "HistoryWarning",
    "check_date",
    "history_folder",
    "history_rows",
    "history_table",
    "inputs_fingerprint",
    "previous_inputs",
    "read_history",
    "remove_abandoned_files",
    "schema_table",
    "write_history",
]
