"""The files a dated run reads: a log per date of its window, the other inputs of its date.

The logs (``log:``, the arms' paths) are read for every date of the run's window (one date
for ``window: daily``, START through the run date for a cumulative window) and joined as
one log; judgments, per-query attributes and covariates describe the experiment rather
than a day's traffic, so a ``{date}`` in their paths takes the run's date only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from abrank.config import Experiment
from abrank.config.dates import fill_date, is_dated
from abrank.config.engine import exists
from abrank.errors import ConfigError, DataError
from abrank.io.concat import concat_frames

#: the config keys whose files hold a day's traffic (read for every date of the window)
LOG_KEYS = ("log.path", "control.path", "treatments[")


def check_dated(experiment: Experiment) -> None:
    """A config with ``{date}`` paths needs a run date: say which key and how to give one."""
    if experiment.date is not None:
        return
    for key, path in experiment.input_paths():
        if is_dated(path):
            raise ConfigError(
                f"{experiment.source}: {key}: the path holds {{date}}; expected a run date "
                "(--date YYYY-MM-DD, or --from/--to for a backfill), got none"
            )


def log_files(experiment: Experiment, path: str) -> list[str]:
    """The files of a log path for this run: one per date of the window (one if undated)."""
    if experiment.date is None or not is_dated(path):
        return [path]
    return [fill_date(path, day) for day in experiment.window_dates]


def dated_file(experiment: Experiment, path: str) -> str:
    """The file of a path that is not a log (judgments, attributes, covariates): the run date's."""
    if experiment.date is None or not is_dated(path):
        return path
    return fill_date(path, experiment.date)


def with_dated_files(experiment: Experiment) -> Experiment:
    """The experiment with its judgments', attributes' and covariates' ``{date}`` paths
    filled with the run date (the logs' paths stay templates: :func:`log_files`)."""
    if experiment.date is None:
        return experiment
    update: dict[str, Any] = {}
    if experiment.judgments is not None:
        path = dated_file(experiment, experiment.judgments.path)
        update["judgments"] = experiment.judgments.model_copy(update={"path": path})
    attributes = experiment.segments.attributes
    if attributes is not None:
        filled = attributes.model_copy(update={"path": dated_file(experiment, attributes.path)})
        update["segments"] = experiment.segments.model_copy(update={"attributes": filled})
    covariates = experiment.analysis.covariates
    if covariates is not None:
        filled = covariates.model_copy(update={"path": dated_file(experiment, covariates.path)})
        update["analysis"] = experiment.analysis.model_copy(update={"covariates": filled})
    return experiment.model_copy(update=update) if update else experiment


def input_files(experiment: Experiment) -> list[tuple[str, str]]:
    """(config key, file) of every file this run reads, in reading order."""
    found = []
    for key, path in experiment.input_paths():
        files = (
            log_files(experiment, path)
            if key.startswith(LOG_KEYS)
            else [dated_file(experiment, path)]
        )
        found += [(key, file) for file in files]
    return found


def missing_inputs(experiment: Experiment) -> list[tuple[str, str]]:
    """(config key, file) of each input this run needs that does not exist (yet)."""
    return [(key, file) for key, file in input_files(experiment) if not exists(file)]


def missing_input_error(key: str, file: str, day: str) -> DataError:
    """The error of a dated run whose input ``file`` (config ``key``) is not there (yet),
    as ``run`` and ``validate --date`` report it."""
    from abrank.analysis.load import display_path

    return DataError(
        f"{display_path(file)}: {key}: expected the input of {day}, got no such file "
        "(--missing skip exits 99 instead)"
    )


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
