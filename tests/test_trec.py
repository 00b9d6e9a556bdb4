"""TREC files: readers, trec_eval's ordering rule, error messages, trec_eval-style output."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank.errors import ConfigError, DataError
from abrank.io.arrow import rank_by_score
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.treceval.output import trec_eval_text

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        text = text.encode()
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as handle:
            handle.write(text)
    else:
        path.write_bytes(text)
    return path


RUN = """\
q1 Q0 d1 1 3.5 sys
q1 Q0 d2 2 2.0 sys
q1 Q0 d10 3 2.0 sys
q1 Q0 d9 4 2.0 sys
q2 Q0 d1 9 -1 sys
q2 Q0 d3 0 4e1 sys
"""

QRELS = """\
q1 0 d9 2
q1 0 d1 0
q2 0 d1 1
q3 0 d4 1
"""


# --------------------------------------------------------------------------- rank_by_score


def test_rank_by_score_follows_trec_eval():
    frame = pd.DataFrame(
        {
            "query_id": ["b", "a", "b", "b", "a", "b"],
            "doc_id": ["x", "y", "d10", "d9", "z", "a"],
            "score": [1.0, 0.5, 2.0, 2.0, 0.7, -3.0],
            "segment": ["s1", "s2", "s3", "s4", "s5", "s6"],
        }
    )
    ranked = rank_by_score(frame)
    # regrouped by query (in query-id order), score descending, ties by doc id descending
    # in string order ("d9" > "d10")
    assert ranked["query_id"].tolist() == ["a", "a", "b", "b", "b", "b"]
    assert ranked["doc_id"].tolist() == ["z", "y", "d9", "d10", "x", "a"]
    assert ranked["rank"].tolist() == [1, 2, 1, 2, 3, 4]
    assert ranked["segment"].tolist() == ["s5", "s2", "s4", "s3", "s1", "s6"]
    assert "rank" not in frame.columns  # the input is left alone


def test_rank_by_score_overwrites_rank_and_rejects_bad_scores():
    frame = pd.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1, 2], "rank": [1, 2]}
    )
    assert rank_by_score(frame)["doc_id"].tolist() == ["b", "a"]
    assert rank_by_score(frame)["rank"].tolist() == [1, 2]
    with pytest.raises(DataError) as info:
        rank_by_score(frame.assign(score=[1.0, np.nan]))
    assert str(info.value) == (
        "rankings: score: expected a number for every row, got NaN (query 'q', doc 'b')"
    )
    with pytest.raises(DataError) as info:
        rank_by_score(frame.drop(columns="score"))
    assert str(info.value) == (
        "rankings: columns: expected query_id, doc_id and score, got query_id, doc_id, rank"
    )


# --------------------------------------------------------------------------- reading runs


def test_read_trec_run(tmp_path):
    run = read_trec_run(write(tmp_path / "run.txt", RUN))
    assert list(run.columns) == ["query_id", "doc_id", "score", "rank"]
    assert str(run["query_id"].dtype) == "str" and str(run["doc_id"].dtype) == "str"
    assert run["score"].dtype == np.float64 and run["rank"].dtype == np.int64
    # the file's rank column is ignored: q2's d3 (score 40) comes first
    assert run.values.tolist() == [
        ["q1", "d1", 3.5, 1],
        ["q1", "d9", 2.0, 2],
        ["q1", "d2", 2.0, 3],
        ["q1", "d10", 2.0, 4],
        ["q2", "d3", 40.0, 1],
        ["q2", "d1", -1.0, 2],
    ]


def test_read_trec_run_gzip_tabs_padding_and_trailing_fields(tmp_path):
    messy = (
        "q1\tQ0\td1\t1\t  3.5\tsys\n"
        "\n"
        "q1  Q0 d9   2 2.0 sys extra words\r\n"
        "   q1 Q0 d2 3 2.0 sys\n"
        "q1 Q0 d10 4 2.0 sys"
    )
    run = read_trec_run(write(tmp_path / "run.gz", messy))
    assert run["doc_id"].tolist() == ["d1", "d9", "d2", "d10"]
    assert run["rank"].tolist() == [1, 2, 3, 4]


def test_read_trec_run_ids_stay_strings(tmp_path):
    run = read_trec_run(write(tmp_path / "run.txt", "007 Q0 0100 1 1.0 s\n7 Q0 100 1 1.0 s\n"))
    assert run["query_id"].tolist() == ["007", "7"]
    assert run["doc_id"].tolist() == ["0100", "100"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 1.0\n",
            "line 2: expected at least 6 whitespace-separated fields "
            "(query_id iter doc_id rank score tag), got 5",
        ),
        ("q1 Q0 d1 1 1.0 s\n\nq1 Q0 d2 2 high s\n", "line 3: score: expected a number, got 'high'"),
        ("q1 Q0 d1 1 nan s\n", "line 1: score: expected a number, got 'nan'"),
        ("", "expected TREC lines, got an empty file"),
        ("\n  \n", "expected TREC lines, got an empty file"),
    ],
)
def test_read_trec_run_errors(tmp_path, text, message):
    path = write(tmp_path / "run.txt", text)
    with pytest.raises(DataError) as info:
        read_trec_run(path)
    assert str(info.value) == f"{path}: {message}"


def test_read_trec_run_rejects_binary_and_non_utf8(tmp_path):
    binary = write(tmp_path / "run.bin", b"q1 Q0 d1 1 1.0 s\n\x00\x01\x02")
    with pytest.raises(DataError) as info:
        read_trec_run(binary)
    assert (
        str(info.value)
        == f"{binary}: expected a text file, got binary data (a NUL byte at offset 17)"
    )
    latin = write(
        tmp_path / "run.txt", "q1 Q0 d1 1 1.0 s\nq1 Q0 caf\xe9 2 0.5 s\n".encode("latin-1")
    )
    with pytest.raises(DataError) as info:
        read_trec_run(latin)
    assert str(info.value) == f"{latin}: line 2: expected UTF-8 text, got bytes that are not UTF-8"
    missing = tmp_path / "nope.txt"
    with pytest.raises(DataError) as info:
        read_trec_run(missing)
    assert str(info.value) == f"{missing}: expected an existing file, got no such file"


def test_read_trec_run_duplicates(tmp_path):
    text = RUN + "q1 Q0 d2 7 0.1 sys\nq2 Q0 d3 8 9.0 sys\nq1 Q0 d2 9 5.0 sys\n"
    path = write(tmp_path / "run.txt", text)
    with pytest.raises(DataError) as info:
        read_trec_run(path)
    assert str(info.value) == (
        f"{path}: line 7: expected each document once per query, got 3 duplicate (query, doc) "
        "pair(s): ('q1', 'd2') at line 7, ('q2', 'd3') at line 8, ('q1', 'd2') at line 9 "
        "(use duplicates: first to keep the first occurrence)"
    )
    kept = read_trec_run(path, duplicates="first")
    assert len(kept) == 6
    assert kept.loc[kept.doc_id == "d2", "score"].tolist() == [2.0]  # the first occurrence
    with pytest.raises(ConfigError) as info:
        read_trec_run(path, duplicates="last")
    assert str(info.value) == "duplicates: expected 'error' or 'first', got 'last'"


def test_codec_rm3_run_really_has_three_duplicates(shared_data):
    path = shared_data / "codec" / "runs" / "document_bm25+rm3-tuned.run.gz"
    with pytest.raises(DataError) as info:
        read_trec_run(path)
    message = str(info.value)
    assert "got 3 duplicate (query, doc) pair(s):" in message
    assert message.startswith(f"{path}: line ")
    assert len(read_trec_run(path, duplicates="first")) == 42_000 - 3


def test_real_runs_with_scrambled_and_zero_based_ranks(shared_data):
    run = read_trec_run(shared_data / "trec_eval-tests" / "test" / "results.test")
    assert len(run) == 1500 and run["query_id"].unique().tolist() == ["301", "302", "303"]
    assert (run.groupby("query_id")["score"].diff().dropna() <= 0).all()
    zs = read_trec_run(shared_data / "dl-hard" / "baselines" / "doc" / "bm25+t5-mp(zs).run.gz")
    assert zs["rank"].min() == 1 and zs.groupby("query_id").size().eq(1000).all()


# --------------------------------------------------------------------------- reading qrels


def test_read_trec_qrels(tmp_path):
    qrels = read_trec_qrels(write(tmp_path / "qrels.txt", QRELS + "q3 0 d5 -1\n"))
    assert list(qrels.columns) == ["query_id", "doc_id", "relevance"]
    assert qrels["relevance"].dtype == np.float64
    assert qrels.values.tolist() == [
        ["q1", "d9", 2.0],
        ["q1", "d1", 0.0],
        ["q2", "d1", 1.0],
        ["q3", "d4", 1.0],
        ["q3", "d5", -1.0],
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "q1 0 d1 1\nq1 0 d2\n",
            "line 2: expected 4 whitespace-separated fields (query_id iter doc_id relevance), got 3",
        ),
        (
            "q1 0 d1 1\nq1 0 d2 1 extra\n",
            "line 2: expected 4 whitespace-separated fields (query_id iter doc_id relevance), got 5",
        ),
        ("q1 0 d1 1\nq1 0 d2 relevant\n", "line 2: relevance: expected a number, got 'relevant'"),
        (
            "q1 0 d1 1\nq1 0 d2 1\nq1 0 d1 2\n",
            "line 3: expected one judgment per (query, doc) pair, got 1 repeated: "
            "('q1', 'd1') at line 3",
        ),
    ],
)
def test_read_trec_qrels_errors(tmp_path, text, message):
    path = write(tmp_path / "qrels.txt", text)
    with pytest.raises(DataError) as info:
        read_trec_qrels(path)
    assert str(info.value) == f"{path}: {message}"


def test_shared_qrels_load(shared_data):
    qrels = read_trec_qrels(shared_data / "trec-dl-passage" / "qrels.dl19-passage.txt")
    assert len(qrels) == 9260 and qrels["query_id"].nunique() == 43
    assert qrels["relevance"].value_counts().to_dict() == {0: 5158, 2: 1804, 1: 1601, 3: 697}
    codec = read_trec_qrels(shared_data / "codec" / "document_ndcg.qrels")
    assert codec["query_id"].str.contains("-").all()


# --------------------------------------------------------------------------- output


def test_trec_eval_text_layout(tmp_path):
    run = write(tmp_path / "run.txt", RUN)
    qrels = write(tmp_path / "qrels.txt", QRELS)
    text = trec_eval_text(qrels, run, ["RR", "P@2"], per_query=True)
    # q1: relevant d9 at rank 2; q2: d1 at rank 2; q3 judged but not run: left out
    assert text == (
        "mrr\tq1\t0.5\nprecision@2\tq1\t0.5\n"
        "mrr\tq2\t0.5\nprecision@2\tq2\t0.5\n"
        "mrr\tall\t0.5\nprecision@2\tall\t0.5\n"
    )
    means = trec_eval_text(qrels, run, ["mrr", "p@2"], complete=True, digits=4)
    assert means == "mrr\tall\t0.3333\nprecision@2\tall\t0.3333\n"
    full = trec_eval_text(qrels, run, ["mrr@1", "ndcg@3"], rel_level=2)
    # q1: grade-2 d9 at rank 2 -> mrr@1 0; q2: no grade >= 2 -> 0, counted in the mean
    ndcg_q1 = (2 / np.log2(3)) / 2
    ndcg_q2 = (1 / np.log2(3)) / 1
    assert full == f"mrr@1\tall\t0.0\nndcg@3\tall\t{float(ndcg_q1 + ndcg_q2) / 2!r}\n"


def test_trec_eval_text_errors(tmp_path):
    run = write(tmp_path / "run.txt", RUN + "q1 Q0 d2 9 0.1 sys\n")
    qrels = write(tmp_path / "qrels.txt", QRELS)
    with pytest.raises(DataError) as info:
        trec_eval_text(qrels, run, ["mrr"])
    assert str(info.value).startswith(f"{run}: line 7: expected each document once per query")
    repeated = write(tmp_path / "repeated.txt", QRELS + "q2 0 d1 0\n")
    with pytest.raises(DataError) as info:
        trec_eval_text(repeated, write(tmp_path / "r0.txt", RUN), ["mrr"])
    assert str(info.value) == (
        f"{repeated}: line 5: expected one judgment per (query, doc) pair, got 1 repeated: "
        "('q2', 'd1') at line 5"
    )
    # as in trec_eval -M, only the first `depth` documents of a query are checked
    deep = write(tmp_path / "deep.txt", RUN + "q1 Q0 d2 9 0.1 sys\n")
    assert trec_eval_text(qrels, deep, ["mrr"], depth=3) == "mrr\tall\t0.5\n"
    other = write(tmp_path / "other.txt", "x Q0 d1 1 1.0 s\n")
    with pytest.raises(DataError) as info:
        trec_eval_text(qrels, other, ["mrr"])
    assert (
        str(info.value)
        == f"{other}: query ids: expected queries that are also in {qrels}, got none"
    )
    with pytest.raises(ConfigError) as info:
        trec_eval_text(qrels, write(tmp_path / "r.txt", RUN), ["mrr"], digits=-1)
    assert str(info.value) == "digits: expected a whole number >= 0, got -1"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "abrank", "metrics", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_metrics_reproduces_trec_eval(shared_data):
    base = shared_data / "beir-trec-covid"
    result = run_cli(
        str(base / "qrels.beir-v1.0.0-trec-covid.test.txt"),
        str(base / "runs" / "trec-covid.splade-pp-ed.top100.txt"),
        "-m",
        "ndcg_cut.10",
        "recall.100",
        "--complete",
        "--digits",
        "4",
    )
    assert result.returncode == 0, result.stderr
    # trec_eval's names and layout, in trec_eval's order (recall before ndcg_cut); the
    # published figures 0.7274 and 0.1282 (see the data's README)
    assert (
        result.stdout
        == "recall_100            \tall\t0.1282\nndcg_cut_10           \tall\t0.7274\n"
    )
    dl = shared_data / "trec-dl-passage"
    result = run_cli(
        str(dl / "qrels.dl19-passage.txt"),
        str(dl / "runs/dl19.bm25-flat.top100.txt"),
        "-m",
        "mrr@10",
        "--per-query",
        "--rel-level",
        "2",
        "--digits",
        "4",
        "-c",
    )
    expected = (dl / "expected" / "dl19.bm25-flat.top100.mrr10.l2.trec_eval.txt").read_text()
    rows = [line.split() for line in expected.splitlines() if line.startswith("recip_rank")]
    by_query = {q: v for _, q, v in rows if q != "all"}
    got = [line.split("\t") for line in result.stdout.splitlines()]
    assert {q: v for _, q, v in got if q != "all"} == by_query
    assert got[-1] == ["mrr@10", "all", "0.7024"]


def test_cli_metrics_bad_input_exits_2_with_one_line(tmp_path):
    run = write(tmp_path / "run.txt", "q1 Q0 d1 1 one sys\n")
    qrels = write(tmp_path / "qrels.txt", QRELS)
    result = run_cli(str(qrels), str(run), "-m", "mrr")
    assert result.returncode == 2
    assert f"{run}: line 1: score: expected a number, got 'one'" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli(str(qrels), str(run), "-m", "ndgc@10")
    assert result.returncode == 2
    assert "did you mean 'ndcg@10'?" in result.stderr


def test_query_codes_over_several_chunks_grouped_or_not():
    import pyarrow as pa

    from abrank.io.arrow import query_codes

    grouped = pa.chunked_array([["b", "b", "b", "b", "b"], ["b", "a", "a", "a", "a"], ["c"] * 6])
    mixed = pa.chunked_array([["b", "a", "c"], ["a", "b"], ["c", "c", "a"]])
    for column in (grouped, mixed):
        codes, ids = query_codes(column)
        assert ids.to_pylist() == ["a", "b", "c"]
        assert [ids[int(c)].as_py() for c in codes] == column.to_pylist()
    (first, second), ids = query_codes(mixed, pa.chunked_array([["d", "a"], ["b"]]))
    assert ids.to_pylist() == ["a", "b", "c", "d"]
    assert second.tolist() == [3, 0, 1] and first.tolist() == [1, 0, 2, 0, 1, 2, 2, 0]


@pytest.mark.parametrize("digits", [None, 4])
@pytest.mark.parametrize(
    "values",
    [
        [0.5, 0.5, 1 / 3, 0.5, 0.0, 0.5],  # few distinct values (formatted once each)
        [0.1, 0.2, 0.30000000000000004, 1.0, 0.0, 2 / 3],  # all distinct
        [-0.0, 0.0, -0.0, 0.0, 0.0, 0.0],  # equal to np.unique, printed apart
    ],
)
def test_format_trec_eval_prints_every_value_like_repr_or_printf(values, digits):
    from abrank.treceval.output import format_trec_eval

    qids = [f"q{i}" for i in range(len(values))]

    def shown(v: float) -> str:
        if digits is None:
            return repr(v)
        return np.format_float_positional(v, precision=digits, unique=False, trim="k")

    expected = "".join(f"m\t{q}\t{shown(v)}\n" for q, v in zip(qids, values, strict=True))
    expected += f"m\tall\t{shown(float(np.mean(values)))}\n"
    text = format_trec_eval(qids, {"m": np.array(values)}, per_query=True, digits=digits)
    assert text == expected
