"""The notebook in examples/ runs from top to bottom and prints the demo's known numbers.

The numbers checked are the demo's headline as README.md states it (MRR@10 0.539 -> 0.785,
+0.246 over 1,910 paired queries), not values taken from a previous run of the notebook.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"


def test_the_notebook_is_stored_without_outputs():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    assert code, "the notebook has no code cells"
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)


def _printed(cell: dict) -> str:
    return "".join(
        out.get("text", "") for out in cell.get("outputs", []) if out["output_type"] == "stream"
    )


@pytest.mark.slow
def test_the_quickstart_notebook_runs_and_prints_the_demo_headline(monkeypatch):
    # the kernel imports this checkout's abrank, whichever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    printed = {cell.get("id"): _printed(cell) for cell in notebook.cells}
    assert printed["evaluate"].startswith("mrr@10: 0.539 -> ")
    compare = printed["compare"].splitlines()
    assert compare[0] == "MRR@10 0.539 -> 0.785 over 1910 queries"
    assert compare[1].startswith("delta +0.246, 95% CI [")
    mrr = [line for line in printed["experiment"].splitlines() if line.startswith("MRR@10")]
    assert len(mrr) == 1 and "0.539 → 0.785  +0.246 (+45.6%)" in mrr[0]
