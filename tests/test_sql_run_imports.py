"""A run that writes summary.json only, on an SQL engine, imports no report stack.

``abrank run --format json --engine duckdb`` is the scheduled job whose readout a
warehouse reads: the engine does the work, and the process should not pay for matplotlib,
statsmodels, scipy.stats or the Markdown, HTML and chart modules of :mod:`abrank.render`
(a few tenths of a second of a run of a few seconds). Each run happens in a fresh
interpreter whose modules are then listed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click_logs import make_log, write_experiment

pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parent.parent

#: What only the reports and charts need.
REPORT_STACK = (
    "matplotlib",
    "statsmodels",
    "scipy.stats",
    "abrank.render.charts",
    "abrank.render.html",
    "abrank.render.markdown",
    "abrank.readout.charts",
)

_PROBE = (
    "import json, sys\n"
    "from abrank.cli import main\n"
    "code = main(json.loads(sys.argv[1]))\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)


def modules_of_run(args: list[str]) -> set[str]:
    """The modules loaded by ``abrank ARGS`` in a fresh interpreter (which must succeed)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr[-2000:]
    return set(report["modules"])


def loaded(modules: set[str], package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in modules)


def online_run(tmp_path: Path, formats: str) -> list[str]:
    # 3,000 users: more than the sample-ratio check's exact test is for (under 1,000
    # expected units an arm, where it does use scipy.stats)
    make_log(impressions=12_000).to_parquet(tmp_path / "log.parquet")
    config = write_experiment(tmp_path, extra="engine: duckdb\n")
    out = tmp_path / f"out-{formats.replace(',', '-')}"
    return ["run", str(config), "--format", formats, "--out", str(out), "--no-history", "-q"]


def offline_run(tmp_path: Path, formats: str) -> list[str]:
    qrels = "".join(f"q{q} 0 d{d} {int(d % 3 == q % 3)}\n" for q in range(40) for d in range(6))
    (tmp_path / "qrels.txt").write_text(qrels)
    for arm, shift in (("control", 0), ("treatment", 1)):
        lines = "".join(
            f"q{q} Q0 d{(d + shift * q) % 6} {d + 1} {10 - d} {arm}\n"
            for q in range(40)
            for d in range(6)
        )
        (tmp_path / f"{arm}.run").write_text(lines)
    config = tmp_path / "offline.yaml"
    config.write_text(
        "name: imports\n"
        "control: {name: control, path: control.run}\n"
        "treatments: [{name: treatment, path: treatment.run}]\n"
        "judgments: {path: qrels.txt}\n"
        "metrics: [mrr@10, ndcg@5]\n"
        "analysis: {resamples: 200}\n"
        "engine: duckdb\n"
    )
    out = tmp_path / f"out-{formats.replace(',', '-')}"
    return ["run", str(config), "--format", formats, "--out", str(out), "--no-history", "-q"]


@pytest.mark.parametrize("experiment", [online_run, offline_run])
def test_a_json_only_run_on_duckdb_imports_no_report_stack(tmp_path, experiment):
    modules = modules_of_run(experiment(tmp_path, "json"))
    assert "duckdb" in modules  # the engine did run here
    assert [p for p in REPORT_STACK if loaded(modules, p)] == []


def test_a_run_that_writes_markdown_imports_what_it_draws_with(tmp_path):
    """The probe sees the report modules when a run needs them."""
    modules = modules_of_run(online_run(tmp_path, "json,md"))
    assert loaded(modules, "abrank.render.markdown")
