"""A place abrank cannot write to (a full disk, a read-only file system, no permission) is
the user's environment, not a bug: exit 2, one line naming the path and the system's
reason, never "internal error"; a readout that could not be written leaves the earlier
readout as it was, and no staging folder behind.

Tests may run as root, whom permission bits do not stop, so the failures are simulated
in-process: the open calls that write below a chosen folder raise the OS error a full disk
(ENOSPC) or a read-only file system (EROFS) raises. A real read-only folder is tried too
where the tests run as another user."""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import pytest
from test_cli import run_cli, write_experiment

WRITE_MODES = ("w", "a", "x", "+")


def fail_writes(monkeypatch, below: str, code: int) -> None:
    """Make every open for writing of a path holding ``below`` fail with OS error ``code``
    (Python's ``open``, ``io.open``, which pathlib uses, and ``os.open``)."""
    real_open, real_os_open = builtins.open, os.open

    def guarded(file, mode="r", *args, **kwargs):
        named = isinstance(file, (str, os.PathLike)) and below in str(file)
        if named and any(flag in mode for flag in WRITE_MODES):
            raise OSError(code, os.strerror(code), str(file))
        return real_open(file, mode, *args, **kwargs)

    def guarded_os(path, flags, *args, **kwargs):
        writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        if writing and below in str(path):
            raise OSError(code, os.strerror(code), str(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)
    monkeypatch.setattr(os, "open", guarded_os)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder`` (hidden ones too): file bytes, None for folders."""
    return {
        p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def experiment(tmp_path: Path, monkeypatch) -> Path:
    """test_cli's tiny experiment, run from its folder (readouts go to reports/)."""
    monkeypatch.chdir(tmp_path)
    return write_experiment(tmp_path)


#: the outputs the runs write: the summary and the table (no charts: faster, same writes)
FAST = ("--quiet", "--format", "json,csv")


def refused(capsys, *args: str | Path) -> str:
    code, out, err = run_cli(capsys, "run", *args, *FAST)
    assert code == 2, err
    assert err.startswith("abrank: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err and out == ""
    return err


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.ENOSPC, "no space left on device"), (errno.EDQUOT, "disk quota exceeded")],
)
def test_a_full_disk_while_writing_the_readout_keeps_the_earlier_one(
    experiment, tmp_path, capsys, monkeypatch, code, reason
):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, *FAST)[0] == 0
    before = snapshot(tmp_path)
    fail_writes(monkeypatch, ".readout.tmp-", code)  # the staging folder of the new readout
    err = refused(capsys, experiment, "--out", folder, "--seed", "5")
    assert err == f"abrank: error: {folder}: expected room to write the readout, got {reason}\n"
    assert snapshot(tmp_path) == before  # the earlier readout, and no staging folder left


def test_a_read_only_file_system_under_the_readout_names_the_folder(
    experiment, tmp_path, capsys, monkeypatch
):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, *FAST)[0] == 0
    before = snapshot(tmp_path)
    fail_writes(monkeypatch, ".readout.tmp-", errno.EROFS)
    err = refused(capsys, experiment, "--out", folder, "--seed", "5")
    assert err == (
        f"abrank: error: {folder}: expected a folder abrank can write, got read-only file system\n"
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.ENOSPC, "no space left on device"), (errno.EROFS, "read-only file system")],
)
@pytest.mark.parametrize("place", ["history", "index.html"])
def test_a_full_or_read_only_reports_root_names_the_file_it_could_not_write(
    experiment, capsys, monkeypatch, code, reason, place
):
    # the history store and the index page lie in the reports root, beside the readout
    assert run_cli(capsys, "run", experiment, *FAST)[0] == 0
    fail_writes(monkeypatch, f"reports/{place}" if place == "history" else "index.html", code)
    err = refused(capsys, experiment, "--seed", "5")
    path, _, said = err.removeprefix("abrank: error: ").rstrip("\n").rpartition(": ")
    assert said == reason
    assert Path(path).parent == Path("reports/history/tiny" if place == "history" else "reports")
    leftovers = [p for p in Path("reports").rglob(".*") if ".tmp-" in p.name]
    assert leftovers == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_a_real_read_only_output_folder(experiment, tmp_path, capsys):
    folder = tmp_path / "locked" / "readout"
    folder.parent.mkdir()
    folder.parent.chmod(0o555)
    try:
        err = refused(capsys, experiment, "--out", folder)
    finally:
        folder.parent.chmod(0o755)
    assert err == (
        f"abrank: error: {folder}: expected a folder abrank can write, got permission denied "
        f"(in {folder.parent})\n"
    )
    assert list(folder.parent.iterdir()) == []
