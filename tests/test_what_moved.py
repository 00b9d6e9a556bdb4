"""What moved: the demo readout's change split by move, per segment, the relevant documents
that left a lost metric's top k, the extreme queries and the lists' likeness, each checked
against a slow count over the readout's rankings; and the report section that shows them."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    import abrank
    from abrank.render import write_report

    readout = abrank.run_experiment(ROOT / "experiments" / "demo-reranker.yaml")
    folder = tmp_path_factory.mktemp("moved")
    write_report(readout, folder, formats=("md", "html"))
    return readout, folder


def _top(rankings: pd.DataFrame, arm: str, k: int) -> dict[str, dict[str, int]]:
    """Per query, document -> rank in ``arm``'s top k (the slow way)."""
    out: dict[str, dict[str, int]] = {}
    rows = rankings[(rankings["arm"] == arm) & (rankings["rank"] <= k)]
    for query, doc, rank in zip(rows["query_id"], rows["doc_id"], rows["rank"], strict=True):
        out.setdefault(str(query), {})[str(doc)] = int(rank)
    return out


def _grades(rankings: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {
        (str(q), str(d)): g
        for q, d, g in zip(rankings["query_id"], rankings["doc_id"], rankings["grade"], strict=True)
    }


def test_recall_loss_by_the_relevant_documents_that_left(demo):
    """Recall@20's split: every relevant document only the control shows in its top 20
    costs 1/R (R: the query's relevant judgments), one only the treatment shows gains it."""
    readout, _ = demo
    rankings, queries = readout.rankings, readout.queries.set_index("query_id")
    before, after = _top(rankings, "bm25", 20), _top(rankings, "reranker", 20)
    grades = _grades(rankings)
    defined = queries.index[queries["delta:reranker:recall@20"].notna()].astype(str)
    left = entered = 0
    lost = gained = 0.0
    in_gap = 0
    for query in defined:
        relevant = queries.at[query, "normaliser:recall@20"]
        control, treatment = before.get(query, {}), after.get(query, {})
        for doc in control.keys() - treatment.keys():
            if grades[(query, doc)] >= 1:
                left += 1
                lost += 1 / relevant
                in_gap += queries.at[query, "missing_in"] != ""
        for doc in treatment.keys() - control.keys():
            if grades[(query, doc)] >= 1:
                entered += 1
                gained += 1 / relevant
    parts = readout.explain("recall@20")
    assert parts.at["relevant_dropped", "documents"] == left
    assert parts.at["relevant_entered", "documents"] == entered
    assert parts.at["relevant_dropped", "change"] == pytest.approx(-lost / len(defined), abs=1e-12)
    assert parts.at["relevant_entered", "change"] == pytest.approx(gained / len(defined), abs=1e-12)
    from abrank.explain.what_moved import what_moved

    (moved,) = what_moved(readout)
    assert [split.metric for split in moved.losses] == ["recall@20"]
    (dropped,) = moved.dropped
    assert (dropped.count, dropped.in_missing_log) == (left, in_gap)
    # the queries listed are ones both logs hold, the worst first
    assert (dropped.documents["missing_in"] == "").all()
    per_query = dropped.documents.groupby("query_id", sort=False)["contribution"].sum()
    assert per_query.is_monotonic_increasing


def test_mrr_split_by_segment_sums_to_each_segments_mean_change(demo):
    readout, _ = demo
    queries = readout.queries
    table = readout.explain("mrr@10", by="locale")
    sums = table["change"].groupby(level="locale").sum()
    means = queries.groupby("locale")["delta:reranker:mrr@10"].mean()
    np.testing.assert_allclose(sums.to_numpy(), means.reindex(sums.index).to_numpy(), atol=1e-12)
    from abrank.errors import ConfigError

    with pytest.raises(ConfigError, match="by: expected a segment column"):
        readout.explain("mrr@10", by="delta:reranker:mrr@10")


def test_the_extreme_queries_and_the_lists_likeness(demo):
    readout, _ = demo
    from abrank.explain.what_moved import what_moved

    (moved,) = what_moved(readout)
    queries = readout.queries
    held = queries[queries["missing_in"] == ""]
    delta = held["delta:reranker:mrr@10"]
    assert moved.worst is not None and moved.best is not None
    assert moved.worst.delta == delta.min() and moved.best.delta == delta.max()
    assert moved.worst.query_id == min(held.loc[delta == delta.min(), "query_id"])
    # the worst query's contributions sum to its change
    assert moved.worst.lists["contribution"].sum() == pytest.approx(moved.worst.delta, abs=1e-12)
    # the same top 10 in both arms, counted the slow way
    before, after = _top(readout.rankings, "bm25", 10), _top(readout.rankings, "reranker", 10)
    same = sum(
        1
        for query in queries["query_id"].astype(str)
        if before.get(query) and before.get(query) == after.get(query)
    )
    assert moved.similarity.identical == same
    assert moved.similarity.queries == len(queries)


def test_the_report_explains_the_primary_change_and_the_recall_loss(demo):
    readout, folder = demo
    markdown = (folder / "report.md").read_text()
    parts = readout.explain("mrr@10")["change"]
    assert "## What moved" in markdown
    section = markdown[markdown.index("## What moved") :]
    assert f"promoted +{parts['relevant_promoted']:.3f}" in section
    assert f"demoted {parts['relevant_demoted']:.3f}" in section
    assert "Why Recall@20 lost" in section
    recall = readout.explain("recall@20")
    left = int(recall.at["relevant_dropped", "documents"])
    assert f"{left} relevant documents left the top 20" in section
    assert "The query that lost most" in section and "The query that won most" in section
    page = (folder / "report.html").read_text()
    assert '<section id="moved">' in page and 'id="chart-what_moved"' in page
    assert 'id="chart-rbo"' in page
    assert (folder / "charts" / "what_moved.png").stat().st_size > 10_000


def test_query_ids_are_escaped_in_the_section(tmp_path):
    """A query id is user data: shown as text in report.html, never as markup."""
    import abrank
    from abrank.render import render_html

    hostile = "<script>alert(1)</script>"
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "qrels.txt").write_text(f"{hostile} 0 d1 1\n{hostile} 0 d2 0\nq2 0 d1 1\n")
    (runs / "a.txt").write_text(
        f"{hostile} Q0 d2 1 2.0 a\n{hostile} Q0 d1 2 1.0 a\nq2 Q0 d1 1 1.0 a\n"
    )
    (runs / "b.txt").write_text(
        f"{hostile} Q0 d1 1 2.0 b\n{hostile} Q0 d2 2 1.0 b\nq2 Q0 d1 1 1.0 b\n"
    )
    config = tmp_path / "x.yaml"
    config.write_text(
        "name: hostile\njudgments: {path: runs/qrels.txt, format: trec}\n"
        "control: {name: a, path: runs/a.txt, format: trec}\n"
        "treatments: [{name: b, path: runs/b.txt, format: trec}]\nmetrics: [mrr@10]\n"
    )
    readout = abrank.run_experiment(config)
    page = render_html(readout)
    section = page[page.index('<section id="moved">') :]
    assert hostile not in section
    assert html.escape(hostile, quote=False) in section


def test_the_notebook_views_show_the_lists_and_escape_ids(demo):
    readout, _ = demo
    queries = readout.queries
    worst = queries.loc[queries["delta:reranker:mrr@10"].idxmin(), "query_id"]
    view = readout.query(worst)
    shown = view._repr_html_()
    assert shown.count("<table>") == 2  # the two lists side by side
    # each document's part is shown once, and the parts sum to the query's change
    parts = [float(x) for x in __import__("re").findall(r"<td>([+-]\d\.\d{3})</td>", shown)]
    delta = queries.set_index("query_id").at[worst, "delta:reranker:mrr@10"]
    assert sum(parts) == pytest.approx(delta, abs=1e-3)
    assert view.caption.startswith(f"query {worst}: mrr@10, bm25 → reranker")
    split = readout.explain("mrr@10")
    assert f"{split['change'].sum():+.4f}" in split._repr_html_()
    # derived tables are plain DataFrames
    assert type(view[["doc_id"]]) is pd.DataFrame
    from abrank.explain.views import query_view

    hostile = query_view(
        pd.DataFrame(
            {"doc_id": ["<b>x</b>"], "grade": [1.0], "rank_a": [1.0], "contribution": [1.0]}
        ),
        "query <script>",
    )._repr_html_()
    assert "<script>" not in hostile and "<b>x</b>" not in hostile
    assert "&lt;b&gt;x&lt;/b&gt;" in hostile
