"""Writing a readout folder atomically, and the rules for which folders may be replaced.

A readout is built in a hidden staging folder beside its destination and moved into place
only when complete, so a failed or killed run never leaves a half-written folder and never
damages an earlier readout. The :data:`READOUT_MARKER` file marks a folder as abrank's own.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable, Collection
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from abrank._lazy import pandas as pd
from abrank.config import Experiment
from abrank.config.dates import fill_date, is_dated
from abrank.errors import ConfigError

if TYPE_CHECKING:  # the readout's modules load when one is written, not to check a folder
    from abrank.readout import Readout

#: What :func:`write_readout` can write: the two reports, summary.json, per_query.csv.
OUTPUT_FORMATS = ("html", "md", "json", "csv")


#: The file that marks a folder as an abrank readout: JSON with the abrank version, the
#: experiment and the files the run wrote. Only a folder holding it, and nothing but those
#: files, is ever replaced by a later run (summary.json alone proves nothing: `--format`
#: can leave it out, and a user's folder may hold a file of that name).
READOUT_MARKER = ".abrank-readout"
_MARKER_FORMAT = 1
_SHOWN = 3  # how many entries of a refused folder a message names
#: OS errors that mean the user's output path cannot be written: bad input (exit 2), not a bug
_UNWRITABLE = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EEXIST,
    errno.ENOTEMPTY,
    errno.ENAMETOOLONG,
}
#: OS errors that mean the disk (or the user's quota) has no room for the readout: exit 2
#: too, with the path and the system's reason; the earlier readout stays as it was
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def default_folder(
    experiment_name: str, out: str | Path | None = None, configured: str | None = None
) -> Path:
    """Where a readout goes: ``--out``, else the config's ``output``, else ``reports/<name>``."""
    if out is not None:
        return Path(out)
    if configured is not None:
        return Path(configured)
    return Path("reports") / experiment_name


def readout_folder(experiment: Experiment, out: str | Path | None = None) -> Path:
    """Where a run's readout goes: :func:`default_folder`, and for a dated run its
    ``<YYYY-MM-DD>/`` inside (or the config's ``output`` with its ``{date}`` filled)."""
    if experiment.date is None:
        return default_folder(experiment.name, out, experiment.output)
    if out is None and is_dated(experiment.output):
        return Path(fill_date(str(experiment.output), experiment.date))
    return default_folder(experiment.name, out, experiment.output) / experiment.date.isoformat()


def check_output_folder(folder: str | Path, *, within: str | Path | None = None) -> None:
    """Refuse an output path that a readout may not be written to, before any work is done.

    abrank never deletes, renames or replaces anything it did not write. A readout may go
    to a path that does not exist yet, to an empty folder, or over an earlier readout: a
    folder holding the :data:`READOUT_MARKER` file and only the files that marker lists.
    Anything else raises :class:`ConfigError` naming the path and what lies there: the
    working folder (or one holding it), a file, a symbolic link, a folder with other
    content, a place the user may not write. :func:`write_readout` checks again; the CLI
    calls this first so that a bad ``--out`` fails before the analysis runs.

    ``within`` is the folder that a dated run's readout goes into (``--out``, the config's
    ``output`` or ``reports/<name>``, holding a ``<date>/`` folder per run): it may not be
    a symbolic link either, so that no readout is written through one.
    """
    if within is not None:
        _refuse_link(Path(within))
    _output_state(Path(folder))


def write_readout(
    readout: Readout, folder: str | Path, *, formats: Collection[str] = OUTPUT_FORMATS
) -> list[Path]:
    """Write the readout into ``folder`` atomically: built aside, then swapped into place.

    The files are written into a hidden staging folder beside ``folder``
    (``.NAME.tmp-<pid>``) and moved into place only when complete, so a failed run leaves
    no partial readout and never damages an earlier one. Every readout holds the
    :data:`READOUT_MARKER` file, by which a later run knows the folder is abrank's to
    replace; :func:`check_output_folder` says what is refused. Once the new readout is in
    place, staging folders left by killed earlier runs are removed, but only those that
    match abrank's own names and hold the marker. Returns the files written.
    """
    unknown = sorted(set(formats) - set(OUTPUT_FORMATS))
    if unknown:
        raise ConfigError(
            f"--format: expected some of {', '.join(OUTPUT_FORMATS)}, got {', '.join(unknown)}"
        )

    def fill(staging: Path) -> None:
        _fill(readout, staging, formats)

    return write_folder(folder, readout.summary.get("experiment", {}).get("name"), fill)


def _fill(readout: Readout, staging: Path, formats: Collection[str]) -> None:
    """Write the readout's files of ``formats`` into ``staging``.

    The charts are sent to the chart workers first, and summary.json, per_query.csv and
    the chart data are written while they draw (when the run fails meanwhile, their
    drawing is dropped); then the reports and charts.
    """
    from abrank.readout import summary_json, write_chart_data

    rendered = tuple(f for f in ("html", "md") if f in formats)
    report = None
    if rendered:
        from abrank.render.files import start_report

        report = start_report(readout, staging, formats=rendered)
    try:
        if "json" in formats:
            (staging / "summary.json").write_text(summary_json(readout.summary), encoding="utf-8")
        if "csv" in formats:
            _write_csv(readout.per_query, staging / "per_query.csv")
            write_explanation(readout, staging)
        if report is not None:
            write_chart_data(readout, staging)  # so that the folder can be rendered again
    except BaseException:
        if report is not None:
            report.discard()
        raise
    if report is not None:
        report.write()


EXPLANATION_FILES = ("queries.parquet", "rankings.parquet")
"""The explanation tables a readout holds when its design makes them (abrank.explain)."""


def write_explanation(readout: Readout, staging: Path) -> None:
    """queries.parquet and rankings.parquet, when the readout has them."""
    if readout.queries is None or readout.rankings is None:
        return
    for name, frame in zip(EXPLANATION_FILES, (readout.queries, readout.rankings), strict=True):
        frame.to_parquet(staging / name, index=False, compression="zstd")  # a third smaller


def write_folder(folder: str | Path, name: str | None, fill: Callable[[Path], None]) -> list[Path]:
    """Write a folder of files atomically, as :func:`write_readout` writes a readout:
    ``fill(staging)`` writes the files into a hidden staging folder, which then takes the
    place of ``folder`` (the same output rules, the :data:`READOUT_MARKER` naming the
    experiment ``name``). Returns the files written."""
    folder = Path(folder)
    _output_state(folder)
    staging = _hidden_sibling(folder, "tmp")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clear_own_leftover(staging, folder)
        staging.mkdir()
    except OSError as exc:
        raise _write_error(folder, exc) from exc
    try:
        _mark(staging, name, None)
        fill(staging)
        written = [
            p.relative_to(staging).as_posix()
            for p in staging.rglob("*")
            if p.is_file() and p != staging / READOUT_MARKER
        ]
        _mark(staging, name, sorted(written))
        _swap_into_place(staging, folder)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _write_error(folder, exc) from exc
        raise
    _remove_leftovers(folder)
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """CSV through Arrow's writer: full float precision, empty cells for missing values, and
    text cells that a spreadsheet would run as formulas quoted (:mod:`abrank.readout.csv_cells`)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from abrank.readout.csv_cells import escape_text_columns

    options = pcsv.WriteOptions(quoting_style="needed")
    table = pa.Table.from_pandas(escape_text_columns(frame), preserve_index=False)
    pcsv.write_csv(table, path, options)


def _swap_into_place(staging: Path, folder: Path) -> None:
    """Move the complete staging folder to ``folder``.

    The output path is checked again (it may have changed while the readout was built). A
    new path or an empty folder takes the staging folder by one rename, which the OS
    refuses over a file or a non-empty folder. An earlier readout is first renamed aside,
    put back if the second rename fails, and deleted only once the new one is in place.
    """
    if _output_state(folder) != "readout":
        os.replace(staging, folder)
        return
    retired = _hidden_sibling(folder, "old")
    _clear_own_leftover(retired, folder)
    os.replace(folder, retired)
    try:
        os.replace(staging, folder)
    except BaseException:
        os.replace(retired, folder)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _output_state(folder: Path) -> str:
    """``"new"``, ``"empty"`` or ``"readout"``; a ConfigError for a path abrank may not use."""
    from abrank.io.files import path_problem

    problem = path_problem(folder)
    if problem is not None and problem.startswith(("a path holding", "a file name longer")):
        raise ConfigError(f"{folder}: expected a usable output path, got {problem}")
    try:
        target = folder.resolve()
        here = Path.cwd().resolve()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"{folder}: expected a usable output path, got {_reason(exc)}") from None
    if target == here or target in here.parents:
        which = "the working folder" if target == here else "a folder holding the working folder"
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got {which}; abrank never replaces it "
            "(name a new or empty folder, or an earlier readout)"
        )
    _refuse_link(folder)
    if not folder.exists():
        _check_writable_parent(folder)
        return "new"
    if not folder.is_dir():
        kind = "a file" if folder.is_file() else "a special file (not a folder)"
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got {kind}; abrank never replaces "
            "files it did not write"
        )
    try:
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        raise ConfigError(
            f"{folder}: expected a folder abrank can read, got {_reason(exc)}"
        ) from None
    _check_writable_parent(folder)
    if not entries:
        return "empty"
    foreign = _foreign_entries(folder)
    if foreign is None:
        raise ConfigError(
            f"{folder}: expected a new folder, an empty one or an earlier abrank readout, got a "
            f"folder holding {_shown(entries)} without the {READOUT_MARKER} marker of a readout; "
            "abrank replaces only folders it wrote"
        )
    if foreign:
        raise ConfigError(
            f"{folder}: expected an abrank readout holding only the files abrank wrote, got "
            f"other files too: {_shown(foreign)}; move them out or choose another output folder"
        )
    return "readout"


def _refuse_link(folder: Path) -> None:
    """A readout folder, or the folder holding a dated run's readouts, may not be a link."""
    if folder.is_symlink():
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got a symbolic link; abrank replaces "
            "only folders it wrote"
        )


def _check_writable_parent(folder: Path) -> None:
    """The nearest existing folder above ``folder`` must be a folder the user may write."""
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got the file {parent} in its path"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{folder}: expected a folder abrank can write, got permission denied (in {parent})"
        )


def readout_experiment(folder: Path) -> str | None:
    """The experiment whose readout ``folder`` holds, by its marker (None: no readout)."""
    marker = _read_marker(folder)
    name = None if marker is None else marker.get("experiment")
    return name if isinstance(name, str) else None


def _read_marker(folder: Path) -> dict[str, Any] | None:
    """The readout marker of ``folder``, or None when it has no valid one."""
    path = folder / READOUT_MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or not isinstance(marker.get("abrank_readout"), int):
        return None
    files = marker.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return marker


def _foreign_entries(folder: Path) -> list[str] | None:
    """Entries of a readout folder that its marker does not list (None: no valid marker)."""
    marker = _read_marker(folder)
    if marker is None:
        return None
    listed = {*marker["files"], READOUT_MARKER}
    parents = {p.as_posix() for name in listed for p in PurePosixPath(name).parents}
    foreign: list[str] = []

    def unreadable(exc: OSError) -> None:
        foreign.append(Path(exc.filename).relative_to(folder).as_posix())

    for root, dirs, files in os.walk(folder, onerror=unreadable):
        base = Path(root).relative_to(folder)
        for name in list(dirs):
            relative = (base / name).as_posix()
            if os.path.islink(os.path.join(root, name)) or relative not in parents:
                foreign.append(relative)
                dirs.remove(name)
        foreign.extend(
            (base / name).as_posix() for name in files if (base / name).as_posix() not in listed
        )
    return sorted(foreign)


def _is_abrank_folder(path: Path) -> bool:
    """A real folder (not a link) that holds a valid readout marker."""
    return path.is_dir() and not path.is_symlink() and _read_marker(path) is not None


def _mark(folder: Path, name: str | None, files: list[str] | None) -> None:
    """The marker of a folder abrank writes for the experiment ``name``."""
    from abrank import __version__

    marker = {
        "abrank_readout": _MARKER_FORMAT,
        "abrank_version": __version__,
        "experiment": name,
        "complete": files is not None,
        "files": files or [],
    }
    (folder / READOUT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def _hidden_sibling(folder: Path, kind: str) -> Path:
    """This process's staging (``tmp``) or retired (``old``) folder beside ``folder``."""
    return folder.parent / f".{folder.name}.{kind}-{os.getpid()}"


def _clear_own_leftover(path: Path, folder: Path) -> None:
    """Make room for this process's hidden folder: a leftover of a dead process that had the
    same pid is removed when abrank wrote it; anything else there is left alone, and refused."""
    if not os.path.lexists(path):
        return
    if not _is_abrank_folder(path):
        raise ConfigError(
            f"{folder}: expected to build the readout beside it in {path.name}, got something "
            "abrank did not write there; move it away"
        )
    shutil.rmtree(path)


def _remove_leftovers(folder: Path) -> None:
    """Remove staging and retired folders of killed earlier runs that wrote ``folder``: only
    names of abrank's own pattern, of processes no longer running, that hold the marker."""
    pattern = re.compile(rf"\.{re.escape(folder.name)}\.(?:tmp|old)-(\d+)")
    try:
        names = os.listdir(folder.parent)
    except OSError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        path = folder.parent / name
        if _is_abrank_folder(path):
            shutil.rmtree(path, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    """Whether a process of that id may still run (when in doubt: yes, so nothing is removed)."""
    if pid == os.getpid() or os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _write_error(folder: Path, exc: OSError) -> Exception:
    """An OS error met while writing, reworded to name the user's output path, not the
    hidden staging folder: a ConfigError (exit 2) when the path cannot be written or the
    disk has no room for the readout."""
    if exc.errno in _UNWRITABLE:
        return ConfigError(f"{folder}: expected a folder abrank can write, got {_reason(exc)}")
    if exc.errno in _NO_ROOM:
        return ConfigError(f"{folder}: expected room to write the readout, got {_reason(exc)}")
    return OSError(exc.errno, f"{folder}: could not write the readout: {exc.strerror or exc}")


def _reason(exc: BaseException) -> str:
    """An OS error's reason in lower case ("permission denied"), without the path."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text[0].lower() + text[1:]


def _shown(names: list[str]) -> str:
    """The first few names, for a message."""
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
