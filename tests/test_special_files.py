"""Paths that are not regular files (a FIFO), symbolic link loops, NUL bytes and over-long
names, wherever a path is given: the config itself, an arm's rankings, the judgments, a
glob's matches, the covariates, a dated input. Each is refused at once, exit 2, with one
message naming the path; never a hang (opening a FIFO waits for a writer forever), never a
traceback. Every case runs in a subprocess with a timeout, so that a regression fails
instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import CONFIG, write_experiment

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TIMEOUT = 60  # seconds: far more than any of these refusals needs, even on a busy machine

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

LOG = "impression_id,user_id,rank,doc_id,clicked,arm\n" + "".join(
    f"i{i},u{i % 6},{r},d{r},{int(r == 1 + i % 3)},{'bm25' if i % 2 else 'reranker'}\n"
    for i in range(24)
    for r in (1, 2, 3)
)
ONLINE = """name: online
log: {path: log.csv}
control: {name: bm25}
treatments: [{name: reranker}]
metrics: [click_rr@10]
analysis: {design: independent, unit: user_id, resamples: 200, covariates: {path: PRE}}
"""


def abrank(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m abrank ARGS`` in ``cwd``, killed (and the test failed) after TIMEOUT."""
    return subprocess.run(
        [sys.executable, "-m", "abrank", *map(str, args)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def refused(done: subprocess.CompletedProcess, path: Path | str, reason: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("abrank: error: ") and "Traceback" not in done.stderr
    assert str(path) in done.stderr and reason in done.stderr, done.stderr


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """test_cli's tiny offline experiment in ``tmp_path``; returns its folder."""
    write_experiment(tmp_path)
    return tmp_path


def config(folder: Path, text: str, name: str = "exp.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("verb", ["run", "validate"])
def test_a_fifo_as_the_config(tiny, verb):
    path = fifo(tiny / "exp.yaml")
    refused(abrank(verb, path, cwd=tiny), path, "not a regular file (a FIFO)")


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("verb", ["run", "validate"])
@pytest.mark.parametrize("key", ["treatment", "judgments"])
def test_a_fifo_as_an_arm_or_the_judgments(tiny, verb, engine, key):
    fifo(tiny / "pipe.csv")
    old = "treatment.csv" if key == "treatment" else "judgments.tsv"
    exp = config(tiny, CONFIG.replace(old, "pipe.csv") + f"engine: {engine}\n")
    out = ["--out", tiny / "out", "-q"] if verb == "run" else []
    done = abrank(verb, exp, *out, cwd=tiny)
    refused(done, "pipe.csv", "not a regular file (a FIFO)")
    assert not (tiny / "out").exists()


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_dated_input_that_is_a_fifo_on_its_date(tiny, engine):
    # the config names a template: the FIFO is met by the engine's loader, not the config's
    # check, and must be refused there too
    for day in ("2026-01-01", "2026-01-02"):
        (tiny / day).mkdir()
        (tiny / day / "control.csv").write_text((tiny / "control.csv").read_text())
    path = fifo(tiny / "2026-01-02" / "treatment.csv")
    (tiny / "2026-01-01" / "treatment.csv").write_text((tiny / "treatment.csv").read_text())
    text = CONFIG.replace("control.csv", "'{date}/control.csv'").replace(
        "treatment.csv", "'{date}/treatment.csv'"
    )
    exp = config(tiny, text + f"engine: {engine}\n")
    ok = abrank("run", exp, "--date", "2026-01-01", "--out", tiny / "r", "-q", cwd=tiny)
    assert ok.returncode == 0, ok.stderr
    done = abrank("run", exp, "--date", "2026-01-02", "--out", tiny / "r", "-q", cwd=tiny)
    refused(done, path, "not a regular file (a FIFO)")


def test_a_glob_matching_a_fifo_is_refused_naming_the_match(tiny):
    logs = tiny / "logs"
    logs.mkdir()
    (logs / "part-0.csv").write_text((tiny / "treatment.csv").read_text())
    path = fifo(logs / "part-1.csv")
    exp = config(tiny, CONFIG.replace("treatment.csv", "'logs/*.csv'") + "engine: duckdb\n")
    for verb in ("run", "validate"):
        refused(abrank(verb, exp, cwd=tiny), path, "not a regular file (a FIFO)")


def test_a_glob_matching_a_fifo_on_spark_is_refused_before_spark_starts(tiny):
    logs = tiny / "logs"
    logs.mkdir()
    (logs / "part-0.csv").write_text((tiny / "treatment.csv").read_text())
    path = fifo(logs / "part-1.csv")
    exp = config(tiny, CONFIG.replace("treatment.csv", "'logs/*.csv'") + "engine: spark\n")
    refused(abrank("validate", exp, cwd=tiny), path, "not a regular file (a FIFO)")


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("dated", [False, True])
def test_a_fifo_as_the_covariates(tmp_path, engine, dated):
    (tmp_path / "log.csv").write_text(LOG)
    pre = "'pre/{date}.csv'" if dated else "pre.csv"
    path = fifo(tmp_path / ("pre/2026-01-01.csv" if dated else "pre.csv"))
    exp = config(tmp_path, ONLINE.replace("PRE", pre) + f"engine: {engine}\n")
    dates = ["--date", "2026-01-01"] if dated else []
    for verb in ("run", "validate"):
        out = ["--out", tmp_path / "out", "-q"] if verb == "run" else []
        done = abrank(verb, exp, *dates, *out, cwd=tmp_path)
        refused(done, path.name, "not a regular file (a FIFO)")
        assert not (tmp_path / "out").exists()


def test_a_fifo_given_to_metrics_and_compare(tiny):
    path = fifo(tiny / "run.txt")
    qrels = tiny / "judgments.tsv"
    refused(abrank("metrics", qrels, path, "-m", "mrr", cwd=tiny), path, "not a regular file")
    refused(
        abrank("compare", qrels, path, tiny / "treatment.csv", "-m", "mrr", cwd=tiny),
        path,
        "not a regular file",
    )


# --------------------------------------------------------------------------- odd paths


def test_a_symbolic_link_loop_as_an_arm_and_as_the_config(tiny):
    (tiny / "loop.csv").symlink_to("loop.csv")
    exp = config(tiny, CONFIG.replace("treatment.csv", "loop.csv"))
    refused(abrank("validate", exp, cwd=tiny), "loop.csv", "a symbolic link loop")
    (tiny / "loop.yaml").symlink_to("loop.yaml")
    refused(abrank("run", tiny / "loop.yaml", cwd=tiny), "loop.yaml", "a symbolic link loop")
    qrels = tiny / "judgments.tsv"
    done = abrank("metrics", qrels, tiny / "loop.csv", "-m", "mrr", cwd=tiny)
    refused(done, "loop.csv", "a symbolic link loop")


def test_a_nul_byte_in_a_path_of_the_config(tiny):
    exp = config(tiny, CONFIG.replace("path: treatment.csv", 'path: "treat\\0ment.csv"'))
    refused(abrank("validate", exp, cwd=tiny), "treatments[0].path", "a path holding a NUL byte")
    exp = config(tiny, CONFIG + 'output: "out\\0put"\n')
    refused(abrank("run", exp, cwd=tiny), "output", "a path holding a NUL byte")


def test_an_over_long_file_name(tiny):
    name = "x" * 300 + ".csv"
    exp = config(tiny, CONFIG.replace("treatment.csv", name))
    refused(abrank("validate", exp, cwd=tiny), "treatments[0].path", "longer than the system")
    refused(abrank("run", tiny / ("y" * 300 + ".yaml"), cwd=tiny), "yyy", "longer than the")
    qrels = tiny / "judgments.tsv"
    refused(abrank("metrics", qrels, name, "-m", "mrr", cwd=tiny), name, "longer than the")
    done = abrank("run", tiny / "tiny.yaml", "--out", tiny / ("z" * 300), cwd=tiny)
    refused(done, "zzz", "longer than the system allows")


@pytest.mark.parametrize("threads", [100000, 1025, 0])
def test_engine_threads_out_of_bounds_is_refused(tiny, threads):
    # 100,000 DuckDB threads abort the process (exit -6, no message)
    exp = config(tiny, CONFIG + f"engine: {{name: duckdb, threads: {threads}}}\n")
    for verb in ("run", "validate"):
        done = abrank(verb, exp, cwd=tiny)
        refused(done, "engine.threads", f"from 1 to 1024 (this machine has {os.cpu_count()} cores)")
        assert f"got {threads}" in done.stderr


def test_engine_threads_at_the_bound_runs(tiny):
    exp = config(tiny, CONFIG + "engine: {name: duckdb, threads: 1024}\n")
    done = abrank("run", exp, "--out", tiny / "out", "-q", "--format", "json", cwd=tiny)
    assert done.returncode == 0, done.stderr
