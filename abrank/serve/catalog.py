"""Which readouts exist under a reports root: the only names a URL of the explorer may name.

A reports root holds one folder per experiment (``<root>/<name>/``): an undated readout
has its ``summary.json`` there, each dated readout is a folder ``<root>/<name>/<date>/``
(``YYYY-MM-DD``) with its own. Every readout gets a key: the experiment's name for the
undated one, ``<name>@<date>`` for a dated one (``@`` is never part of a name: the config
refuses it). ``/e/<name>`` opens the undated readout, or the latest dated one when there
is none. The history store (``<root>/history``) may also record dates whose folders are
gone: those dates are listed with their recorded rows only.

Names from a URL are looked up here as strings, never joined into a path: a key is either
one the scan found or a 404. A file inside a readout is served only when it is in that
folder's own listing (the ``.abrank-readout`` manifest abrank writes, else the regular
files under the folder, links not followed) and its resolved path stays inside the folder.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abrank.root_names import RESERVED_NAMES

#: The manifest abrank writes into a complete readout folder, listing its files.
MANIFEST = ".abrank-readout"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RESERVED = {name.casefold() for name in RESERVED_NAMES}


@dataclass(frozen=True)
class ReadoutEntry:
    """One readout folder under the root: ``key`` (``name`` or ``name@date``), the
    experiment's ``name``, its ``date`` (None when undated) and its ``folder``."""

    key: str
    name: str
    date: str | None
    folder: Path

    @property
    def has_queries(self) -> bool:
        """Whether the folder holds the explanation tables the query table reads."""
        return (self.folder / "queries.parquet").is_file() and (
            self.folder / "rankings.parquet"
        ).is_file()

    def summary(self) -> dict[str, Any]:
        """summary.json as a dict ({} when it cannot be read: the index still lists it)."""
        try:
            raw = json.loads((self.folder / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return raw if isinstance(raw, dict) else {}

    def files(self) -> frozenset[str]:
        """The folder's own files, relative, ``/``-separated: the manifest's list when the
        folder has one, else every regular file under it (links not followed)."""
        manifest = self.folder / MANIFEST
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8")).get("files")
        except (OSError, ValueError, AttributeError):
            listed = None
        if isinstance(listed, list):
            return frozenset(str(name) for name in listed if isinstance(name, str))
        found = set()
        for top, folders, names in os.walk(self.folder, followlinks=False):
            folders[:] = [f for f in folders if not _DATE.match(f) or top != str(self.folder)]
            for name in names:
                path = Path(top) / name
                if path.is_file() and not path.is_symlink():
                    found.add(path.relative_to(self.folder).as_posix())
        return frozenset(found)

    def file(self, relative: str) -> Path | None:
        """The path of ``relative`` when it is one of :meth:`files` and resolves inside
        the folder (a regular file); None otherwise."""
        if relative not in self.files():
            return None
        base = self.folder.resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        return path

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON-safe builtins."""
        return {"key": self.key, "name": self.name, "date": self.date}


@dataclass(frozen=True)
class Experiment:
    """One experiment under the root: its readouts (the undated one first, then the dated
    ones by date) and the dates its history records."""

    name: str
    readouts: tuple[ReadoutEntry, ...]
    history_dates: tuple[str, ...] = ()

    @property
    def main(self) -> ReadoutEntry | None:
        """What ``/e/<name>`` opens: the undated readout, else the latest dated one."""
        undated = [entry for entry in self.readouts if entry.date is None]
        if undated:
            return undated[0]
        return self.readouts[-1] if self.readouts else None

    def to_dict(self) -> dict[str, Any]:
        """The experiment as JSON-safe builtins."""
        return {
            "name": self.name,
            "readouts": [entry.to_dict() for entry in self.readouts],
            "history_dates": list(self.history_dates),
        }


class Catalog:
    """The readouts under ``root``, scanned again on each call (a listing of a few
    folders: a readout written while the server runs shows up at once)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _names(self) -> list[str]:
        """The folders directly under the root that may be experiments (a name a config
        may give, not abrank's own, not a link), by name."""
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return []
        return sorted(
            entry.name
            for entry in entries
            if _NAME.match(entry.name)
            and entry.name.casefold() not in _RESERVED
            and entry.is_dir(follow_symlinks=False)
        )

    def _readouts_of(self, name: str) -> list[ReadoutEntry]:
        """The readouts of experiment ``name`` (one of :meth:`_names`): the undated one,
        then the dated ones by date."""
        folder = self.root / name
        readouts = []
        if (folder / "summary.json").is_file():
            readouts.append(ReadoutEntry(name, name, None, folder))
        try:
            dated = sorted(
                sub.name
                for sub in os.scandir(folder)
                if _DATE.match(sub.name) and sub.is_dir(follow_symlinks=False)
            )
        except OSError:
            dated = []
        for day in dated:
            if (folder / day / "summary.json").is_file():
                readouts.append(ReadoutEntry(f"{name}@{day}", name, day, folder / day))
        return readouts

    def experiments(
        self, history_dates: dict[str, tuple[str, ...]] | None = None
    ) -> list[Experiment]:
        """Every experiment with a readout folder (or, given ``history_dates``, a history),
        by name."""
        found = {name: self._readouts_of(name) for name in self._names()}
        found = {name: readouts for name, readouts in found.items() if readouts}
        dates = history_dates or {}
        names = sorted(set(found) | set(dates))
        return [Experiment(name, tuple(found.get(name, [])), dates.get(name, ())) for name in names]

    def readouts(self) -> dict[str, ReadoutEntry]:
        """Every readout by key; ``<name>`` also names an experiment's main readout."""
        keyed: dict[str, ReadoutEntry] = {}
        for experiment in self.experiments():
            for entry in experiment.readouts:
                keyed[entry.key] = entry
            main = experiment.main
            if main is not None:
                keyed.setdefault(experiment.name, main)
        return keyed

    def find(self, key: str) -> ReadoutEntry | None:
        """The readout of ``key``, or None: its experiment's name is compared, as a string,
        with the folders the root lists, and the key with that experiment's readouts'
        keys (one folder scanned, however many experiments the root holds)."""
        name = key.partition("@")[0]
        if name not in self._names():
            return None
        readouts = self._readouts_of(name)
        if not readouts:
            return None
        if key == name:
            return Experiment(name, tuple(readouts)).main
        return next((entry for entry in readouts if entry.key == key), None)
