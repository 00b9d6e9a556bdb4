"""The files a run reads, resolved once: dates, windows, globs and folders, formats, fingerprints.

:func:`resolve_inputs` turns an experiment's paths (``Experiment.input_paths``) into the
files of this run, one :class:`InputFiles` per config key, before any is read; every
loader, on every engine and for every design, reads what it holds instead of working the
paths out again:

- the **dates**: the logs (``log:``, the arms' rankings or impression logs) are read for
  every date of the run's window (one date for ``window: daily``, START through the run
  date for a cumulative window) and joined as one log; judgments, per-query attributes,
  covariates and an interleaving test's source rankings describe the experiment rather
  than a day's traffic, so a ``{date}`` in their paths takes the run's date only. A
  ``{date}`` path without a run date is refused here (:func:`check_dated`);
- the **files** of a log path: the file itself, or the files of a glob or a folder, listed
  once by the one expander (:func:`abrank.io.files.expand_pattern`, whose rule on hidden
  files every engine and the config's checks share);
- the **format** of each file, detected once (:func:`abrank.io.detect_format`, declared in
  the config or from the file), as the file's reader takes it;
- the **fingerprint** (sha256) of each file, computed when first asked for and kept for
  the rest of the run: the readout's ``inputs`` and the history's ``inputs_sha256`` (the
  ``schedule.stale`` check) come from it.

Listing, detection and hashing are lazy: each happens when a loader first needs it, so
that a run refuses its inputs in the order it reads them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from abrank.config import Experiment
from abrank.config.dates import fill_date, is_dated
from abrank.config.engine import is_pattern
from abrank.config.judgments import source_keys
from abrank.design_registry import DESIGNS
from abrank.errors import ConfigError, DataError

__all__ = [
    "LOG_KEYS",
    "InputFiles",
    "Inputs",
    "arm_key",
    "check_dated",
    "display_path",
    "missing_input_error",
    "missing_inputs",
    "resolve_inputs",
]

#: the config keys whose paths may name a day's traffic (an interleaving test's arms name
#: its source rankings instead: :func:`resolve_inputs`)
LOG_KEYS = ("log.path", "control.path", "treatments[")

#: what a file holds -> whether :func:`~abrank.io.detect_format` reads it as judgments
#: (a TREC file then being qrels), as the file's reader does
_AS_JUDGMENTS = {"rankings": False, "impressions": True, "judgments": True, "table": False}


@dataclasses.dataclass(frozen=True)
class InputFiles:
    """The files of one config key for this run.

    ``paths`` are the template's paths of the dates read (one per date of the window for a
    log, the run date's for the others; the template itself when it holds no ``{date}``);
    :attr:`files` are the files they name, in reading order. ``holds`` says what the files
    are read as (``rankings``, ``impressions``, ``judgments``, ``table``), which decides how
    a format is detected; ``declared`` is the config's ``format`` (None: detected).
    """

    key: str  # the config key: log.path, control.path, treatments[0].path, judgments.path, ...
    role: str  # as summary.json's inputs name it: log, control, treatment, judgments, ...
    arm: str | None  # the arm the files belong to (None: the log, judgments, tables)
    holds: str
    declared: str | None
    template: str  # the path as configured (relative paths resolved), {date} unfilled
    dates: tuple[dt.date, ...]  # the dates of ``paths`` (empty: an undated template)
    paths: tuple[str, ...]
    #: a log path may name a glob or a folder of files (the other keys name one file each)
    expands: bool
    #: what was found out so far: path -> its files, file -> its format, file -> its sha256
    _found: dict[tuple[str, str], Any] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def files_of(self, path: str) -> list[str]:
        """The files of one of :attr:`paths`, listed once: the files of a glob or a folder
        (:func:`~abrank.io.files.expand_pattern`; none is a DataError naming the path),
        else the path itself."""
        from abrank.io.files import expand_pattern

        cached = self._found.get(("files", path))
        if cached is None:
            if not self.expands:
                cached = [path]
            else:
                cached = expand_pattern(path, display_path(path))
                if not cached:
                    raise DataError(f"{display_path(path)}: expected log files, got none matching")
            self._found["files", path] = cached
        return list(cached)

    @property
    def files(self) -> list[str]:
        """Every file of the key, in reading order (date by date, each path's files sorted)."""
        return [file for path in self.paths for file in self.files_of(path)]

    @property
    def file(self) -> str:
        """The first file (the only one of a key read on one date that names one file)."""
        return self.files[0]

    def format_of(self, file: str) -> str:
        """The format of one of the files, detected once: as declared, else from its name or
        its first line (:func:`abrank.io.detect_format`; DataError when neither tells)."""
        from abrank.io.detect import detect_format

        fmt = self._found.get(("format", file))
        if fmt is None:
            fmt = detect_format(file, self.declared, judgments=_AS_JUDGMENTS[self.holds])
            self._found["format", file] = fmt
        return fmt

    @property
    def format(self) -> str:
        """The format of the first file, which an SQL engine reads all of them as."""
        return self.format_of(self.file)

    def sha256(self, file: str) -> str:
        """The sha256 of one of the files' bytes, computed once per run."""
        digest = self._found.get(("sha256", file))
        if digest is None:
            hasher = hashlib.sha256()
            with open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    hasher.update(block)
            digest = hasher.hexdigest()
            self._found["sha256", file] = digest
        return digest

    def entry(self, file: str, rows: int, *, fingerprint: bool = True) -> dict[str, Any]:
        """The readout's ``inputs`` entry of one file read: role, arm, the path as shown,
        sha256 (None unless ``fingerprint``: filled later, e.g. by
        :func:`abrank.analysis.engine.fingerprints_in_background`) and rows."""
        return {
            "role": self.role,
            "arm": self.arm,
            "path": display_path(file),
            "sha256": self.sha256(file) if fingerprint else None,
            "rows": int(rows),
        }

    def missing(self) -> list[str]:
        """The paths that name no file (yet): a file that does not exist, a glob or folder
        with no file (or a match that no reader may open). A path that exists but cannot be
        read is not missing: its reader names the problem."""
        from abrank.io.files import path_problem

        gone = []
        for path in self.paths:
            if self.expands and is_pattern(path, Path(path)):
                try:
                    self.files_of(path)
                except DataError:
                    gone.append(path)
            elif path_problem(path) == "no such file":
                gone.append(path)
        return gone

    def to_dict(self) -> dict[str, Any]:
        """The key, role, arm, what the files hold, the template, the dates and paths, as
        JSON-safe builtins (listing, formats and fingerprints are left to the run)."""
        return {
            "key": self.key,
            "role": self.role,
            "arm": self.arm,
            "holds": self.holds,
            "format": self.declared,
            "template": self.template,
            "dates": [day.isoformat() for day in self.dates],
            "paths": list(self.paths),
        }


@dataclasses.dataclass(frozen=True)
class Inputs:
    """Every input of one run (:func:`resolve_inputs`), in the config's order
    (``Experiment.input_paths``): the logs or arms, judgments, attributes, covariates."""

    date: dt.date | None  # the run date (None: an undated run)
    sources: tuple[InputFiles, ...]

    def get(self, key: str) -> InputFiles | None:
        """The files of a config key (``judgments.path``), None when the config has none."""
        return next((source for source in self.sources if source.key == key), None)

    def __getitem__(self, key: str) -> InputFiles:
        source = self.get(key)
        if source is None:
            raise KeyError(key)
        return source

    def missing(self) -> list[tuple[str, str]]:
        """(config key, path) of each input this run needs that does not exist (yet)."""
        return [(source.key, path) for source in self.sources for path in source.missing()]

    def to_dict(self) -> dict[str, Any]:
        """The run date and every key's resolution, as JSON-safe builtins."""
        return {
            "date": None if self.date is None else self.date.isoformat(),
            "sources": [source.to_dict() for source in self.sources],
        }


#: The role (``inputs[].role`` of a readout) of a judgments source of each kind.
JUDGMENT_ROLES = {"human": "judgments", "machine": "machine_judgments"}


def resolve_inputs(experiment: Experiment) -> Inputs:
    """The inputs of this run of ``experiment``: each config key's paths of the dates it
    reads; ConfigError for a ``{date}`` path without a run date (:func:`check_dated`)."""
    check_dated(experiment)
    configs = _configs(experiment)
    window: list[dt.date] = []
    sources = []
    for key, template in experiment.input_paths():
        config, role, arm, holds, log = configs[key]
        dates: tuple[dt.date, ...] = ()
        if experiment.date is not None and is_dated(template):
            if log and not window:
                window = experiment.window_dates
            dates = tuple(window) if log else (experiment.date,)
        paths = tuple(fill_date(template, day) for day in dates) or (template,)
        sources.append(
            InputFiles(key, role, arm, holds, config.format, template, dates, paths, expands=log)
        )
    return Inputs(experiment.date, tuple(sources))


def _configs(experiment: Experiment) -> dict[str, tuple[Any, str, str | None, str, bool]]:
    """Per config key: its config section, role, arm, what its files hold, and whether it
    is a log (read for every date of the window, a glob or a folder allowed)."""
    # what the design's arms hold: an online test's are impression logs; an interleaving
    # test's name the source rankings behind its one log, read on the run date
    arm_holds, arm_logs = DESIGNS.of(experiment).arm_holds(experiment)
    found: dict[str, tuple[Any, str, str | None, str, bool]] = {
        "log.path": (experiment.log, "log", None, "impressions", True),
        **{
            key: (source, JUDGMENT_ROLES[source.kind], None, "judgments", False)
            for key, source in source_keys(experiment.judgments)
        },
        "segments.attributes.path": (
            experiment.segments.attributes,
            "attributes",
            None,
            "table",
            False,
        ),
        "analysis.covariates.path": (
            experiment.analysis.covariates,
            "covariates",
            None,
            "table",
            False,
        ),
    }
    for index, arm in enumerate(experiment.arms):
        key = arm_key(index)
        role = "control" if index == 0 else "treatment"
        found[key] = (arm, role, arm.name, arm_holds, arm_logs)
    for index, candidate in enumerate(experiment.candidates):
        found[f"candidates[{index}].path"] = (
            candidate,
            "candidate",
            candidate.name,
            "rankings",
            False,
        )
    return found


def arm_key(index: int) -> str:
    """The config key of the path of ``experiment.arms[index]`` (the control first)."""
    return "control.path" if index == 0 else f"treatments[{index - 1}].path"


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


def missing_inputs(experiment: Experiment) -> list[tuple[str, str]]:
    """(config key, path) of each input a run of ``experiment`` needs that does not exist
    (yet): :meth:`Inputs.missing` of its :func:`resolve_inputs`."""
    return resolve_inputs(experiment).missing()


def display_path(path: str | Path) -> str:
    """A path relative to the working folder when it lies below it (stable across machines)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def missing_input_error(key: str, file: str, day: str) -> DataError:
    """The error of a dated run whose input ``file`` (config ``key``) is not there (yet),
    as ``run`` and ``validate --date`` report it."""
    return DataError(
        f"{display_path(file)}: {key}: expected the input of {day}, got no such file "
        "(--missing skip exits 99 instead)"
    )
