"""A verdict carries what the readout knows against it: an SRM alarm, stale inputs, a
verdict that the judged-only view changes. The headline lines, the opening sentence and
the badges say so, not only the sections further down."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
from test_report import build_readout

from abrank.render import headline_lines, render_markdown
from abrank.render.html import render_html

SRM = {
    "units": {"bm25": 1000, "reranker": 800},
    "expected": {"bm25": 0.5, "reranker": 0.5},
    "chi2": 22.2,
    "p_value": 2.4e-6,
    "alarm": True,
    "alpha": 0.001,
}


@pytest.fixture(scope="module")
def plain():
    return build_readout(n=300)


def _with(readout, change):
    summary = copy.deepcopy(readout.summary)
    change(summary)
    return dataclasses.replace(readout, summary=summary)


def _opening(comp: dict) -> str:
    """The opening sentence of a winning MRR@10 comparison, from its numbers."""
    low, high = comp["ci"]
    return (
        f"Cross-encoder reranker raises MRR@10 from {comp['control_mean']:.3f} to "
        f"{comp['treatment_mean']:.3f} ({100 * comp['relative_lift']:+.1f}%, 95% CI "
        f"[{low:+.3f}, {high:+.3f}]): a win"
    )


def _mrr(readout) -> dict:
    return next(
        c
        for c in readout.summary["comparisons"]
        if c["segment"] is None and c["metric"] == "mrr@10"
    )


def test_a_win_under_a_sample_ratio_alarm_says_it_is_not_trustworthy(plain):
    readout = _with(plain, lambda s: s["diagnostics"].__setitem__("srm", SRM))
    comp = _mrr(readout)
    assert comp["verdict"] == "win"
    lines = headline_lines(readout.summary)
    assert all(line.endswith(" — not trustworthy: sample ratio mismatch") for line in lines)
    markdown = render_markdown(readout, charts=[])
    paragraphs = markdown.split("\n\n")
    assert paragraphs[1].startswith("> **ALARM:** Sample ratio mismatch")
    assert paragraphs[2] == (
        _opening(comp) + ", but not trustworthy until the sample ratio mismatch is explained."
    )
    page = render_html(readout, charts=[])
    # no green badge, figure or verdict cell for a win that the alarm puts in doubt
    assert 'class="badge win"' not in page and 'class="figure win"' not in page
    assert len(re.findall(r'<span class="badge win flagged" title="not trustworthy', page)) == 2
    assert '<div class="figure win flagged">' in page
    assert re.search(r'<td class="verdict win flagged" data-key="verdict"', page)


def test_without_an_alarm_the_win_is_drawn_as_a_win(plain):
    comp = _mrr(plain)
    markdown = render_markdown(plain, charts=[])
    assert markdown.split("\n\n")[1] == _opening(comp) + "."
    page = render_html(plain, charts=[])
    assert "flagged" not in page.split("</style>", 1)[1]
    assert 'class="badge win"' in page


def test_a_verdict_that_depends_on_unjudged_documents_says_so_in_the_headline(plain):
    def judged_only(summary):
        twin = dict(_mrr_of(summary), metric="mrr@10(judged)", verdict="inconclusive")
        summary["diagnostics"]["unjudged"] = {
            "k": 10,
            "judged_at_k": {"bm25": 0.93, "reranker": 0.87},
            "condensed": [twin],
            "verdicts_changed": ["mrr@10"],
            "triggered": True,
            "reason": "judged@10 differs by 6.0 points between arms (bm25 0.930, reranker 0.870)",
        }

    readout = _with(plain, judged_only)
    comp = _mrr(readout)
    mrr_line, ndcg_line = headline_lines(readout.summary)
    assert mrr_line.endswith(
        "→ Cross-encoder reranker wins — depends on unjudged documents: inconclusive on judged "
        "documents only"
    )
    assert ndcg_line.endswith("→ Cross-encoder reranker wins")  # NDCG was not repeated
    markdown = render_markdown(readout, charts=[])
    assert markdown.split("\n\n")[1] == (
        _opening(comp) + ", but it depends on unjudged documents (inconclusive on judged "
        "documents only)."
    )
    assert mrr_line in markdown


def _mrr_of(summary: dict) -> dict:
    return next(
        c for c in summary["comparisons"] if c["segment"] is None and c["metric"] == "mrr@10"
    )
