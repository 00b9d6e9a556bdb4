"""Golden test of the demo's Markdown readout (``experiments/demo-reranker.yaml``).

The golden text below was read line by line, and the test does not trust it blindly: the
headline lines and results rows in it are rebuilt here from summary.json numbers with
plain f-strings (the formatting rules of ``abrank.render``), the verdicts are re-derived
from the adjusted p-values, the means from the per-query table, the data fingerprints
from the files themselves (hashlib) and the config block from the config file. The What
moved section's numbers are counted the slow way in ``test_what_moved.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reference import largest_moves

import abrank
from abrank.render import headline_lines, render_markdown

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "experiments/demo-reranker.yaml"


@pytest.fixture(scope="module")
def demo():
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # paths in the readout are shown relative to the working folder
        readout = abrank.run_experiment(CONFIG)
        markdown = render_markdown(readout)
    return readout, markdown


def _p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def _level(comp: dict) -> str:
    """The interval's level as printed: 95% before a correction, e.g. 98.8% after Holm."""
    percent = 100 * comp["ci_level"]
    return f"{percent:.0f}%" if abs(percent - round(percent)) < 1e-9 else f"{percent:.1f}%"


def _expected_headline(comp: dict, label: str, width: int) -> str:
    """A headline line rebuilt from one comparison's JSON numbers."""
    low, high = comp["ci"]
    level = _level(comp) + (" CI (Holm)" if comp["ci_level"] != 0.95 else " CI")
    rlow, rhigh = comp["relative_ci"]
    p = comp["p_adjusted"]
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.3g}"
    verdict = (
        "Cross-encoder reranker wins"
        if p < 0.05 and comp["delta"] > 0
        else "Cross-encoder reranker loses"
        if p < 0.05
        else f"inconclusive (this experiment could detect deltas ≥ {comp['mde']:.3f})"
    )
    return (
        f"{label:<{width}}  {comp['control_mean']:.3f} → {comp['treatment_mean']:.3f}  "
        f"{comp['delta']:+.3f} ({100 * comp['relative_lift']:+.1f}%)  "
        f"{level} [{low:+.3f}, {high:+.3f}] / [{100 * rlow:+.1f}%, {100 * rhigh:+.1f}%]  "
        f"{p_text} (t{', Holm' if comp['correction'] else ''})  n = {comp['n']:,}  "
        f"W/T/L {comp['wins']:,}/{comp['ties']:,}/{comp['losses']:,}  → {verdict}"
    )


def _table(section: str) -> list[list[str]]:
    rows = [r for r in section.splitlines() if r.startswith("| ")]
    return [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]


def test_demo_markdown_matches_the_golden(demo):
    _, markdown = demo
    assert markdown == GOLDEN


def test_golden_headline_is_the_summary_formatted_by_the_rules(demo):
    readout, _ = demo
    summary = readout.summary
    labels = {"mrr@10": "MRR@10", "ndcg@10": "NDCG@10", "recall@20": "Recall@20", "hit@3": "Hit@3"}
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    assert [c["metric"] for c in overall] == list(labels)
    expected = [_expected_headline(c, labels[c["metric"]], 9) for c in overall]
    block = re.search(r"```text\n(.*?)\n```", GOLDEN, re.DOTALL).group(1).split("\n")
    assert block == expected
    assert headline_lines(summary) == expected


def test_golden_opens_with_the_primary_metric_in_plain_words(demo):
    """The first text under the title: the primary metric's move, rebuilt from the JSON."""
    readout, _ = demo
    comp = next(
        c
        for c in readout.summary["comparisons"]
        if c["segment"] is None and c["metric"] == "mrr@10"
    )
    low, high = comp["ci"]
    c, t = comp["control_mean"], comp["treatment_mean"]
    assert comp["verdict"] == "win" and comp["p_adjusted"] < 0.05  # hence "a win"
    sentence = (
        f"Cross-encoder reranker raises MRR@10 from {c:.3f} to {t:.3f} "
        f"({100 * comp['relative_lift']:+.1f}%, {_level(comp)} CI [{low:+.3f}, {high:+.3f}]): "
        "a win."
    )
    # 1/MRR: the harmonic mean of the first relevant position; MRR > 0.75 means more than
    # half of the queries have it first (every other query scores at most 1/2)
    reading = (
        f"The first relevant result moved from about position {1 / c:.1f} to about "
        f"{1 / t:.1f} (1/MRR is the harmonic mean of its position): first for most queries."
    )
    # the decision comes first: Recall@20, the guardrail, deteriorates (p < alpha, delta < 0)
    guard = next(
        c
        for c in readout.summary["comparisons"]
        if c["segment"] is None and c["metric"] == "recall@20"
    )
    assert guard["p_value"] < 0.05 and guard["delta"] < -0.005  # beyond its margin too
    decision = (
        f"**No-ship:** Recall@20 deteriorates ({guard['delta']:+.3f}, p = {guard['p_value']:.3g}) "
        "and is not shown within its -0.005 margin"
    )
    paragraphs = GOLDEN.split("\n\n")
    assert paragraphs[:5] == [
        "# Cross-encoder reranker vs BM25",
        decision,
        sentence,
        reading,
        "offline replay · abrank 0.1.0 · seed 7",
    ]
    assert sentence == (
        "Cross-encoder reranker raises MRR@10 from 0.539 to 0.785 (+45.6%, 95% CI "
        "[+0.226, +0.266]): a win."
    )


def test_golden_results_rows_are_the_summary_formatted_by_the_rules(demo):
    readout, _ = demo
    results = GOLDEN.split("## Results")[1].split("## ")[0]
    rows = _table(results)
    assert rows[0][:5] == ["metric", "control mean", "treatment mean", "Δ", "CI (level)"]
    overall = [c for c in readout.summary["comparisons"] if c["segment"] is None]
    for row, comp in zip(rows[1:], overall, strict=True):
        low, high = comp["ci"]
        rlow, rhigh = comp["relative_ci"]
        assert row == [
            row[0],
            f"{comp['control_mean']:.3f}",
            f"{comp['treatment_mean']:.3f}",
            f"{comp['delta']:+.3f}",
            f"[{low:+.3f}, {high:+.3f}]"
            + (f" ({_level(comp)})" if comp["ci_level"] != 0.95 else ""),
            f"{100 * comp['relative_lift']:+.1f}%",
            f"[{100 * rlow:+.1f}%, {100 * rhigh:+.1f}%]",
            _p(comp["p_values"]["t"]),
            _p(comp["p_values"]["permutation"]),
            _p(comp["p_values"]["bootstrap"]),
            _p(comp["p_adjusted"]),
            f"{comp['effect_size']:+.2f}",
            f"{comp['mde']:.3f}",
            f"{comp['n']:,}",
            f"{comp['wins']:,} / {comp['ties']:,} / {comp['losses']:,}",
            comp["verdict"],
        ]
        assert comp["wins"] + comp["ties"] + comp["losses"] == comp["n"]
    segments = _table(GOLDEN.split("## Segments")[1].split("## ")[0])
    segmented = [c for c in readout.summary["comparisons"] if c["segment"] is not None]
    assert [(r[0], r[-1]) for r in segments[1:]] == [
        (c["segment"], c["verdict"]) for c in segmented
    ]
    for comp in segmented:  # verdicts follow the adjusted p-values and the delta's sign
        significant = comp["p_adjusted"] < 0.05
        assert comp["verdict"] == (
            "inconclusive" if not significant else "win" if comp["delta"] > 0 else "loss"
        )


def test_golden_means_come_from_the_per_query_table(demo):
    readout, _ = demo
    frame = readout.per_query
    # Queries with a relevant judgment are those with a defined MRR (DESIGN.md: the others
    # have no defined MRR/NDCG and are left out of every comparison).
    judged = frame.loc[(frame["arm"] == "bm25") & frame["mrr@10"].notna(), "query_id"]
    for comp in (c for c in readout.summary["comparisons"] if c["segment"] is None):
        control = frame.loc[frame["arm"] == "bm25", ["query_id", comp["metric"]]]
        treatment = frame.loc[frame["arm"] == "reranker", ["query_id", comp["metric"]]]
        both = control.merge(treatment, on="query_id", suffixes=("_c", "_t"))
        both = both[both["query_id"].isin(judged)]
        assert not both.isna().any().any()
        assert len(both) == comp["n"] == 1910  # 2,000 queries less 90 without relevant ones
        c = both[f"{comp['metric']}_c"].to_numpy()
        t = both[f"{comp['metric']}_t"].to_numpy()
        assert math.isclose(c.mean(), comp["control_mean"], abs_tol=1e-12)
        assert math.isclose(t.mean(), comp["treatment_mean"], abs_tol=1e-12)
        assert int(np.sum(t > c)) == comp["wins"] and int(np.sum(t < c)) == comp["losses"]


def test_golden_fingerprints_counts_and_config_match_the_files():
    data = ROOT / "experiments" / "data"
    inputs = _table(GOLDEN.split("## Reproducibility")[1].split("Config:")[0])
    assert inputs[0] == ["role", "arm", "path", "rows", "sha256"]
    for _role, _arm, path, rows, sha in inputs[1:]:
        blob = (ROOT / path).read_bytes()
        assert sha == f"`{hashlib.sha256(blob).hexdigest()}`", path
        text = gzip.decompress(blob).decode() if path.endswith(".gz") else blob.decode()
        lines = [line for line in text.splitlines() if line.strip()]
        header = 0 if path.endswith(".jsonl.gz") else 1
        assert f"{len(lines) - header:,}" == rows, path
    control = pd.read_csv(data / "demo-control.csv.gz")
    treatment = pd.read_json(data / "demo-treatment.jsonl.gz", lines=True)
    diagnostics = GOLDEN.split("## Diagnostics")[1].split("## ")[0]
    assert (
        f"| bm25 | BM25 (production) | control | {control['query_id'].nunique():,} | 0 |"
        in diagnostics
    )
    assert (
        f"| reranker | Cross-encoder reranker | treatment | {treatment['qid'].nunique():,} "
        f"| {2000 - treatment['qid'].nunique()} |" in diagnostics
    )
    config = (ROOT / CONFIG).read_text(encoding="utf-8")
    assert GOLDEN.endswith(f"```yaml\n{config.rstrip()}\n```\n")


def test_golden_largest_moves_match_a_plain_reference(demo):
    readout, _ = demo
    losses, wins = largest_moves(readout.per_query, "bm25", "reranker", "mrr@10")
    section = GOLDEN.split("## Queries that moved most")[1].split("## ")[0]
    loss_part, win_part = section.split("**Largest wins")
    # the queries that the reranker's log lacks (scored 0) are marked as such
    with gzip.open(ROOT / "experiments/data/demo-treatment.jsonl.gz", "rt") as handle:
        logged = {re.search(r'"qid":\s*"([^"]+)"', line).group(1) for line in handle}
    for part, expected in ((loss_part, losses), (win_part, wins)):
        rows = [r for r in part.splitlines() if re.match(r"\| q\d", r)]
        marked = any(q not in logged for _, q, _, _ in expected)
        assert rows == [
            f"| {q} | {c:.3f} | {t:.3f} | {d:+.3f} |"
            + (
                (" missing from Cross-encoder reranker (scored 0) |" if q not in logged else "  |")
                if marked
                else ""
            )
            for d, q, c, t in expected
        ]
    assert sum(q not in logged for _, q, _, _ in losses) == 5


GOLDEN = r"""
# Cross-encoder reranker vs BM25

**No-ship:** Recall@20 deteriorates (-0.009, p = 0.0017) and is not shown within its -0.005 margin

Cross-encoder reranker raises MRR@10 from 0.539 to 0.785 (+45.6%, 95% CI [+0.226, +0.266]): a win.

The first relevant result moved from about position 1.9 to about 1.3 (1/MRR is the harmonic mean of its position): first for most queries.

offline replay · abrank 0.1.0 · seed 7

Offline replay of 2,000 product-search queries through the production BM25 ranker and a cross-encoder reranker of its top candidates. Judgments are graded 0-3.

experiment demo-reranker · owner search-relevance · paired design · control BM25 (production)

## Decision

No-ship: Recall@20 deteriorates (-0.009, p = 0.0017) and is not shown within its -0.005 margin; the win on MRR@10 (+0.246) does not outweigh a harm.

| role | metric | change | what the rule tested | outcome |
|---|---|--:|---|---|
| success | MRR@10 | +0.246 (+45.6%) | p < 0.001 (Holm over success metrics) | wins |
| guardrail | Recall@20 | -0.009 (-0.9%) | margin -0.005; one-sided 95% lower bound -0.013, p = 0.905 | not shown within its margin; deteriorates |
| secondary | NDCG@10 | +0.235 (+45.8%) | p < 0.001 (deterioration check) | no decision |
| secondary | Hit@3 | +0.226 (+35.8%) | p < 0.001 (deterioration check) | no decision |

- status: no-ship
- rule: ship-if-success-and-no-harm: ship when at least one success metric wins (corrected over the success metrics only), every guardrail is shown non-inferior within its margin (one-sided test at alpha, no correction across guardrails) and no metric deteriorates significantly; no-ship when a metric deteriorates or a guardrail is shown worse than its margin; keep running otherwise; unhealthy when the split or pairing checks fail
- planned power: 80%

## Headline

```text
MRR@10     0.539 → 0.785  +0.246 (+45.6%)  95% CI [+0.226, +0.266] / [+40.9%, +50.7%]  p < 0.001 (t, Holm)  n = 1,910  W/T/L 976/667/267  → Cross-encoder reranker wins
NDCG@10    0.513 → 0.748  +0.235 (+45.8%)  97.5% CI (Holm) [+0.217, +0.253] / [+41.3%, +50.4%]  p < 0.001 (t, Holm)  n = 1,910  W/T/L 1,364/166/380  → Cross-encoder reranker wins
Recall@20  0.959 → 0.951  -0.009 (-0.9%)  95% CI [-0.014, -0.003] / [-1.4%, -0.3%]  p = 0.0017 (t)  n = 1,910  W/T/L 16/1,861/33  → Cross-encoder reranker loses
Hit@3      0.630 → 0.855  +0.226 (+35.8%)  95% CI [+0.202, +0.250] / [+31.1%, +40.8%]  p < 0.001 (t, Holm)  n = 1,910  W/T/L 540/1,261/109  → Cross-encoder reranker wins
```

> **Warning:** reranker: 20 analysed queries are missing from its log (scored 0)

> **Warning:** mrr@10, ndcg@10, recall@20, hit@3: undefined on 90 of 2000 queries (no judged document could score on them), left out of the comparisons (no\_relevant: drop)

> **Warning:** 6 segment comparisons: sparse, skewed or outlier-dominated deltas (see regime): the t test does not hold its level on them, so the verdict is the exact sign-flip test's (every sign pattern of the queries that moved; the randomization test beyond 20); it has no interval, so the line shows none (ci keeps the t test's interval)

## Results

| metric | control mean | treatment mean | Δ | CI (level) | relative | relative CI | p (t) | p (perm.) | p (boot.) | p adj. (Holm) | effect size | MDE | n | W / T / L | verdict |
|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|
| MRR@10 | 0.539 | 0.785 | +0.246 | [+0.226, +0.266] | +45.6% | [+40.9%, +50.7%] | < 0.001 | < 0.001 | < 0.001 | < 0.001 | +0.54 | 0.029 | 1,910 | 976 / 667 / 267 | win |
| NDCG@10 | 0.513 | 0.748 | +0.235 | [+0.217, +0.253] (97.5%) | +45.8% | [+41.3%, +50.4%] | < 0.001 | < 0.001 | < 0.001 | < 0.001 | +0.66 | 0.025 | 1,910 | 1,364 / 166 / 380 | win |
| Recall@20 | 0.959 | 0.951 | -0.009 | [-0.014, -0.003] | -0.9% | [-1.4%, -0.3%] | 0.0017 | 0.0018 | < 0.001 | 0.0017 | -0.07 | 0.008 | 1,910 | 16 / 1,861 / 33 | loss |
| Hit@3 | 0.630 | 0.855 | +0.226 | [+0.202, +0.250] | +35.8% | [+31.1%, +40.8%] | < 0.001 | < 0.001 | < 0.001 | < 0.001 | +0.42 | 0.034 | 1,910 | 540 / 1,261 / 109 | win |

p-values are two-sided; the adjusted p-value decides the verdict (alpha = 0.05). Δ is treatment − control; the relative CI is a bootstrap interval of the ratio.

**How to read this readout**

- **MRR@10**: mean reciprocal rank, 1 / the position of the first relevant document in the top 10 (0 when none is there); 1/MRR is the harmonic mean of that position.
- **NDCG@10**: the gain of the top 10, discounted by log2(position + 1), as a share of the gain of the ideal ordering of all judged documents (1 = the best possible order).
- **Recall@20**: the share of the query's relevant documents found in the top 20.
- **Hit@3**: the share of queries with a relevant document in the top 3 (success).
- **Δ, CI**: the mean difference treatment − control, and the interval that holds it with the stated confidence.
- **W / T / L**: the queries the treatment scored higher on (wins), equal (ties) and lower (losses) than the control.
- **effect size**: Cohen's d, the mean delta in standard deviations (of the per-query deltas when paired); by convention 0.2 is small, 0.5 medium, 0.8 large.
- **MDE**: the minimum detectable effect, the smallest delta this experiment would detect with 80% power for its n and variance.
- **Holm (metrics × treatments)**: Holm's step-down method keeps the chance of any false win or loss in the family at alpha. Adjusted p-values decide the verdicts.
- **BH (segment breakdowns)**: Benjamini-Hochberg keeps the expected share of false findings among the family's wins and losses at alpha. Adjusted p-values decide the verdicts.

![Deltas with confidence intervals](charts/forest.png)

*Each metric's delta (treatment − control) with its Holm-adjusted 95% confidence interval (drawn at 95%–97.5%), coloured by verdict; the dashed line marks no change. The multiple-testing correction widens each interval by the same factor as its p-value, so an interval crosses the line exactly when the verdict is inconclusive.*

![Per-query deltas: wins, ties and losses](charts/deltas.png)

*How the per-query deltas spread: queries the treatment won (green), tied (grey) and lost (vermillion); the counts are the results table's.*

![Bootstrap distribution of the MRR@10 delta](charts/bootstrap.png)

*The resampled mean deltas of the primary metric (MRR@10) behind its bootstrap interval.*

## Unjudged documents

Judged@10 differs by 2.6 points between arms (bm25 0.937, reranker 0.911). Unjudged documents count as not relevant, so every comparison of a metric that reads grades is repeated on judged documents only: each ranking loses its unjudged documents before it is scored (trec_eval -J), with the same tests and seed, adjusted as a family of its own.

| metric | Δ (as judged) | CI (as judged) | p adj. (as judged) | verdict (as judged) | Δ (judged only) | CI (judged only) | p adj. (judged only) | verdict (judged only) |
|---|--:|--:|--:|---|--:|--:|--:|---|
| MRR@10 | +0.246 | [+0.226, +0.266] | < 0.001 | win | +0.260 | [+0.241, +0.280] | < 0.001 | win |
| NDCG@10 | +0.235 | [+0.217, +0.253] | < 0.001 | win | +0.242 | [+0.224, +0.260] | < 0.001 | win |
| Recall@20 | -0.009 | [-0.014, -0.003] | 0.0017 | loss | -0.009 | [-0.014, -0.003] | 0.0017 | loss |
| Hit@3 | +0.226 | [+0.202, +0.250] | < 0.001 | win | +0.226 | [+0.203, +0.250] | < 0.001 | win |

Every verdict holds on judged documents only (MRR@10, NDCG@10, Recall@20 and Hit@3): none of them comes from unjudged documents counted as not relevant (whether those documents are relevant, only judging them can tell).

## Where relevant documents land

![Where the first relevant document lands](charts/first_relevant.png)

*Share of queries whose first relevant document sits at each rank ("none": no relevant document retrieved); reciprocal rank rewards the left bars.*

![Metric@k curves](charts/curves.png)

*Mean metric at every cutoff k, per arm; the value axes start at 0.*

## Segments

Segment columns: locale, device; segments with fewer than 30 queries are not compared.

| segment | metric | control mean | treatment mean | Δ | CI (level) | relative | relative CI | p (t) | p (perm.) | p (boot.) | p (sign-flip) | p adj. (BH) | effect size | MDE | n | W / T / L | verdict |
|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|
| locale=de-DE | MRR@10 | 0.525 | 0.784 | +0.260 | [+0.200, +0.319] (97.9%) | +49.5% | [+35.6%, +65.9%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.56 | 0.081 | 331 | 172 / 112 / 47 | win |
| locale=en-US | MRR@10 | 0.535 | 0.778 | +0.243 | [+0.206, +0.280] (99.3%) | +45.5% | [+36.8%, +54.9%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.54 | 0.049 | 1,057 | 548 / 355 / 154 | win |
| locale=es-ES | MRR@10 | 0.564 | 0.789 | +0.225 | [+0.160, +0.290] (96.8%) | +40.0% | [+26.5%, +55.9%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.50 | 0.090 | 223 | 106 / 88 / 29 | win |
| locale=fr-FR | MRR@10 | 0.556 | 0.817 | +0.261 | [+0.202, +0.320] (97.7%) | +47.0% | [+33.7%, +62.6%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.61 | 0.081 | 272 | 137 / 105 / 30 | win |
| device=desktop | MRR@10 | 0.528 | 0.749 | +0.221 | [+0.178, +0.264] (98.8%) | +41.8% | [+32.1%, +52.7%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.48 | 0.058 | 721 | 368 / 232 / 121 | win |
| device=mobile | MRR@10 | 0.543 | 0.809 | +0.267 | [+0.228, +0.305] (99.5%) | +49.1% | [+40.0%, +59.2%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.60 | 0.050 | 1,028 | 531 / 373 / 124 | win |
| device=tablet | MRR@10 | 0.560 | 0.787 | +0.226 | [+0.152, +0.301] (96.4%) | +40.4% | [+25.0%, +59.2%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.51 | 0.104 | 161 | 77 / 62 / 22 | win |
| locale=de-DE | NDCG@10 | 0.495 | 0.752 | +0.257 | [+0.207, +0.307] (98.4%) | +52.0% | [+39.5%, +66.2%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.69 | 0.067 | 331 | 234 / 32 / 65 | win |
| locale=en-US | NDCG@10 | 0.514 | 0.743 | +0.229 | [+0.198, +0.261] (99.6%) | +44.7% | [+37.3%, +52.6%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.66 | 0.040 | 1,057 | 770 / 83 / 204 | win |
| locale=es-ES | NDCG@10 | 0.532 | 0.741 | +0.209 | [+0.155, +0.263] (97.5%) | +39.3% | [+27.6%, +52.6%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.59 | 0.074 | 223 | 152 / 24 / 47 | win |
| locale=fr-FR | NDCG@10 | 0.525 | 0.773 | +0.248 | [+0.198, +0.298] (98.2%) | +47.3% | [+35.5%, +60.8%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.72 | 0.068 | 272 | 192 / 24 / 56 | win |
| device=desktop | NDCG@10 | 0.506 | 0.715 | +0.209 | [+0.174, +0.244] (99.1%) | +41.3% | [+33.2%, +50.2%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.58 | 0.046 | 721 | 500 / 61 / 160 | win |
| device=mobile | NDCG@10 | 0.516 | 0.772 | +0.256 | [+0.222, +0.290] (99.8%) | +49.5% | [+41.2%, +58.7%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.73 | 0.043 | 1,028 | 755 / 87 / 186 | win |
| device=tablet | NDCG@10 | 0.525 | 0.741 | +0.216 | [+0.158, +0.275] (97.0%) | +41.3% | [+28.1%, +56.7%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.63 | 0.082 | 161 | 109 / 18 / 34 | win |
| locale=de-DE | Recall@20 | 0.956 | 0.933 | -0.023 | [-0.040, -0.006] (96.1%) | -2.4% | unbounded | 0.00678 | 0.0054 | < 0.001 | 0.00513 | 0.00653 | -0.15 | 0.024 | 331 | 2 / 318 / 11 | loss |
| locale=en-US | Recall@20 | 0.959 | 0.956 | -0.004 | [-0.010, +0.003] (95.4%) | -0.4% | unbounded | 0.275 | 0.285 | 0.227 | n/a | 0.307 | -0.03 | 0.009 | 1,057 | 11 / 1,032 / 14 | inconclusive |
| locale=es-ES | Recall@20 | 0.963 | 0.936 | -0.027 | [-0.050, -0.004] (95.9%) | -2.8% | unbounded | 0.0158 | 0.0241 | < 0.001 | 0.0234 | 0.0285 | -0.16 | 0.032 | 223 | 1 / 215 / 7 | loss |
| locale=fr-FR | Recall@20 | 0.958 | 0.961 | +0.004 | [-0.004, +0.011] | +0.4% | unbounded | 0.347 | 0.749 | 0.183 | 0.75 | 0.75 | +0.06 | 0.011 | 272 | 2 / 269 / 1 | inconclusive |
| device=desktop | Recall@20 | 0.958 | 0.949 | -0.009 | [-0.017, -0.000] (95.7%) | -0.9% | unbounded | 0.0323 | 0.0346 | 0.00634 | 0.0336 | 0.0388 | -0.08 | 0.012 | 721 | 5 / 706 / 10 | loss |
| device=mobile | Recall@20 | 0.959 | 0.951 | -0.009 | [-0.017, -0.000] (95.5%) | -0.9% | [-1.8%, -0.0%] | 0.0347 | 0.0374 | 0.0209 | n/a | 0.0388 | -0.07 | 0.012 | 1,028 | 11 / 996 / 21 | loss |
| device=tablet | Recall@20 | 0.964 | 0.957 | -0.008 | [-0.020, +0.005] (95.2%) | -0.8% | unbounded | 0.226 | 0.495 | 0.016 | 0.5 | 0.519 | -0.10 | 0.018 | 161 | 0 / 159 / 2 | inconclusive |
| locale=de-DE | Hit@3 | 0.619 | 0.855 | +0.236 | [+0.171, +0.300] (97.3%) | +38.0% | [+25.7%, +52.7%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.45 | 0.089 | 331 | 94 / 221 / 16 | win |
| locale=en-US | Hit@3 | 0.635 | 0.842 | +0.207 | [+0.166, +0.248] (98.6%) | +32.6% | [+25.1%, +41.0%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.38 | 0.055 | 1,057 | 287 / 702 / 68 | win |
| locale=es-ES | Hit@3 | 0.623 | 0.857 | +0.233 | [+0.157, +0.310] (96.6%) | +37.4% | [+23.0%, +54.8%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.43 | 0.107 | 223 | 64 / 147 / 12 | win |
| locale=fr-FR | Hit@3 | 0.643 | 0.904 | +0.261 | [+0.190, +0.332] (97.1%) | +40.6% | [+27.2%, +56.6%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.49 | 0.098 | 272 | 83 / 177 / 12 | win |
| device=desktop | Hit@3 | 0.630 | 0.836 | +0.207 | [+0.158, +0.255] (98.0%) | +32.8% | [+23.9%, +42.8%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.37 | 0.066 | 721 | 200 / 470 / 51 | win |
| device=mobile | Hit@3 | 0.627 | 0.869 | +0.241 | [+0.199, +0.283] (98.9%) | +38.4% | [+30.2%, +47.7%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.46 | 0.056 | 1,028 | 298 / 680 / 50 | win |
| device=tablet | Hit@3 | 0.646 | 0.857 | +0.211 | [+0.126, +0.297] (96.2%) | +32.7% | [+17.7%, +51.1%] | < 0.001 | < 0.001 | < 0.001 | n/a | < 0.001 | +0.41 | 0.120 | 161 | 42 / 111 / 8 | win |

Too small to compare: locale=ja-JP (n = 27).

![MRR@10 by segment](charts/segments-mrr-10.png)

*MRR@10: the delta and its BH-adjusted 95% confidence interval (drawn at 96.4%–99.5%) within each segment, coloured by verdict (after the segment family's correction).*

![NDCG@10 by segment](charts/segments-ndcg-10.png)

*NDCG@10: the delta and its BH-adjusted 95% confidence interval (drawn at 97.0%–99.8%) within each segment, coloured by verdict (after the segment family's correction).*

![Recall@20 by segment](charts/segments-recall-20.png)

*Recall@20: the delta and its BH-adjusted 95% confidence interval (drawn at 95%–96.1%) within each segment, coloured by verdict (after the segment family's correction).*

![Hit@3 by segment](charts/segments-hit-3.png)

*Hit@3: the delta and its BH-adjusted 95% confidence interval (drawn at 96.2%–98.9%) within each segment, coloured by verdict (after the segment family's correction).*

## What moved

MRR@10 changed by +0.246 on average over 1,910 queries. By what the documents did in the top 10, relevant documents: promoted +0.332, demoted -0.201, entering +0.159, leaving -0.037, kept their rank -0.007. Unjudged documents entering count for nothing (a document without a judgment is taken as not relevant): 1,086 entered the top 10 in 851 queries; the Unjudged documents section says how far that holds.

| relevant documents | part of the change | documents | queries |
|---|--:|--:|--:|
| promoted | +0.332 | 1,497 | 1,140 |
| demoted | -0.201 | 750 | 655 |
| entering | +0.159 | 898 | 762 |
| leaving | -0.037 | 275 | 251 |
| unjudged entering | +0.000 | 1,086 | 851 |
| kept their rank | -0.007 | 1,275 | 946 |
| change | +0.246 |  | 1,910 |

![What moved each metric](charts/what_moved.png)

*The mean change per query split by what the documents did in the metric's top k: relevant documents promoted, demoted, entering and leaving, unjudged documents entering (0: they count as not relevant); the steps add up to the blue bar.*

**Why Recall@20 lost**

Recall@20 changed by -0.009 on average over 1,910 queries. By what the documents did in the top 20, relevant documents: entering +0.004, leaving -0.013. Unjudged documents entering count for nothing (a document without a judgment is taken as not relevant): 1,091 entered the top 20 in 872 queries; the Unjudged documents section says how far that holds.

| relevant documents | part of the change | documents | queries |
|---|--:|--:|--:|
| entering | +0.004 | 16 | 16 |
| leaving | -0.013 | 56 | 33 |
| unjudged entering | +0.000 | 1,091 | 872 |
| change | -0.009 |  | 1,910 |

56 relevant documents left the top 20 in 33 queries; 42 of them in queries an arm's log lacked (its list is empty there: a logging gap, not a worse ranking). The 10 queries both logs hold that lost most by them:

| query | document | grade | control rank | part |
|---|---|--:|--:|--:|
| q00700 | d4572734 | 1 | 5 | -1.000 |
| q00838 | d3753977 | 1 | 13 | -1.000 |
| q00790 | d4935116 | 1 | 11 | -0.500 |
| q01432 | d0983767 | 1 | 17 | -0.500 |
| q01772 | d3729143 | 1 | 16 | -0.500 |
| q01269 | d6782729 | 1 | 17 | -0.333 |
| q01558 | d6935376 | 1 | 7 | -0.333 |
| q01906 | d4959753 | 1 | 9 | -0.333 |
| q00762 | d6406425 | 1 | 3 | -0.250 |
| q01206 | d4139229 | 1 | 6 | -0.250 |

**Per locale** (MRR@10, mean per query of the segment)

| locale | queries | promoted | demoted | entering | leaving | kept their rank | change |
|---|--:|--:|--:|--:|--:|--:|--:|
| de-DE | 331 | +0.313 | -0.192 | +0.184 | -0.035 | -0.010 | +0.260 |
| en-US | 1,057 | +0.336 | -0.195 | +0.147 | -0.039 | -0.006 | +0.243 |
| es-ES | 223 | +0.324 | -0.195 | +0.162 | -0.057 | -0.009 | +0.225 |
| fr-FR | 272 | +0.353 | -0.232 | +0.163 | -0.016 | -0.006 | +0.261 |
| ja-JP | 27 | +0.247 | -0.273 | +0.241 | -0.005 | +0.000 | +0.209 |

**Per device** (MRR@10, mean per query of the segment)

| device | queries | promoted | demoted | entering | leaving | kept their rank | change |
|---|--:|--:|--:|--:|--:|--:|--:|
| desktop | 721 | +0.334 | -0.209 | +0.151 | -0.048 | -0.007 | +0.221 |
| mobile | 1,028 | +0.335 | -0.194 | +0.163 | -0.030 | -0.007 | +0.267 |
| tablet | 161 | +0.308 | -0.204 | +0.164 | -0.034 | -0.007 | +0.226 |

**The query that lost most** (MRR@10 1.000 → 0.000 (-1.000))

query `q00267`

**BM25 (production)** (top 10)

| rank | document | grade | now | part |
|--:|---|--:|--:|--:|
| 1 | d2084882 | 1 | 13 | -1.000 |
| 2 | d2476811 | 0 | 2 |  |
| 3 | d0277590 | 0 | 3 |  |
| 4 | d8410404 | 0 | 9 |  |
| 5 | d7958581 | 0 | 8 |  |
| 6 | d6151289 | 0 | 6 |  |
| 7 | d0729413 | 1 | 14 |  |
| 8 | d8862227 | 0 | 18 |  |
| 9 | d3892174 | 0 | 11 |  |
| 10 | d1121342 | 0 | 16 |  |

**Cross-encoder reranker** (top 10)

| rank | document | grade | was | part |
|--:|---|--:|--:|--:|
| 1 | d1181236 | 0 | 14 |  |
| 2 | d2476811 | 0 | 2 |  |
| 3 | d0277590 | 0 | 3 |  |
| 4 | d7054935 | 0 | 13 |  |
| 5 | d1573165 | 0 | 20 |  |
| 6 | d6151289 | 0 | 6 |  |
| 7 | d5699466 | 0 | 17 |  |
| 8 | d7958581 | 0 | 5 |  |
| 9 | d8410404 | 0 | 4 |  |
| 10 | d1633059 | 0 | 16 |  |

**The query that won most** (MRR@10 0.000 → 1.000 (+1.000))

query `q00028`

**BM25 (production)** (top 10)

| rank | document | grade | now | part |
|--:|---|--:|--:|--:|
| 1 | d4411067 | 0 | 2 |  |
| 2 | d6584664 | 0 | 18 |  |
| 3 | d5034542 | 0 | 11 |  |
| 4 | d2860945 | 0 | 8 |  |
| 5 | d8985640 | 0 | 17 |  |
| 6 | d6660457 | 0 | 10 |  |
| 7 | d9760701 | 0 | 4 |  |
| 8 | d4259481 | 0 | 5 |  |
| 9 | d7359725 | 0 | 19 |  |
| 10 | d5809603 | 0 | 14 |  |

**Cross-encoder reranker** (top 10)

| rank | document | grade | was | part |
|--:|---|--:|--:|--:|
| 1 | d3636006 | 2 | 16 | +1.000 |
| 2 | d4411067 | 0 | 1 |  |
| 3 | d2785152 | unjudged | 14 |  |
| 4 | d9760701 | 0 | 7 |  |
| 5 | d4259481 | 0 | 8 |  |
| 6 | d9684908 | 0 | 15 |  |
| 7 | d8134786 | 0 | 17 |  |
| 8 | d2860945 | 0 | 4 |  |
| 9 | d0535762 | 0 | 19 |  |
| 10 | d6660457 | 0 | 6 |  |

How alike the lists are: rank-biased overlap (RBO, p = 0.9) between the arms' lists per query, median 0.467 (quartiles 0.397 to 0.560; 1 is the same list, 0 lists without a document in common). 0 of 2,000 queries (0.0%) have the same top 10 in both arms.

![How alike the arms' lists are](charts/rbo.png)

*Share of queries per rank-biased overlap (p = 0.9) between the treatment's list and the control's, over the explanation's depth.*

## Queries that moved most

**Largest losses of Cross-encoder reranker** (MRR@10)

| query | control | treatment | Δ | log |
|---|--:|--:|--:|---|
| q00267 | 1.000 | 0.000 | -1.000 |  |
| q00295 | 1.000 | 0.000 | -1.000 |  |
| q00332 | 1.000 | 0.000 | -1.000 | missing from Cross-encoder reranker (scored 0) |
| q00382 | 1.000 | 0.000 | -1.000 | missing from Cross-encoder reranker (scored 0) |
| q00414 | 1.000 | 0.000 | -1.000 | missing from Cross-encoder reranker (scored 0) |
| q00428 | 1.000 | 0.000 | -1.000 |  |
| q00466 | 1.000 | 0.000 | -1.000 |  |
| q00534 | 1.000 | 0.000 | -1.000 |  |
| q00883 | 1.000 | 0.000 | -1.000 | missing from Cross-encoder reranker (scored 0) |
| q00992 | 1.000 | 0.000 | -1.000 | missing from Cross-encoder reranker (scored 0) |

**Largest wins of Cross-encoder reranker** (MRR@10)

| query | control | treatment | Δ |
|---|--:|--:|--:|
| q00028 | 0.000 | 1.000 | +1.000 |
| q00068 | 0.000 | 1.000 | +1.000 |
| q00076 | 0.000 | 1.000 | +1.000 |
| q00097 | 0.000 | 1.000 | +1.000 |
| q00113 | 0.000 | 1.000 | +1.000 |
| q00146 | 0.000 | 1.000 | +1.000 |
| q00181 | 0.000 | 1.000 | +1.000 |
| q00207 | 0.000 | 1.000 | +1.000 |
| q00220 | 0.000 | 1.000 | +1.000 |
| q00254 | 0.000 | 1.000 | +1.000 |

5 of the 10 largest losses of Cross-encoder reranker are queries missing from its log (scored 0, under missing_queries: zero), not worse rankings; per_query.csv marks them in its missing_in column and summary.json lists them in diagnostics.missing_queries.

## Diagnostics

| arm | label | role | queries | missing | without judgments | judged@10 |
|---|---|---|--:|--:|--:|--:|
| bm25 | BM25 (production) | control | 2,000 | 0 | 0 | 0.937 |
| reranker | Cross-encoder reranker | treatment | 1,980 | 20 | 0 | 0.911 |

- queries analysed: 2,000
- judged queries: 2,000
- queries in both arms (matched): 1,980
- queries without a relevant judgment: 90
- undefined values per metric (left out): MRR@10 90, NDCG@10 90, Recall@20 90, Hit@3 90
- missing-query policy: zero

> **Warning:** reranker: 20 analysed queries are missing from its log (scored 0)

> **Warning:** mrr@10, ndcg@10, recall@20, hit@3: undefined on 90 of 2000 queries (no judged document could score on them), left out of the comparisons (no\_relevant: drop)

> **Warning:** 6 segment comparisons: sparse, skewed or outlier-dominated deltas (see regime): the t test does not hold its level on them, so the verdict is the exact sign-flip test's (every sign pattern of the queries that moved; the randomization test beyond 20); it has no interval, so the line shows none (ci keeps the t test's interval)

## Reproducibility

- abrank version: 0.1.0
- seed: 7
- config: experiments/demo-reranker.yaml
- design: paired
- primary metric: mrr@10
- metrics: mrr@10, ndcg@10, recall@20, hit@3
- primary test: t
- tests: t, permutation, bootstrap
- alpha: 0.05
- confidence level: 0.95
- resamples: 10,000
- multiple-testing correction: primary: holm, segments: fdr\_bh
- relevance threshold: 1.0
- gain: linear
- depth: 1000
- missing queries: zero

**Data files**

| role | arm | path | rows | sha256 |
|---|---|---|--:|---|
| control | bm25 | experiments/data/demo-control.csv.gz | 40,000 | `8aee445e87c500f4f4470acb0145d545cb4c6f30e1da0efa2c50c3140006d6e2` |
| treatment | reranker | experiments/data/demo-treatment.jsonl.gz | 39,600 | `f1a2128b28399b36cd3a0b90623ffa63ffd81ccea5dac20da9a62a16e4a0276e` |
| judgments |  | experiments/data/demo-judgments.tsv | 44,286 | `1e9ae3713861249234c046e2d51899cf562de5111bcf987b04f2383dc2f25a24` |

**Config**

```yaml
# A textbook reranker readout: does a cross-encoder reranker on top of BM25 rank better?
# The logs are an offline replay of the same 2,000 queries through both rankers
# (regenerate them with `abrank demo-data`). Paths are relative to this file.
name: demo-reranker
title: Cross-encoder reranker vs BM25
description: >
  Offline replay of 2,000 product-search queries through the production BM25 ranker and
  a cross-encoder reranker of its top candidates. Judgments are graded 0-3.
owner: search-relevance

control:
  name: bm25
  label: BM25 (production)
  path: data/demo-control.csv.gz          # query_id, doc_id, position, score, locale, device

treatments:
  - name: reranker
    label: Cross-encoder reranker
    path: data/demo-treatment.jsonl.gz
    columns: {query_id: qid, doc_id: doc, rank: pos}   # this log names its columns differently

judgments:
  path: data/demo-judgments.tsv           # query_id, doc_id, grade (0-3)

metrics:                                  # each with its role in the launch decision
  - {name: mrr@10, role: success}         # what the reranker is meant to move
  - ndcg@10                               # secondary: reported, no decision
  - {name: recall@20, role: guardrail, nim: 0.005}   # may not lose more than 0.005
  - hit@3
primary_metric: mrr@10
relevance_threshold: 1                    # grade >= 1 counts as relevant for MRR, recall, hit
gain: linear                              # NDCG gain = grade (exp: 2^grade - 1)

analysis:
  design: paired                          # the same queries through both rankers
  missing_queries: zero                   # a query the reranker dropped scores 0
  alpha: 0.05
  primary_test: t
  tests: [t, permutation, bootstrap]
  resamples: 10000
  correction: holm                        # across metrics x treatments
  segment_correction: fdr_bh              # across segment breakdowns
  seed: 7

segments:
  columns: [locale, device]
  min_queries: 30
```
"""[1:]  # noqa: E501
