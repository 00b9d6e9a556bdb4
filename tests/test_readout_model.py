"""The typed readout: summary.json as records, a readout folder read back and rendered again.

``tests/golden/demo-summary.json`` is the demo's summary.json as written before the summary
was built through the records: the demo must still write the same keys, in the same order,
and the same values (numbers to 1e-10: the resampling's sums may differ in their last
digits between NumPy and SciPy releases). It was written again when the demo's metrics
gained roles: against the earlier file, only what follows from the new correction families
changed (MRR@10 alone in the success family, NDCG@10 and Hit@3 in the secondary one,
Recall@20 uncorrected: their p_adjusted, ci, ci_level, relative intervals and mde), and
the roles, decision checks and the decision were added; every other value held to 1e-10.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from trees import assert_same_tree

import abrank
from abrank.analysis import run_experiment, write_readout
from abrank.config import build_experiment
from abrank.errors import DataError
from abrank.readout import Readout, Summary, load_readout, summary_json
from abrank.readout.model import ComparisonSummary, TooSmall
from abrank.render import headline_lines, render_markdown

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_SUMMARY = ROOT / "tests" / "golden" / "demo-summary.json"


@pytest.fixture(scope="module")
def demo() -> Readout:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # paths in the summary are shown relative to the working folder
        return run_experiment("experiments/demo-reranker.yaml")


@pytest.fixture
def tiny(tmp_path: Path) -> Readout:
    """Two arms, four queries, one segment column (hand-made: RR control 1, 1/3, 1/2)."""
    (tmp_path / "control.csv").write_text(
        "query_id,doc_id,rank,device\nq1,a,1,web\nq1,b,2,web\nq2,c,1,app\nq2,d,2,app\n"
        "q2,e,3,app\nq3,f,1,web\nq3,g,2,web\nq4,h,1,app\n"
    )
    (tmp_path / "treatment.csv").write_text(
        "query_id,doc_id,rank\nq1,a,1\nq2,e,1\nq2,c,2\nq3,g,1\nq4,h,1\n"
    )
    (tmp_path / "judgments.tsv").write_text(
        "query_id\tdoc_id\tgrade\nq1\ta\t2\nq2\te\t1\nq3\tg\t3\nq4\th\t0\n"
    )
    config = {
        "name": "tiny",
        "control": {"name": "old", "path": "control.csv"},
        "treatments": [{"name": "new", "path": "treatment.csv"}],
        "judgments": {"path": "judgments.tsv"},
        "metrics": ["mrr@10", "ndcg@3"],
        "analysis": {"seed": 1, "resamples": 500},
        "segments": {"columns": ["device"], "min_queries": 2},
    }
    return run_experiment(build_experiment(config, source="tiny.yaml", base_dir=tmp_path))


def test_the_demo_summary_is_what_it_was(demo):
    written = json.loads(summary_json(demo.summary))
    assert_same_tree(json.loads(GOLDEN_SUMMARY.read_text(encoding="utf-8")), written, rel=1e-10)


@pytest.mark.parametrize("which", ["demo", "tiny"])
def test_records_round_trip(which, request):
    readout = request.getfixturevalue(which)
    model = Summary.from_dict(readout.summary)
    assert model.to_dict() == readout.summary
    assert json.dumps(model.to_dict()) == json.dumps(readout.summary)  # same key order
    assert Summary.from_dict(model.to_dict()) == model
    assert Summary.from_dict(json.loads(model.to_json())) == model
    assert readout.model == model


def test_records_hold_typed_sections(tiny):
    model = tiny.model
    assert model.control == "old" and [a.name for a in model.arms] == ["old", "new"]
    first = model.comparisons[0]
    assert isinstance(first, ComparisonSummary) and isinstance(first.ci, tuple)
    assert (first.metric, first.treatment, first.segment) == ("mrr@10", "new", None)
    # q1..q3 (q4 has nothing relevant): control RR 1, 1/3, 1/2; treatment 1, 1, 1
    assert first.control_mean == pytest.approx((1 + 1 / 3 + 1 / 2) / 3, abs=1e-12)
    assert first.delta == pytest.approx(1 - (1 + 1 / 3 + 1 / 2) / 3, abs=1e-12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.delta = 0.0  # type: ignore[misc]
    assert all(isinstance(t, TooSmall) for t in model.segments.too_small)


def test_unknown_keys_are_kept_and_written_back(tiny):
    saved = json.loads(json.dumps(tiny.summary))
    saved["run_date"] = "2026-12-01"
    saved["comparisons"][0]["cohort"] = "all"
    model = Summary.from_dict(saved)
    assert model.extra == {"run_date": "2026-12-01"}
    assert model.comparisons[0].extra == {"cohort": "all"}
    assert model.to_dict() == saved


def test_a_malformed_summary_names_the_key(tiny):
    saved = json.loads(json.dumps(tiny.summary))
    del saved["comparisons"][1]["delta"]
    with pytest.raises(
        DataError, match=r"^summary\.comparisons\[1\]\.delta: expected a value, got no such key$"
    ):
        Summary.from_dict(saved)
    saved = json.loads(json.dumps(tiny.summary))
    saved["arms"][0]["queries"] = "many"
    with pytest.raises(
        DataError, match=r"^summary\.arms\[0\]\.queries: expected an integer, got a string$"
    ):
        Summary.from_dict(saved)


def test_a_written_folder_loads_back_and_renders_the_same_report(tiny, tmp_path):
    folder = tmp_path / "readout"
    write_readout(tiny, folder, formats=("md", "json", "csv"))
    loaded = load_readout(folder)
    assert loaded.summary == tiny.summary
    assert render_markdown(loaded) == (folder / "report.md").read_text(encoding="utf-8")
    pd.testing.assert_frame_equal(
        loaded.per_query, tiny.per_query, check_dtype=False, check_exact=True
    )
    pd.testing.assert_frame_equal(loaded.curves, tiny.curves, check_dtype=False, check_exact=True)
    assert loaded.config_text == tiny.config_text
    assert sorted(loaded.resampled_deltas) == sorted(tiny.resampled_deltas)
    for key, draws in tiny.resampled_deltas.items():
        assert loaded.resampled_deltas[key].tolist() == draws.tolist()


def test_the_demo_folder_loads_back_and_renders_the_same_report(demo, tmp_path):
    folder = tmp_path / "demo"
    write_readout(demo, folder, formats=("md", "json", "csv"))
    loaded = load_readout(folder)
    assert render_markdown(loaded) == (folder / "report.md").read_text(encoding="utf-8")


def test_a_folder_without_a_report_loads_without_chart_data(tiny, tmp_path):
    folder = tmp_path / "bare"
    write_readout(tiny, folder, formats=("json", "csv"))
    loaded = load_readout(folder)
    assert loaded.summary == tiny.summary and loaded.curves.empty and loaded.config_text == ""
    assert headline_lines(loaded.summary) == headline_lines(tiny.summary)


def test_loading_a_folder_without_a_summary_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="summary.json: expected a readout's summary.json"):
        load_readout(tmp_path)


def test_comparisons_frame_repr_and_html(tiny):
    frame = tiny.comparisons
    overall = frame[frame["segment"].isna()]
    assert list(overall["metric"]) == ["mrr@10", "ndcg@3"]
    assert frame.columns[:3].tolist() == ["metric", "treatment", "segment"]
    assert frame["delta"].tolist() == [c["delta"] for c in tiny.summary["comparisons"]]
    assert len(frame) == len(tiny.summary["comparisons"])
    text = repr(tiny)
    assert text.startswith("<Readout 'tiny': arms old, new; 2 comparisons (")
    assert len(text) < 200
    page = tiny._repr_html_()
    assert page.count("<tr>") == 3 and "<td>MRR@10</td>" in page and "<td>NDCG@3</td>" in page


def test_write_readout_is_public():
    assert abrank.write_readout is write_readout
    assert "write_readout" in abrank.__all__


def test_the_notebook_table_escapes_user_text(tiny):
    summary = json.loads(json.dumps(tiny.summary))
    summary["arms"][1]["label"] = "<script>alert(1)</script>"
    summary["experiment"]["title"] = "A & B"
    page = Readout(summary, tiny.per_query, tiny.curves, tiny.first_relevant)._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "A &amp; B" in page
