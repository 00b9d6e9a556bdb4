"""Loaders: every format lands in the canonical frames; every bad file is named precisely."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from abrank.errors import DataError
from abrank.io import detect_format, read_attributes, read_judgments, read_rankings

ROWS = [("q1", "d1", 1, 9.0), ("q1", "d2", 2, 8.5), ("q2", "d3", 1, 3.0)]


def csv_text(rows=ROWS, header="query_id,doc_id,rank,score", sep=",") -> str:
    lines = [header.replace(",", sep)] + [sep.join(map(str, row)) for row in rows]
    return "\n".join(lines) + "\n"


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        call(*args, **kwargs)
    return str(info.value)


def expected_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"], "rank": [1, 2, 1]}
    )


@pytest.mark.parametrize(
    "name", ["log.csv", "log.csv.gz", "log.tsv", "log.jsonl", "log.jsonl.gz", "log.parquet"]
)
def test_every_table_format_loads_to_the_same_frame(tmp_path, name):
    path = tmp_path / name
    frame = pd.DataFrame(ROWS, columns=["query_id", "doc_id", "rank", "score"])
    if ".csv" in name or ".tsv" in name:
        text = csv_text(sep="\t" if ".tsv" in name else ",")
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    elif ".jsonl" in name:
        text = "".join(json.dumps(row) + "\n" for row in frame.to_dict("records"))
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    else:
        frame.to_parquet(path)
    loaded = read_rankings(path)
    pd.testing.assert_frame_equal(
        loaded[["query_id", "doc_id", "rank"]].astype({"query_id": object, "doc_id": object}),
        expected_frame().astype({"query_id": object, "doc_id": object}),
    )
    assert loaded["score"].tolist() == [9.0, 8.5, 3.0]


def test_numeric_ids_become_strings_and_mapping_renames(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("topic,item,pos\n1,10,1\n1,11,2\n")
    loaded = read_rankings(path, columns={"query_id": "topic", "doc_id": "item", "rank": "pos"})
    assert loaded["query_id"].tolist() == ["1", "1"] and loaded["doc_id"].tolist() == ["10", "11"]
    assert loaded["rank"].tolist() == [1, 2]


def test_rank_from_score_follows_trec_eval_ties(tmp_path):
    path = tmp_path / "log.csv"
    # d2 and d9 tie on score: trec_eval puts the larger doc id (string order) first.
    path.write_text("query_id,doc_id,score\nq,d2,1.0\nq,d9,1.0\nq,d10,5.0\nq,d1,0.5\n")
    loaded = read_rankings(path).sort_values("rank")
    assert loaded["doc_id"].tolist() == ["d10", "d9", "d2", "d1"]
    assert loaded["rank"].tolist() == [1, 2, 3, 4]


def test_missing_column_lists_the_columns_found(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("qid,document_name,rank\nq1,d1,1\n")
    assert error_of(read_rankings, path) == (
        f"{path}: expected a doc_id column (one of doc_id, docid, doc, docno, document, item_id, item, "
        "or set columns.doc_id in the config), found columns: qid, document_name, rank"
    )


def test_misnamed_mapped_column(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(csv_text())
    assert error_of(read_rankings, path, columns={"rank": "position"}) == (
        f"{path}: columns.rank: expected a column named 'position', found columns: query_id, doc_id, rank, score"
    )


def test_no_rank_and_no_score(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id\nq1,d1\n")
    assert "expected a rank column (rank, position, pos) or a score column" in error_of(
        read_rankings, path
    )


def test_non_numeric_rank_names_its_line(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,rank\nq1,d1,1\nq1,d2,two\nq1,d3,x\n")
    assert (
        error_of(read_rankings, path)
        == f"{path}: line 3: rank: expected a number, got 'two' (1 more such rows)"
    )


def test_fractional_rank(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,rank\nq1,d1,1\nq1,d2,1.5\n")
    assert (
        error_of(read_rankings, path) == f"{path}: line 3: rank: expected a whole number, got 1.5"
    )


def test_non_numeric_score_and_grade(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("query_id\tdoc_id\tscore\nq1\td1\t0.5\nq1\td2\thigh\n")
    assert error_of(read_rankings, path) == f"{path}: line 3: score: expected a number, got 'high'"
    qrels = tmp_path / "judgments.csv"
    qrels.write_text("query_id,doc_id,grade\nq1,d1,2\nq1,d2,\n")
    assert (
        error_of(read_judgments, qrels)
        == f"{qrels}: line 3: relevance: expected a number, got an empty value"
    )


def test_jsonl_line_numbers_are_one_based(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"qid": "q1", "doc": "d1", "pos": 1}\n{"qid": "q1", "doc": "d2", "pos": "x"}\n'
    )
    assert error_of(read_rankings, path) == f"{path}: line 2: rank: expected a number, got 'x'"


def test_duplicates_are_named_or_dropped(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,rank\nq1,d1,1\nq1,d2,2\nq1,d1,3\nq2,d5,1\nq2,d5,2\n")
    assert error_of(read_rankings, path) == (
        f"{path}: expected each (query_id, doc_id) pair once per ranking, got 2 duplicates: "
        "('q1', 'd1') at line 4, ('q2', 'd5') at line 6; set `duplicates: first` to keep the first occurrence"
    )
    kept = read_rankings(path, duplicates="first")
    assert list(zip(kept["query_id"], kept["doc_id"], kept["rank"])) == [
        ("q1", "d1", 1),
        ("q1", "d2", 2),
        ("q2", "d5", 1),
    ]


def test_empty_log_and_header_only_log(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert (
        error_of(read_rankings, empty) == f"{empty}: expected at least one row, got an empty file"
    )
    header = tmp_path / "header.csv"
    header.write_text("query_id,doc_id,rank\n")
    assert error_of(read_rankings, header) == (
        f"{header}: expected at least one row, got none (columns: query_id, doc_id, rank)"
    )


def test_binary_and_non_utf8_files(tmp_path):
    binary = tmp_path / "log.csv"
    binary.write_bytes(b"query_id,doc_id\x00\x01\x02")
    assert (
        error_of(read_rankings, binary)
        == f"{binary}: expected a text file, got binary data (NUL bytes)"
    )
    latin = tmp_path / "latin.csv"
    latin.write_bytes("query_id,doc_id,rank\nq1,caf\xe9,1\n".encode("latin-1"))
    assert (
        error_of(read_rankings, latin) == f"{latin}: line 2: expected UTF-8 text, got the byte 0xe9"
    )


def test_fake_gzip_and_fake_parquet(tmp_path):
    fake = tmp_path / "log.csv.gz"
    fake.write_text(csv_text())
    assert (
        error_of(read_rankings, fake)
        == f"{fake}: expected gzip-compressed data (.gz), got an uncompressed file"
    )
    parquet = tmp_path / "log.parquet"
    parquet.write_text(csv_text())
    assert error_of(read_rankings, parquet).startswith(
        f"{parquet}: expected a Parquet file, got unreadable data"
    )


def test_missing_file_and_unknown_extension(tmp_path):
    assert (
        error_of(read_rankings, tmp_path / "nope.csv")
        == f"{tmp_path / 'nope.csv'}: expected a data file, got no such file"
    )
    odd = tmp_path / "log.xlsx"
    odd.write_bytes(b"PK\x03\x04 spreadsheet")
    assert "expected a known extension" in error_of(detect_format, odd)
    sniffed = tmp_path / "results.test"
    sniffed.write_text("301 Q0 d1 1 2.5 run\n")
    assert detect_format(sniffed) == "trec"
    assert detect_format(sniffed, judgments=True) == "qrels"
    # trec_eval's results.trunc: junk after the sixth field, which trec_eval ignores
    trunc = tmp_path / "results.trunc"
    trunc.write_text("301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at\n")
    assert detect_format(trunc) == "trec"
    five = tmp_path / "five.fields"
    five.write_text("301 Q0 d1 1 2.5\n")
    assert "expected a known extension" in error_of(detect_format, five)


def test_judgments_table_and_duplicate_judgments(tmp_path):
    path = tmp_path / "judgments.tsv"
    path.write_text("query_id\tdoc_id\tgrade\nq1\td1\t3\nq1\td2\t0\n")
    frame = read_judgments(path)
    assert frame.columns.tolist() == ["query_id", "doc_id", "relevance"]
    assert frame["relevance"].tolist() == [3.0, 0.0]
    path.write_text("query_id\tdoc_id\tgrade\nq1\td1\t3\nq1\td1\t0\n")
    assert (
        "expected each (query_id, doc_id) pair once per judgments, got 1 duplicates: ('q1', 'd1') at line 3"
        in (error_of(read_judgments, path))
    )


def test_attributes_need_one_row_per_query(tmp_path):
    path = tmp_path / "attributes.csv"
    path.write_text("query_id,locale\nq1,en\nq2,de\nq1,fr\n")
    assert (
        error_of(read_attributes, path)
        == f"{path}: line 4: query_id: expected one row per query, got 'q1'"
    )


def test_trec_run_by_extension(shared_data: Path):
    run = read_rankings(shared_data / "trec_eval-tests" / "test" / "results.test")
    assert set(run.columns) >= {"query_id", "doc_id", "rank", "score"}
    assert run.groupby("query_id").size().tolist() == [500, 500, 500]
