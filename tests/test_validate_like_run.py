"""``abrank validate`` reaches the verdict that ``abrank run`` reaches, on every engine.

validate opens and checks the inputs as run opens them on the same engine (the config's,
or ``--engine``), computing no comparison: every bundled demo config passes both on every
engine, and every bad input fails both with exit 2 and the very same message. An offline
config whose arm path is a glob, on DuckDB or Spark (which read globs), passes both.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from abrank.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEMOS = sorted((ROOT / "experiments").glob("*.yaml"))
ENGINES = ["memory", "duckdb", "spark"]
#: Demos that some SQL engines do not run, with the engines that refuse them and the
#: refusal they give (exit 2): none today (every demo runs on every engine).
MEMORY_ONLY: dict[str, tuple[tuple[str, ...], str]] = {}


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """An engine's name; for spark, with the test session's one SparkSession running (the
    engine then runs on it, and leaves it running)."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    return request.param


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def validate_and_run(capsys, config: Path, engine: str, out: Path):
    """(code, stdout, stderr) of validate, then of a quiet run into ``out``."""
    checked = cli(capsys, "validate", config, "--engine", engine)
    ran = cli(
        capsys, "run", config, "--engine", engine, "--out", out, "--quiet", "--format", "json"
    )
    return checked, ran


# --------------------------------------------------------------------------- the demos


@pytest.mark.slow
@pytest.mark.parametrize("demo", DEMOS, ids=[p.stem for p in DEMOS])
def test_every_demo_config_passes_validate_and_run_on_every_engine(demo, engine, tmp_path, capsys):
    assert {p.name for p in DEMOS} >= {
        "demo-reranker.yaml",
        "demo-online.yaml",
        "demo-interleaving.yaml",
    }
    (code, out, err), (run_code, _, run_err) = validate_and_run(
        capsys, demo, engine, tmp_path / "out"
    )
    refusing, refusal = MEMORY_ONLY.get(demo.stem, ((), ""))
    if engine in refusing:
        assert (code, run_code) == (2, 2)
        assert refusal.format(engine=engine) in err
        assert not (tmp_path / "out").exists()
        return
    assert (code, run_code) == (0, 0), err + run_err
    assert out.startswith(f"{demo}: ok: {demo.stem}: ") and err == ""
    assert (tmp_path / "out" / "summary.json").is_file()
    if engine != "memory":  # the same counts, read where the files lie
        assert cli(capsys, "validate", demo, "--engine", "memory")[1] == out


# --------------------------------------------------------------------------- bad inputs

# Three queries in each arm; every query judged.
CONTROL = "query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq2,c,1\nq2,d,2\nq3,e,1\n"
TREATMENT = "query_id,doc_id,rank\nq1,b,1\nq1,a,2\nq2,d,1\nq2,c,2\nq3,e,1\n"
JUDGMENTS = "query_id\tdoc_id\tgrade\nq1\ta\t1\nq2\td\t2\nq3\te\t1\n"
CONFIG = """name: tiny
control: {{name: old, path: {control}}}
treatments: [{{name: new, path: {treatment}}}]
judgments: {{path: judgments.tsv}}
metrics: [{metric}]
analysis: {{resamples: 200}}
"""


def offline(folder: Path, **changes: str) -> Path:
    """The tiny offline experiment in ``folder``; ``changes`` replace a file's text
    (``control``, ``treatment``, ``judgments``) or a config field (``control_path``,
    ``treatment_path``, ``metric``)."""
    (folder / "control.csv").write_text(changes.get("control", CONTROL))
    (folder / "treatment.csv").write_text(changes.get("treatment", TREATMENT))
    (folder / "judgments.tsv").write_text(changes.get("judgments", JUDGMENTS))
    config = folder / "tiny.yaml"
    config.write_text(
        CONFIG.format(
            control=changes.get("control_path", "control.csv"),
            treatment=changes.get("treatment_path", "treatment.csv"),
            metric=changes.get("metric", "mrr@10"),
        )
    )
    return config


# Two impressions per arm, two results each, in one log with an ``arm`` column.
ONLINE_LOG = {
    "impression_id": ["i1", "i1", "i2", "i2", "i3", "i3", "i4", "i4"],
    "user_id": ["u1", "u1", "u2", "u2", "u3", "u3", "u4", "u4"],
    "rank": [1, 2, 1, 2, 1, 2, 1, 2],
    "doc_id": ["a", "b", "c", "d", "a", "b", "c", "d"],
    "clicked": [1, 0, 0, 0, 0, 1, 1, 0],
    "arm": ["old", "old", "old", "old", "new", "new", "new", "new"],
}
ONLINE_CONFIG = """name: tiny-online
log: {path: log.csv}
control: {name: old}
treatments: [{name: new}]
metrics: [click_rr@10]
analysis: {design: independent, unit: user_id, resamples: 200}
"""
INTERLEAVED_CONFIG = """name: tiny-interleaved
log: {path: log.csv}
control: {name: old}
treatments: [{name: new}]
metrics: [clicks]
analysis: {design: interleaved, unit: user_id, resamples: 200}
"""


def logged(folder: Path, config: str, log: dict) -> Path:
    pd.DataFrame(log).to_csv(folder / "log.csv", index=False)
    path = folder / "tiny.yaml"
    path.write_text(config)
    return path


def online(folder: Path, **columns) -> Path:
    """The tiny online A/B experiment; ``columns`` replace (or, as None, drop) log columns."""
    log = {**ONLINE_LOG, **columns}
    return logged(folder, ONLINE_CONFIG, {k: v for k, v in log.items() if v is not None})


def interleaved(folder: Path, **columns) -> Path:
    """The tiny interleaving experiment: the online log with a ``team`` column."""
    log = {k: v for k, v in ONLINE_LOG.items() if k != "arm"}
    log["team"] = ["old", "new", "new", "old", "old", "new", "new", "old"]
    log.update(columns)
    return logged(folder, INTERLEAVED_CONFIG, {k: v for k, v in log.items() if v is not None})


# case -> (the experiment's writer, what the message must name: the file or field, and
# the problem)
BAD_INPUTS = {
    "missing file": (
        lambda f: offline(f, control_path="gone.csv"),
        ["gone.csv"],
    ),
    "glob matching nothing": (
        lambda f: offline(f, control_path='"ctl-*.csv"'),
        ["ctl-*.csv"],
    ),
    "bad rank": (
        lambda f: offline(f, treatment=TREATMENT.replace("q2,d,1", "q2,d,first")),
        ["treatment.csv", "rank", "first"],
    ),
    "rank zero": (
        lambda f: offline(f, control=CONTROL.replace("q3,e,1", "q3,e,0")),
        ["control.csv", "rank"],
    ),
    "missing judgments column": (
        lambda f: offline(f, judgments="query_id\tdoc_id\nq1\ta\n"),
        ["judgments.tsv", "relevance"],
    ),
    "missing ranking column": (
        lambda f: offline(f, control="query_id,rank\nq1,1\n"),
        ["control.csv", "doc_id"],
    ),
    "duplicate pairs": (
        lambda f: offline(f, treatment=TREATMENT + "q1,a,3\n"),
        ["treatment.csv", "q1", "a"],
    ),
    "no query in common": (
        lambda f: offline(f, judgments="query_id\tdoc_id\tgrade\nq9\ta\t1\n"),
        ["expected queries in common, got none", "q9"],
    ),
    "empty ranking": (
        lambda f: offline(f, control="query_id,doc_id,rank\n"),
        ["control.csv"],
    ),
    "bad metric": (
        lambda f: offline(f, metric="mrr@ten"),
        ["tiny.yaml", "mrr@ten"],
    ),
    "online: missing clicked column": (
        lambda f: online(f, clicked=None),
        ["log.csv", "clicked"],
    ),
    "online: bad clicked value": (
        lambda f: online(f, clicked=[1, 0, 0, 0, 0, 1, 7, 0]),
        ["log.csv", "clicked", "7"],
    ),
    "interleaved: unknown team": (
        lambda f: interleaved(f, team=["old", "new", "new", "old", "old", "new", "other", "old"]),
        ["log.csv", "team", "other"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_a_bad_input_fails_validate_and_run_alike(case, engine, tmp_path, capsys):
    write, named = BAD_INPUTS[case]
    config = write(tmp_path)
    out = tmp_path / "out"
    (code, stdout, err), (run_code, run_out, run_err) = validate_and_run(
        capsys, config, engine, out
    )
    assert (code, run_code) == (2, 2), f"validate: {err}run: {run_err}"
    assert err == run_err  # the very same message
    assert err.startswith("abrank: error: ") and "Traceback" not in err
    assert all(part in err for part in named), err
    assert stdout == run_out == "" and not out.exists()


# --------------------------------------------------------------------------- globs


def test_an_offline_glob_passes_validate_and_run_on_the_sql_engines(engine, tmp_path, capsys):
    # the control's queries split over two files: q1, q2 | q3
    lines = CONTROL.splitlines(keepends=True)
    config = offline(tmp_path, control_path='"control-*.csv"')
    (tmp_path / "control-1.csv").write_text("".join(lines[:5]))
    (tmp_path / "control-2.csv").write_text(lines[0] + lines[5])
    (code, out, err), (run_code, _, run_err) = validate_and_run(
        capsys, config, engine, tmp_path / "out"
    )
    if engine == "memory":  # the memory engine reads one file per arm, in validate as in run
        assert (code, run_code) == (2, 2)
        assert err == run_err
        assert "control.path: expected a file for engine memory" in err
        return
    assert (code, run_code) == (0, 0), err + run_err
    assert out == (
        f"{config}: ok: tiny: old (3 queries), new (3 queries); 3 judged queries; metrics mrr@10\n"
    )


@pytest.mark.parametrize("engine", ["duckdb"])
def test_validate_reads_an_offline_glob_on_the_configs_own_engine(engine, tmp_path, capsys):
    """engine: duckdb in the config, no --engine: validate takes the engine's path."""
    lines = CONTROL.splitlines(keepends=True)
    config = offline(tmp_path, control_path='"control-*.csv"')
    config.write_text(config.read_text() + f"engine: {engine}\n")
    (tmp_path / "control-1.csv").write_text("".join(lines[:3]))
    (tmp_path / "control-2.csv").write_text(lines[0] + "".join(lines[3:]))
    code, out, err = cli(capsys, "validate", config)
    assert code == 0, err
    assert out == (
        f"{config}: ok: tiny: old (3 queries), new (3 queries); 3 judged queries; metrics mrr@10\n"
    )
    args = ["--out", tmp_path / "out", "--quiet", "--format", "json"]
    run_code, _, run_err = cli(capsys, "run", config, *args)
    assert run_code == 0, run_err


def test_a_dated_input_not_there_yet_fails_validate_and_run_alike(engine, tmp_path, capsys):
    config = offline(tmp_path, control_path='"control-{date}.csv"')
    (tmp_path / "control-2026-01-01.csv").write_text(CONTROL)
    out = tmp_path / "out"
    for day, expected in (("2026-01-01", 0), ("2026-01-02", 2)):
        checked = cli(capsys, "validate", config, "--date", day, "--engine", engine)
        options = ["--engine", engine, "--quiet", "--out", out, "--no-history"]
        ran = cli(capsys, "run", config, "--date", day, *options)
        assert (checked[0], ran[0]) == (expected, expected), checked[2] + ran[2]
    missing = tmp_path / "control-2026-01-02.csv"
    assert (
        checked[2]
        == ran[2]
        == (
            f"abrank: error: {missing}: control.path: expected the input of 2026-01-02, got no "
            "such file (--missing skip exits 99 instead)\n"
        )
    )
    assert checked[1] == "" and not (out / "2026-01-02").exists()
