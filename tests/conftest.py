"""Shared fixtures: the real TREC data that lies beside the checkout in ``../shared/data``.

A fresh clone elsewhere has no such folder: the tests that read it are then skipped with a
one-line reason. In CI (``CI=true``) the folder is always laid beside the checkout, so its
absence is a failure rather than a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real qrels, runs and trec_eval outputs (see its README)."""
    if not SHARED_DATA.is_dir():
        reason = f"{SHARED_DATA}: the shared TREC data is not beside the checkout"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (expected in CI)")
        pytest.skip(reason)
    return SHARED_DATA
