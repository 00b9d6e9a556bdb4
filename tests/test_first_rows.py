"""A file of garbage is refused at its first bad rows, without being read whole.

The bombs here are gzip files of a few megabytes of text whose second line is already bad.
Most of them lose the end of their gzip stream: a reader that decompressed the whole file
before checking its rows would fail on the damaged data (or, before that, spend its time
and memory on every row), with another message than the one naming line 2. Each message is
checked whole, its counts worked out from the text the test wrote.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest

from abrank.cli import main
from abrank.errors import DataError
from abrank.io import read_attributes, read_impressions, read_judgments, read_rankings
from abrank.io.covariates import read_covariates
from abrank.io.head import HEAD_BYTES, LINE_LIMIT, find_long_line, read_head

MIB = 1 << 20
LONG = "expected a line of at most 1 MiB, got a longer one (no line break in 1,048,576 bytes)"


def bomb(path: Path, first: bytes, row: bytes, *, megabytes: int = 3, cut: bool = True) -> bytes:
    """Write ``first`` and then ``row`` over and over (``megabytes`` of text), gzip-compressed;
    with ``cut`` the last tenth of the compressed bytes is left out (a damaged end). Returns
    the text."""
    text = first + row * (megabytes * MIB // len(row))
    data = gzip.compress(text, 1)
    path.write_bytes(data[: len(data) * 9 // 10] if cut else data)
    return text


def head_lines(text: bytes) -> int:
    """How many whole lines the first megabyte of ``text`` holds."""
    return text[:HEAD_BYTES].count(b"\n")


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        call(*args, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- memory engine


def test_a_trec_run_of_garbage_lines_is_refused_at_line_2(tmp_path):
    path = tmp_path / "run.txt.gz"
    text = bomb(path, b"q1 Q0 d1 1 2.5 tag\n", b"zzzzzzz\n")
    assert error_of(read_rankings, path) == (
        f"{path}: line 2: expected at least 6 whitespace-separated fields (query_id iter doc_id "
        f"rank score tag), got 1; only the first {head_lines(text):,} lines were read"
    )


def test_qrels_of_garbage_grades_count_the_bad_rows_of_the_lines_read(tmp_path):
    path = tmp_path / "qrels.txt.gz"
    text = bomb(path, b"q1 0 d1 1\n", b"q1 0 d2 x\n")
    lines = head_lines(text)
    assert error_of(read_judgments, path, format="qrels") == (
        f"{path}: line 2: relevance: expected a number, got 'x' ({lines - 2} more such rows); "
        f"only the first {lines:,} lines were read"
    )


def test_a_csv_ranking_table_of_garbage_ranks_is_refused_at_line_2(tmp_path):
    path = tmp_path / "rankings.csv.gz"
    text = bomb(path, b"query_id,doc_id,rank\n", b"q1,d1,x\n")
    lines = head_lines(text)
    assert error_of(read_rankings, path) == (
        f"{path}: line 2: rank: expected a number, got 'x' ({lines - 2} more such rows); "
        f"only the first {lines:,} lines were read"
    )


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_click_log_of_garbage_clicks_is_refused_at_line_2(tmp_path, fmt):
    path = tmp_path / f"log.{fmt}.gz"
    if fmt == "csv":
        first, row = b"impression_id,user_id,doc_id,rank,clicked\n", b"i1,u1,d1,1,x\n"
    else:
        keys = ("impression_id", "user_id", "doc_id", "rank")
        first = json.dumps({**dict(zip(keys, ("i0", "u1", "d1", 1))), "clicked": 0}).encode()
        first += b"\n"
        row = json.dumps({**dict(zip(keys, ("i1", "u1", "d1", 1))), "clicked": "x"}).encode()
        row += b"\n"
    text = bomb(path, first, row)
    lines = head_lines(text)
    # line 1 is the header (CSV) or a good row (JSON Lines): lines 2.. are bad
    assert error_of(read_impressions, path) == (
        f"{path}: line 2: clicked: expected 0, 1, true or false, got 'x' ({lines - 2} more such "
        f"rows); only the first {lines:,} lines were read"
    )


def test_segment_attributes_and_covariates_of_garbage_are_refused_at_their_first_bad_line(
    tmp_path,
):
    attributes = tmp_path / "attributes.csv.gz"
    text = bomb(attributes, b"query_id,device\n", b",mobile\n")
    lines = head_lines(text)
    assert error_of(read_attributes, attributes) == (
        f"{attributes}: line 2: query_id: expected a non-empty id, got an empty value "
        f"({lines - 2} more such rows); only the first {lines:,} lines were read"
    )
    covariates = tmp_path / "pre.csv.gz"
    text = bomb(covariates, b"user_id,ctr@3\n", b"u1,0.5\n")
    assert error_of(read_covariates, covariates, unit="user_id", metrics=["ctr@3"]) == (
        f"{covariates}: line 3: user_id: expected one row per unit, got 'u1' again; only the "
        f"first {head_lines(text):,} lines were read"
    )


@pytest.mark.parametrize(
    ("name", "first", "read"),
    [
        ("run.txt.gz", b"q1 Q0 d1 1 2.5 tag\n", read_rankings),
        ("rankings.csv.gz", b"query_id,doc_id,rank\n", read_rankings),
        ("log.jsonl.gz", b'{"impression_id": 1}\n', read_impressions),
    ],
)
def test_a_line_without_end_is_refused_naming_it(tmp_path, name, first, read):
    path = tmp_path / name
    bomb(path, first, b"y" * 4096, megabytes=4, cut=False)
    assert error_of(read, path) == f"{path}: line 2: {LONG}"


def test_a_long_line_past_the_first_lines_is_named_too(tmp_path):
    # the first megabyte is good, so the whole file is read; its reader stumbles on line
    # 100,001 (1.5 MiB without a break), which is then found and named
    path = tmp_path / "run.txt"
    good = "".join(f"q{i}\tQ0\td{i}\t1\t{i}.5\ttag\n" for i in range(100_000))
    path.write_text(good + "q\tQ0\t" + "d" * (3 * MIB // 2) + "\t1\t1\ttag\n" + good)
    assert error_of(read_rankings, path) == f"{path}: line 100001: {LONG}"


def test_good_files_longer_than_the_first_lines_read_whole(tmp_path):
    # a TREC run of tabs (the splitting path) and an impression log whose impressions are
    # spread over the file: the first megabyte holds rank 2 of impressions whose rank 1
    # comes later, which is no problem of the file
    queries, docs = 2_000, 30
    run = tmp_path / "run.txt"
    lines = [
        f"q{q:05d}\tQ0\td{q}-{d}\t{d + 1}\t{100 - d}.25\tsys\n"
        for q in range(queries)
        for d in range(docs)
    ]
    run.write_text("".join(lines))
    assert run.stat().st_size > HEAD_BYTES
    frame = read_rankings(run)
    assert len(frame) == queries * docs
    assert frame["doc_id"].iloc[-1] == f"d{queries - 1}-{docs - 1}"
    assert frame["rank"].iloc[-1] == docs and frame["score"].iloc[0] == 100.25

    rows = [(i, r) for i in range(20_000) for r in (1, 2, 3)]
    random.Random(3).shuffle(rows)
    log = tmp_path / "log.csv"
    log.write_text(
        "impression_id,user_id,doc_id,rank,clicked\n"
        + "".join(f"imp{i:06d},u{i % 97},doc-{i}-{r},{r},{int(r == 2)}\n" for i, r in rows)
    )
    assert log.stat().st_size > HEAD_BYTES
    frame = read_impressions(log)
    assert len(frame) == len(rows)
    ordered = sorted(rows)
    assert frame["impression_id"].astype(str).tolist()[:4] == [
        f"imp{i:06d}" for i, _ in ordered[:4]
    ]
    assert frame["rank"].tolist() == [r for _, r in ordered]
    assert int(frame["clicked"].sum()) == 20_000


# --------------------------------------------------------------------------- the CLI


def write_offline(folder: Path, run: Path, engine: str) -> Path:
    (folder / "control.run").write_text(
        "".join(f"q{q} Q0 d{d} {d} {10 - d} c\n" for q in (1, 2) for d in (1, 2, 3))
    )
    (folder / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    config = folder / f"bomb-{engine}.yaml"
    config.write_text(
        "name: bomb\n"
        "control: {name: control, path: control.run}\n"
        f"treatments: [{{name: treatment, path: {run.name}}}]\n"
        "judgments: {path: qrels.txt}\n"
        f"metrics: [mrr@10]\nengine: {engine}\n"
    )
    return config


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_run_refuses_a_trec_bomb_with_exit_2_naming_file_and_line(tmp_path, capsys, engine):
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    run = tmp_path / "treatment.run.gz"
    text = bomb(run, b"q1 Q0 d1 1 2.5 t\n", b"ab cd ef gh ij kl\n")
    config = write_offline(tmp_path, run, engine)
    out = tmp_path / "out"
    code = main(["run", str(config), "--out", str(out), "--no-history", "--quiet"])
    err = capsys.readouterr().err
    lines = head_lines(text)
    assert code == 2
    assert err.strip() == (
        f"abrank: error: {run}: line 2: score: expected a number, got 'ij' ({lines - 2} more "
        f"such rows); only the first {lines:,} lines were read"
    )
    assert not out.exists()


# --------------------------------------------------------------------------- DuckDB


def open_on_duckdb(path: Path, fmt: str) -> None:
    """Open a rankings file on the DuckDB engine, as an offline run does."""
    pytest.importorskip("duckdb")
    from abrank.engines.sql.duckdb import DuckDBBackend
    from abrank.engines.sql.rankings import TableSource, open_rankings

    backend = DuckDBBackend()
    try:
        open_rankings(backend, "r", TableSource((str(path),), fmt, path.name))
    finally:
        backend.close()


def test_duckdb_refuses_a_csv_ranking_table_of_garbage_at_line_2(tmp_path):
    path = tmp_path / "rankings.csv.gz"
    text = bomb(path, b"query_id,doc_id,rank\n", b"q1,d1,x\n")
    lines = head_lines(text)
    assert error_of(open_on_duckdb, path, "csv") == (
        f"{path}: line 2: rank: expected a number, got 'x' ({lines - 2} more such rows); "
        f"only the first {lines:,} lines were read"
    )


def test_duckdb_refuses_a_click_log_of_garbage_at_line_2(tmp_path):
    pytest.importorskip("duckdb")
    from click_logs import sums_on

    from abrank.engines.sql.duckdb import DuckDBBackend

    path = tmp_path / "log.csv.gz"
    first, row = b"impression_id,user_id,doc_id,rank,clicked,arm\n", b"i1,u1,d1,1,x,a\n"
    text = bomb(path, first, row)
    lines = head_lines(text)
    assert error_of(sums_on, DuckDBBackend(), path, ["ctr@3"], fmt="csv") == (
        f"{path}: line 2: clicked: expected 0, 1, true or false, got 'x' ({lines - 2} more such "
        f"rows); only the first {lines:,} lines were read"
    )


def test_duckdb_sums_of_a_shuffled_log_longer_than_its_first_lines_equal_the_memory_engines(
    tmp_path,
):
    # the first megabyte holds rows of impressions whose other rows come later: no problem
    pytest.importorskip("duckdb")
    from click_logs import assert_same_sums, make_log, memory_sums, sums_on

    from abrank.engines.sql.duckdb import DuckDBBackend

    path = tmp_path / "log.csv"
    make_log(impressions=12_000).to_csv(path, index=False)  # rows in random order
    assert path.stat().st_size > HEAD_BYTES
    result = sums_on(DuckDBBackend(), path, ["click_rr@3", "ctr@2"], fmt="csv")
    expected = memory_sums(path, ["click_rr@3", "ctr@2"])
    for arm in ("a", "b"):
        assert_same_sums(expected[arm], result.sums[arm])


@pytest.mark.parametrize("megabytes", [2, 40])
def test_duckdb_is_given_no_text_file_with_a_line_longer_than_the_limit(tmp_path, megabytes):
    # DuckDB refuses a line of 2 MiB with a message of its own, and reads past one of 40 MiB
    # at the end of a file as if it were not there (the run went on with line 1 only)
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 t\n" + b"x" * (megabytes * MIB), 1))
    assert error_of(open_on_duckdb, path, "trec") == f"{path}: line 2: {LONG}"


# --------------------------------------------------------------------------- the head


def reference_long_line(text: bytes, limit: int) -> int | None:
    """The first line longer than ``limit`` bytes (its line break counted), by splitting."""
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if len(line) > limit:
            return number
    return None


@pytest.mark.parametrize("seed", range(6))
def test_the_head_and_the_long_line_search_agree_with_splitting_the_text(tmp_path, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 300, size=400)
    lengths[rng.integers(0, 400, size=2)] = rng.integers(300, 900, size=2)
    text = b"".join(b"a" * int(n) + b"\n" for n in lengths)[: int(rng.integers(1, 60_000))]
    path = tmp_path / "text.gz"
    path.write_bytes(gzip.compress(text))
    limit = 512
    assert find_long_line(path, limit) == reference_long_line(text, limit)
    assert find_long_line(path, 10**9) is None
    size = 4096
    first_long = reference_long_line(text, limit)
    starts_in_head = first_long is not None and sum(
        len(line) for line in text.splitlines(keepends=True)[: first_long - 1]
    ) < min(size, len(text))
    if starts_in_head:
        assert error_of(read_head, path, size, limit) == (
            f"{path}: line {first_long}: expected a line of at most 512 bytes, got a longer one "
            "(no line break in 512 bytes)"
        )
        return
    head = read_head(path, size, limit)
    if len(text) <= size:
        assert (head.data, head.whole) == (text, True)
        assert head.lines == len(text.splitlines())
    else:
        whole_lines = text[:size].rsplit(b"\n", 1)[0] + b"\n"
        assert (head.data, head.whole, head.lines) == (whole_lines, False, whole_lines.count(b"\n"))


def test_the_defaults_read_a_megabyte_and_refuse_lines_of_more():
    assert HEAD_BYTES == LINE_LIMIT == MIB


def test_a_ranking_table_longer_than_the_first_lines_keeps_every_value(tmp_path):
    path = tmp_path / "rankings.csv"
    rows = [
        (f"q{q}", f"d{q}-{d}", d, round(1 / d + q, 6)) for q in range(20_000) for d in (1, 2, 3)
    ]
    path.write_text(
        "query_id,doc_id,rank,score\n" + "".join(f"{q},{d},{r},{s}\n" for q, d, r, s in rows)
    )
    assert path.stat().st_size > HEAD_BYTES
    frame = read_rankings(path)
    assert list(frame.itertuples(index=False, name=None)) == rows


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_long_line_deep_in_a_csv_table_is_named_by_every_engine(tmp_path, capsys, engine):
    # past the first lines checked, a 40 MiB line made DuckDB's parallel CSV reader give up
    # with an error of its own (exit 1); both engines now name the line
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    rows = [f"q{q},d{q}_{r},{r}\n" for q in range(20_000) for r in (1, 2, 3, 4, 5)]
    table = tmp_path / "treatment.csv"
    with table.open("w") as out:
        out.write("query_id,doc_id,rank\n")
        out.writelines(rows)
        out.write("q99999," + "x" * (40 * MIB) + ",1\nq99998,d,1\n")
    assert table.stat().st_size > 20 * 2**20 and len("".join(rows)) > MIB
    (tmp_path / "control.csv").write_text("query_id,doc_id,rank\nq1,d1_1,1\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1_1 1\n")
    config = tmp_path / "long.yaml"
    config.write_text(
        "name: long\ncontrol: {name: control, path: control.csv}\n"
        "treatments: [{name: treatment, path: treatment.csv}]\n"
        f"judgments: {{path: qrels.txt}}\nmetrics: [mrr@10]\nengine: {engine}\n"
    )
    out = tmp_path / "out"
    code = main(["run", str(config), "--out", str(out), "--no-history", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    # the header is line 1 and the table's rows lines 2..100,001
    assert err.strip() == f"abrank: error: {table}: line {len(rows) + 2}: {LONG}"
    assert not out.exists()
