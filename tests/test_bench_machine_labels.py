"""benchmarks/bench_machine_labels.py at a small, fixed-seed count: PPI covers the
all-human delta and is narrower than the human sample alone; the machine-filled interval,
biased by the labeller, does not cover."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_machine_labels.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_machine_labels", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bias", [0.0, 0.3])
def test_calibration_at_a_small_count(bench, bias) -> None:
    figures = bench.calibrate("case", bias, splits=150, seed=1)
    # 150 splits: a coverage of 0.95 has a binomial sd of 0.018; 0.88 is nearly 4 sd below
    assert figures["coverage"]["ppi"] >= 0.88
    assert figures["width"]["ppi"] < 0.85 * figures["width"]["human"]
    assert figures["coverage"]["filled"] < 0.5
    assert figures["machine_delta"] < figures["target"]


def test_the_dl_readout_prints_kappa_tau_and_the_verdicts(bench, shared_data, capsys) -> None:
    assert shared_data / "trec-dl-passage" == bench.DL
    bench.dl_readout(seed=2024)
    out = capsys.readouterr().out
    assert "queries: human 48, machine 97" in out
    assert "kappa linear" in out and "tau" in out
    assert "verdicts changed:" in out
    for metric in ("ndcg@10", "ap@100", "recall@20"):
        assert f"  {metric}" in out
