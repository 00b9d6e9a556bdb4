"""Comparing summary.json trees: the same keys, lists and text, numbers within a tolerance."""

from __future__ import annotations

import pytest


def assert_same_tree(expected, found, *, rel: float = 1e-9, path: str = "") -> None:
    """Every key, length and non-float value equal; floats equal to ``rel`` (and 1e-12 near
    zero), NaN equal to NaN. ``path`` names where a difference lies in the message."""
    if isinstance(expected, dict):
        assert isinstance(found, dict), path
        assert list(expected) == list(found), path
        for key in expected:
            assert_same_tree(expected[key], found[key], rel=rel, path=f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(expected) == len(found), path
        for i, (a, b) in enumerate(zip(expected, found, strict=True)):
            assert_same_tree(a, b, rel=rel, path=f"{path}[{i}]")
    elif isinstance(expected, float) and isinstance(found, (float, int)):
        assert found == pytest.approx(expected, rel=rel, abs=1e-12, nan_ok=True), path
    else:
        assert type(expected) is type(found) and expected == found, path
