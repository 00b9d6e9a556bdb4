"""Shared fixtures: the real TREC data that lies beside the checkout in ``../shared/data``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real qrels, runs and trec_eval outputs (see its README)."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"{SHARED_DATA}: expected the shared TREC data beside the checkout")
    return SHARED_DATA
