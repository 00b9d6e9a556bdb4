"""One rule for compressed files and one parser of numeric columns, shared by every reader.

gzip data is recognised by its magic number whatever the file is called, by the table
readers and the TREC readers alike; a ``.gz`` name on plain bytes is refused by both. Bad
numbers are named the same way everywhere: where, what was expected, the cell, and how many
more such cells there are.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from abrank.errors import DataError
from abrank.io import read_judgments, read_rankings
from abrank.io.columns import parse_numbers
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.treceval.output import run_tag

RUN = "q1 Q0 a 1 2.5 tagA\nq1 Q0 b 2 1.5 tagA\nq2 Q0 c 1 0.5 tagB\n"
QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n"
TABLE = "query_id,doc_id,score\nq1,a,2.5\nq1,b,1.5\nq2,c,0.5\n"


def gzipped(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_gzip_data_is_read_whatever_the_file_is_called(tmp_path):
    for name in ("run.txt", "run.txt.gz"):
        run = read_trec_run(gzipped(tmp_path / name, RUN))
        assert run["doc_id"].tolist() == ["a", "b", "c"]
        assert run["score"].tolist() == [2.5, 1.5, 0.5]
        assert run_tag(tmp_path / name) == "tagB"
    qrels = read_trec_qrels(gzipped(tmp_path / "qrels.txt", QRELS))
    assert qrels["relevance"].tolist() == [1.0, 0.0, 2.0]
    table = read_rankings(gzipped(tmp_path / "log.csv", TABLE))
    assert table["rank"].tolist() == [1, 2, 1]
    lines = '{"query_id": "q1", "doc_id": "a", "relevance": 3}\n'
    assert read_judgments(gzipped(tmp_path / "j.jsonl", lines))["relevance"].tolist() == [3.0]


def test_a_gz_name_on_plain_bytes_is_refused_by_every_reader(tmp_path):
    for name, text, reader in (
        ("run.txt.gz", RUN, read_trec_run),
        ("qrels.txt.gz", QRELS, read_trec_qrels),
        ("log.csv.gz", TABLE, read_rankings),
    ):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(DataError) as info:
            reader(path)
        assert str(info.value) == (
            f"{path}: expected gzip-compressed data (.gz), got an uncompressed file"
        )


def test_a_bad_number_in_a_gzip_trec_run_without_gz_suffix_names_its_line(tmp_path):
    path = gzipped(tmp_path / "run.txt", "q1 Q0 a 1 2.5 t\nq1  Q0 b 2 high t\n")
    with pytest.raises(DataError) as info:
        read_trec_run(path)
    assert str(info.value) == f"{path}: line 2: score: expected a number, got 'high'"


def where(row: int) -> str:
    return f"f.csv: line {row + 2}: score"


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["1.5", "x", "2", "y"]),
        pd.Series(["1.5", "x", "2", "y"], dtype="string"),
        pa.chunked_array([["1.5", "x"], ["2", "y"]]),
    ],
)
def test_a_non_number_is_named_with_its_line_and_the_count_of_others(column):
    with pytest.raises(DataError) as info:
        parse_numbers(column, where)
    assert str(info.value) == "f.csv: line 3: score: expected a number, got 'x' (1 more such rows)"


def test_numbers_missing_infinite_and_booleans():
    assert parse_numbers(pd.Series(["1", " 2.5", "-3e1"]), where).tolist() == [1.0, 2.5, -30.0]
    assert parse_numbers(pa.chunked_array([["0.25", "4"]]), where).tolist() == [0.25, 4.0]
    with pytest.raises(DataError) as info:
        parse_numbers(pd.Series([1.0, None]), where)
    assert str(info.value) == "f.csv: line 3: score: expected a number, got an empty value"
    kept = parse_numbers(pd.Series([1.0, None]), where, allow_missing=True)
    assert kept[0] == 1.0 and np.isnan(kept[1])
    with pytest.raises(DataError) as info:
        parse_numbers(pd.Series([1.0, -np.inf]), where)
    assert str(info.value) == "f.csv: line 3: score: expected a finite number, got -inf"
    assert parse_numbers(pd.Series([1.0, np.inf]), where, finite=False)[1] == np.inf
    with pytest.raises(DataError) as info:
        parse_numbers(pd.Series([True, False]), where)
    assert str(info.value) == "f.csv: line 2: score: expected a number, got True (1 more such rows)"
    assert parse_numbers(pd.Series([True, False]), where, booleans=True).tolist() == [1.0, 0.0]
    assert parse_numbers(pd.Series(["0,5", "2"]), where, decimal=",").tolist() == [0.5, 2.0]
    with pytest.raises(DataError) as info:
        parse_numbers(pa.chunked_array([["1", "nan"]]), where)
    assert str(info.value) == "f.csv: line 3: score: expected a number, got 'nan'"


@pytest.mark.parametrize("where_bad", [0, 1, 2])
def test_a_bad_float_anywhere_in_an_arrow_column_is_found(where_bad):
    """Floats the CSV reader parsed (NaN, inf, beyond 2^53) are refused wherever they
    sit, and the bound itself is a valid grade."""
    for bad, expected in [
        (np.nan, "a number, got 'nan'"),
        (np.inf, "a finite number, got 'inf'"),
        (-np.inf, "a finite number, got '-inf'"),
    ]:
        values = [3.0, 1.0, 2.0]
        values[where_bad] = bad
        with pytest.raises(DataError) as info:
            parse_numbers(pa.chunked_array([values[:2], values[2:]]), where, bounded=True)
        message = f"f.csv: line {where_bad + 2}: score: expected {expected}"
        assert str(info.value) == message
    edge = [2.0**53, -(2.0**53), 0.5]
    assert parse_numbers(pa.chunked_array([edge]), where, bounded=True).tolist() == edge
    for beyond in (2.0**53 + 2, -(2.0**53) - 2):
        values = [1.0, 1.0, 1.0]
        values[where_bad] = beyond
        with pytest.raises(DataError) as info:
            parse_numbers(pa.chunked_array([values]), where, bounded=True)
        assert f"line {where_bad + 2}: score: expected a number between -2^53 and 2^53" in str(
            info.value
        )
        assert parse_numbers(pa.chunked_array([values]), where)[where_bad] == beyond


def test_every_table_format_has_a_reader_and_every_extension_one_format() -> None:
    from abrank.io import formats, tables

    assert set(tables.READERS) == set(formats.TABLE_NAMES)
    suffixes = [suffix for f in formats.FORMATS for suffix in f.suffixes]
    assert len(suffixes) == len(set(suffixes))
    # what a config may name is the table of formats, in its order
    from abrank.config import INPUT_FORMATS

    assert INPUT_FORMATS == ("trec", "qrels", "csv", "tsv", "parquet", "jsonl")
