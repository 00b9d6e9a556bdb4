"""`comparisons: all-pairs`: treatments compared with each other, in one stated family.

Three arms rank 40 queries; each query has one relevant document, placed by the test at a
chosen rank in each arm, so every arm's MRR@10 per query is 1 / that rank, worked out here
without abrank. The expectations come from scipy (paired t-test) and the Holm rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from abrank.analysis import run_experiment
from abrank.config import build_experiment, parse_experiment
from abrank.errors import ConfigError

N_QUERIES = 40
ARMS = ("base", "a", "b")


def first_relevant_ranks() -> dict[str, np.ndarray]:
    """Where each arm puts the relevant document of q00..q39 (ranks 1..6)."""
    rng = np.random.default_rng(2024)
    base = rng.integers(1, 7, N_QUERIES)
    a = np.maximum(1, base - rng.integers(0, 3, N_QUERIES))  # a is better than base
    b = np.clip(a - rng.integers(-1, 2, N_QUERIES), 1, 6)  # b is a little different from a
    return {"base": base, "a": a, "b": b}


def write_arms(folder: Path) -> dict[str, np.ndarray]:
    ranks = first_relevant_ranks()
    for arm, where in ranks.items():
        lines = ["query_id,doc_id,rank"]
        for q, position in enumerate(where):
            docs = [f"x{i}" for i in range(1, 7)]
            docs.insert(int(position) - 1, "rel")
            lines += [f"q{q:02d},{doc},{r}" for r, doc in enumerate(docs[:6], start=1)]
        (folder / f"{arm}.csv").write_text("\n".join(lines) + "\n")
    judged = "".join(f"q{q:02d}\trel\t1\n" for q in range(N_QUERIES))
    (folder / "judgments.tsv").write_text("query_id\tdoc_id\trelevance\n" + judged)
    return {arm: 1.0 / where for arm, where in ranks.items()}


def config(**overrides) -> dict:
    return {
        "name": "three-arms",
        "control": {"name": "base", "path": "base.csv"},
        "treatments": [{"name": "a", "path": "a.csv"}, {"name": "b", "path": "b.csv"}],
        "judgments": {"path": "judgments.tsv"},
        "metrics": ["mrr@10"],
        "analysis": {"seed": 3, "resamples": 1000},
        **overrides,
    }


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: sorted p_(i) times (m - i), running max."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def verdict_p(rr: dict, treatment: str, control: str, comparison: dict) -> float:
    """The raw p-value of the test that gave the comparison's verdict, worked out apart:
    scipy's paired t-test, or, on sparse deltas whose moved queries all share one sign, the
    exact sign-flip test's 2 / 2^m (only the all-plus and all-minus patterns reach the
    observed |sum|)."""
    d = rr[treatment] - rr[control]
    if comparison["primary_test"] == "signflip":
        moved = d[d != 0]
        assert (moved > 0).all() or (moved < 0).all()
        return 2 / 2**moved.size
    return stats.ttest_rel(rr[treatment], rr[control]).pvalue


def test_all_pairs_compares_treatments_with_each_other(tmp_path):
    rr = write_arms(tmp_path)
    experiment = build_experiment(
        config(comparisons="all-pairs"), source="t.yaml", base_dir=tmp_path
    )
    summary = run_experiment(experiment).summary
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    assert [c["treatment"] for c in overall] == ["a", "b", "b vs a"]
    assert [(c["treatment_arm"], c["control"]) for c in overall] == [
        ("a", "base"),
        ("b", "base"),
        ("b", "a"),
    ]
    b_vs_a = overall[2]
    assert b_vs_a["n"] == N_QUERIES
    assert b_vs_a["control_mean"] == pytest.approx(rr["a"].mean(), abs=1e-12)
    assert b_vs_a["treatment_mean"] == pytest.approx(rr["b"].mean(), abs=1e-12)
    assert b_vs_a["delta"] == pytest.approx(rr["b"].mean() - rr["a"].mean(), abs=1e-12)
    deltas = rr["b"] - rr["a"]
    assert (b_vs_a["wins"], b_vs_a["ties"], b_vs_a["losses"]) == (
        int((deltas > 0).sum()),
        int((deltas == 0).sum()),
        int((deltas < 0).sum()),
    )
    pairs = (("a", "base"), ("b", "base"), ("b", "a"))
    # a moved 18 of the 40 queries, all up: sparse deltas, the exact sign-flip test decides
    assert [c["primary_test"] for c in overall] == ["signflip", "t", "t"]
    raw = [verdict_p(rr, t, c, comp) for (t, c), comp in zip(pairs, overall, strict=True)]
    for comparison, p in zip(overall, raw, strict=True):
        assert comparison["p_value"] == pytest.approx(p, rel=1e-9)
    # the family is the three comparisons: Holm over three p-values, not two
    for comparison, p in zip(overall, holm(raw), strict=True):
        assert comparison["p_adjusted"] == pytest.approx(p, rel=1e-9)
    # (which these data tell apart from a family of the two comparisons with the control)
    assert holm(raw)[:2] != pytest.approx(holm(raw[:2]), rel=1e-6)
    assert summary["family"] == {
        "comparisons": "all-pairs",
        "pairs": [
            {"treatment": "a", "control": "base"},
            {"treatment": "b", "control": "base"},
            {"treatment": "b", "control": "a"},
        ],
        "size": 3,
    }


def test_against_the_control_by_default(tmp_path):
    rr = write_arms(tmp_path)
    summary = run_experiment(build_experiment(config(), source="t.yaml", base_dir=tmp_path)).summary
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    assert [c["treatment"] for c in overall] == ["a", "b"]
    assert "family" not in summary and "control" not in overall[0]
    raw = [verdict_p(rr, t, "base", comp) for t, comp in zip(("a", "b"), overall, strict=True)]
    for comparison, p in zip(overall, holm(raw), strict=True):  # a family of two
        assert comparison["p_adjusted"] == pytest.approx(p, rel=1e-9)


def test_the_all_pairs_readout_renders(tmp_path):
    from abrank.render import headline_lines, render_markdown

    write_arms(tmp_path)
    experiment = build_experiment(
        config(comparisons="all-pairs"), source="t.yaml", base_dir=tmp_path
    )
    readout = run_experiment(experiment)
    lines = headline_lines(readout.summary)
    assert len(lines) == 3 and "b vs a" in lines[2]
    assert "b vs a" in render_markdown(readout)
    assert list(readout.comparisons["treatment"]) == ["a", "b", "b vs a"]
    # the report states the family: three pairs of arms, one metric, Holm over the three
    assert (
        "Every pair of arms is compared (a vs base, b vs base, b vs a); Holm adjusts these 3 "
        "comparisons as one family." in render_markdown(readout)
    )


def test_a_wrong_comparisons_value_names_the_field():
    text = """name: x
control: {name: c, path: c.csv}
treatments: [{name: t, path: t.csv}]
metrics: [mrr@10]
comparisons: all_pairs
"""
    with pytest.raises(ConfigError) as error:
        parse_experiment(text, source="x.yaml")
    assert "x.yaml: line 5: comparisons: expected 'control' or 'all-pairs', got 'all_pairs'" in str(
        error.value
    )
