"""Recording a run: its rows in the history store, its trend, the reports root's index page.

A dated run (and an undated one whose readout goes to its default place under
``reports/``) is recorded under its *reports root*, the folder that holds the experiments'
folders, each named after its experiment: ``reports/<name>/<date>/`` has the root
``reports``, as has ``--out reports/<name>``. A dated run's folder of dates named otherwise
(``--out X/out``) is its own root: its history and index page go inside it, never beside
it, and the index links ``<date>/report.html``. Before the readout is written
the history is read, to tell whether the date's inputs are the previous date's very bytes
(``schedule.stale``) and to give the readout its trend (the rows of every date up to its
own); after it is written, the run's rows replace that date's in the store and
``<root>/index.html`` is rebuilt from the whole history.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from abrank._lazy import pandas as pd
from abrank.config import Experiment
from abrank.errors import ConfigError

if TYPE_CHECKING:
    from abrank.readout import Readout


@dataclasses.dataclass(frozen=True)
class Recording:
    """Where and as what date a run is recorded."""

    root: Path
    experiment: str
    date: str

    @property
    def file(self) -> Path:
        """The history store's file of this experiment and date."""
        from abrank.history import history_folder

        return history_folder(self.root) / self.experiment / f"{self.date}.parquet"

    def to_dict(self) -> dict[str, str]:
        """The recording as JSON-safe builtins."""
        return {"root": str(self.root), "experiment": self.experiment, "date": self.date}


def recording_for(
    experiment: Experiment, folder: Path, out: str | Path | None, today: dt.date | None = None
) -> Recording | None:
    """The recording of a run whose readout goes to ``folder``, or None when it is not
    recorded: an undated run sent elsewhere than its default place (``--out``, ``output``)
    is a one-off readout, self-contained, and leaves no history beside it."""
    if experiment.date is None:
        if out is not None or experiment.output is not None:
            return None
        day = today or dt.date.today()
        root = folder.parent
    else:
        day = experiment.date
        root = dated_root(experiment.name, folder)
    recording = Recording(root, experiment.name, day.isoformat())
    check_recording(recording)
    return recording


def dated_root(name: str, folder: Path) -> Path:
    """The reports root of a dated readout written to ``folder``: the folder above its
    folder of dates when that one is named after the experiment (``reports/<name>/<date>``,
    ``--out X/<name>``), else the folder of dates itself (``--out X/out``: the history and
    the index page stay inside what the user named, and the index can link the readout)."""
    dates = folder.parent
    return dates.parent if dates.name == name else dates


def check_recording(recording: Recording) -> None:
    """Refuse, before any work, a history store that cannot be written: a file where its
    folders go."""
    from abrank.history import history_folder

    for path in (
        history_folder(recording.root),
        history_folder(recording.root) / recording.experiment,
    ):
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{path}: expected the history store's folder, got a file")


def attach_history(
    readout: Readout, experiment: Experiment, recording: Recording
) -> tuple[Readout, pd.DataFrame]:
    """The readout with its ``schedule.stale`` / ``previous_date`` and its trend (every
    earlier date's rows and its own), and the rows to store for its date."""
    from abrank.analysis.alerts import stale_warning
    from abrank.history import history_folder, history_rows, inputs_fingerprint, read_history

    summary = dict(readout.summary)
    skipped: list[str] = []
    earlier = _experiment_history(read_history, recording, skipped)
    earlier = earlier[earlier["date"] < recording.date]
    previous_date = str(earlier["date"].max()) if len(earlier) else None
    stale = False
    if previous_date is not None:
        before = earlier.loc[earlier["date"] == previous_date, "inputs_sha256"]
        stale = bool((before == inputs_fingerprint(summary["inputs"])).all())
    if summary.get("schedule") is not None:
        summary["schedule"] = {
            **summary["schedule"],
            "previous_date": previous_date,
            "stale": stale if previous_date is not None else None,
        }
        warning = stale_warning(summary)
        diagnostics = summary.get("diagnostics")
        if warning and isinstance(diagnostics, dict):  # said on every output, alert or not
            warnings = [w for w in diagnostics.get("warnings", []) if w != warning]
            summary["diagnostics"] = {**diagnostics, "warnings": [warning, *warnings]}
    # an unreadable file of the store is left out of the trend, and said so; the file of
    # this very date is not: the run replaces it
    own = f"{history_folder(recording.root) / recording.experiment / recording.date}.parquet: "
    skipped = [message for message in skipped if not message.startswith(own)]
    if skipped:
        diagnostics = dict(summary["diagnostics"])
        diagnostics["warnings"] = [*diagnostics.get("warnings", []), *skipped]
        summary["diagnostics"] = diagnostics
    start = experiment.window_start if experiment.date is not None else None
    rows = history_rows(
        summary,
        date=recording.date,
        window="cumulative" if start is not None else "daily",
        window_start=None if start is None else start.isoformat(),
        stale=stale,
        config_sha256=hashlib.sha256(experiment.text.encode("utf-8")).hexdigest(),
    )
    trend = pd.concat([earlier, rows], ignore_index=True) if len(earlier) else rows
    return dataclasses.replace(readout, summary=summary, history=trend), rows


def store_run(recording: Recording, rows: pd.DataFrame) -> list[str]:
    """Store the run's rows and rebuild the index page; the notes to show (the store's
    files that could not be read and were left out of the index; an index page that is not
    abrank's is left alone, and said so)."""
    from abrank.history import read_history, write_history
    from abrank.render.index_page import write_index

    write_history(recording.root, recording.experiment, recording.date, rows)
    skipped: list[str] = []
    history = read_history(recording.root, skipped=skipped)
    try:
        write_index(recording.root, history, readout_links(recording.root, history))
    except ConfigError as exc:
        return [*skipped, f"index page not written: {exc}"]
    return skipped


def readout_links(root: Path, history: pd.DataFrame) -> dict[str, str]:
    """Each experiment's latest readout, relative to the root: ``<name>/<date>/report.html``
    for a dated one, ``<name>/report.html`` for an undated one, ``<date>/report.html`` for
    a dated one whose folder of dates is the root (:func:`dated_root`; that readout's
    marker must name the experiment); its summary.json when the report was not written."""
    from abrank.analysis.write import readout_experiment

    links: dict[str, str] = {}
    if not len(history):
        return links
    latest = history.groupby("experiment", sort=True)["date"].max()
    for name, date in latest.items():
        name, date = str(name), str(date)
        folders = [Path(name) / date, Path(name)]
        if readout_experiment(root / date) == name:
            folders.append(Path(date))
        for folder in folders:
            for page in ("report.html", "summary.json"):
                if (root / folder / page).is_file():
                    links[name] = (folder / page).as_posix()
                    break
            if name in links:
                break
    return links


def _experiment_history(
    read: Callable[..., pd.DataFrame], recording: Recording, skipped: list[str]
) -> pd.DataFrame:
    """The experiment's rows so far, read by ``read`` (:func:`abrank.history.read_history`)
    (an empty frame with the columns when it has none: no folder yet, or a folder that
    another run has made and not yet written its first date into); files that cannot be
    read are named into ``skipped``."""
    from abrank.history import HISTORY_SCHEMA, history_folder
    from abrank.history.files import date_files

    folder = history_folder(recording.root) / recording.experiment
    if not folder.is_dir() or not date_files(folder, skipped):
        return HISTORY_SCHEMA.empty_table().to_pandas()
    return read(recording.root, recording.experiment, skipped=skipped)
