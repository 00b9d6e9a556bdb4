"""The fast online data path: ids coded over their distinct values as text, only the
columns a run needs, and every shortcut equal to the slow obvious way of doing the same."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import abrank
from abrank.engines.clicks import ImpressionIndex, score_impressions, unit_sums
from abrank.errors import ConfigError, DataError
from abrank.io import check_arms, drop_units, read_impressions, split_log
from abrank.io.idcodes import text_categorical, text_codes
from abrank.io.online import take_frame


def reference_text(values: list) -> list:
    """Each value as the text an id compares as, by hand: whole floats as integers (as
    Arrow writes them too: 2.0 is "2"), other floats as Python writes them."""
    out = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, float):
            out.append(str(int(v)) if v.is_integer() else repr(v))
        else:
            out.append(str(v))
    return out


def check_categorical(values: list, got: pd.Categorical) -> None:
    """``got`` holds ``values`` as text, with categories the distinct texts in byte order."""
    text = reference_text(values)
    assert [None if pd.isna(v) else v for v in got.tolist()] == text
    distinct = sorted({t for t in text if t is not None}, key=str.encode)
    assert list(got.categories) == distinct


@pytest.mark.parametrize("grouped", [True, False])
def test_text_categorical_equals_a_slow_reference(grouped):
    rng = np.random.default_rng(7)
    ints = rng.integers(-(10**12), 10**12, size=60).tolist() + [0, 9, 10, 99, 100, -1, -10]
    cases = [
        ints,
        rng.integers(0, 40, size=300).tolist(),  # few distinct: "10" < "2" < "39"
        [f"u{i}" for i in rng.integers(0, 50, size=200)],
        [1.0, 12.0, 3.0, 12.0],
        [1.5, 2.0, 1.5],
        ["b", None, "a", "b"],
    ]
    for values in cases:
        if grouped:  # runs of equal neighbours, as an impression's rows are
            values = [v for v in values for _ in range(5)]
        check_categorical(values, text_categorical(pa.array(values)))
    chunked = pa.chunked_array([pa.array([12, 12, 9]), pa.array([9, 100])])
    check_categorical([12, 12, 9, 9, 100], text_categorical(chunked))
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array([2, 0, 2], type=pa.int32()),
        pa.array([70, 5, 7]),  # 5 unused
    )
    got = text_categorical(dictionary)
    assert got.tolist() == ["7", "70", "7"] and list(got.categories) == ["7", "70"]


def test_text_codes_of_categoricals_are_dense_codes_in_byte_order():
    values = pd.Series(pd.Categorical(["b", "a", "b", "c"], categories=["z", "c", "b", "a"]))
    codes, ids = text_codes(values, "x")
    assert ids.to_pylist() == ["a", "b", "c"]  # "z" is nobody's
    assert codes.tolist() == [1, 0, 1, 2]
    ints = pd.Series(pd.Categorical([70, 7, 12, 7]))
    codes, ids = text_codes(ints, "x")
    assert ids.to_pylist() == ["12", "7", "70"] and codes.tolist() == [2, 1, 0, 1]
    # the same as the text path for the same ids as plain strings
    plain = text_codes(ints.astype(str), "x")
    assert plain[0].tolist() == codes.tolist() and plain[1].to_pylist() == ids.to_pylist()
    with pytest.raises(DataError) as info:
        text_codes(pd.Series(pd.Categorical(["a", None])), "impressions: user_id")
    assert str(info.value) == "impressions: user_id: row 1: expected an id, got a missing value"


def _log(rows: int = 400, seed: int = 1) -> pd.DataFrame:
    """A log whose impressions are blocks of rows in rank order, numbered 1, 2, ... as
    served (so that their order as text differs from the file's)."""
    rng = np.random.default_rng(seed)
    impressions = rows // 4
    return pd.DataFrame(
        {
            "impression_id": np.repeat(np.arange(1, impressions + 1), 4),
            "user_id": np.repeat(rng.integers(0, 30, impressions), 4),
            "rank": np.tile(np.arange(1, 5), impressions),
            "doc_id": rng.integers(0, 1000, rows),
            "clicked": (rng.random(rows) < 0.3).astype(np.int64),
            "dwell": np.where(rng.random(rows) < 0.5, rng.exponential(30, rows), np.nan),
            "device": np.repeat(rng.choice(["mobile", "desktop"], impressions), 4),
            "arm": np.repeat(rng.choice(["A", "B"], impressions), 4),
        }
    )


def _sorted_by_hand(log: pd.DataFrame) -> pd.DataFrame:
    """The rows by (impression id as text in byte order, rank), by pandas."""
    key = log["impression_id"].astype(str).map(str.encode)
    return log.assign(key=key).sort_values(["key", "rank"], kind="stable").drop(columns="key")


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_log_is_sorted_as_text_whatever_its_order(tmp_path, shuffle):
    log = _log()
    if shuffle:
        log = log.sample(frac=1.0, random_state=3)
    path = tmp_path / "log.parquet"
    log.to_parquet(path)  # the shuffled frame's index is stored too: it is no column
    frame = read_impressions(path)
    expected = _sorted_by_hand(log)
    assert list(frame.columns) == ["impression_id", "user_id", "rank", "doc_id", "clicked",
                                   "dwell", "arm", "device"]  # fmt: skip
    for column in ("impression_id", "user_id", "doc_id", "arm", "device"):
        assert frame[column].tolist() == expected[column].astype(str).tolist(), column
    assert frame["rank"].tolist() == expected["rank"].tolist()
    assert frame["clicked"].tolist() == expected["clicked"].tolist()
    np.testing.assert_array_equal(frame["dwell"].to_numpy(), expected["dwell"].to_numpy())


def test_keep_loads_only_the_columns_asked_for_and_checks_only_those(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "impression_id,user_id,rank,doc_id,clicked,dwell,device\n"
        "i1,u1,1,,1,-3,mobile\ni1,u1,2,d2,0,,mobile\n"
    )
    frame = read_impressions(path, keep=["user_id", "device"])
    assert list(frame.columns) == ["impression_id", "user_id", "rank", "clicked", "device"]
    assert frame["device"].tolist() == ["mobile", "mobile"]
    # the whole log is refused: its first doc_id is empty (and a dwell is negative)
    with pytest.raises(DataError, match=r"line 2: doc_id: expected a non-empty id"):
        read_impressions(path)
    # a column that the log does not have is simply not there
    assert "query" not in read_impressions(path, keep=["query"]).columns


CONFIG = """\
name: fast
log: {path: log.csv}
control: {name: A}
treatments: [{name: B}]
metrics: [METRICS]
analysis: {design: independent, unit: user_id, resamples: 200}
segments: {columns: [SEGMENT]}
"""


def _experiment(tmp_path, log: pd.DataFrame, metrics: str, segment: str = "device"):
    log.to_csv(tmp_path / "log.csv", index=False)
    path = tmp_path / "exp.yaml"
    path.write_text(CONFIG.replace("METRICS", metrics).replace("SEGMENT", segment))
    return path


def test_a_missing_column_is_reported_with_every_column_of_the_log(tmp_path):
    every = "impression_id, user_id, rank, doc_id, clicked, dwell, device"
    path = _experiment(tmp_path, _log(), "ctr@2", segment="country")
    with pytest.raises(DataError) as info:
        abrank.run_experiment(path)
    assert str(info.value).endswith(
        f"log.csv: segments.columns: expected a column 'country', found columns: {every}"
    )
    path = _experiment(tmp_path, _log().drop(columns="dwell"), "ctr@2, sat_ctr@3")
    with pytest.raises(DataError) as info:
        abrank.run_experiment(path)
    assert str(info.value) == (
        "metric sat_ctr@3: expected a dwell column (seconds) in the impressions, found "
        "columns: impression_id, user_id, rank, doc_id, clicked, device"
    )


def test_an_online_run_reads_text_ids_and_int_ids_alike(tmp_path):
    log = _log(rows=2000, seed=4)
    ints = abrank.run_experiment(_experiment(tmp_path, log, "click_rr@4, ctr@2")).summary
    text = log.assign(
        impression_id="i" + log["impression_id"].astype(str),
        user_id="u" + log["user_id"].astype(str),
    )
    other = tmp_path / "text"
    other.mkdir()
    strings = abrank.run_experiment(_experiment(other, text, "click_rr@4, ctr@2")).summary
    for a, b in zip(ints["comparisons"], strings["comparisons"]):
        assert (a["metric"], a["segment"]) == (b["metric"], b["segment"])
        assert a["control_mean"] == b["control_mean"] and a["n_units"] == b["n_units"]


def test_the_impression_index_is_shared_and_checked(tmp_path):
    log = _log()
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    frame = read_impressions(path)
    index = ImpressionIndex.of(frame)
    assert index.to_dict() == {"rows": 400, "impressions": 100}
    assert index.labels().tolist() == sorted(map(str, range(1, 101)), key=str.encode)
    values = score_impressions(frame, ["ctr@2", "abandonment"])
    pd.testing.assert_frame_equal(
        score_impressions(frame, ["ctr@2", "abandonment"], index=index), values
    )
    by_device = unit_sums(frame, values, by="device")
    pd.testing.assert_frame_equal(unit_sums(frame, values, by="device", index=index), by_device)
    # the same sums from plain text columns (no categoricals)
    text = frame.astype({c: str for c in ("impression_id", "user_id", "device")})
    pd.testing.assert_frame_equal(unit_sums(text, values, by="device"), by_device)
    with pytest.raises(ConfigError) as info:
        unit_sums(frame.iloc[:4], values.iloc[:1], index=index)
    assert (
        str(info.value)
        == "index: expected the ImpressionIndex of these 4 rows, got one of 400 rows"
    )


def test_arms_of_one_log_are_checked_on_codes_as_on_text(tmp_path):
    log = _log(rows=800, seed=5)
    log.loc[log["impression_id"] == 1, "arm"] = "A"  # user of impression 1 ...
    log.loc[log["impression_id"] == 2, ["arm", "user_id"]] = ["B", log["user_id"].iloc[0]]
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    frame = read_impressions(path)
    arms = split_log(frame, ["A", "B"], path="log")
    text = {n: f.astype({"impression_id": str, "user_id": str}) for n, f in arms.items()}
    mixed = check_arms(arms, {})
    assert mixed == check_arms(text, {})
    by_hand = set(log[log["arm"] == "A"]["user_id"]) & set(log[log["arm"] == "B"]["user_id"])
    assert mixed.units == frozenset(map(str, by_hand)) and mixed.count == len(by_hand) > 0
    dropped = drop_units(arms, mixed)
    for name in ("A", "B"):
        assert not set(dropped[name]["user_id"].astype(str)) & mixed.units
        kept = ~text[name]["user_id"].isin(mixed.units)
        assert (
            dropped[name]["impression_id"].tolist()
            == text[name].loc[kept, "impression_id"].tolist()
        )


def test_take_frame_equals_pandas_take():
    frame = pd.DataFrame(
        {
            "a": pd.Categorical(["x", "y", "x", "z"]),
            "b": np.array([1, 2, 3, 4], dtype=np.int64),
            "c": pd.array(["p", None, "q", "r"], dtype="str"),
            "d": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]),
        },
        index=[10, 11, 12, 13],
    )
    rows = np.array([3, 0, 2])
    pd.testing.assert_frame_equal(take_frame(frame, rows), frame.take(rows).reset_index(drop=True))
