"""A dated run's window: its logs' files read as one log, and what the readout says of it.

Which files a run reads (a log per date of its window, the other inputs of its date) is
resolved once, by :func:`abrank.inputs.resolve_inputs`; this module joins the frames of a
window's files (:func:`read_window`) and writes the readout's ``schedule`` entry and its
warning about peeking at cumulative readouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from abrank._lazy import pandas as pd
from abrank.config import Experiment
from abrank.io.concat import concat_frames


def read_window(
    read: Callable[[str], pd.DataFrame],
    files: Sequence[str],
    *,
    key: str,
    order: Sequence[str],
    what: str,
) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """Each file read by ``read`` and the frames joined as one log
    (:func:`abrank.io.concat.concat_frames`); also (file, rows) of each file read."""
    frames = [read(file) for file in files]
    sizes = [(file, len(frame)) for file, frame in zip(files, frames)]
    return concat_frames(frames, files, key=key, order=order, what=what), sizes


def window_summary(experiment: Experiment) -> dict[str, Any] | None:
    """The readout's ``schedule`` entry: the run date and the dates its logs cover."""
    if experiment.date is None:
        return None
    dates = experiment.window_dates
    start = experiment.window_start
    return {
        "date": experiment.date.isoformat(),
        "window": "daily" if start is None else "cumulative",
        "window_start": None if start is None else start.isoformat(),
        "dates": len(dates),
    }


def peeking_warnings(experiment: Experiment) -> list[str]:
    """A cumulative readout looked at every day is a sequential test: without always-valid
    intervals, its chance of a false win grows with every look."""
    if experiment.date is None or experiment.window_start is None:
        return []
    if experiment.analysis.sequential:
        return []
    return [
        "window: cumulative readouts looked at day after day are sequential looks: with "
        "fixed-horizon tests an A/A experiment shows p < 0.05 on some day far more often "
        "than 5% of the time; set analysis.sequential: true for intervals and p-values that "
        "stay valid at every look"
    ]
