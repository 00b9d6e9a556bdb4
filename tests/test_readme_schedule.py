"""The README's scheduling section runs as written: every config and folder its command
lines name is made by ``abrank demo-data --daily``, and each line exits as it should."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from abrank.cli import main

ROOT = Path(__file__).resolve().parent.parent


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Scheduled readouts")
    return text[start : text.index("\n### ", start)]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", section(), flags=re.S)


def command_lines() -> list[list[str]]:
    lines = []
    for block in blocks("bash"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("abrank "):
                lines.append(shlex.split(line)[1:])
    return lines


def test_the_section_shows_commands_and_the_config_they_run():
    commands = command_lines()
    assert commands[0][:2] == ["demo-data", "--daily"]
    assert len(commands) >= 4


@pytest.mark.slow
def test_every_command_line_of_the_scheduling_section_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the lines' relative paths land here
    commands = command_lines()
    demo, runs = commands[0], commands[1:]
    # a small draw of the same demos, so that the test stays fast
    assert main([*demo, "--users", "1500", "--queries", "280"]) == 0
    folder = tmp_path / demo[2]
    # the yaml shown is the config that demo-data writes (without its comment line)
    (shown,) = blocks("yaml")
    written = (folder / "reranker-daily.yaml").read_text().split("\n", 1)[1]
    assert written == shown
    capsys.readouterr()
    for args in runs:
        for path in (a for a in args if a.startswith(demo[2])):
            assert (tmp_path / path).exists(), path
        assert main([*args, "--no-history", "--format", "json"]) in (0, 3), args
        _, err = capsys.readouterr()
        assert "Traceback" not in err and "error" not in err, err
    out = tmp_path / "reports"
    summary = json.loads((out / "reranker-daily" / "2026-01-14" / "summary.json").read_text())
    assert summary["schedule"]["window"] == "cumulative" and summary["schedule"]["dates"] == 14
    assert sorted(p.name for p in (out / "reranker-daily").iterdir() if p.is_dir()) == [
        f"2026-01-{d:02d}" for d in range(1, 15)
    ]
    assert (out / "demo-daily" / "2026-01-14" / "summary.json").exists()
