"""The README's Layout section against the package: every module named where it lives, and
every name there a module that exists.

The section is a ``text`` block of entries, one per folder of ``abrank/`` (``config/``,
``io/``, ...) or module at its root, each entry's text indented below its name. A folder's
entry names each of its modules (at any depth) by file name; a module named in an entry lies
in that folder, at the package's root, or at the path written (``stats/interleaved.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "abrank"
ENTRY = re.compile(r"^  (?P<name>[a-z_]+(?:/|\.py))\s")
MODULE = re.compile(r"(?<![\w/.])((?:[a-z_]+/)*[a-z_]+\.py)\b")


def _layout_entries() -> dict[str, str]:
    """Entry name (``config/``, ``batch.py``) -> the entry's text, from the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines()[1:]:  # the first line is "abrank/"
        match = ENTRY.match(line)
        if match:
            current = match["name"]
            assert current not in entries, f"Layout names {current} twice"
            entries[current] = line[match.end() :]
        else:
            assert current is not None and line.startswith("    "), line
            entries[current] += " " + line.strip()
    return entries


def _modules(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*.py") if p.name != "__init__.py"}


def test_every_folder_of_the_package_has_an_entry_naming_each_of_its_modules() -> None:
    entries = _layout_entries()
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert [f"{name}/" for name in folders] == sorted(e for e in entries if e.endswith("/"))
    unnamed = {
        folder: sorted(m for m in _modules(PACKAGE / folder) if m not in entries[f"{folder}/"])
        for folder in folders
    }
    assert {folder: names for folder, names in unnamed.items() if names} == {}


def test_every_module_at_the_root_of_the_package_is_named() -> None:
    text = " ".join(f"{name} {body}" for name, body in _layout_entries().items())
    named = set(MODULE.findall(text))
    root = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert sorted(root - named) == []


def test_every_module_the_section_names_exists_where_it_says() -> None:
    wrong = []
    for name, body in _layout_entries().items():
        folder = PACKAGE / name.rstrip("/") if name.endswith("/") else PACKAGE
        here = _modules(folder) if name.endswith("/") else set()
        for module in MODULE.findall(body):
            if "/" in module:
                found = (PACKAGE / module).exists()
            else:
                found = module in here or (PACKAGE / module).exists()
            if not found:
                wrong.append(f"{name}: {module}")
    assert wrong == []


def test_the_check_reads_the_real_section() -> None:
    entries = _layout_entries()
    # a few entries that must be there, read from the README's own words
    assert "stats/" in entries and "clustered.py" in entries["stats/"]
    assert "memory.py" in entries["engines/"]
