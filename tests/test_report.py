"""Report rendering: headline grammar, Markdown, self-contained HTML, escaping, files.

The readouts here are built by hand (``build_readout``): a few hundred synthetic queries
whose summary numbers are computed in the fixture with NumPy/SciPy, so the report has
realistic, mutually consistent input. The tests then check that every number shown is the
summary's number formatted by the documented rules, worked out independently here.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reference import largest_moves
from scipy import stats

from abrank.errors import ConfigError
from abrank.readout import Readout
from abrank.render import (
    fmt_count,
    fmt_p,
    fmt_percent,
    fmt_signed,
    fmt_value,
    headline_lines,
    md_escape,
    render_html,
    render_markdown,
    write_charts,
    write_report,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# --------------------------------------------------------------------------- fixtures


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out (the obvious reference)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted = [0.0] * len(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def _comparison(
    metric: str,
    treatment: str,
    segment: str | None,
    c: np.ndarray,
    t: np.ndarray,
    rng: np.random.Generator,
) -> dict:
    d = t - c
    n = int(d.size)
    test = stats.ttest_1samp(d, 0.0)
    ci = test.confidence_interval(0.95)
    draws = rng.integers(0, n, size=(400, n))
    boot = d[draws].mean(axis=1)
    ratio = t[draws].mean(axis=1) / c[draws].mean(axis=1) - 1
    sd = float(d.std(ddof=1))
    return {
        "metric": metric,
        "treatment": treatment,
        "segment": segment,
        "design": "paired",
        "n": n,
        "n_control": n,
        "n_treatment": n,
        "control_mean": float(c.mean()),
        "treatment_mean": float(t.mean()),
        "delta": float(d.mean()),
        "relative_lift": float(t.mean() / c.mean() - 1),
        "ci": [float(ci.low), float(ci.high)],
        "ci_method": "t",
        "bootstrap_ci": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
        "relative_ci": [float(np.quantile(ratio, 0.025)), float(np.quantile(ratio, 0.975))],
        "p_value": float(test.pvalue),
        "p_values": {
            "t": float(test.pvalue),
            "permutation": max(float(test.pvalue), 1 / 10001),
            "bootstrap": max(float(test.pvalue), 1 / 10001),
        },
        "p_adjusted": None,
        "correction": "holm" if segment is None else "fdr_bh",
        "effect_size": float(d.mean() / sd) if sd else 0.0,
        "mde": float(2.8 * sd / math.sqrt(n)),
        "wins": int((d > 0).sum()),
        "ties": int((d == 0).sum()),
        "losses": int((d < 0).sum()),
        "verdict": None,
        "primary_test": "t",
        "alpha": 0.05,
        "confidence_level": 0.95,
        "n_resamples": 10000,
        "_boot": boot,
    }


def build_readout(
    *,
    n: int = 300,
    seed: int = 3,
    treatments: tuple[str, ...] = ("reranker",),
    title: str = "Cross-encoder reranker vs BM25",
    labels: dict | None = None,
    query_prefix: str = "q",
    segment_values: tuple[str, ...] = ("mobile", "desktop"),
    config_text: str = "name: demo-reranker\nmetrics: [mrr@10, ndcg@10]\n",
) -> Readout:
    """A small but complete readout: per-query table, curves, first ranks, summary."""
    rng = np.random.default_rng(seed)
    labels = {
        "bm25": "BM25 (production)",
        "reranker": "Cross-encoder reranker",
        "boost": "Freshness boost",
        **(labels or {}),
    }
    ids = [f"{query_prefix}{i:04d}" for i in range(n)]
    device = rng.choice(np.array(segment_values, dtype=object), size=n, p=[0.6, 0.4])
    locale = np.where(np.arange(n) < 10, "it-IT", np.where(np.arange(n) % 2, "en-US", "de-DE"))
    first = {"bm25": rng.geometric(0.35, size=n).astype(float)}
    first["bm25"][rng.random(n) < 0.15] = np.nan
    shift = {"reranker": 0.45, "boost": 0.0}
    for name in treatments:
        better = rng.random(n) < shift[name]
        moved = np.where(better, 1.0, first["bm25"] + rng.integers(-1, 2, size=n))
        moved = np.where(
            np.isnan(first["bm25"]) & (rng.random(n) < 0.7),
            np.nan,
            np.clip(np.where(np.isnan(moved), 3.0, moved), 1, None),
        )
        first[name] = moved
    arms = ["bm25", *treatments]
    frames = []
    for arm in arms:
        rank = first[arm]
        mrr = np.where(rank <= 10, 1.0 / rank, 0.0)
        mrr = np.nan_to_num(mrr)
        ndcg = np.clip(mrr * 0.8 + rng.normal(0.1, 0.05, n), 0, 1)
        frames.append(
            pd.DataFrame(
                {
                    "arm": arm,
                    "query_id": ids,
                    "mrr@10": mrr,
                    "ndcg@10": ndcg,
                    "device": device,
                    "locale": locale,
                }
            )
        )
    per_query = pd.concat(frames, ignore_index=True)
    metrics = ["mrr@10", "ndcg@10"]
    comparisons = []
    cmp_rng = np.random.default_rng(seed + 1)
    for segment in [None, *[f"device={v}" for v in segment_values], "locale=en-US", "locale=de-DE"]:
        for metric in metrics:
            for name in treatments:
                mask = np.ones(n, bool)
                if segment is not None:
                    column, value = segment.split("=", 1)
                    mask = (device if column == "device" else locale) == value
                c = per_query.loc[per_query["arm"] == "bm25", metric].to_numpy()[mask]
                t = per_query.loc[per_query["arm"] == name, metric].to_numpy()[mask]
                comparisons.append(_comparison(metric, name, segment, c, t, cmp_rng))
    for family in (
        {id(c) for c in comparisons if c["segment"] is None},
        {id(c) for c in comparisons if c["segment"] is not None},
    ):
        members = [c for c in comparisons if id(c) in family]
        for comp, adj in zip(members, _holm([c["p_value"] for c in members]), strict=True):
            comp["p_adjusted"] = adj
            comp["verdict"] = (
                "inconclusive" if adj >= 0.05 else "win" if comp["delta"] > 0 else "loss"
            )
    resampled = {
        (c["metric"], c["treatment"]): c.pop("_boot") for c in comparisons if c["segment"] is None
    }
    for comp in comparisons:
        comp.pop("_boot", None)
    curves = pd.DataFrame(
        [
            {
                "arm": arm,
                "metric": "ndcg",
                "k": k,
                "value": float(np.mean(np.nan_to_num(1 / first[arm]) * (first[arm] <= k))),
            }
            for arm in arms
            for k in range(1, 11)
        ]
    )
    first_relevant = pd.concat(
        [pd.DataFrame({"arm": arm, "query_id": ids, "rank": first[arm]}) for arm in arms],
        ignore_index=True,
    )
    summary = {
        "experiment": {
            "name": "demo-reranker",
            "title": title,
            "description": "Does the cross-encoder put answers higher?",
            "owner": "search-relevance",
        },
        "abrank_version": "0.1.0",
        "config_path": "experiments/demo-reranker.yaml",
        "design": "paired",
        "seed": 7,
        "alpha": 0.05,
        "confidence_level": 0.95,
        "n_resamples": 10000,
        "primary_test": "t",
        "tests": ["t", "permutation", "bootstrap"],
        "correction": {"primary": "holm", "segments": "fdr_bh"},
        "relevance_threshold": 1,
        "gain": "linear",
        "depth": 1000,
        "metrics": metrics,
        "metric_labels": {"mrr@10": "MRR@10", "ndcg@10": "NDCG@10"},
        "primary_metric": "mrr@10",
        "arms": [
            {
                "name": arm,
                "label": labels[arm],
                "role": "control" if arm == "bm25" else "treatment",
                "queries": n,
            }
            for arm in arms
        ],
        "comparisons": comparisons,
        "segments": {
            "columns": ["device", "locale"],
            "min_queries": 30,
            "too_small": [{"segment": "locale=it-IT", "treatment": t, "n": 10} for t in treatments],
        },
        "diagnostics": {
            "queries": {arm: n for arm in arms},
            "judged_queries": n,
            "analysed_queries": n - 2,
            "matched": n - 4,
            "unjudged_queries": {arm: 2 for arm in arms},
            "missing": {arm: (0 if arm == "bm25" else 4) for arm in arms},
            "missing_policy": "zero",
            "without_relevant": 17,
            "judged_at_k": {
                "k": 10,
                "arms": {arm: round(0.93 - 0.06 * i, 2) for i, arm in enumerate(arms)},
            },
            "warnings": [
                "reranker: judged@10 is 0.87 against control's 0.93; unjudged "
                "documents count as not relevant, which biases the comparison "
                "against reranker"
            ],
        },
        "inputs": [
            {
                "role": "control",
                "arm": "bm25",
                "path": "experiments/data/demo-control.csv.gz",
                "sha256": "ab" * 32,
                "rows": 40000,
            },
            {
                "role": "judgments",
                "arm": None,
                "path": "experiments/data/demo-qrels.tsv",
                "sha256": "cd" * 32,
                "rows": 30000,
            },
        ],
    }
    json.dumps(summary, allow_nan=False)  # the fixture must be valid summary.json content
    return Readout(summary, per_query, curves, first_relevant, resampled, config_text)


@pytest.fixture(scope="module")
def readout() -> Readout:
    return build_readout()


EXAMPLE = {
    "experiment": {"name": "demo-reranker", "title": "Cross-encoder reranker vs BM25"},
    "metric_labels": {"mrr@10": "MRR@10", "ndcg@10": "NDCG@10", "recall@20": "Recall@20"},
    "arms": [
        {"name": "bm25", "label": "BM25 (production)", "role": "control"},
        {"name": "reranker", "label": "Cross-encoder reranker", "role": "treatment"},
    ],
    "comparisons": [
        {
            "metric": "mrr@10",
            "treatment": "reranker",
            "segment": None,
            "design": "paired",
            "n": 1880,
            "control_mean": 0.541,
            "treatment_mean": 0.779,
            "delta": 0.238,
            "relative_lift": 0.44,
            "ci": [0.221, 0.255],
            "relative_ci": [0.39, 0.49],
            "p_value": 1.2e-80,
            "p_adjusted": 3.6e-80,
            "correction": "holm",
            "mde": 0.012,
            "wins": 1103,
            "ties": 582,
            "losses": 195,
            "verdict": "win",
            "primary_test": "t",
            "confidence_level": 0.95,
        },
        {
            "metric": "ndcg@10",
            "treatment": "reranker",
            "segment": None,
            "design": "paired",
            "n": 1880,
            "control_mean": 0.6123,
            "treatment_mean": 0.6151,
            "delta": 0.0028,
            "relative_lift": 0.004573,
            "ci": [-0.0079, 0.0136],
            "relative_ci": [-0.013, 0.022],
            "p_value": 0.0342,
            "p_adjusted": 0.0684,
            "correction": "holm",
            "mde": 0.0312,
            "wins": 640,
            "ties": 700,
            "losses": 540,
            "verdict": "inconclusive",
            "primary_test": "t",
            "confidence_level": 0.95,
        },
        {
            "metric": "recall@20",
            "treatment": "reranker",
            "segment": None,
            "design": "paired",
            "n": 1880,
            "control_mean": 0.0,
            "treatment_mean": -0.0,
            "delta": -0.0451,
            "relative_lift": None,
            "ci": [-0.0602, -0.03],
            "relative_ci": None,
            "p_value": 0.0004,
            "p_adjusted": 0.0012,
            "correction": "holm",
            "mde": None,
            "wins": 12,
            "ties": 1800,
            "losses": 68,
            "verdict": "loss",
            "primary_test": "t",
            "confidence_level": 0.95,
        },
        {
            "metric": "mrr@10",
            "treatment": "reranker",
            "segment": "device=mobile",
            "design": "paired",
            "n": 900,
            "control_mean": 0.5,
            "treatment_mean": 0.7,
            "delta": 0.2,
            "relative_lift": 0.4,
            "ci": [0.1, 0.3],
            "relative_ci": [0.2, 0.6],
            "p_value": 0.001,
            "p_adjusted": 0.002,
            "correction": "fdr_bh",
            "mde": 0.02,
            "wins": 1,
            "ties": 2,
            "losses": 3,
            "verdict": "win",
            "primary_test": "t",
            "confidence_level": 0.95,
        },
    ],
}


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.2e-80, "< 0.001"),
        (0.000999, "< 0.001"),
        (0.001, "0.001"),
        (0.0342, "0.0342"),
        (0.04996, "0.05"),
        (0.12345, "0.123"),
        (1.0, "1"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_p_values_below_a_thousandth_are_shown_as_bounds(value, text):
    assert fmt_p(value) == text


def test_number_formats():
    assert fmt_value(0.5404) == "0.540"
    assert fmt_value(None) == "n/a"
    assert fmt_signed(0.2396) == "+0.240"
    assert fmt_signed(-0.0123) == "-0.012"
    assert fmt_percent(0.444) == "+44.4%"
    assert fmt_percent(-0.0051) == "-0.5%"
    assert fmt_percent(None) == "n/a"
    assert fmt_count(1103) == "1,103"
    assert fmt_count(1234567.0) == "1,234,567"
    assert fmt_count(None) == "n/a"


# --------------------------------------------------------------------------- headline


def test_headline_lines_follow_one_grammar():
    # Worked out by hand from EXAMPLE; the metric column is padded to "Recall@20" (9 chars).
    assert headline_lines(EXAMPLE) == [
        "MRR@10     0.541 → 0.779  +0.238 (+44.0%)  95% CI [+0.221, +0.255] / [+39.0%, +49.0%]"
        "  p < 0.001 (t, Holm)  n = 1,880  W/T/L 1,103/582/195  → Cross-encoder reranker wins",
        "NDCG@10    0.612 → 0.615  +0.003 (+0.5%)  95% CI [-0.008, +0.014] / [-1.3%, +2.2%]"
        "  p = 0.0684 (t, Holm)  n = 1,880  W/T/L 640/700/540"
        "  → inconclusive (this experiment could detect deltas ≥ 0.031)",
        "Recall@20  0.000 → -0.000  -0.045 (n/a)  95% CI [-0.060, -0.030]"
        "  p = 0.0012 (t, Holm)  n = 1,880  W/T/L 12/1,800/68  → Cross-encoder reranker loses",
    ]


def test_headline_names_the_treatment_when_there_are_several():
    summary = copy.deepcopy(EXAMPLE)
    summary["arms"].append({"name": "boost", "label": "Freshness boost", "role": "treatment"})
    extra = copy.deepcopy(summary["comparisons"][0])
    extra.update(
        treatment="boost",
        verdict="inconclusive",
        mde=None,
        correction="none",
        p_adjusted=None,
        p_value=0.5,
        relative_ci=[None, None],
    )
    summary["comparisons"] = [summary["comparisons"][0], extra]
    assert headline_lines(summary) == [
        "MRR@10 · Cross-encoder reranker  0.541 → 0.779  +0.238 (+44.0%)"
        "  95% CI [+0.221, +0.255] / [+39.0%, +49.0%]  p < 0.001 (t, Holm)  n = 1,880"
        "  W/T/L 1,103/582/195  → Cross-encoder reranker wins",
        "MRR@10 · Freshness boost         0.541 → 0.779  +0.238 (+44.0%)"
        "  95% CI [+0.221, +0.255] / unbounded  p = 0.5 (t)  n = 1,880"
        "  W/T/L 1,103/582/195  → inconclusive",
    ]


def test_headline_of_an_independent_design_shows_both_sample_sizes():
    comp = {
        "metric": "mrr@10",
        "treatment": "reranker",
        "segment": None,
        "design": "independent",
        "n": 1998,
        "n_control": 1000,
        "n_treatment": 998,
        "control_mean": 0.5,
        "treatment_mean": 0.52,
        "delta": 0.02,
        "relative_lift": 0.04,
        "ci": [-0.01, 0.05],
        "relative_ci": [-0.02, 0.1],
        "p_value": 0.2,
        "p_adjusted": 0.2,
        "correction": "holm",
        "mde": 0.0449,
        "wins": None,
        "ties": None,
        "losses": None,
        "verdict": "inconclusive",
        "primary_test": "mannwhitney",
        "confidence_level": 0.9,
    }
    summary = {**EXAMPLE, "comparisons": [comp]}
    assert headline_lines(summary) == [
        "MRR@10  0.500 → 0.520  +0.020 (+4.0%)  90% CI [-0.010, +0.050] / [-2.0%, +10.0%]"
        "  p = 0.2 (Mann-Whitney, Holm)  n = 1,000 / 998"
        "  → inconclusive (this experiment could detect deltas ≥ 0.045)",
    ]


def test_headline_blanks_terminal_control_characters():
    summary = copy.deepcopy(EXAMPLE)
    summary["metric_labels"]["mrr@10"] = "MRR\x1b[2J@10"
    summary["comparisons"] = summary["comparisons"][:1]
    assert headline_lines(summary)[0].startswith("MRR [2J@10  0.541 → 0.779")
    assert "\x1b" not in headline_lines(summary)[0]


# --------------------------------------------------------------------------- HTML


class _Page(HTMLParser):
    """Collects what the tests look at: cells with data attributes, text, URLs, tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[dict]] = []  # results tables: rows of {key: (text, value)}
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.stack: list[str] = []
        self.texts: dict[str, list[str]] = {}
        self._cell: tuple[str, str] | None = None
        self._row: dict | None = None
        self._buffer: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self.stack.append(tag)
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            if attrs.get(name):
                self.urls.append(attrs[name])
        if tag == "table" and "results" in (attrs.get("class") or ""):
            self.tables.append([])
        if tag == "tr" and self.tables:
            self._row = {}
        if tag == "td" and "data-key" in attrs:
            self._cell = (attrs["data-key"], attrs["data-value"])
            self._buffer = []

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        if tag == "td" and self._cell is not None:
            key, value = self._cell
            self._row[key] = ("".join(self._buffer), json.loads(value))
            self._cell = None
        if tag == "tr" and self._row:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._buffer.append(data)
        if self.stack:
            self.texts.setdefault(self.stack[-1], []).append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_html_results_table_holds_every_comparison_number_as_the_json_has_it(readout):
    page = _parse(render_html(readout))
    overall, segmented = page.tables
    comps = readout.summary["comparisons"]
    expected_overall = [c for c in comps if c["segment"] is None]
    expected_segments = [c for c in comps if c["segment"] is not None]
    assert len(overall) == len(expected_overall) == 2
    assert len(segmented) == len(expected_segments) == 8
    for rows, expected in ((overall, expected_overall), (segmented, expected_segments)):
        for row, comp in zip(rows, expected, strict=True):
            assert row["metric"][1] == comp["metric"]
            assert "treatment" not in row  # one treatment: named in the title and headline
            for key in (
                "control_mean",
                "treatment_mean",
                "delta",
                "relative_lift",
                "ci",
                "relative_ci",
                "p_adjusted",
                "effect_size",
                "mde",
                "n",
                "verdict",
            ):
                assert row[key][1] == comp[key], key  # exact JSON value behind each cell
            for name, p in comp["p_values"].items():
                assert row[f"p_values.{name}"][1] == p
            assert row["wtl"][1] == [comp["wins"], comp["ties"], comp["losses"]]
            # what a reader sees, formatted by the documented rules
            assert row["control_mean"][0] == f"{comp['control_mean']:.3f}"
            assert row["delta"][0] == f"{comp['delta']:+.3f}"
            low, high = comp["ci"]
            assert row["ci"][0] == f"[{low:+.3f}, {high:+.3f}]"
            assert row["relative_lift"][0] == f"{100 * comp['relative_lift']:+.1f}%"
            p = comp["p_adjusted"]
            assert row["p_adjusted"][0] == ("< 0.001" if p < 0.001 else f"{p:.3g}")
            assert row["n"][0] == f"{comp['n']:,}"
            assert row["wtl"][0] == f"{comp['wins']:,} / {comp['ties']:,} / {comp['losses']:,}"
            assert row["verdict"][0] == comp["verdict"]
    if expected_segments:
        assert [r["segment"][0] for r in segmented] == [c["segment"] for c in expected_segments]


def test_html_results_name_the_treatment_when_there_are_several():
    readout = build_readout(n=80, treatments=("reranker", "boost"))
    text = render_html(readout)
    assert text.count("locale=it-IT (n = 10)") == 1  # listed once, not once per treatment
    overall, segmented = _parse(text).tables
    comps = readout.summary["comparisons"]
    assert [row["treatment"] for row in overall] == [
        (
            ("Cross-encoder reranker", "reranker")
            if c["treatment"] == "reranker"
            else ("Freshness boost", "boost")
        )
        for c in comps
        if c["segment"] is None
    ]
    assert [row["treatment"][1] for row in segmented] == [
        c["treatment"] for c in comps if c["segment"] is not None
    ]
    md = render_markdown(readout)
    assert "| MRR@10 | Freshness boost | " in md


def test_html_headline_lists_each_line_with_its_verdict(readout):
    text = render_html(readout)
    page = _parse(text)
    assert page.texts["code"][:2] == headline_lines(readout.summary)
    verdicts = [c["verdict"] for c in readout.summary["comparisons"] if c["segment"] is None]
    badges = re.findall(r'<span class="badge (\w+)">', text)
    assert badges == verdicts


def test_html_is_self_contained(readout):
    text = render_html(readout)
    page = _parse(text)
    outside_images = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", text)
    assert not re.search(r"https?:|//[a-z0-9]|@import|url\(", outside_images, re.IGNORECASE)
    assert "script" not in page.tags and "link" not in page.tags
    images = [u for u in page.urls if u.startswith("data:image/png;base64,")]
    assert images and images == page.urls  # every referenced resource is embedded
    for url in images:
        png = base64.b64decode(url.split(",", 1)[1], validate=True)
        assert png.startswith(PNG_SIGNATURE) and len(png) > 5000
    assert page.tags.count("img") == 7  # forest, deltas, bootstrap, first, curves, 2 segments


HOSTILE = "<script>alert(1)</script>"


def test_user_text_is_escaped_everywhere():
    readout = build_readout(
        n=120,
        title=HOSTILE,
        query_prefix='<img src=x onerror="alert(2)">',
        labels={"reranker": "Re<b>ranker</b> & co", "bm25": "BM25 | `prod` [x](javascript:y)"},
        segment_values=("<i>mobile</i>", "desk|top"),
        config_text="title: '</pre><script>alert(3)</script>'\n```\n",
    )
    readout.summary["experiment"]["description"] = "See <a href='http://evil'>this</a>"
    text = render_html(readout)
    page = _parse(text)
    assert "script" not in page.tags and "a" not in page.tags and "b" not in page.tags
    assert "i" not in page.tags
    assert page.texts["h1"] == [HOSTILE]  # shown as text, not markup
    assert page.texts["title"] == [f"{HOSTILE} · abrank readout"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text.lower() and "onerror=" not in text.replace("onerror=&quot;", "")
    assert "device=&lt;i&gt;mobile&lt;/i&gt;" in text
    assert 'class="text">&lt;img src=x onerror=&quot;alert(2)&quot;&gt;' in text  # query ids
    assert not any(u.startswith(("http", "javascript")) for u in page.urls)
    assert page.texts["pre"] == [readout.config_text]

    md = render_markdown(readout)
    # Fenced code is shown verbatim by every renderer; everything else must be inert.
    prose = re.sub(r"^(`{3,})(?:yaml|text)\n.*?^\1$", "", md, flags=re.DOTALL | re.MULTILINE)
    assert "title: '</pre>" not in prose and "→ Re<b>ranker" not in prose
    for tag in ("<script", "<img", "<i>", "<b>", "<a "):
        assert tag not in prose
    assert "# &lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "Re&lt;b&gt;ranker&lt;/b&gt; &amp; co" in md
    assert r"BM25 \| \`prod\` \[x\](javascript:y)" in md
    # the config fence is longer than any backtick run inside it
    assert "````yaml\ntitle: '</pre><script>alert(3)</script>'\n```\n````" in md


def test_markdown_escape():
    assert md_escape("a|b_c*<d>&e") == r"a\|b\_c\*&lt;d&gt;&amp;e"
    assert md_escape("line\nbreak") == "line break"
    assert md_escape("MRR@10") == "MRR@10"


# --------------------------------------------------------------------------- Markdown


def test_markdown_has_the_sections_headline_and_tables(readout):
    md = render_markdown(readout)
    summary = readout.summary
    headings = re.findall(r"^## (.+)$", md, re.MULTILINE)
    assert headings == [
        "Headline",
        "Results",
        "Where relevant documents land",
        "Segments",
        "Queries that moved most",
        "Diagnostics",
        "Reproducibility",
    ]
    block = re.search(r"```text\n(.*?)\n```", md, re.DOTALL).group(1)
    assert block.split("\n") == headline_lines(summary)
    results = md.split("## Results")[1].split("##")[0]
    rows = [r for r in results.splitlines() if r.startswith("| ")]
    assert len(rows) == 1 + 2  # header + two comparisons
    first = [cell.strip() for cell in rows[1].strip("|").split("|")]
    comp = summary["comparisons"][0]
    assert first[:5] == [
        "MRR@10",
        f"{comp['control_mean']:.3f}",
        f"{comp['treatment_mean']:.3f}",
        f"{comp['delta']:+.3f}",
        f"[{comp['ci'][0]:+.3f}, {comp['ci'][1]:+.3f}]",
    ]
    assert first[-1] == comp["verdict"]
    assert "> **Warning:** reranker: judged@10 is 0.87 against control's 0.93" in md
    assert "Too small to compare: locale=it-IT (n = 10)." in md
    for name in (
        "forest",
        "deltas",
        "bootstrap",
        "first_relevant",
        "curves",
        "segments-mrr-10",
        "segments-ndcg-10",
    ):
        assert f"](charts/{name}.png)" in md


def test_markdown_diagnostics_and_reproducibility(readout):
    md = render_markdown(readout)
    diagnostics = md.split("## Diagnostics")[1].split("## Reproducibility")[0]
    assert (
        "| arm | label | role | queries | missing | without judgments | judged@10 |" in diagnostics
    )
    assert "| bm25 | BM25 (production) | control | 300 | 0 | 2 | 0.930 |" in diagnostics
    assert "| reranker | Cross-encoder reranker | treatment | 300 | 4 | 2 | 0.870 |" in diagnostics
    assert "- queries analysed: 298" in diagnostics
    assert "- queries in both arms (matched): 296" in diagnostics
    assert "- queries without a relevant judgment: 17" in diagnostics
    assert "- missing-query policy: zero" in diagnostics
    repro = md.split("## Reproducibility")[1]
    assert "- abrank version: 0.1.0" in repro and "- seed: 7" in repro
    assert "- tests: t, permutation, bootstrap" in repro and "- resamples: 10,000" in repro
    assert "- multiple-testing correction: primary: holm, segments: fdr\\_bh" in repro
    assert (
        f"| control | bm25 | experiments/data/demo-control.csv.gz | 40,000 | `{'ab' * 32}` |"
        in repro
    )
    assert "```yaml\nname: demo-reranker\nmetrics: [mrr@10, ndcg@10]\n```" in repro


def test_markdown_relative_lift_without_a_bound():
    readout = build_readout(n=80)
    comp = readout.summary["comparisons"][0]
    comp["relative_lift"], comp["relative_ci"] = None, None
    second = readout.summary["comparisons"][1]
    second["relative_ci"] = [second["relative_ci"][0], None]
    md = render_markdown(readout)
    rows = [r for r in md.split("## Results")[1].split("##")[0].splitlines() if r.startswith("| ")]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    relative = cells[0].index("relative")
    assert cells[1][relative : relative + 2] == ["n/a", "n/a"]
    assert cells[2][relative + 1] == "unbounded"


def test_largest_moves_match_a_plain_reference(readout):
    md = render_markdown(readout)
    section = md.split("## Queries that moved most")[1].split("## Diagnostics")[0]
    losses, wins = largest_moves(readout.per_query, "bm25", "reranker", "mrr@10")
    for title, expected in (("Largest losses", losses), ("Largest wins", wins)):
        part = section.split(f"**{title} of Cross-encoder reranker** (MRR@10)")[1]
        rows = [r for r in part.split("**")[0].splitlines() if r.startswith("| ")][1:]
        assert rows == [f"| {q} | {c:.3f} | {t:.3f} | {d:+.3f} |" for d, q, c, t in expected]


# --------------------------------------------------------------------------- files


def test_write_report_writes_both_formats_and_the_charts(tmp_path, readout):
    paths = write_report(readout, tmp_path)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in paths)
    assert names == sorted(
        [
            "report.md",
            "report.html",
            "charts/forest.png",
            "charts/deltas.png",
            "charts/bootstrap.png",
            "charts/first_relevant.png",
            "charts/curves.png",
            "charts/segments-mrr-10.png",
            "charts/segments-ndcg-10.png",
        ]
    )
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\((charts/[^)]+)\)", md):
        assert (tmp_path / link).read_bytes().startswith(PNG_SIGNATURE)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    on_disk = {
        (tmp_path / "charts" / n).read_bytes() for n in re.findall(r"\]\(charts/([^)]+)\)", md)
    }
    assert {base64.b64decode(e) for e in embedded} == on_disk  # drawn once, used twice


def test_write_report_only_what_is_asked(tmp_path, readout):
    paths = write_report(readout, tmp_path, formats=("md",))
    assert (tmp_path / "report.md").exists() and not (tmp_path / "report.html").exists()
    assert len(paths) == 8
    assert write_report(readout, tmp_path / "charts", formats=()) == []


def test_write_charts_returns_what_it_wrote(tmp_path, readout):
    paths = write_charts(readout, tmp_path)
    assert paths == sorted(paths, key=lambda p: [c.name for c in paths].index(p.name))
    assert all(p.parent == tmp_path / "charts" and p.stat().st_size > 5000 for p in paths)


def test_write_report_rejects_bad_arguments(tmp_path, readout):
    with pytest.raises(ConfigError) as error:
        write_report(readout, tmp_path, formats=("html", "pdf"))
    assert str(error.value) == "formats: expected some of html, md, got 'pdf'"
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError) as error:
        write_report(readout, missing)
    assert str(error.value) == f"{missing}: expected an existing folder, got none"
    assert not missing.exists()


def test_report_without_segments_curves_or_draws(tmp_path):
    full = build_readout(n=60)
    summary = copy.deepcopy(full.summary)
    summary["comparisons"] = [c for c in summary["comparisons"] if c["segment"] is None]
    summary["segments"] = {"columns": [], "min_queries": 30, "too_small": []}
    summary["diagnostics"]["warnings"] = []
    bare = Readout(summary, full.per_query, full.curves.iloc[0:0], full.first_relevant.iloc[0:0])
    write_report(bare, tmp_path)
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["deltas.png", "forest.png"]
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Segments" not in md and "Warning" not in md
    assert "No rank data in this readout." in md
    assert Path(tmp_path / "report.html").read_text(encoding="utf-8").count("<img") == 2


def test_largest_moves_ties_missing_values_and_few_wins():
    base = build_readout(n=40)
    # control 0.5 everywhere; q00..q13 lose 0.5 (a 14-way tie), q14 loses 0.25,
    # q15 wins 0.5, q16 wins 0.25, q17 has no treatment value, q18 is absent from control.
    control = [0.5] * 18
    treatment = [0.0] * 14 + [0.25, 1.0, 0.75, np.nan]
    frame = pd.DataFrame(
        {
            "arm": ["bm25"] * 18 + ["reranker"] * 19,
            "query_id": [f"q{i:02d}" for i in range(18)] + [f"q{i:02d}" for i in range(19)][::-1],
            "mrr@10": control + [([*treatment, 1.0])[i] for i in range(19)][::-1],
        }
    )
    readout = Readout(base.summary, frame, base.curves, base.first_relevant)
    section = render_markdown(readout).split("## Queries that moved most")[1]
    losses = section.split("**Largest losses")[1].split("**Largest wins")[0]
    wins = section.split("**Largest wins")[1].split("## ")[0]
    loss_rows = [r for r in losses.splitlines() if re.match(r"\| q\d", r)]
    assert loss_rows == [f"| q{i:02d} | 0.500 | 0.000 | -0.500 |" for i in range(10)]
    win_rows = [r for r in wins.splitlines() if re.match(r"\| q\d", r)]
    assert win_rows == ["| q15 | 0.500 | 1.000 | +0.500 |", "| q16 | 0.500 | 0.750 | +0.250 |"]


def test_numpy_scalars_and_missing_numbers_render():
    # A readout built by hand in a notebook may hold NumPy scalars and NaN/None fields.
    summary = copy.deepcopy(EXAMPLE)
    comp = summary["comparisons"][0]
    comp.update(
        n=np.int64(1880),
        wins=np.int64(1103),
        ties=np.int32(582),
        losses=np.int64(195),
        delta=np.float64(0.238),
        ci=[np.float64(0.221), 0.255],
        mde=float("nan"),
        effect_size=None,
        p_values={"t": np.float64(1.2e-80)},
    )
    summary["comparisons"] = [comp]
    line = headline_lines(summary)[0]
    assert "+0.238 (+44.0%)" in line and "n = 1,880" in line
    assert "W/T/L 1,103/582/195" in line
    empty = pd.DataFrame()
    page = _parse(render_html(Readout(summary, empty, empty, empty)))
    row = page.tables[0][0]
    assert row["n"] == ("1,880", 1880) and row["wtl"] == ("1,103 / 582 / 195", [1103, 582, 195])
    assert row["mde"][0] == "n/a" and math.isnan(row["mde"][1])
    assert row["effect_size"] == ("n/a", None)
    assert row["p_values.t"] == ("< 0.001", 1.2e-80)


def test_headline_of_unchanged_queries_and_of_the_independent_design():
    from abrank.render import headline_line

    summary = {
        "arms": [
            {"name": "c", "label": "C", "role": "control"},
            {"name": "t", "label": "T", "role": "treatment"},
        ],
        "metric_labels": {"recall@100": "Recall@100"},
    }
    same = {
        "metric": "recall@100",
        "treatment": "t",
        "segment": None,
        "design": "paired",
        "n": 43,
        "control_mean": 0.491,
        "treatment_mean": 0.491,
        "delta": 0.0,
        "relative_lift": 0.0,
        "ci": [0.0, 0.0],
        "relative_ci": [0.0, 0.0],
        "p_value": 1.0,
        "p_adjusted": 1.0,
        "primary_test": "t",
        "correction": "holm",
        "confidence_level": 0.95,
        "mde": 0.0,
        "wins": 0,
        "ties": 43,
        "losses": 0,
        "verdict": "inconclusive",
    }
    line = headline_line(summary, same)
    assert line.endswith("W/T/L 0/43/0  → inconclusive (no query changed)")
    independent = {
        **same,
        "design": "independent",
        "n": 80,
        "n_control": 40,
        "n_treatment": 40,
        "treatment_mean": 0.5,
        "delta": 0.009,
        "mde": 0.05,
        "wins": 0,
        "ties": 0,
        "losses": 0,
    }
    line = headline_line(summary, independent)
    assert "W/T/L" not in line
    assert line.endswith("→ inconclusive (this experiment could detect deltas ≥ 0.050)")


def test_headline_names_the_widened_level_and_a_disagreeing_test():
    """An interval drawn at the corrected level says so; a line whose bootstrap interval and
    permutation verdict disagree says which decides, on the same line."""
    summary = copy.deepcopy(EXAMPLE)
    first, second = summary["comparisons"][0], summary["comparisons"][1]
    first["ci_level"] = 0.9875
    second.update(ci_level=0.95, ci_agrees=False, primary_test="permutation")
    lines = headline_lines(summary)
    assert "  98.8% CI (Holm) [+0.221, +0.255] / " in lines[0]
    assert "(a bootstrap interval; the permutation test decides the verdict)" in lines[1]
    assert "95% CI [-0.008, +0.014]" in lines[1] and "(Holm)" not in lines[1].split("  p ")[0]


def test_too_small_segments_and_undefined_values_per_metric():
    readout = build_readout(n=80)
    summary = readout.summary
    summary["segments"]["too_small"] = [
        {"segment": "locale=it-IT", "treatment": "reranker", "metric": "mrr@10", "n": 10},
        {"segment": "locale=it-IT", "treatment": "reranker", "metric": "ndcg@10", "n": 12},
        {"segment": "device=tv", "treatment": "reranker", "metric": "mrr@10", "n": 3},
    ]
    summary["diagnostics"]["undefined"] = {
        "policy": "drop",
        "metrics": {"mrr@10": 17, "ndcg@10": 15},
    }
    md = render_markdown(readout)
    assert "Too small to compare: locale=it-IT (n = 10-12 by metric), device=tv (n = 3)." in md
    assert "- undefined values per metric (left out): MRR@10 17, NDCG@10 15" in md


# --------------------------------------------------------------------------- opening, legend


def test_opening_sentence_says_the_move_in_plain_words():
    from abrank.render import opening_sentence

    win, flat, loss = EXAMPLE["comparisons"][:3]
    assert opening_sentence(EXAMPLE, win) == (
        "Cross-encoder reranker raises MRR@10 from 0.541 to 0.779 (+44.0%, 95% CI "
        "[+0.221, +0.255]): a win."
    )
    assert opening_sentence(EXAMPLE, flat) == (
        "Cross-encoder reranker raises NDCG@10 from 0.612 to 0.615 (+0.5%, 95% CI "
        "[-0.008, +0.014]): inconclusive (this experiment could detect deltas of 0.031 or "
        "more)."
    )
    # no relative lift (control mean 0): the delta stands in for it
    assert opening_sentence(EXAMPLE, loss) == (
        "Cross-encoder reranker lowers Recall@20 from 0.000 to -0.000 (Δ -0.045, 95% CI "
        "[-0.060, -0.030]): a loss."
    )


def test_the_page_opens_with_the_sentence_the_reading_and_the_stamp(readout):
    summary = readout.summary
    comp = next(c for c in summary["comparisons"] if c["segment"] is None)
    c, t = comp["control_mean"], comp["treatment_mean"]
    low, high = comp["ci"]
    verdict = {"win": "a win", "loss": "a loss"}.get(comp["verdict"])
    assert verdict  # the fixture's reranker wins on MRR@10
    sentence = (
        f"Cross-encoder reranker raises MRR@10 from {c:.3f} to {t:.3f} "
        f"({100 * (t / c - 1):+.1f}%, 95% CI [{low:+.3f}, {high:+.3f}]): {verdict}."
    )
    reading = (
        f"The first relevant result moved from about position {1 / c:.1f} to about "
        f"{1 / t:.1f} (1/MRR is the harmonic mean of its position)"
    )
    md = render_markdown(readout)
    paragraphs = md.split("\n\n")
    assert paragraphs[1] == sentence
    assert paragraphs[2].startswith(reading)
    assert paragraphs[3] == "offline replay · abrank 0.1.0 · seed 7"  # no run date recorded
    assert md.index(sentence) < md.index("## Headline")

    page = render_html(readout)
    body = page.split("<h1>", 1)[1]
    assert re.match(r"[^<]*</h1>\n<p class=\"opening\">", body)
    assert f'<p class="opening">{sentence}</p>' in page.replace("&#x27;", "'")
    figures = re.findall(r'<div class="means">([^<]*)</div>', page)
    assert figures == [f"{c:.3f} → {t:.3f}"]  # the big numbers, before the headline
    assert page.index('class="means"') < page.index('id="headline"')


def test_stamp_shows_the_run_date_and_window_when_the_summary_has_them():
    from abrank.render.headline import stamp

    summary = {"design": "paired", "abrank_version": "0.2.0", "seed": 3}
    assert stamp(summary) == ["offline replay", "abrank 0.2.0", "seed 3"]
    dated = {**summary, "design": "independent", "date": "2026-11-30", "window": "daily"}
    assert stamp(dated) == ["data of 2026-11-30", "window daily", "abrank 0.2.0", "seed 3"]


def test_gloss_reads_each_metric_in_its_own_terms():
    from abrank.render.headline import gloss

    ndcg, recall = EXAMPLE["comparisons"][1], EXAMPLE["comparisons"][2]
    assert gloss(EXAMPLE, [ndcg]) == (
        "Share of the ideal ordering's gain that the top 10 holds: 61.5% for Cross-encoder "
        "reranker, against 61.2% for BM25 (production)."
    )
    assert gloss(EXAMPLE, [recall]) == (
        "Share of the relevant documents found in the top 20: 0.0% for Cross-encoder "
        "reranker, against 0.0% for BM25 (production)."  # a mean of -0.0 reads as 0.0%
    )
    assert gloss(EXAMPLE, [{**recall, "treatment_mean": 1.5}]) is None  # not a share
    summary = copy.deepcopy(EXAMPLE)
    summary["arms"].append({"name": "boost", "label": "Boost", "role": "treatment"})
    mrr = summary["comparisons"][0]
    other = {**mrr, "treatment": "boost", "treatment_mean": 0.625}
    assert gloss(summary, [mrr, other]) == (
        "The first relevant result sits at about position 1.8 for BM25 (production), 1.3 "
        "for Cross-encoder reranker and 1.6 for Boost (1/MRR is the harmonic mean of its "
        "position)."
    )
    assert gloss(EXAMPLE, [{**mrr, "metric": "map"}]) is None  # no simpler reading


def test_legend_explains_the_metrics_terms_and_corrections_shown(readout):
    md = render_markdown(readout)
    legend = md.split("**How to read this readout**")[1].split("![")[0]
    names = re.findall(r"^- \*\*(.+?)\*\*: ", legend, re.MULTILINE)
    assert names == [
        "MRR@10",
        "NDCG@10",
        "Δ, CI",
        "W / T / L",
        "effect size",
        "MDE",
        "Holm (metrics × treatments)",
        "BH (segment breakdowns)",
    ]
    assert "first relevant document in the top 10" in legend
    assert "80% power" in legend
    page = _parse(render_html(readout))
    assert page.texts["dt"][: len(names)] == names  # the same legend on the page

    summary = copy.deepcopy(readout.summary)
    summary["metrics"] = ["recall@20", "p@5"]
    summary["metric_labels"] = {"recall@20": "Recall@20", "p@5": "P@5"}
    summary["correction"] = {"primary": "bonferroni", "segments": "none"}
    for comp in summary["comparisons"]:
        comp["metric"] = "recall@20" if comp["metric"] == "mrr@10" else "p@5"
    changed = Readout(summary, readout.per_query.iloc[0:0], readout.curves, readout.first_relevant)
    legend = render_markdown(changed).split("**How to read this readout**")[1]
    names = re.findall(r"^- \*\*(.+?)\*\*: ", legend, re.MULTILINE)
    assert names[:2] == ["Recall@20", "P@5"] and names[-1] == "Bonferroni (metrics × treatments)"
    assert "the top 20" in legend and "MRR" not in legend


def test_both_formats_draw_the_same_sections(readout):
    from abrank.render import build_document
    from abrank.render.charts import plan_charts

    charts = plan_charts(readout)
    document = build_document(readout, charts)
    headings = [s.heading for s in document.sections]
    assert re.findall(r"^## (.+)$", render_markdown(readout, charts=charts), re.M) == headings
    assert _parse(render_html(readout, charts=charts)).texts["h2"] == headings
    data = document.to_dict()
    assert [s["id"] for s in data["sections"]] == [
        "headline",
        "results",
        "positions",
        "segments",
        "queries",
        "diagnostics",
        "reproducibility",
    ]
    json.dumps(data, default=str)  # plain data


def test_charts_are_placed_by_their_section_not_their_file_name(readout):
    from dataclasses import replace

    from abrank.render.charts import plan_charts

    charts = plan_charts(readout)
    renamed = [replace(c, name=f"x-{c.name}") for c in charts]
    md = render_markdown(readout, charts=renamed)
    positions = md.split("## Where relevant documents land")[1].split("## ")[0]
    assert re.findall(r"\]\(charts/([^)]+)\)", positions) == [
        "x-first_relevant.png",
        "x-curves.png",
    ]
    assert [c.section for c in charts] == [
        "results",
        "results",
        "positions",
        "positions",
        "segments",
        "segments",
        "results",
    ]
