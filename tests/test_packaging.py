"""The package's licence and metadata: the MIT licence pyproject.toml names is shipped."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_mit_licence_named_in_pyproject_is_shipped():
    meta = project()
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the abrank authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_classifiers_are_trove_shaped_and_match_the_metadata():
    classifiers = project()["classifiers"]
    assert classifiers == sorted(set(classifiers))
    assert all(" :: " in c for c in classifiers)
    # a licence classifier beside a licence expression is refused by setuptools >= 77
    assert not any(c.startswith("License ::") for c in classifiers)
    assert "Programming Language :: Python :: 3" in classifiers
