"""The readout: what `abrank run` computes and writes, in memory and as a folder.

:class:`Readout` holds everything a report shows; its ``summary`` is summary.json, typed by
the records of :mod:`abrank.readout.model`. :func:`load_readout` reads a written readout
folder back, so that it can be rendered again.
"""

from abrank.readout.core import Readout
from abrank.readout.folder import CHART_DATA, HISTORY_DATA, load_readout, write_chart_data
from abrank.readout.model import ComparisonSummary, Summary, summary_json

__all__ = [
    "CHART_DATA",
    "ComparisonSummary",
    "HISTORY_DATA",
    "Readout",
    "Summary",
    "load_readout",
    "summary_json",
    "write_chart_data",
]
