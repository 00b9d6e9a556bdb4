"""The package's layout: stages depend one way, and no module reaches into another's privates."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "abrank"


def _imports() -> dict[str, list[tuple[str, str]]]:
    """module -> [(imported module, imported name)] for every ``from abrank... import``."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("abrank"):
                for alias in node.names:
                    found[module].append((node.module, alias.name))
    return found


def _stage(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_module_imports_another_modules_private_names() -> None:
    private = [
        (module, source, name)
        for module, names in _imports().items()
        for source, name in names
        if source != module and name.startswith("_") and not name.startswith("__")
    ]
    assert private == []


def test_stages_depend_on_each_other_one_way_only() -> None:
    needs: dict[str, set[str]] = defaultdict(set)
    for module, names in _imports().items():
        for source, _ in names:
            if _stage(source) != _stage(module) and _stage(source) != "abrank":
                needs[_stage(module)].add(_stage(source))
    both = sorted(
        {tuple(sorted((a, b))) for a in needs for b in needs[a] if a in needs.get(b, set())}
    )
    assert both == []
    # and the test sees the real graph: the analysis stage uses the stats stage
    assert "abrank.stats" in needs["abrank.analysis"]
