"""Rank-biased precision and its residual (Moffat & Zobel 2008): by hand, against a slow
term-by-term reference, against cwl_eval's RBP through ir_measures on DL19 and DL20 runs,
and in a readout (the residual beside rbp, and the range in the unjudged-documents section).
The SQL engines' equality with the memory engine is in ``test_engine_judged_sql.py``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from abrank import evaluate
from abrank.cli import main
from abrank.errors import ConfigError
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.metrics import parse_metric


def _slow_rbp(relevant: list[bool], judged: list[bool], p: float, k: int | None) -> tuple:
    """(rbp, residual) term by term over the top k: (1 - p) p^(i-1) per relevant document;
    the residual adds that weight for every unjudged one, and p^n for the places past the
    n documents scored."""
    top = slice(0, k)
    value = sum((1 - p) * p**i for i, rel in enumerate(relevant[top]) if rel)
    unknown = sum((1 - p) * p**i for i, seen in enumerate(judged[top]) if not seen)
    return value, unknown + p ** len(judged[top])


def test_rbp_by_hand():
    # one query: relevant, unjudged, judged nonrelevant, relevant (grade 2)
    rankings = pd.DataFrame(
        {"query_id": ["1"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [4.0, 3.0, 2.0, 1.0]}
    )
    judgments = pd.DataFrame(
        {"query_id": ["1"] * 3, "doc_id": ["a", "c", "d"], "relevance": [1, 0, 2]}
    )
    names = ["rbp(p=0.5)", "rbp_residual(p=0.5)", "rbp(p=0.5)@2", "rbp_residual(p=0.5)@2"]
    names += ["rbp(p=0.5,rel=2)", "rbp"]
    values = evaluate(rankings, judgments, names).loc["1"]
    # weights 1/2, 1/4, 1/8, 1/16: relevant at ranks 1 and 4
    assert values["rbp(p=0.5)"] == pytest.approx(1 / 2 + 1 / 16, abs=1e-15)
    # unjudged rank 2 (1/4) and the places past rank 4 (p^4 = 1/16)
    assert values["rbp_residual(p=0.5)"] == pytest.approx(1 / 4 + 1 / 16, abs=1e-15)
    # the top 2: rank 1 relevant; rank 2 unjudged (1/4) and past rank 2 (1/4)
    assert values["rbp(p=0.5)@2"] == pytest.approx(1 / 2, abs=1e-15)
    assert values["rbp_residual(p=0.5)@2"] == pytest.approx(1 / 2, abs=1e-15)
    # rel=2: only rank 4 counts
    assert values["rbp(p=0.5,rel=2)"] == pytest.approx(1 / 16, abs=1e-15)
    # the default persistence 0.8: 0.2 + 0.2 * 0.8^3
    assert values["rbp(p=0.8)"] == pytest.approx(0.2 + 0.2 * 0.8**3, abs=1e-15)


def test_rbp_of_a_query_without_relevant_documents_is_undefined_and_its_residual_is_not():
    rankings = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    judgments = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [0]})
    values = evaluate(rankings, judgments, ["rbp", "rbp_residual"]).loc["1"]
    assert math.isnan(values["rbp(p=0.8)"])
    # unjudged rank 2 (0.2 * 0.8) and the places past rank 2 (0.64)
    assert values["rbp_residual(p=0.8)"] == pytest.approx(0.16 + 0.64, abs=1e-15)


def test_rbp_names_and_refusals():
    assert parse_metric("RBP").name == "rbp(p=0.8)"
    assert parse_metric("RBP(p=0.9,rel=2)@20").name == "rbp(p=0.9,rel=2)@20"
    assert parse_metric("rbp_resid").name == "rbp_residual(p=0.8)"
    assert parse_metric("rbp(p=0.8)(judged)").judged_only
    # every canonical name reads back as itself
    for name in ("rbp(p=0.5)@10", "rbp(p=0.95,rel=2)", "rbp_residual(p=0.9)@5"):
        assert parse_metric(name).name == name
    for text, message in [
        ("rbp(p=1)", "p: expected a number strictly between 0 and 1"),
        ("rbp(p=0)", "p: expected a number strictly between 0 and 1"),
        ("rbp(p=x)", "p: expected a number, got 'x'"),
        ("ndcg(p=0.5)@10", "p: expected no persistence \\(it applies to rbp and rbp_residual\\)"),
        ("rbp_residual(judged)", "expected a metric that reads grades"),
        ("rbp(gain=exp)", "gain: expected no gain"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_metric(text)


def test_rbp_equals_the_slow_reference_on_trec_runs(shared_data):
    folder = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(folder / "qrels.dl20-passage.txt")
    grade = qrels.set_index(["query_id", "doc_id"])["relevance"]
    names = ["rbp(p=0.8)", "rbp_residual(p=0.8)", "rbp(p=0.9,rel=2)@20", "rbp_residual(p=0.9)@20"]
    checked = 0
    for run in sorted((folder / "runs").glob("dl20.*.txt")):
        ranked = read_trec_run(run).drop(columns=["rank"])
        values = evaluate(ranked, qrels, names, depth=None)
        ordered = ranked.sort_values(
            ["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable"
        )
        for query, rows in ordered.groupby("query_id", sort=False):
            if query not in values.index or np.isnan(values.at[query, "rbp(p=0.8)"]):
                continue
            grades = [grade.get((query, doc)) for doc in rows["doc_id"].astype(str)]
            judged = [g is not None for g in grades]
            cases = [
                ("rbp(p=0.8)", "rbp_residual(p=0.8)", 0.8, None, 1),
                ("rbp(p=0.9,rel=2)@20", "rbp_residual(p=0.9)@20", 0.9, 20, 2),
            ]
            for rbp_name, residual_name, p, k, rel in cases:
                relevant = [g is not None and g >= rel for g in grades]
                value, residual = _slow_rbp(relevant, judged, p, k)
                got = values.loc[query]
                assert got[rbp_name] == pytest.approx(value, abs=1e-12), (run.name, query)
                assert got[residual_name] == pytest.approx(residual, abs=1e-12), (run.name, query)
            checked += 1
    assert checked >= 100


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_rbp_agrees_with_cwl_eval_through_ir_measures(shared_data, year):
    """ir_measures computes RBP with cwl_eval (binary: rel is required there). cwl_eval
    orders tied scores its own way, so the runs' tied queries are left out."""
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is not installed")
    pytest.importorskip("cwl", reason="cwl-eval (ir_measures' RBP provider) is not installed")
    folder = shared_data / "trec-dl-passage"
    qrels_path = folder / f"qrels.{year}-passage.txt"
    qrels = read_trec_qrels(qrels_path)
    theirs_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    runs = sorted((folder / "runs").glob(f"{year}.*.txt"))
    assert runs, f"no {year} runs in {folder / 'runs'}"
    compared, worst = 0, 0.0
    for run in runs:
        ranked = read_trec_run(run).drop(columns=["rank"])
        tied = set(ranked.loc[ranked.duplicated(["query_id", "score"]), "query_id"])
        cases = [(p, rel) for p in (0.5, 0.8, 0.95) for rel in (1, 2)]
        mine = evaluate(ranked, qrels, [f"rbp(p={p},rel={rel})" for p, rel in cases], depth=None)
        theirs_run = list(ir_measures.read_trec_run(str(run)))
        for p, rel in cases:
            measure = ir_measures.parse_measure(f"RBP(p={p},rel={rel})")
            theirs = {
                m.query_id: m.value
                for m in ir_measures.iter_calc([measure], theirs_qrels, theirs_run)
            }
            for query, value in mine[f"rbp(p={p},rel={rel})"].dropna().items():
                if query in tied:
                    continue
                worst = max(worst, abs(value - theirs[query]))
                compared += 1
    assert worst < 1e-9
    assert compared >= 500


CONTROL = "query_id,doc_id,rank\n" + "".join(
    f"q{q},d{q}{d},{r}\n" for q in range(1, 7) for r, d in enumerate("abcd", 1)
)
# the treatment swaps the first two documents of every query
TREATMENT = "query_id,doc_id,rank\n" + "".join(
    f"q{q},d{q}{d},{r}\n" for q in range(1, 7) for r, d in enumerate("bacd", 1)
)
# per query: a relevant, b judged nonrelevant, c relevant, d unjudged
JUDGMENTS = "query_id,doc_id,relevance\n" + "".join(
    f"q{q},d{q}a,1\nq{q},d{q}b,0\nq{q},d{q}c,1\n" for q in range(1, 7)
)


def test_a_readout_reports_the_residual_beside_rbp(tmp_path, capsys):
    (tmp_path / "control.csv").write_text(CONTROL)
    (tmp_path / "treatment.csv").write_text(TREATMENT)
    (tmp_path / "judgments.csv").write_text(JUDGMENTS)
    config = tmp_path / "rbp.yaml"
    config.write_text(
        "name: rbp\ncontrol: {name: old, path: control.csv}\n"
        "treatments: [{name: new, path: treatment.csv}]\njudgments: {path: judgments.csv}\n"
        "metrics: [rbp(p=0.5), mrr]\nanalysis: {seed: 1, resamples: 200}\n"
    )
    out = tmp_path / "readout"
    code = main(["run", str(config), "--out", str(out), "--format", "json,md"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    ranges = summary["diagnostics"]["rbp_residual"]["rbp(p=0.5)"]
    # old: a, b, c, d -> relevant ranks 1 and 3: 1/2 + 1/8; unjudged rank 4 (1/16) and p^4
    assert ranges["old"]["rbp"] == pytest.approx(1 / 2 + 1 / 8, abs=1e-15)
    assert ranges["old"]["residual"] == pytest.approx(1 / 16 + 1 / 16, abs=1e-15)
    # new: b, a, c, d -> relevant ranks 2 and 3: 1/4 + 1/8; the same unjudged place
    assert ranges["new"]["rbp"] == pytest.approx(1 / 4 + 1 / 8, abs=1e-15)
    assert ranges["new"]["upper"] == pytest.approx(3 / 8 + 1 / 8, abs=1e-15)
    assert ranges["new"]["queries"] == 6
    (rbp,) = [c for c in summary["comparisons"] if c["metric"] == "rbp(p=0.5)"]
    assert rbp["delta"] == pytest.approx(-1 / 4, abs=1e-15)
    # judged@10 is 0.75 in both arms: the check runs, and the rbp ranges follow its table
    report = (out / "report.md").read_text()
    section = report.split("## Unjudged documents", 1)[1].split("\n## ", 1)[0]
    assert "| RBP(p=0.5) | old | 0.625 | 0.125 | \\[0.625, 0.750\\] | 6 |" in section
    assert "| RBP(p=0.5) | new | 0.375 | 0.125 | \\[0.375, 0.500\\] | 6 |" in section
    # old's lowest (0.625) is above new's highest (0.500): the order is settled
    assert "could change which arm is ahead" not in section


def test_without_rbp_a_readout_has_no_residual(tmp_path, capsys):
    (tmp_path / "control.csv").write_text(CONTROL)
    (tmp_path / "treatment.csv").write_text(TREATMENT)
    (tmp_path / "judgments.csv").write_text(JUDGMENTS)
    config = tmp_path / "plain.yaml"
    config.write_text(
        "name: plain\ncontrol: {name: old, path: control.csv}\n"
        "treatments: [{name: new, path: treatment.csv}]\njudgments: {path: judgments.csv}\n"
        "metrics: [mrr]\nanalysis: {seed: 1, resamples: 200}\n"
    )
    out = tmp_path / "readout"
    assert main(["run", str(config), "--out", str(out), "--format", "json"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "rbp_residual" not in summary["diagnostics"]
