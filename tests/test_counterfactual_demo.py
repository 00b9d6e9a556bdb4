"""The bundled counterfactual demo: its fused ranking is what the generator makes from the
committed log, and `abrank run` on it writes a readout with the design's diagnostics."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from abrank.cli import main
from abrank.demo.counterfactual import FUSION_FILE, write_counterfactual_demo

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "data"
CONFIG = ROOT / "experiments" / "demo-counterfactual.yaml"


def test_the_committed_fusion_run_is_the_generators(tmp_path):
    (tmp_path / "demo-online-log.parquet").symlink_to(DATA / "demo-online-log.parquet")
    written = write_counterfactual_demo(tmp_path)
    assert written.read_bytes() == (DATA / FUSION_FILE).read_bytes()


def test_every_fused_document_was_logged_for_its_query():
    log = pd.read_parquet(DATA / "demo-online-log.parquet", columns=["query", "doc_id"])
    shown = set(zip(log["query"].astype(str), log["doc_id"].astype(str), strict=True))
    with gzip.open(DATA / FUSION_FILE, "rt") as lines:
        fused = [line.split() for line in lines]
    assert len(fused) == 10 * log["query"].nunique()
    assert all((q, d) in shown for q, _, d, *_ in fused)


@pytest.fixture(scope="module")
def demo_summary(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cf")
    text = CONFIG.read_text().replace("data/", f"{DATA}/")
    text = text.replace("propensity_resamples: 100", "propensity_resamples: 20")
    config = folder / "demo-counterfactual.yaml"
    config.write_text(text)
    out = folder / "out"
    assert main(["run", str(config), "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text()), out


def test_the_demo_predicts_the_fusions_effect_with_its_diagnostics(demo_summary):
    summary, out = demo_summary
    assert summary["design"] == "counterfactual"
    assert summary["tests"] == ["t"]  # the design's default
    comparisons = {(c["metric"], c["treatment"]): c for c in summary["comparisons"]}
    assert set(comparisons) == {
        ("click_rr@10", "fusion"),
        ("ctr@3", "fusion"),
        ("clicks@10", "fusion"),
    }
    primary = comparisons[("click_rr@10", "fusion")]
    low, high = primary["ci"]
    assert low < primary["delta"] < high
    assert primary["delta"] == pytest.approx(
        primary["treatment_mean"] - primary["control_mean"], abs=1e-12
    )
    diagnostics = summary["diagnostics"]
    ranks = diagnostics["propensities"]
    assert [r["rank"] for r in ranks] == list(range(1, 11))
    assert ranks[0]["estimate"] == 1.0
    estimates = [r["estimate"] for r in ranks]
    assert all(a > b for a, b in zip(estimates[:5], estimates[1:6], strict=True))
    assert diagnostics["support"] == {"fusion": 0.0}
    assert diagnostics["pbm_check"]["fails"] is False
    # the logging arm's observed click_rr@10, recomputed here with pandas
    log = pd.read_parquet(DATA / "demo-online-log.parquet")
    bm25 = log[(log["arm"] == "bm25")]
    first = bm25[bm25["clicked"] == 1].groupby("impression_id")["rank"].min()
    observed = (1.0 / first).sum() / bm25["impression_id"].nunique()
    assert diagnostics["observed"]["click_rr@10"] == pytest.approx(observed, rel=1e-12)
    snips = diagnostics["estimates"]["click_rr@10"]["snips"]["fusion"]
    assert snips["delta"] == pytest.approx(primary["delta"], rel=1e-9)
    assert (out / "report.html").exists() and "Examination by position" in (
        out / "report.md"
    ).read_text()
    assert (out / "charts" / "propensities.png").read_bytes()[:4] == b"\x89PNG"
    # the model puts BM25 at 0.329 click_rr@10 against its observed 0.310: a warning says so
    # (clicks@10 is linear in the clicks: no gap, no warning)
    gaps = [w for w in diagnostics["warnings"] if "the model puts the logging arm" in w]
    assert [w.split(":")[0] for w in gaps] == ["click_rr@10", "ctr@3"]
    assert primary["wins"] is None  # units' linearised values neither win nor lose
