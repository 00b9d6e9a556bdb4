"""Where a dated run writes: its readouts, its history and the index page.

A dated run's readouts go to the experiment's folder, one ``<date>/`` folder each: ``--out``,
the config's ``output``, or ``reports/<name>/``. That folder may not be a symbolic link (a
readout is never written through one, as a single run's output may not be one). The history
and the index page go to the reports root: the folder above the experiment's folder when
that folder is named after the experiment (``reports/<name>/``, ``--out X/<name>``), else
the experiment's folder itself (``--out X/out``: nothing is written outside it). The index
page links the readout either way, and the run says where it recorded its history.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from test_cli import run_cli, write_experiment

DAY = "2026-01-01"


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    """The tiny experiment of test_cli (name ``tiny``) in ``tmp_path / "exp"``."""
    folder = tmp_path / "exp"
    folder.mkdir()
    return write_experiment(folder)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder``: file bytes, None for folders and links."""
    return {
        p.relative_to(folder).as_posix(): (None if p.is_dir() or p.is_symlink() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


def index_links(page: Path) -> list[str]:
    return re.findall(r'href="([^"#][^"]*)"', page.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- symbolic links


def linked_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A real folder and a symbolic link to it."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(real, target_is_directory=True)
    return real, link


def test_a_dated_run_refuses_an_out_that_is_a_symbolic_link(experiment, tmp_path, capsys):
    real, link = linked_folder(tmp_path)
    before = snapshot(tmp_path)
    code, out, err = run_cli(capsys, "run", experiment, "--date", DAY, "--out", link, "-q")
    assert code == 2, err
    assert err == (
        f"abrank: error: {link}: expected a folder for the readout, got a symbolic link; "
        "abrank replaces only folders it wrote\n"
    )
    assert out == "" and snapshot(tmp_path) == before  # no readout, no history anywhere


def test_a_backfill_refuses_an_out_that_is_a_symbolic_link(experiment, tmp_path, capsys):
    real, link = linked_folder(tmp_path)
    before = snapshot(tmp_path)
    args = ["--from", DAY, "--to", "2026-01-02", "--out", link, "--format", "json"]
    code, out, err = run_cli(capsys, "run", experiment, *args)
    assert code == 2, err
    for day in (DAY, "2026-01-02"):
        assert (
            f"tiny {day}: error: {link}: expected a folder for the readout, got a symbolic link"
            in err
        )
    assert out == "" and snapshot(tmp_path) == before


def test_a_dated_run_refuses_a_config_output_that_is_a_symbolic_link(experiment, tmp_path, capsys):
    real, link = linked_folder(tmp_path)
    experiment.write_text(experiment.read_text() + f"output: {link}\n")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "run", experiment, "--date", DAY, "-q")
    assert code == 2
    assert f"{link}: expected a folder for the readout, got a symbolic link" in err
    assert snapshot(tmp_path) == before


def test_a_link_above_the_named_folder_is_followed(experiment, tmp_path, capsys):
    """Only the folder named (and the date folder) may not be a link: a reports folder
    kept on another disk through a link above it is the user's own layout."""
    real, link = linked_folder(tmp_path)
    args = ["--date", DAY, "--out", link / "tiny", "-q", "--format", "json"]
    code, _, err = run_cli(capsys, "run", experiment, *args)
    assert code == 0, err
    assert (real / "tiny" / DAY / "summary.json").is_file()
    assert (real / "history" / "tiny" / f"{DAY}.parquet").is_file()


# --------------------------------------------------------------------------- the history


def test_out_named_otherwise_than_the_experiment_holds_its_own_history(
    experiment, tmp_path, capsys
):
    place = tmp_path / "place"
    place.mkdir()
    out = place / "out"
    code, stdout, err = run_cli(capsys, "run", experiment, "--date", DAY, "--out", out)
    assert code == 0, err
    assert sorted(p.name for p in place.iterdir()) == ["out"]  # nothing beside it
    assert sorted(p.name for p in out.iterdir()) == [DAY, "history", "index.html"]
    stored = out / "history" / "tiny" / f"{DAY}.parquet"
    rows = pd.read_parquet(stored)
    assert set(rows["experiment"]) == {"tiny"} and set(rows["date"]) == {DAY}
    # the index page links the readout that the run wrote
    assert index_links(out / "index.html") == [f"{DAY}/report.html"] * 2
    assert (out / DAY / "report.html").is_file()
    # the run says where
    assert f"history: {stored}\n" in stdout
    code, printed, _ = run_cli(capsys, "history", "tiny", "--root", out)
    assert code == 0 and DAY in printed


def test_out_named_after_the_experiment_records_in_the_folder_above(experiment, tmp_path, capsys):
    root = tmp_path / "reports"
    out = root / "tiny"
    args = ["--date", DAY, "--out", out, "--format", "json"]
    code, stdout, err = run_cli(capsys, "run", experiment, *args)
    assert code == 0, err
    assert sorted(p.name for p in root.iterdir()) == ["history", "index.html", "tiny"]
    stored = root / "history" / "tiny" / f"{DAY}.parquet"
    assert stored.is_file() and f"history: {stored}\n" in stdout
    assert index_links(root / "index.html") == [f"tiny/{DAY}/summary.json"] * 2


def test_the_default_folder_records_in_reports(experiment, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run_cli(capsys, "run", experiment, "--date", DAY, "--format", "json")
    assert code == 0, err
    stored = Path("reports") / "history" / "tiny" / f"{DAY}.parquet"
    assert (tmp_path / stored).is_file()
    assert f"history: {stored}\n" in stdout
    links = index_links(tmp_path / "reports" / "index.html")
    assert links == [f"tiny/{DAY}/summary.json"] * 2


def test_a_backfill_into_out_says_where_each_date_is_recorded(experiment, tmp_path, capsys):
    out = tmp_path / "place" / "out"
    args = ["--from", DAY, "--to", "2026-01-02", "--out", out, "--format", "json"]
    code, stdout, err = run_cli(capsys, "run", experiment, *args)
    assert code == 0, err
    lines = stdout.splitlines()
    assert len(lines) == 2
    for line, day in zip(lines, (DAY, "2026-01-02")):
        stored = out / "history" / "tiny" / f"{day}.parquet"
        assert line.startswith(f"tiny {day}: ok: ")
        assert line.endswith(f"; readout {out / day}/; history {stored}")
        assert stored.is_file()
    assert sorted(p.name for p in (tmp_path / "place").iterdir()) == ["out"]
    # without report.html the index links each readout's summary.json
    assert index_links(out / "index.html") == ["2026-01-02/summary.json"] * 2


def test_a_dated_config_output_records_in_the_folder_holding_its_dates(
    experiment, tmp_path, capsys
):
    experiment.write_text(experiment.read_text() + "output: ../dated/{date}\n")
    code, stdout, err = run_cli(capsys, "run", experiment, "--date", DAY, "--format", "json")
    assert code == 0, err
    root = tmp_path / "dated"
    stored = root / "history" / "tiny" / f"{DAY}.parquet"
    printed = re.search(r"^history: (.+)$", stdout, re.MULTILINE).group(1)
    assert stored.is_file() and Path(printed).resolve() == stored
    assert index_links(root / "index.html") == [f"{DAY}/summary.json"] * 2


def test_no_history_line_without_a_recording(experiment, tmp_path, capsys):
    out = tmp_path / "place" / "out"
    args = ["--date", DAY, "--out", out, "--no-history", "--format", "json"]
    code, stdout, err = run_cli(capsys, "run", experiment, *args)
    assert code == 0, err
    assert "history:" not in stdout and sorted(p.name for p in out.iterdir()) == [DAY]
