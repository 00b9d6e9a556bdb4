"""The command line: verbs work end to end; bad input exits 2 with one clean message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from abrank.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent

# Three queries; control finds the relevant document at ranks 1, 3, 2 (MRR 0.6111...),
# the treatment at ranks 1, 1, 1 (MRR 1). q4 has no relevant document.
CONTROL = """query_id,doc_id,rank,locale
q1,a,1,en
q1,b,2,en
q2,c,1,de
q2,d,2,de
q2,e,3,de
q3,f,1,en
q3,g,2,en
q4,h,1,de
"""
TREATMENT = """query_id,doc_id,rank,locale
q1,a,1,en
q1,b,2,en
q2,e,1,de
q2,c,2,de
q2,d,3,de
q3,g,1,en
q3,f,2,en
q4,h,1,de
"""
JUDGMENTS = "query_id\tdoc_id\tgrade\nq1\ta\t2\nq2\te\t1\nq3\tg\t3\nq3\tf\t0\nq4\th\t0\n"
CONFIG = """name: tiny
title: Tiny <script>alert(1)</script>
control: {name: old, path: control.csv}
treatments: [{name: new, path: treatment.csv}]
judgments: {path: judgments.tsv}
metrics: [mrr@10, ndcg@3]
analysis: {seed: 3, resamples: 1000}
segments: {columns: [locale], min_queries: 2}
"""


def write_experiment(folder: Path) -> Path:
    """The tiny experiment's control, treatment, judgments and config in ``folder``."""
    (folder / "control.csv").write_text(CONTROL)
    (folder / "treatment.csv").write_text(TREATMENT)
    (folder / "judgments.tsv").write_text(JUDGMENTS)
    config = folder / "tiny.yaml"
    config.write_text(CONFIG)
    return config


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    return write_experiment(tmp_path)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_writes_the_readout_folder(experiment, tmp_path, capsys):
    out_dir = tmp_path / "readout"
    code, out, err = run_cli(capsys, "run", experiment, "--out", out_dir)
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir() if p.is_file()) == [
        ".abrank-readout",
        "per_query.csv",
        "queries.parquet",  # the explanation tables (abrank.explain)
        "rankings.parquet",
        "report.html",
        "report.md",
        "summary.json",
    ]
    summary = json.loads((out_dir / "summary.json").read_text())
    overall = {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}
    # MRR over q1..q3 (q4 has no relevant document): control (1 + 1/3 + 1/2) / 3, treatment 1.
    assert overall["mrr@10"]["control_mean"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3, abs=1e-12)
    assert overall["mrr@10"]["treatment_mean"] == pytest.approx(1.0, abs=1e-12)
    assert (overall["mrr@10"]["wins"], overall["mrr@10"]["ties"], overall["mrr@10"]["losses"]) == (
        2,
        1,
        0,
    )
    assert summary["diagnostics"]["without_relevant"] == 1
    # DESIGN.md's stable keys
    assert {
        "experiment",
        "abrank_version",
        "design",
        "seed",
        "arms",
        "comparisons",
        "diagnostics",
    } <= set(summary)
    assert {"name", "title"} <= set(summary["experiment"])
    assert set(summary["arms"][0]) >= {"name", "label", "role", "queries"}
    stable = {
        "metric",
        "treatment",
        "segment",
        "n",
        "control_mean",
        "treatment_mean",
        "delta",
        "relative_lift",
        "ci",
        "ci_method",
        "bootstrap_ci",
        "relative_ci",
        "p_value",
        "p_values",
        "p_adjusted",
        "effect_size",
        "mde",
        "wins",
        "ties",
        "losses",
        "verdict",
    }
    assert all(stable <= set(c) for c in summary["comparisons"])
    assert {"queries", "matched", "missing", "without_relevant", "judged_at_k", "warnings"} <= set(
        summary["diagnostics"]
    )
    assert [arm["name"] for arm in summary["arms"]] == ["old", "new"]
    assert "MRR@10" in out and f"readout written to {out_dir}/" in out
    assert "scoring queries" in err  # progress on stderr


def test_python_module_entry_point(experiment, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "abrank", "validate", str(experiment)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{experiment}: ok: tiny: old (4 queries), new (4 queries)")


BAD_INPUTS = {
    "yaml syntax": ("tiny.yaml", "name: tiny\ncontrol: {path: [x\n", "line 3"),
    "not a mapping": ("tiny.yaml", "[1, 2]\n", "expected a mapping of config keys, got a list"),
    "misspelt key": ("tiny.yaml", CONFIG.replace("metrics:", "metics:"), "did you mean 'metrics'?"),
    "bad metric": ("tiny.yaml", CONFIG.replace("ndcg@3", "ndcg@x"), "metrics[1]"),
    "missing log": ("control.csv", None, "control.path: expected an existing file"),
    "empty log": ("control.csv", "", "expected at least one row, got an empty file"),
    "misnamed column": (
        "control.csv",
        CONTROL.replace("doc_id", "document_name"),
        "found columns: query_id, document_name, rank, locale",
    ),
    "non-numeric rank": (
        "control.csv",
        CONTROL.replace("q2,d,2", "q2,d,second"),
        "line 5: rank: expected a number, got 'second'",
    ),
    "non-numeric grade": (
        "judgments.tsv",
        JUDGMENTS.replace("q2\te\t1", "q2\te\thigh"),
        "line 3: relevance: expected a number, got 'high'",
    ),
    "duplicate pairs": ("treatment.csv", TREATMENT + "q1,a,3,en\n", "('q1', 'a') at line 10"),
    "binary log": ("control.csv", b"\x00\x01\x02\x03", "got binary data"),
    "non-utf8 log": (
        "control.csv",
        CONTROL.replace("q4,h", "q4,h\xe9").encode("latin-1"),
        "expected UTF-8 text, got the byte 0xe9",
    ),
    "missing segment column": (
        "tiny.yaml",
        CONFIG.replace("[locale]", "[country]"),
        "segments.columns: expected a column 'country'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_and_leaves_the_earlier_readout(case, experiment, tmp_path, capsys):
    out_dir = tmp_path / "readout"
    assert run_cli(capsys, "run", experiment, "--out", out_dir, "--quiet")[0] == 0
    before = {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}

    name, content, expected = BAD_INPUTS[case]
    target = tmp_path / name
    if content is None:
        target.unlink()
    elif isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content)
    code, out, err = run_cli(capsys, "run", experiment, "--out", out_dir, "--quiet")
    assert code == 2
    assert err.startswith("abrank: error: ") and expected in err
    assert "Traceback" not in err and err.count("\n") <= 4
    assert out == ""
    assert {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".readout")) == []


def test_validate_reports_bad_data_without_computing(experiment, tmp_path, capsys):
    (tmp_path / "judgments.tsv").write_text("query_id\tdoc_id\nq1\ta\n")
    code, out, err = run_cli(capsys, "validate", experiment)
    assert code == 2 and "expected a relevance column" in err


def test_debug_shows_the_traceback(experiment, tmp_path):
    (tmp_path / "control.csv").write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "abrank", "run", str(experiment), "--debug"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "Traceback" in result.stderr and "DataError" in result.stderr


def test_unknown_format_option(experiment, tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", experiment, "--out", tmp_path / "x", "--format", "pdf")
    assert code == 2 and "--format: expected some of html, md, json, csv, got pdf" in err
    assert not (tmp_path / "x").exists()


def test_format_option_limits_the_outputs(experiment, tmp_path, capsys):
    code, _, err = run_cli(
        capsys, "run", experiment, "--out", tmp_path / "x", "--format", "json,csv"
    )
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == [
        ".abrank-readout",
        "per_query.csv",
        "queries.parquet",
        "rankings.parquet",
        "summary.json",
    ]


@pytest.mark.parametrize(
    ("formats", "explained"), [("json", False), ("json,csv", True), ("md", True), ("html", True)]
)
def test_the_explanation_tables_are_made_only_for_outputs_that_hold_them(
    experiment, tmp_path, capsys, monkeypatch, formats, explained
):
    from abrank.batch import RunOptions
    from abrank.designs.offline import explain

    made = []
    original = explain.with_explanation
    monkeypatch.setattr(
        explain, "with_explanation", lambda *a, **k: made.append(1) or original(*a, **k)
    )
    assert RunOptions(formats=tuple(formats.split(","))).explains is explained
    code, _, err = run_cli(capsys, "run", experiment, "--out", tmp_path / "x", "--format", formats)
    assert code == 0, err
    assert bool(made) is explained
    json_only = tmp_path / "json-only"
    if formats == "json":  # the summary is the same as with the tables
        run_cli(capsys, "run", experiment, "--out", json_only, "--format", "json,csv")
        assert (tmp_path / "x" / "summary.json").read_text() == (
            json_only / "summary.json"
        ).read_text()


def test_metrics_verb_prints_trec_eval_rows(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 e 1\nq3 0 g 1\n")
    run = tmp_path / "run.txt"
    # first relevant at ranks 1, 3 and 2 -> MRR (1 + 1/3 + 1/2) / 3
    run.write_text(
        "q1 Q0 a 1 3 r\nq1 Q0 b 2 2 r\nq2 Q0 c 1 3 r\nq2 Q0 d 2 2 r\nq2 Q0 e 3 1 r\n"
        "q3 Q0 f 1 3 r\nq3 Q0 g 2 2 r\n"
    )
    code, out, err = run_cli(capsys, "metrics", qrels, run, "-m", "mrr", "--per-query")
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(m, q) for m, q, _ in rows] == [
        ("mrr", "q1"),
        ("mrr", "q2"),
        ("mrr", "q3"),
        ("mrr", "all"),
    ]
    assert float(rows[1][2]) == pytest.approx(1 / 3, abs=1e-15)
    assert float(rows[-1][2]) == pytest.approx((1 + 1 / 3 + 1 / 2) / 3, abs=1e-15)


def test_compare_verb_json(tmp_path, capsys, shared_data):
    dl19 = shared_data / "trec-dl-passage"
    code, out, err = run_cli(
        capsys,
        "compare",
        dl19 / "qrels.dl19-passage.txt",
        dl19 / "runs" / "dl19.bm25-flat.top100.txt",
        dl19 / "runs" / "dl19.bm25-flat.top100+rankvicuna-7b.txt",
        "-m",
        "ndcg@10",
        "--json",
        "--resamples",
        "1000",
    )
    assert code == 0, err
    (result,) = json.loads(out)
    # The shared data's derived table: n 43, 0.5058 -> 0.6682, t-test p 1.87e-07, 33/5/5.
    assert result["n"] == 43
    assert (
        round(result["control_mean"], 4) == 0.5058 and round(result["treatment_mean"], 4) == 0.6682
    )
    # (the table's p comes from trec_eval's 4-decimal values; ours from exact ones)
    assert result["p_values"]["t"] == pytest.approx(1.87e-07, rel=0.02)
    assert (result["wins"], result["losses"], result["ties"]) == (33, 5, 5)


def test_compare_no_relevant_zero_gives_trec_eval_means(capsys, shared_data):
    """DL-HARD passage BM25 -> BM25+T5, MRR at -l 2: trec_eval's all rows read 0.5044 ->
    0.5910 on 50 queries (the shared README's table); --no-relevant zero reproduces them,
    the default leaves out the queries without a grade-2 document."""
    base = shared_data / "dl-hard"
    args = [
        "compare",
        base / "dl_hard-passage.qrels",
        base / "baselines" / "passage" / "bm25.run.gz",
        base / "baselines" / "passage" / "bm25+t5(zs).run.gz",
        "-m",
        "mrr",
        "-l",
        "2",
        "--json",
        "--resamples",
        "200",
    ]
    code, out, err = run_cli(capsys, *args, "--no-relevant", "zero")
    assert code == 0, err
    (zero,) = json.loads(out)
    assert zero["n"] == 50
    assert (round(zero["control_mean"], 4), round(zero["treatment_mean"], 4)) == (0.5044, 0.5910)
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    (dropped,) = json.loads(out)
    assert dropped["n"] < 50


def test_every_verb_has_help_with_an_example_and_is_in_the_readme():
    parser = build_parser()
    verbs = parser._subparsers._group_actions[0].choices  # noqa: SLF001
    readme = (ROOT / "README.md").read_text()
    for name, sub in verbs.items():
        assert "Example:" in sub.format_help(), name
        assert f"abrank {name}" in readme, name


def test_demo_data_verb_regenerates_the_committed_demo(tmp_path, capsys):
    code, out, err = run_cli(capsys, "demo-data", "--out", tmp_path)
    assert code == 0, err
    written = [Path(line) for line in out.splitlines()]
    assert sorted(p.name for p in written) == [
        "demo-control.csv.gz",
        "demo-counterfactual-fusion.run.gz",
        "demo-human-sample.tsv",
        "demo-interleaving-log.parquet",
        "demo-judgments.tsv",
        "demo-machine-labels.tsv",
        "demo-online-log.parquet",
        "demo-online-pre.csv.gz",
        "demo-treatment.jsonl.gz",
    ]
    for path in written:
        if path.suffix != ".parquet":  # Parquet bytes depend on pyarrow: test_online_demo.py
            assert path.read_bytes() == (ROOT / "experiments" / "data" / path.name).read_bytes()


def test_metrics_verb_reads_tables_like_trec_files(tmp_path, capsys):
    # The same run and judgments as a TREC pair and as CSV/TSV tables print the same rows.
    (tmp_path / "qrels.txt").write_text("q1 0 a 2\nq2 0 e 1\nq3 0 g 3\nq3 0 f 0\nq4 0 h 0\n")
    rows = [line.split(",") for line in CONTROL.splitlines()[1:]]
    # scores fall with rank, so trec_eval's score order is the log's rank order
    run = "".join(f"{q} Q0 {d} {r} {10 - int(r)} x\n" for q, d, r, _ in rows)
    (tmp_path / "run.txt").write_text(run)
    (tmp_path / "control.csv").write_text(CONTROL)
    (tmp_path / "judgments.tsv").write_text(JUDGMENTS)
    args = ["-m", "mrr", "ndcg@3", "P@2", "--per-query"]
    code, from_trec, err = run_cli(
        capsys, "metrics", tmp_path / "qrels.txt", tmp_path / "run.txt", *args
    )
    assert code == 0, err
    code, from_tables, err = run_cli(
        capsys, "metrics", tmp_path / "judgments.tsv", tmp_path / "control.csv", *args
    )
    assert code == 0, err
    assert from_tables == from_trec
    rows = {(m, q): float(v) for m, q, v in (line.split("\t") for line in from_trec.splitlines())}
    assert rows[("mrr", "q4")] == 0.0  # no relevant document: trec_eval prints 0 and counts it
    assert rows[("mrr", "all")] == pytest.approx((1 + 1 / 3 + 1 / 2 + 0) / 4)


def test_readme_shows_what_the_demo_run_prints(tmp_path, capsys, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("$ abrank run experiments/demo-reranker.yaml\n")
    block = text[start:].split("\n", 1)[1].split("```", 1)[0].splitlines()
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(
        capsys, "run", "experiments/demo-reranker.yaml", "--out", str(tmp_path / "demo")
    )
    assert code == 0
    printed = out.splitlines() + [line for line in err.splitlines() if line.startswith("note:")]
    # the README's folder is the default one; the run here writes to a temporary folder
    expected = [
        f"readout written to {tmp_path / 'demo'}/" if line.startswith("readout written") else line
        for line in block
    ]
    assert printed == expected
