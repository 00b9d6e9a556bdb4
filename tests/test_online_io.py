"""Impression logs: every format reads the same canonical frame, ids compare as text, and
every bad input names the file and the line, impression or column."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank.errors import ConfigError, DataError
from abrank.io import (
    IMPRESSION_COLUMNS,
    MixedUnits,
    check_arms,
    drop_units,
    read_impressions,
    split_log,
)

# rows out of order on purpose: the reader sorts by (impression_id, rank)
ROWS = [
    {"impression_id": "i2", "user_id": "u1", "rank": 2, "doc_id": "d5", "clicked": 0,
     "dwell": None, "device": "mobile", "query": "cats"},
    {"impression_id": "i2", "user_id": "u1", "rank": 1, "doc_id": "d4", "clicked": 1,
     "dwell": 12.5, "device": "mobile", "query": "cats"},
    {"impression_id": "i1", "user_id": "u2", "rank": 1, "doc_id": "d1", "clicked": 1,
     "dwell": 40.0, "device": "desktop", "query": "dogs"},
    {"impression_id": "i1", "user_id": "u2", "rank": 3, "doc_id": "d3", "clicked": 1,
     "dwell": 3.0, "device": "desktop", "query": "dogs"},
    {"impression_id": "i1", "user_id": "u2", "rank": 2, "doc_id": "d2", "clicked": 0,
     "dwell": None, "device": "desktop", "query": "dogs"},
    {"impression_id": "007", "user_id": "u3", "rank": 1, "doc_id": "d9", "clicked": 0,
     "dwell": None, "device": "desktop", "query": "fish"},
]  # fmt: skip

# the same log as the reader must return it, written out by hand
EXPECTED = pd.DataFrame(
    {
        "impression_id": ["007", "i1", "i1", "i1", "i2", "i2"],
        "user_id": ["u3", "u2", "u2", "u2", "u1", "u1"],
        "rank": np.array([1, 1, 2, 3, 1, 2], dtype=np.int64),
        "doc_id": ["d9", "d1", "d2", "d3", "d4", "d5"],
        "clicked": np.array([0, 1, 0, 1, 1, 0], dtype=np.int8),
        "dwell": [np.nan, 40.0, np.nan, 3.0, 12.5, np.nan],
        "query": ["fish", "dogs", "dogs", "dogs", "cats", "cats"],
        "device": ["desktop", "desktop", "desktop", "desktop", "mobile", "mobile"],
    }
)


def _cell(value) -> str:
    return "" if value is None else str(value)


def write_delimited(path: Path, rows: list[dict], sep: str = ",") -> Path:
    columns = list(rows[0])
    lines = [sep.join(columns)] + [sep.join(_cell(r[c]) for c in columns) for r in rows]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def check_text_ids(values: pd.Series) -> None:
    """Ids as the reader holds them: a categorical whose categories are the distinct ids as
    text (pandas strings) in byte order, every one of them some row's."""
    assert isinstance(values.dtype, pd.CategoricalDtype), values.name
    categories = values.cat.categories
    assert isinstance(categories.dtype, pd.StringDtype), values.name
    assert [c.encode() for c in categories] == sorted(c.encode() for c in set(values.dropna()))


def check_frame(frame: pd.DataFrame) -> None:
    assert list(frame.columns) == list(EXPECTED.columns)
    for column in EXPECTED.columns:
        assert frame[column].tolist() == pytest.approx(EXPECTED[column].tolist(), nan_ok=True), (
            column
        )
    assert frame["rank"].dtype == np.int64
    assert frame["clicked"].dtype == np.int8
    assert frame["dwell"].dtype == np.float64
    for column in ("impression_id", "user_id", "doc_id", "query", "device"):
        check_text_ids(frame[column])
    assert frame.index.tolist() == list(range(6))


def test_every_format_reads_the_same_canonical_frame(tmp_path):
    paths = [
        write_delimited(tmp_path / "log.csv", ROWS),
        write_delimited(tmp_path / "log.tsv", ROWS, sep="\t"),
        write_delimited(tmp_path / "log.csv.gz", ROWS),
        write_jsonl(tmp_path / "log.jsonl", ROWS),
    ]
    parquet = tmp_path / "log.parquet"
    pd.DataFrame(ROWS).to_parquet(parquet)
    paths.append(parquet)
    for path in paths:
        check_frame(read_impressions(path))
    # a stated format wins over the extension
    check_frame(read_impressions(write_delimited(tmp_path / "log.data", ROWS), format="csv"))
    assert IMPRESSION_COLUMNS == ("impression_id", "user_id", "rank", "doc_id", "clicked")


def test_a_mapping_and_common_spellings_name_the_columns(tmp_path):
    renamed = [
        {"serve": r["impression_id"], "visitor": r["user_id"], "position": r["rank"],
         "item_id": r["doc_id"], "click": r["clicked"], "dwell_time": r["dwell"],
         "device": r["device"], "query_text": r["query"]}
        for r in ROWS
    ]  # fmt: skip
    path = write_delimited(tmp_path / "log.csv", renamed)
    frame = read_impressions(path, columns={"impression_id": "serve", "user_id": "visitor"})
    check_frame(frame)
    with pytest.raises(DataError) as info:
        read_impressions(path, columns={"user_id": "visitr"})
    assert str(info.value) == (
        f"{path}: columns.user_id: expected a column named 'visitr', found columns: serve, "
        "visitor, position, item_id, click, dwell_time, device, query_text"
    )
    with pytest.raises(ConfigError) as info:
        read_impressions(path, columns={"user": "visitor"})
    assert str(info.value) == (
        f"{path}: columns.user: expected one of impression_id, user_id, rank, doc_id, clicked, "
        "dwell, timestamp, query, arm, team, got 'user'"
    )


def test_int_and_string_ids_are_the_same_ids(tmp_path):
    ints = pd.DataFrame(
        {
            "impression_id": np.array([12, 12, 9], dtype=np.int64),
            "user_id": np.array([7, 7, 70], dtype=np.int64),
            "rank": [2, 1, 1],
            "doc_id": np.array([100, 200, 100], dtype=np.int64),
            "clicked": [True, False, False],
        }
    )
    parquet = tmp_path / "ints.parquet"
    ints.to_parquet(parquet)
    text = tmp_path / "text.csv"
    text.write_text(
        "impression_id,user_id,rank,doc_id,clicked\n12,7,2,100,1\n12,7,1,200,0\n9,70,1,100,0\n"
    )
    strings = tmp_path / "strings.jsonl"
    strings.write_text(
        '{"impression_id": "12", "user_id": "7", "rank": 2, "doc_id": "100", "clicked": 1}\n'
        '{"impression_id": 12, "user_id": 7, "rank": 1, "doc_id": 200, "clicked": 0}\n'
        '{"impression_id": "9", "user_id": "70", "rank": 1, "doc_id": "100", "clicked": 0}\n'
    )
    categories = tmp_path / "categories.parquet"
    ints.assign(
        impression_id=pd.Categorical(["12", "12", "9"]), user_id=pd.Categorical([7, 7, 70])
    ).to_parquet(categories)
    frames = [read_impressions(p) for p in (parquet, text, strings, categories)]
    for frame in frames:
        # byte order of the ids as text: "12" before "9"
        assert frame["impression_id"].tolist() == ["12", "12", "9"]
        assert frame["user_id"].tolist() == ["7", "7", "70"]
        assert frame["doc_id"].tolist() == ["200", "100", "100"]
        assert frame["rank"].tolist() == [1, 2, 1]
        assert frame["clicked"].tolist() == [0, 1, 0]
        for column in ("impression_id", "user_id", "doc_id"):
            check_text_ids(frame[column])
    # CSV ids are kept as written: 007 is not 7
    padded = tmp_path / "padded.csv"
    padded.write_text("impression_id,user_id,rank,doc_id,clicked\n007,01,1,0042,0\n")
    frame = read_impressions(padded)
    assert frame[["impression_id", "user_id", "doc_id"]].iloc[0].tolist() == ["007", "01", "0042"]


def test_clicked_accepts_booleans_and_words_in_any_case(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "impression_id,user_id,rank,doc_id,clicked\n"
        "a,u,1,d1,TRUE\na,u,2,d2,false\na,u,3,d3,1\na,u,4,d4,0\n"
    )
    assert read_impressions(path)["clicked"].tolist() == [1, 0, 1, 0]


HEADER = "impression_id,user_id,rank,doc_id,clicked,dwell\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("a,u,1,d1,2,\n", "line 2: clicked: expected 0, 1, true or false, got 2"),
        ("a,u,1,d1,0,\na,u,2,d2,yes,\n",
         "line 3: clicked: expected 0, 1, true or false, got 'yes'"),
        ("a,u,1,d1,,\na,u,2,d2,0,\n",
         "line 2: clicked: expected 0, 1, true or false, got an empty value"),
        ("a,u,1,d1,0,\na,u,1.5,d2,0,\n", "line 3: rank: expected a whole number >= 1, got 1.5"),
        ("a,u,0,d1,0,\n", "line 2: rank: expected a whole number >= 1, got 0"),
        ("a,u,1,d1,0,\na,u,x,d2,0,\n", "line 3: rank: expected a number, got 'x'"),
        ("a,u,1,d1,0,-2\n", "line 2: dwell: expected a number of seconds >= 0, got -2"),
        ("a,u,1,d1,0,5\na,u,2,d1,0,slow\n", "line 3: dwell: expected a number, got 'slow'"),
        ("a,,1,d1,0,\n", "line 2: user_id: expected a non-empty id, got an empty value"),
        ("i7,u,1,d1,0,\ni7,u,4,d4,0,\ni7,u,2,d2,0,\n",
         "impression 'i7' (line 2): rank: expected ranks 1..4, rank 3 is missing"),
        ("i7,u,2,d1,0,\n", "impression 'i7' (line 2): rank: expected ranks 1..2, rank 1 is missing"),
        ("i7,u,1,d1,0,\ni7,u,2,d2,0,\ni7,u,2,d3,0,\n",
         "line 4: rank: expected each rank once per impression, got rank 2 again in impression "
         "'i7' (first at line 3)"),
        ("i7,u1,1,d1,0,\nj,u1,1,d1,0,\ni7,u2,2,d2,0,\n",
         "line 4: user_id: expected one user_id per impression, got 'u2' in impression 'i7', "
         "which has 'u1' at line 2"),
    ],
)  # fmt: skip
def test_bad_rows_name_the_file_and_the_line_or_impression(tmp_path, body, message):
    path = tmp_path / "log.csv"
    path.write_text(HEADER + body)
    with pytest.raises(DataError) as info:
        read_impressions(path)
    assert str(info.value) == f"{path}: {message}"


def test_one_impression_in_two_arms_of_one_log_is_refused(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "impression_id,user_id,rank,doc_id,clicked,arm\n"
        "i1,u1,1,d1,0,control\ni1,u1,2,d2,1,treatment\n"
    )
    with pytest.raises(DataError) as info:
        read_impressions(path)
    assert str(info.value) == (
        f"{path}: line 3: arm: expected one arm per impression, got 'treatment' in impression "
        "'i1', which has 'control' at line 2"
    )


def test_parquet_and_jsonl_errors_count_rows_and_lines(tmp_path):
    frame = pd.DataFrame(
        {"impression_id": ["a", "a"], "user_id": ["u", "u"], "rank": [1, 2],
         "doc_id": ["d1", "d2"], "clicked": [0, 3]}
    )  # fmt: skip
    parquet = tmp_path / "log.parquet"
    frame.to_parquet(parquet)
    with pytest.raises(DataError) as info:
        read_impressions(parquet)
    assert str(info.value) == f"{parquet}: row 2: clicked: expected 0, 1, true or false, got 3"
    jsonl = write_jsonl(tmp_path / "log.jsonl", frame.to_dict("records"))
    with pytest.raises(DataError) as info:
        read_impressions(jsonl)
    assert str(info.value) == f"{jsonl}: line 2: clicked: expected 0, 1, true or false, got 3"


def test_a_missing_column_lists_the_columns_found(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("impression_id,user_id,rank,doc_id\na,u,1,d1\n")
    with pytest.raises(DataError) as info:
        read_impressions(path)
    assert str(info.value) == (
        f"{path}: expected a clicked column (one of clicked, click, is_click, or set "
        "columns.clicked), found columns: impression_id, user_id, rank, doc_id"
    )


def test_an_empty_log_is_refused(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(HEADER)
    with pytest.raises(DataError) as info:
        read_impressions(path)
    assert str(info.value) == (
        f"{path}: expected at least one row, got none (columns: impression_id, user_id, rank, "
        "doc_id, clicked, dwell)"
    )
    parquet = tmp_path / "log.parquet"
    pd.DataFrame({c: pd.Series([], dtype="str") for c in IMPRESSION_COLUMNS}).to_parquet(parquet)
    with pytest.raises(DataError, match=r"log.parquet: expected at least one row, got none"):
        read_impressions(parquet)


def test_a_trec_file_or_csv_options_on_parquet_are_refused(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 tag\n")
    with pytest.raises(DataError) as info:
        read_impressions(run)
    assert str(info.value) == (
        f"{run}: expected an impression log table (csv, tsv, parquet, jsonl), got a TREC file "
        "(format trec)"
    )
    parquet = tmp_path / "log.parquet"
    pd.DataFrame(ROWS).to_parquet(parquet)
    with pytest.raises(ConfigError, match=r"log.parquet: sep: expected a CSV or TSV file"):
        read_impressions(parquet, sep=";")


def test_a_semicolon_log_with_decimal_commas_reads(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("impression_id;user_id;rank;doc_id;clicked;dwell\na;u;1;d1;1;2,5\n")
    frame = read_impressions(path, sep=";", decimal=",")
    assert frame["dwell"].tolist() == [2.5]


# --------------------------------------------------------------------------- arms


def _log(rows: list[tuple[str, str, int, str]]) -> pd.DataFrame:
    """(impression, user, rank, arm) rows as a canonical frame."""
    return pd.DataFrame(
        {
            "impression_id": [r[0] for r in rows],
            "user_id": [r[1] for r in rows],
            "rank": [r[2] for r in rows],
            "doc_id": [f"d{r[2]}" for r in rows],
            "clicked": np.zeros(len(rows), dtype=np.int8),
            "arm": [r[3] for r in rows],
        }
    )


def test_split_log_gives_a_frame_per_arm():
    log = _log([("a", "u1", 1, "B"), ("a", "u1", 2, "B"), ("b", "u2", 1, "A"), ("c", "u1", 1, "B")])
    arms = split_log(log, ["A", "B"], path="log.csv")
    assert list(arms) == ["A", "B"]
    assert arms["A"]["impression_id"].tolist() == ["b"]
    assert arms["B"]["impression_id"].tolist() == ["a", "a", "c"]
    assert arms["B"]["rank"].tolist() == [1, 2, 1]
    assert "arm" not in arms["A"].columns
    assert arms["B"].index.tolist() == [0, 1, 2]


def test_split_log_errors_list_the_values_and_arm_names():
    log = _log([("a", "u1", 1, "B"), ("b", "u2", 1, "C"), ("c", "u2", 1, "C")])
    with pytest.raises(DataError) as info:
        split_log(log, ["A", "B"], path="log.csv")
    assert str(info.value) == (
        "log.csv: arm: expected the arm names 'A', 'B', got 'C' (values found: 'B' (1 rows), "
        "'C' (2 rows))"
    )
    with pytest.raises(DataError) as info:
        split_log(log, ["A", "B", "C"], path="log.csv")
    assert str(info.value) == (
        "log.csv: arm: expected rows for every arm, got none for 'A' (values found: 'B' (1 "
        "rows), 'C' (2 rows))"
    )
    with pytest.raises(DataError) as info:
        split_log(log.drop(columns="arm"), ["A", "B"], path="log.csv")
    assert str(info.value) == (
        "log.csv: expected an arm column (its values the arm names A, B), found columns: "
        "impression_id, user_id, rank, doc_id, clicked"
    )


def test_check_arms_counts_units_in_two_arms():
    control = _log([("a", "u1", 1, "A"), ("b", "u2", 1, "A"), ("c", "u3", 1, "A")])
    treatment = _log([("x", "u3", 1, "B"), ("y", "u4", 1, "B"), ("z", "u1", 1, "B")])
    mixed = check_arms({"A": control, "B": treatment}, {"A": "a.csv", "B": "b.csv"})
    assert mixed == MixedUnits("user_id", 2, ("u1", "u3"), frozenset({"u1", "u3"}))
    assert mixed.to_dict() == {"column": "user_id", "count": 2, "examples": ["u1", "u3"]}
    assert json.loads(json.dumps(mixed.to_dict())) == mixed.to_dict()
    clean = drop_units({"A": control, "B": treatment}, mixed)
    assert clean["A"]["user_id"].tolist() == ["u2"]
    assert clean["B"]["user_id"].tolist() == ["u4"]
    # ids of another type compare as text
    assert drop_units({"A": control}, [2], unit="user_id")["A"]["user_id"].tolist() == [
        "u1",
        "u2",
        "u3",
    ]
    ints = control.assign(user_id=[1, 2, 3])
    assert drop_units({"A": ints}, ["2"])["A"]["user_id"].tolist() == [1, 3]
    none = check_arms({"A": control, "B": _log([("y", "u9", 1, "B")])}, {})
    assert (none.count, none.examples, none.units) == (0, (), frozenset())


def test_check_arms_refuses_an_impression_in_two_arms():
    control = _log([("a", "u1", 1, "A"), ("b", "u2", 1, "A"), ("c", "u3", 1, "A")])
    treatment = _log([("c", "u3", 1, "B"), ("b", "u2", 1, "B"), ("y", "u4", 1, "B")])
    with pytest.raises(DataError) as info:
        check_arms({"A": control, "B": treatment}, {"A": "a.csv", "B": "b.csv"})
    assert str(info.value) == (
        "a.csv (arm 'A') and b.csv (arm 'B'): impression_id: expected each impression in one "
        "arm, got 2 in more than one, e.g. 'b'"
    )


def test_check_arms_and_drop_units_need_the_unit_column():
    control = _log([("a", "u1", 1, "A")])
    with pytest.raises(DataError) as info:
        check_arms({"A": control, "B": control.drop(columns="user_id")}, {"B": "b.csv"})
    assert str(info.value) == (
        "b.csv: expected a user_id column (the unit of analysis), found columns: impression_id, "
        "rank, doc_id, clicked, arm"
    )
    with pytest.raises(DataError) as info:
        drop_units({"A": control}, ["u1"], unit="session")
    assert str(info.value) == (
        "arm 'A': expected a session column (the unit of analysis), found columns: "
        "impression_id, user_id, rank, doc_id, clicked, arm"
    )


def test_parquet_text_in_an_encoding_without_dictionary_decoding_reads(tmp_path):
    """Text columns written with DELTA_BYTE_ARRAY (which pyarrow cannot decode straight into
    dictionaries) are read as plain text: the same canonical frame."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.DataFrame(
        {
            "impression_id": ["i2", "i2", "i1"],
            "user_id": ["u9", "u9", "u3"],
            "rank": [2, 1, 1],
            "doc_id": ["b", "a", "c"],
            "clicked": [0, 1, 1],
        }
    )
    plain = tmp_path / "plain.parquet"
    delta = tmp_path / "delta.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), plain)
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False),
        delta,
        use_dictionary=False,
        column_encoding={c: "DELTA_BYTE_ARRAY" for c in ("impression_id", "user_id", "doc_id")},
    )
    with pytest.raises(OSError):  # the direct dictionary read fails on this file
        pq.read_table(delta, read_dictionary=["impression_id"])
    read = read_impressions(delta)
    assert read["impression_id"].astype(str).tolist() == ["i1", "i2", "i2"]
    assert read["doc_id"].astype(str).tolist() == ["c", "a", "b"]
    pd.testing.assert_frame_equal(read, read_impressions(plain))
