"""Where a readout may be written: abrank never deletes, renames or replaces what it did not
write. Each refusal exits 2 with a message naming the path and what lies there, and leaves
every file of the user as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import CONFIG, run_cli, write_experiment

from abrank.analysis import READOUT_MARKER, check_output_folder
from abrank.errors import ConfigError

READOUT_FILES = {
    READOUT_MARKER,
    "per_query.csv",
    "queries.parquet",
    "rankings.parquet",
    "report.html",
    "report.md",
    "summary.json",
}


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    """The tiny experiment of test_cli in its own folder, ``tmp_path / "exp"``."""
    folder = tmp_path / "exp"
    folder.mkdir()
    return write_experiment(folder)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder`` (hidden ones too): file bytes, None for folders."""
    return {
        p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


def refused(capsys, *args) -> str:
    code, out, err = run_cli(capsys, "run", *args, "--quiet")
    assert code == 2, err
    assert err.startswith("abrank: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""
    return err


def test_output_dot_in_the_config_leaves_the_config_folder_intact(experiment, tmp_path, capsys):
    experiment.write_text(CONFIG + "output: .\n")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment)
    assert f"{experiment.parent}: expected a new folder, an empty one or an earlier abrank" in err
    assert "control.csv, judgments.tsv, tiny.yaml and 1 more" in err
    assert f"without the {READOUT_MARKER} marker" in err
    assert snapshot(tmp_path) == before


def test_out_naming_the_config_folder_leaves_it_intact(experiment, tmp_path, capsys):
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", experiment.parent)
    assert err.startswith(f"abrank: error: {experiment.parent}: expected a new folder")
    assert snapshot(tmp_path) == before


def test_out_naming_the_parent_of_other_readouts_leaves_them_intact(experiment, tmp_path, capsys):
    reports = tmp_path / "reports"
    for name in ("first", "second"):
        code, _, err = run_cli(capsys, "run", experiment, "--out", reports / name, "--quiet")
        assert code == 0, err
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", reports)
    assert f"{reports}: expected a new folder" in err and "holding first, second without" in err
    assert snapshot(tmp_path) == before


def test_a_file_at_the_output_path_is_neither_replaced_nor_renamed(experiment, tmp_path, capsys):
    target = tmp_path / "results"
    target.write_text("my notes\n")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", target)
    assert f"{target}: expected a folder for the readout, got a file" in err
    assert snapshot(tmp_path) == before  # no hidden .results.old-<pid> either
    assert target.read_text() == "my notes\n"


def test_a_file_inside_the_output_path_is_refused(experiment, tmp_path, capsys):
    (tmp_path / "results").write_text("my notes\n")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", tmp_path / "results" / "tiny")
    assert f"got the file {tmp_path / 'results'} in its path" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out", [".", "..", "work/.."])
def test_out_naming_the_working_folder_is_refused(out, experiment, tmp_path, capsys, monkeypatch):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    monkeypatch.chdir(work / "sub" if out == ".." else tmp_path if out == "work/.." else work)
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", out)
    assert err.startswith(f"abrank: error: {out}: expected a folder for the readout, got ")
    assert "working folder; abrank never replaces it" in err
    assert snapshot(tmp_path) == before


def test_out_dot_is_refused_even_in_an_empty_working_folder(
    experiment, tmp_path, capsys, monkeypatch
):
    work = tmp_path / "empty"
    work.mkdir()
    monkeypatch.chdir(work)
    err = refused(capsys, experiment, "--out", ".")
    assert "got the working folder" in err
    assert list(work.iterdir()) == []


def test_a_symbolic_link_at_the_output_path_is_refused(experiment, tmp_path, capsys):
    real = tmp_path / "real"
    code, _, err = run_cli(capsys, "run", experiment, "--out", real, "--quiet")
    assert code == 0, err
    link = tmp_path / "latest"
    link.symlink_to(real, target_is_directory=True)
    before = snapshot(real)
    err = refused(capsys, experiment, "--out", link)
    assert f"{link}: expected a folder for the readout, got a symbolic link" in err
    assert link.is_symlink() and snapshot(real) == before


def test_a_summary_json_without_the_marker_is_not_a_readout(experiment, tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "summary.json").write_text("{}\n")
    err = refused(capsys, experiment, "--out", folder)
    assert f"holding summary.json without the {READOUT_MARKER} marker" in err
    assert snapshot(folder) == {"summary.json": b"{}\n"}


def test_an_empty_folder_may_be_used(experiment, tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    code, _, err = run_cli(capsys, "run", experiment, "--out", folder, "--quiet")
    assert code == 0, err
    assert {p.name for p in folder.iterdir() if p.is_file()} == READOUT_FILES


def test_an_earlier_readout_is_replaced_and_marked(experiment, tmp_path, capsys):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet", "--seed", "1")[0] == 0
    code, _, err = run_cli(capsys, "run", experiment, "--out", folder, "--quiet", "--seed", "2")
    assert code == 0, err
    assert json.loads((folder / "summary.json").read_text())["seed"] == 2
    marker = json.loads((folder / READOUT_MARKER).read_text())
    written = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.name != READOUT_MARKER
    )
    assert marker["files"] == written and "charts/forest.png" in written
    assert marker["abrank_readout"] == 1 and marker["complete"] is True
    assert marker["experiment"] == "tiny" and marker["abrank_version"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp", "readout"]  # nothing left aside


def test_a_readout_with_a_json_only_format_is_still_marked_and_replaceable(
    experiment, tmp_path, capsys
):
    folder = tmp_path / "readout"
    for _ in range(2):
        code, _, err = run_cli(
            capsys, "run", experiment, "--out", folder, "--quiet", "--format", "json"
        )
        assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == [READOUT_MARKER, "summary.json"]
    assert json.loads((folder / READOUT_MARKER).read_text())["files"] == ["summary.json"]


@pytest.mark.parametrize("added", ["notes.txt", "charts/mine.png", "drafts/plan.md"])
def test_a_readout_holding_files_abrank_did_not_write_is_refused(
    added, experiment, tmp_path, capsys
):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet")[0] == 0
    (folder / added).parent.mkdir(exist_ok=True)
    (folder / added).write_text("mine\n")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", folder)
    shown = "drafts" if added.startswith("drafts/") else added
    assert f"{folder}: expected an abrank readout holding only the files abrank wrote" in err
    assert f"got other files too: {shown};" in err
    assert snapshot(tmp_path) == before


def test_an_unwritable_output_folder_is_refused_before_the_analysis(
    experiment, tmp_path, capsys, monkeypatch
):
    # Tests may run as root, for whom permissions do not apply: os.access says no instead.
    parent = tmp_path / "locked"
    parent.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode, **kw: Path(path) != parent and real_access(path, mode)
    )
    code, out, err = run_cli(capsys, "run", experiment, "--out", parent / "tiny")
    assert code == 2 and out == ""
    assert err == (
        f"abrank: error: {parent / 'tiny'}: expected a folder abrank can write, "
        f"got permission denied (in {parent})\n"
    )  # one line: no progress, so nothing was computed
    assert list(parent.iterdir()) == []


def test_a_staging_folder_that_cannot_be_made_names_the_output_path(
    experiment, tmp_path, capsys, monkeypatch
):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet")[0] == 0
    before = snapshot(tmp_path)
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        if Path(path).name.startswith(".readout."):
            raise PermissionError(13, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    err = refused(capsys, experiment, "--out", folder)
    assert (
        err
        == f"abrank: error: {folder}: expected a folder abrank can write, got permission denied\n"
    )
    assert snapshot(tmp_path) == before


def test_a_failed_swap_puts_the_earlier_readout_back(experiment, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet")[0] == 0
    before = snapshot(tmp_path)
    real_replace = os.replace

    def replace(src, dst):
        if Path(src).name.startswith(".readout.tmp-"):  # the new readout cannot move in
            raise PermissionError(13, "Permission denied", str(src))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    err = refused(capsys, experiment, "--out", folder, "--seed", "5")
    assert (
        err
        == f"abrank: error: {folder}: expected a folder abrank can write, got permission denied\n"
    )
    assert snapshot(tmp_path) == before


def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_staging_folders_of_killed_runs_are_removed_only_when_abrank_wrote_them(
    experiment, tmp_path, capsys
):
    folder = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet")[0] == 0
    marker = (folder / READOUT_MARKER).read_bytes()
    gone = dead_pid()

    def leftover(name: str, *, marked: bool) -> Path:
        path = tmp_path / name
        (path / "charts").mkdir(parents=True)
        (path / "charts" / "forest.png").write_bytes(b"half")
        if marked:
            (path / READOUT_MARKER).write_bytes(marker)
        return path

    killed = leftover(f".readout.tmp-{gone}", marked=True)
    retired = leftover(f".readout.old-{gone}", marked=True)
    unmarked = leftover(f".readout.tmp-{gone + 1}", marked=False)  # not abrank's: no marker
    alive = leftover(f".readout.tmp-{os.getppid()}", marked=True)  # a run still going
    other = leftover(f".other.tmp-{gone}", marked=True)  # another output's
    odd = leftover(".readout.tmp-x", marked=True)  # not abrank's pattern
    kept = {p: snapshot(p) for p in (unmarked, alive, other, odd)}

    assert run_cli(capsys, "run", experiment, "--out", folder, "--quiet")[0] == 0
    assert not killed.exists() and not retired.exists()
    assert {p: snapshot(p) for p in kept} == kept


def test_check_output_folder_in_python(tmp_path):
    (tmp_path / "data.csv").write_text("query_id,doc_id,rank\n")
    check_output_folder(tmp_path / "new")  # a new path is fine, and nothing is made
    assert not (tmp_path / "new").exists()
    with pytest.raises(ConfigError, match="got a folder holding data.csv without"):
        check_output_folder(tmp_path)


def user_folder(folder: Path) -> Path:
    """A folder of the user's that looks like an old readout: a summary.json with abrank's
    keys, their own report.md, charts/ of PNGs; no readout marker."""
    (folder / "charts").mkdir(parents=True)
    (folder / "summary.json").write_text('{"abrank_version": "0.1.0", "comparisons": []}')
    (folder / "report.md").write_text("# my own notes\n")
    (folder / "charts" / "forest.png").write_bytes(b"\x89PNG")
    return folder


def test_a_folder_without_the_marker_is_never_taken_for_a_readout(tmp_path):
    """abrank's own file names and a summary.json with abrank's keys prove nothing: only the
    marker makes a folder replaceable."""
    folder = user_folder(tmp_path / "old")
    before = snapshot(folder)
    with pytest.raises(ConfigError, match="without the .abrank-readout marker"):
        check_output_folder(folder)
    assert snapshot(folder) == before


def test_out_on_a_users_summary_and_report_is_refused(experiment, tmp_path, capsys):
    folder = user_folder(tmp_path / "mine")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", folder)
    assert f"{folder}: expected a new folder, an empty one or an earlier abrank readout" in err
    assert f"charts, report.md, summary.json without the {READOUT_MARKER} marker" in err
    assert snapshot(tmp_path) == before


def test_a_dated_run_over_a_users_folder_is_refused(experiment, tmp_path, capsys):
    out = tmp_path / "reports" / "tiny"
    folder = user_folder(out / "2026-01-01")
    before = snapshot(tmp_path)
    err = refused(capsys, experiment, "--out", out, "--date", "2026-01-01")
    assert f"{folder}: expected a new folder" in err and "without the" in err
    assert snapshot(tmp_path) == before


def test_a_backfill_refuses_the_users_folder_and_writes_the_other_dates(
    experiment, tmp_path, capsys
):
    out = tmp_path / "reports" / "tiny"
    folder = user_folder(out / "2026-01-02")
    mine = snapshot(folder)
    code, stdout, err = run_cli(
        capsys, "run", experiment, "--out", out, "--from", "2026-01-01", "--to", "2026-01-03",
        "--format", "json",
    )  # fmt: skip
    assert code == 2, err
    assert f"tiny 2026-01-02: error: {folder}: expected a new folder" in err
    assert "Traceback" not in err
    assert snapshot(folder) == mine
    for day in ("2026-01-01", "2026-01-03"):
        assert (out / day / READOUT_MARKER).is_file()
