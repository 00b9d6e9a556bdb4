"""Queries missing from an arm's log: marked in per_query.csv (missing_in), listed in
summary.json (diagnostics.missing_queries) and in the report's largest losses.

The demo's reranker log lacks some of the 2,000 queries; which ones is read here straight
from the data files, with the standard library only.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import pytest

from abrank.analysis import run_experiment, write_readout
from abrank.config import build_experiment
from abrank.render import render_markdown

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "data"


def _demo_missing() -> list[str]:
    """Judged queries of the control's log that the treatment's log lacks (the demo's
    analysed queries are the judged ones that any arm holds)."""
    with gzip.open(DATA / "demo-control.csv.gz", "rt", encoding="utf-8") as handle:
        control = {row["query_id"] for row in csv.DictReader(handle)}
    with gzip.open(DATA / "demo-treatment.jsonl.gz", "rt", encoding="utf-8") as handle:
        treatment = {json.loads(line)["qid"] for line in handle if line.strip()}
    with open(DATA / "demo-judgments.tsv", encoding="utf-8", newline="") as handle:
        judged = {row["query_id"] for row in csv.DictReader(handle, delimiter="\t")}
    analysed = (control | treatment) & judged
    assert analysed - control == set()  # the control's log holds every analysed query
    return sorted(analysed - treatment)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        readout = run_experiment("experiments/demo-reranker.yaml")
    folder = tmp_path_factory.mktemp("demo") / "readout"
    write_readout(readout, folder, formats=("json", "csv"))
    return readout, folder


def test_the_demo_lists_its_missing_queries_in_summary_json(demo):
    missing = _demo_missing()
    assert len(missing) == 20
    _, folder = demo
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["diagnostics"]["missing_queries"] == {"bm25": [], "reranker": missing}
    assert summary["diagnostics"]["missing"] == {"bm25": 0, "reranker": len(missing)}


def test_per_query_csv_names_the_arms_whose_log_lacked_the_query(demo):
    missing = set(_demo_missing())
    _, folder = demo
    with open(folder / "per_query.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 2000
    for row in rows:  # both arms' rows of a query carry the same mark
        assert row["missing_in"] == ("reranker" if row["query_id"] in missing else ""), row


def test_largest_losses_mark_the_queries_missing_from_the_log(demo):
    readout, _ = demo
    missing = set(_demo_missing())
    report = render_markdown(readout, charts=[])  # the charts are not what is checked
    section = report.split("**Largest losses of Cross-encoder reranker**", 1)[1]
    table = section.split("**Largest wins", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if re.match(r"\| q\d+", line)
    ]
    assert len(rows) == 10
    # the ten largest MRR@10 losses, worked out from the per-query values: delta ascending,
    # ties by query id
    frame = readout.per_query
    values = frame.pivot(index="query_id", columns="arm", values="mrr@10")
    delta = (values["reranker"] - values["bm25"]).dropna()
    losses = delta[delta < 0].reset_index(name="d").sort_values(["d", "query_id"]).head(10)
    assert [r[0] for r in rows] == losses["query_id"].tolist()
    marked = [r[0] for r in rows if r[-1].startswith("missing from Cross-encoder reranker")]
    assert marked == [q for q in losses["query_id"] if q in missing]
    assert len(marked) == 5
    assert (
        f"{len(marked)} of the 10 largest losses of Cross-encoder reranker are queries missing "
        "from its log (scored 0" in report
    )


def test_several_arms_lacking_a_query_are_joined_with_semicolons(tmp_path):
    # q1 in every log; q2 only in the control's; q3 in the control's and b's
    (tmp_path / "control.csv").write_text("query_id,doc_id,rank\nq1,x,1\nq2,y,1\nq3,z,1\n")
    (tmp_path / "a.csv").write_text("query_id,doc_id,rank\nq1,x,1\n")
    (tmp_path / "b.csv").write_text("query_id,doc_id,rank\nq1,x,1\nq3,z,1\n")
    (tmp_path / "judgments.csv").write_text("query_id,doc_id,grade\nq1,x,1\nq2,y,1\nq3,z,1\n")
    config = {
        "name": "three",
        "control": {"name": "base", "path": "control.csv"},
        "treatments": [{"name": "a", "path": "a.csv"}, {"name": "b", "path": "b.csv"}],
        "judgments": {"path": "judgments.csv"},
        "metrics": ["mrr@10"],
        "analysis": {"seed": 1, "resamples": 200},
    }
    readout = run_experiment(build_experiment(config, source="three.yaml", base_dir=tmp_path))
    marks = readout.per_query.groupby("query_id")["missing_in"].agg(set).to_dict()
    assert marks == {"q1": {""}, "q2": {"a;b"}, "q3": {"a"}}
    assert readout.summary["diagnostics"]["missing_queries"] == {
        "base": [],
        "a": ["q2", "q3"],
        "b": ["q2"],
    }
