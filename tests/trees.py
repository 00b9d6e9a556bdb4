"""Comparing summary.json trees: the same keys, lists and text, numbers within a tolerance."""

from __future__ import annotations

import pytest

#: Fields solved by a root finder to statsmodels' tolerance (``solve_power``: xtol 1e-5 on
#: the effect size), so that inputs equal to 1e-15 may give roots that differ below it.
SOLVED = {"mde": 1e-4}


def assert_same_tree(expected, found, *, rel: float = 1e-9, path: str = "") -> None:
    """Every key, length and non-float value equal; floats equal to ``rel`` (and 1e-12
    near zero; the fields of :data:`SOLVED` to their solver's tolerance), NaN equal to NaN.
    ``path`` names where a difference lies in the message."""
    if isinstance(expected, dict):
        assert isinstance(found, dict), path
        assert list(expected) == list(found), path
        for key in expected:
            tolerance = max(rel, SOLVED.get(key, 0.0))
            assert_same_tree(expected[key], found[key], rel=tolerance, path=f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(expected) == len(found), path
        for i, (a, b) in enumerate(zip(expected, found, strict=True)):
            assert_same_tree(a, b, rel=rel, path=f"{path}[{i}]")
    elif isinstance(expected, float) and isinstance(found, (float, int)):
        assert found == pytest.approx(expected, rel=rel, abs=1e-12, nan_ok=True), path
    else:
        assert expected == found, path


def assert_same_summary(memory: dict, sql: dict) -> None:
    """Two engines' summary.json trees (as written: through JSON) agree to 1e-9, but for the
    top-level ``engine``, where each names the engine that ran it."""
    if isinstance(memory, dict) and isinstance(sql, dict):
        memory = {k: v for k, v in memory.items() if k != "engine"}
        sql = {k: v for k, v in sql.items() if k != "engine"}
    assert_same_tree(memory, sql, rel=1e-9)
