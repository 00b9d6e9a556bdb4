"""The command's process settings (:mod:`abrank.runtime`): made in its own process only.

``abrank history`` takes Arrow's jemalloc pool, ``abrank metrics`` the system allocator,
each in a fresh interpreter that the command owns; a Python program calling
``abrank.cli.main`` (this test process) keeps its own; OpenBLAS is kept to one thread when
NumPy is not loaded yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str) -> list[str]:
    """The lines a fresh interpreter prints for ``code`` (OPENBLAS_NUM_THREADS unset)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def pool_after_own_process(args: list[str]) -> str:
    """Arrow's pool after the verb ran in a process that the command owns."""
    code = (
        "import sys; from abrank import runtime; from abrank.cli import main; "
        "runtime.claim_process(); sys.stdout, out = sys.stderr, sys.stdout; "
        f"main({args!r}); "
        "import pyarrow as pa; print(pa.default_memory_pool().backend_name, file=out)"
    )
    (backend,) = run_python(code)
    return backend


def pool_after_call(args: list[str], capsys) -> str:
    """Arrow's pool after ``main`` was called in this (test) process."""
    from abrank.cli import main

    before = pa.default_memory_pool().backend_name
    main(args)
    capsys.readouterr()
    after = pa.default_memory_pool().backend_name
    assert before != "system"  # the test is not blind
    return after


def test_history_takes_jemalloc_in_the_commands_own_process_only(tmp_path, capsys):
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow has no jemalloc pool")
    args = ["history", "demo", "--root", str(tmp_path)]  # no history: exit 2, pool set before
    assert pool_after_own_process(args) == "jemalloc"
    assert pool_after_call(args, capsys) != "jemalloc"


def test_metrics_takes_the_system_allocator_in_the_commands_own_process_only(tmp_path, capsys):
    args = ["metrics", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "mrr@10"]
    assert pool_after_own_process(args) == "system"
    assert pool_after_call(args, capsys) != "system"


def test_openblas_is_kept_to_one_thread_unless_numpy_is_loaded(tmp_path, capsys, monkeypatch):
    args = ["history", "demo", "--root", str(tmp_path)]
    code = (
        "import os, sys; sys.stderr = sys.stdout; from abrank.cli import main; "
        f"main({args!r}); print(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))"
    )
    assert run_python(code)[-1] == "1"
    # this process has NumPy loaded: too late to choose, so the environment is left alone
    from abrank.cli import main

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert "numpy" in sys.modules
    main(args)
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_an_offline_run_takes_the_system_allocator_in_the_commands_own_process_only(
    tmp_path, capsys
):
    """An offline replay's rankings are millions of rows: its run reuses freed memory as
    an online run does (the allocator settings come with Arrow's system pool)."""
    config = ROOT / "experiments" / "demo-reranker.yaml"
    args = ["run", str(config), "--out", str(tmp_path / "out"), "--format", "json", "-q"]
    assert pool_after_own_process(args) == "system"
    assert pool_after_call(args, capsys) != "system"
