"""``abrank run --verbose``: where a run's time went, stage by stage, the engine's statements
within the stage that ran them."""

from __future__ import annotations

import re
import time

import pytest
from click_logs import make_log, write_experiment

from abrank.cli import main
from abrank.timings import StageClock, record_statement, statements_timed

LINE = re.compile(r"^\s+(?P<seconds>\d+\.\d\d)  (?P<what>.+)$")


def breakdown(err: str) -> list[tuple[float, str, bool]]:
    """(seconds, what, indented: an engine statement) of each line of the breakdown."""
    lines = err.split("where the time went (wall seconds):\n", 1)[1].splitlines()
    out = []
    for line in lines:
        match = LINE.match(line)
        if match is None:
            break
        indented = line.startswith(" " * 11)
        out.append((float(match["seconds"]), match["what"], indented))
    return out


def test_the_clock_times_each_stage_and_its_statements():
    clock = StageClock(time.perf_counter() - 0.5)
    with statements_timed(clock.statement):
        clock.progress("[   0.0s] aggregating on duckdb (log.parquet)")
        record_statement("kept abrank_impressions", 0.25)
        time.sleep(0.3)
        clock.begin("writing the readout (json)")
    record_statement("not asked for", 9.0)  # outside statements_timed: not counted
    rows = [(s.name, s.statements) for s in clock.stages]
    assert rows == [
        ("start-up: Python and the command's imports", []),
        ("reading the config, resolving the inputs", []),
        ("aggregating on duckdb (log.parquet)", [("kept abrank_impressions", 0.25)]),
        ("writing the readout (json)", []),
    ]
    assert clock.stages[0].seconds == pytest.approx(0.5, abs=0.05)
    assert clock.stages[2].seconds >= 0.3
    text = "\n".join(clock.lines())
    parsed = breakdown(text + "\n")
    assert parsed[3] == (0.25, "engine: kept abrank_impressions", True)
    outside = parsed[4]
    assert outside[1] == "outside the engine's statements" and outside[2]
    assert outside[0] == pytest.approx(parsed[2][0] - 0.25, abs=0.011)
    stages = [seconds for seconds, _, indented in parsed if not indented]
    assert stages[-1] == pytest.approx(sum(stages[:-1]), abs=0.03)  # "in all"


def test_verbose_run_on_duckdb_says_where_the_time_went(tmp_path, capsys):
    pytest.importorskip("duckdb")
    make_log(impressions=1500).to_parquet(tmp_path / "log.parquet")
    config = write_experiment(tmp_path, extra="engine: duckdb\n")
    code = main(
        ["run", str(config), "--format", "json", "--out", str(tmp_path / "out"), "--no-history"]
        + ["--verbose"]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "] aggregating on duckdb" in err  # the progress lines are still shown
    parsed = breakdown(err)
    names = [what for _, what, indented in parsed if not indented]
    assert names[0] == "reading the config, resolving the inputs"  # no start-up: in-process
    assert names[1].startswith("aggregating on duckdb")
    assert "comparing arms on per-unit sums" in names
    assert names[-2:] == ["writing the readout (json)", "in all"]
    statements = [what for _, what, indented in parsed if indented]
    # one pass over the log kept its impressions; the sums and the rest read those
    assert statements[0] == "engine: kept abrank_impressions"
    assert any(re.fullmatch(r"engine: query, [\d,]+ rows back", s) for s in statements)


def test_without_verbose_no_breakdown(tmp_path, capsys):
    pytest.importorskip("duckdb")
    make_log(impressions=600).to_parquet(tmp_path / "log.parquet")
    config = write_experiment(tmp_path, extra="engine: duckdb\n")
    out = str(tmp_path / "out")
    assert main(["run", str(config), "--format", "json", "--out", out, "--no-history"]) == 0
    assert "where the time went" not in capsys.readouterr().err
