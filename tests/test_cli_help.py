"""Every help text of the command line prints and exits 0: the top level and each verb."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from abrank.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def verb_names() -> list[str]:
    """The verbs the parser knows, read from the parser itself (a new verb is covered too)."""
    parser = build_parser()
    return sorted(parser._subparsers._group_actions[0].choices)  # noqa: SLF001


def help_of(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "abrank", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_top_level_help_prints_every_verb(flag):
    done = help_of(flag)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr == ""
    for name in verb_names():
        assert name in done.stdout, name
    # the simulate verb's summary keeps its percent sign
    assert "80% power" in done.stdout


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("verb", verb_names())
def test_every_verb_help_exits_0_without_traceback(verb, flag):
    done = help_of(verb, flag)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith(f"usage: abrank {verb}")
    assert "Example:" in done.stdout


def test_verbs_are_found():
    # the list above is read from the parser: it must hold the known verbs
    assert {"run", "validate", "metrics", "compare", "simulate", "demo-data"} <= set(verb_names())
