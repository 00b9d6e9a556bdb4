"""``abrank metrics`` on a run scored in pieces of its queries (abrank.engines.pieces).

The pieces are forced on small runs here (a run of two rows or more, two cores: four
pieces where the run has the query boundaries for them): the values must be trec_eval's,
and the whole run's to the last digit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from abrank.engines import pieces as cutting
from abrank.errors import DataError
from abrank.treceval.output import trec_eval_text


@pytest.fixture
def pieces_made(monkeypatch) -> list[int]:
    """Every run of two rows or more is cut, as a large one on two cores; the list
    records how many pieces each call of ``in_pieces`` gave."""
    monkeypatch.setattr(cutting, "PIECES_FROM", 2)
    monkeypatch.setattr(cutting, "usable_cores", lambda: 2)
    made_pieces: list[int] = []
    cut = cutting.in_pieces

    def counted(piece, **options):
        made = cut(piece, **options)
        made_pieces.append(len(made))
        return made

    monkeypatch.setattr(cutting, "in_pieces", counted)
    return made_pieces


def whole(monkeypatch, *args, **options) -> str:
    """trec_eval_text on the run scored whole."""
    with monkeypatch.context() as m:
        m.setattr(cutting, "PIECES_FROM", 10**12)
        return trec_eval_text(*args, **options)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# four queries of two rows: on two cores, a piece each
RUN = """\
q1 Q0 a 1 3 s
q1 Q0 b 2 2 s
q2 Q0 c 1 3 s
q2 Q0 d 2 2 s
q3 Q0 e 1 3 s
q3 Q0 f 2 2 s
q4 Q0 g 1 3 s
q4 Q0 h 2 2 s
"""
QRELS = "q1 0 b 1\nq2 0 c 1\nq3 0 f 0\nq4 0 x 1\nq5 0 y 1\n"


def test_pieces_of_disjoint_queries_score_as_worked_out_by_hand(tmp_path, pieces_made):
    run, qrels = write(tmp_path / "run.txt", RUN), write(tmp_path / "qrels.txt", QRELS)
    text = trec_eval_text(qrels, run, ["mrr"], per_query=True, digits=4)
    # q1: first relevant at 2; q2: at 1; q3: judged, nothing relevant; q4: its relevant
    # document not retrieved; q5 is not in the run (left out without -c)
    assert text == (
        "mrr\tq1\t0.5000\nmrr\tq2\t1.0000\nmrr\tq3\t0.0000\nmrr\tq4\t0.0000\nmrr\tall\t0.3750\n"
    )
    assert pieces_made == [4]
    # -c: q5, judged but not in the run, is scored 0 from the last piece's judgments
    text = trec_eval_text(qrels, run, ["mrr"], per_query=True, complete=True, digits=4)
    assert text.splitlines()[-2:] == ["mrr\tq5\t0.0000", "mrr\tall\t0.3000"]


def test_the_cut_falls_at_the_next_query_and_splits_the_judgments_by_query(monkeypatch):
    import numpy as np
    import pyarrow as pa

    monkeypatch.setattr(cutting, "usable_cores", lambda: 2)
    ids = pa.chunked_array([["q1", "q1", "q1"], ["q2", "q2", "q3"]])
    docs = pa.chunked_array([["a", "b", "c"], ["d", "e", "f"]])
    judged = pa.chunked_array([["q3", "q1", "q9", "q2"]])
    piece = cutting.RunPiece(
        ids,
        docs,
        np.arange(6.0),
        judged,
        pa.chunked_array([["f", "a", "z", "d"]]),
        np.array([1.0, 2.0, 3.0, 4.0]),
    )
    first, second = cutting.in_pieces(piece, count=2, smallest=2)
    # row 3 (the middle) is q2's first: q1 | q2, q3; unknown q9 goes with the last piece
    assert first.query_ids.to_pylist() == ["q1"] * 3
    assert second.query_ids.to_pylist() == ["q2", "q2", "q3"]
    assert second.doc_ids.to_pylist() == ["d", "e", "f"]
    assert second.key.tolist() == [3.0, 4.0, 5.0]
    assert (first.to_dict(), second.to_dict()) == (
        {"rows": 3, "judgments": 1},
        {"rows": 3, "judgments": 3},
    )
    assert first.grades.tolist() == [2.0]
    assert second.judged_queries.to_pylist() == ["q3", "q9", "q2"]
    assert second.grades.tolist() == [1.0, 3.0, 4.0]
    # judgments in the run's order of queries are cut where the second half's start
    in_order = cutting.RunPiece(
        ids,
        docs,
        np.arange(6.0),
        pa.chunked_array([["q1", "q1", "q2", "q3", "q9"]]),
        pa.chunked_array([["a", "b", "d", "f", "z"]]),
        np.arange(5.0),
    )
    first, second = cutting.in_pieces(in_order, count=2, smallest=2)
    assert first.judged_docs.to_pylist() == ["a", "b"] and first.grades.tolist() == [0.0, 1.0]
    assert second.judged_queries.to_pylist() == ["q2", "q3", "q9"]
    assert np.shares_memory(second.grades, in_order.grades)  # a slice, not a copy
    # too few rows, or one core: whole
    assert cutting.in_pieces(piece, smallest=7) == [piece]
    monkeypatch.setattr(cutting, "usable_cores", lambda: 1)
    assert cutting.in_pieces(piece, count=2, smallest=2) == [piece]


def test_a_run_is_cut_into_as_many_pieces_as_its_query_boundaries_allow(monkeypatch):
    import numpy as np
    import pyarrow as pa

    from abrank.io.arrow import run_heads

    monkeypatch.setattr(cutting, "usable_cores", lambda: 2)
    # five queries of 3, 1, 4, 2 and 2 rows (12): shares of 12 / 4 = 3 rows
    ids = pa.chunked_array([["a"] * 3 + ["b"], ["c"] * 4 + ["d", "d"], ["e", "e"]])
    docs = pa.chunked_array([[f"x{i}" for i in range(4)], [f"x{i}" for i in range(4, 12)]])
    key = np.arange(12.0)

    def cut(judged: list[str], count: int | None = None) -> list:
        piece = cutting.RunPiece(
            ids,
            docs,
            key,
            pa.chunked_array([judged]),
            pa.chunked_array([[f"j{i}" for i in range(len(judged))]]),
            np.arange(float(len(judged))),
        )
        return cutting.in_pieces(piece, count=count, smallest=2)

    # two cores: four pieces; cuts at the first query start at or after rows 3, 6, 9:
    # rows 3 (b), 8 (d), 10 (e)
    made = cut(["a", "b", "z", "c", "d", "e", "y"])
    assert [p.query_ids.to_pylist() for p in made] == [
        ["a"] * 3,
        ["b"] + ["c"] * 4,
        ["d", "d"],
        ["e", "e"],
    ]
    assert [p.doc_ids.to_pylist()[0] for p in made] == ["x0", "x3", "x8", "x10"]
    assert [p.key[0] for p in made] == [0.0, 3.0, 8.0, 10.0]
    # judgments in the run's order: slices; z and y (no rows in the run) go with the
    # queries before them
    assert [p.judged_queries.to_pylist() for p in made] == [
        ["a"],
        ["b", "z", "c"],
        ["d"],
        ["e", "y"],
    ]
    assert [p.grades.tolist() for p in made] == [[0.0], [1.0, 2.0, 3.0], [4.0], [5.0, 6.0]]
    # where each piece's queries start, as the join would find them in the piece itself
    for p in made:
        assert p.query_starts.tolist() == run_heads(p.query_ids)[0].tolist()
        assert p.judged_starts.tolist() == run_heads(p.judged_queries)[0].tolist()
    # a query the run lacks before any other: the first piece's
    assert cut(["z", "a", "c"])[0].judged_queries.to_pylist() == ["z", "a"]
    # judgments out of the run's order: copies; those the run lacks go with the last piece
    made = cut(["e", "z", "a", "c", "a", "d"])
    assert [p.judged_queries.to_pylist() for p in made] == [["a", "a"], ["c"], ["d"], ["e", "z"]]
    assert [p.grades.tolist() for p in made] == [[2.0, 4.0], [3.0], [5.0], [0.0, 1.0]]
    assert [p.judged_starts for p in made] == [None] * 4  # copies: left to the join
    # more pieces asked than the run has query boundaries: a piece per query
    made = cut(["a"], count=12)
    assert [p.query_ids.to_pylist()[0] for p in made] == ["a", "b", "c", "d", "e"]
    assert [len(p.judged_queries) for p in made] == [1, 0, 0, 0, 0]
    # every piece's rows and judgments, together, are the run's and the judgments'
    for count in range(2, 13):
        made = cut(["b", "b", "y", "e", "y", "e"], count=count)  # e's judgments apart
        assert sum((p.query_ids.to_pylist() for p in made), []) == ids.to_pylist()
        judged = ["b", "b", "y", "e", "y", "e"]  # in the run's order: sliced, in order
        assert sum((p.judged_queries.to_pylist() for p in made), []) == judged
        for p in made:
            assert p.judged_starts.tolist() == run_heads(p.judged_queries)[0].tolist()


def test_a_run_not_grouped_by_query_is_scored_whole(tmp_path, monkeypatch, pieces_made):
    # q1's rows on both sides of the middle: no cut keeps its rows together
    run = write(
        tmp_path / "run.txt", "q1 Q0 a 1 3 s\nq2 Q0 c 1 3 s\nq1 Q0 b 2 2 s\nq2 Q0 d 2 2 s\n"
    )
    qrels = write(tmp_path / "qrels.txt", "q1 0 b 1\nq2 0 c 1\n")
    text = trec_eval_text(qrels, run, ["mrr"], per_query=True, digits=4)
    assert text == "mrr\tq1\t0.5000\nmrr\tq2\t1.0000\nmrr\tall\t0.7500\n"
    assert pieces_made == [1]


@pytest.mark.parametrize("run_name", ["bm25-flat", "splade-pp-ed"])
def test_pieces_give_trec_eval_values_on_covid(shared_data, pieces_made, run_name):
    covid = shared_data / "beir-trec-covid"
    qrels = covid / "qrels.beir-v1.0.0-trec-covid.test.txt"
    run = covid / "runs" / f"trec-covid.{run_name}.top100.txt"
    expected_file = covid / "expected" / f"trec-covid.{run_name}.top100.l1.trec_eval.txt"
    rows = [line.split() for line in expected_file.read_text().splitlines()]
    names = {
        "ndcg@10": "ndcg_cut_10",
        "recall@100": "recall_100",
        "precision@10": "P_10",
        "mrr": "recip_rank",
    }
    text = trec_eval_text(qrels, run, list(names), per_query=True, complete=True, digits=4)
    assert pieces_made == [4]
    got = [line.split("\t") for line in text.splitlines()]
    for ours, theirs in names.items():
        expected = {q: v for m, q, v in rows if m == theirs}
        assert {q: v for m, q, v in got if m == ours} == expected, ours


@pytest.mark.parametrize("complete", [False, True])
def test_pieces_print_what_the_whole_run_prints(shared_data, monkeypatch, pieces_made, complete):
    metrics = [
        "mrr@10",
        "ndcg@10",
        "map",
        "recall@100",
        "p@10",
        "err@10",
        "rbp(p=0.8)",
        "rbp_residual(p=0.8)",
        "infap",
        "rprec",
        "bpref",
        "judged@10",
        "ndcg@10(judged)",
        "gm_map",
        "success@5",
    ]
    dl = shared_data / "trec-dl-passage"
    cases = [
        (dl / "qrels.dl19-passage.txt", dl / "runs/dl19.bm25-flat.top100.txt", 2),
        (dl / "qrels.dl20-passage.txt", dl / "runs/dl20.bm25-flat.top100.txt", 1),
    ]
    for qrels, run, level in cases:
        options = dict(per_query=True, complete=complete, rel_level=level)
        assert trec_eval_text(qrels, run, metrics, **options) == whole(
            monkeypatch, qrels, run, metrics, **options
        )
    assert pieces_made == [4, 1, 4, 1]  # in pieces, then whole


def test_a_pair_twice_in_the_last_piece_names_its_line(tmp_path, monkeypatch, pieces_made):
    run = write(tmp_path / "run.txt", RUN + "q4 Q0 g 3 1 s\n")
    qrels = write(tmp_path / "qrels.txt", QRELS)
    with pytest.raises(DataError) as info:
        trec_eval_text(qrels, run, ["mrr"])
    message = str(info.value)
    assert message.startswith(f"{run}: line 9: expected each document once per query")
    assert "('q4', 'g') at line 9" in message
    assert pieces_made == [4]
    with pytest.raises(DataError) as alone:
        whole(monkeypatch, qrels, run, ["mrr"])
    assert str(alone.value) == message


def test_a_pair_judged_twice_in_the_first_piece_names_its_line(tmp_path, monkeypatch, pieces_made):
    run = write(tmp_path / "run.txt", RUN)
    qrels = write(tmp_path / "qrels.txt", QRELS + "q1 0 b 0\n")
    with pytest.raises(DataError) as info:
        trec_eval_text(qrels, run, ["mrr"])
    message = str(info.value)
    assert message.startswith(f"{qrels}: line 6: expected one judgment per (query, doc) pair")
    assert pieces_made == [4]
    with pytest.raises(DataError) as alone:
        whole(monkeypatch, qrels, run, ["mrr"])
    assert str(alone.value) == message


def test_no_query_in_common_is_refused_after_the_pieces(tmp_path, pieces_made):
    run = write(tmp_path / "run.txt", RUN)
    qrels = write(tmp_path / "qrels.txt", "q7 0 a 1\n")
    with pytest.raises(DataError) as info:
        trec_eval_text(qrels, run, ["mrr"])
    assert str(info.value) == (
        f"{run}: query ids: expected queries that are also in {qrels}, got none"
    )
    assert pieces_made == [4]


def test_float_sums_above_are_each_runs_own():
    """ERR's log-chance of reaching a row: each query's running sum from its first row, as
    a query alone would have it, whatever the queries before it (a sum over the column
    less its value at the query's start would not be)."""
    import numpy as np

    from abrank.io.arrow import sum_above

    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 70, 300)
    codes = np.repeat(np.arange(lengths.size), lengths)
    values = np.log1p(-rng.random(codes.size) * 0.9)
    got = sum_above(codes, values)
    start = 0
    for length in lengths:  # the slow obvious way, one query at a time
        acc = 0.0
        for row in range(start, start + length):
            assert got[row] == acc
            acc += values[row]
        start += length
    # a first query of large sums leaves the next one's sums as they are alone
    big = np.concatenate([np.full(50, -1e6), values[:10]])
    alone = sum_above(np.zeros(10, dtype=int), values[:10])
    assert np.array_equal(sum_above(np.repeat([0, 1], [50, 10]), big)[50:], alone)
    # whole numbers stay whole: counts of flagged rows above
    counted = sum_above(np.array([3, 3, 3, 7, 7]), np.array([1, 0, 1, 1, 1]))
    assert counted.tolist() == [0, 1, 1, 0, 1] and counted.dtype.kind == "i"


# trec_eval 10's own test outputs (its Makefile's commands), printed from pieces of topics
# (results.test has three: a piece each); results.trunc interleaves its topics' rows, so
# it is measured whole
TREC_EVAL_FILES = [
    ("out.test.aq", ["-m", "all_trec", "-q"], "qrels.test", "results.test", 3),
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc", 1),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc", 1),
    (
        "out.test.aql",
        ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"],
        "qrels.rel_level",
        "results.test",
        3,
    ),
    ("out.test", [], "qrels.test", "results.test", 3),
]


@pytest.mark.parametrize(
    ("expected", "options", "qrels", "run", "pieces"),
    TREC_EVAL_FILES,
    ids=[c[0] for c in TREC_EVAL_FILES],
)
def test_trec_eval_measures_from_pieces_equal_trec_eval(
    shared_data, capsys, pieces_made, expected, options, qrels, run, pieces
):
    from abrank.cli import main

    folder = shared_data / "trec_eval-tests" / "test"
    code = main(["metrics", *options, str(folder / qrels), str(folder / run)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert pieces_made == [pieces]
    assert out == (folder / expected).read_text()


def test_trec_eval_measures_from_pieces_print_what_the_whole_run_prints(
    shared_data, monkeypatch, pieces_made
):
    from abrank.treceval import parse_trec_measures
    from abrank.treceval.output import trec_eval_report

    dl = shared_data / "trec-dl-passage"
    qrels, run = dl / "qrels.dl19-passage.txt", dl / "runs/dl19.bm25-flat.top100.txt"
    measures = parse_trec_measures(["all_trec"])
    for options in (
        dict(per_query=True),
        dict(per_query=True, complete=True, rel_level=2),
        dict(judged_only=True, depth=50),
    ):
        pieces_text = trec_eval_report(qrels, run, measures, **options)
        with monkeypatch.context() as m:
            m.setattr(cutting, "PIECES_FROM", 10**12)
            assert pieces_text == trec_eval_report(qrels, run, measures, **options)
    assert pieces_made == [4, 1, 4, 1, 4, 1]


def test_pieces_without_judged_queries_are_measured_with_the_others(tmp_path, pieces_made):
    from abrank.treceval import parse_trec_measures
    from abrank.treceval.output import trec_eval_report

    run, qrels = write(tmp_path / "run.txt", RUN), write(tmp_path / "qrels.txt", "q3 0 e 1\n")
    measures = parse_trec_measures(["recip_rank", "num_q", "num_rel"])
    # q1, q2 and q4 (a piece each) have no judgments; q3's relevant document is at rank 1
    text = trec_eval_report(qrels, run, measures, per_query=True)
    assert text.splitlines() == [
        "num_rel               \tq3\t1",
        "recip_rank            \tq3\t1.0000",
        "num_q                 \tall\t1",
        "num_rel               \tall\t1",
        "recip_rank            \tall\t1.0000",
    ]
    assert pieces_made == [4]
    # no judged query anywhere: refused after every piece
    none = write(tmp_path / "none.txt", "q7 0 a 1\n")
    with pytest.raises(DataError) as info:
        trec_eval_report(none, run, measures)
    assert (
        str(info.value) == f"{run}: query ids: expected queries that are also in {none}, got none"
    )


def test_max_at_or_below_is_each_runs_suffix_maximum():
    """iprec_at_recall's best precision at or below a rank: per query, the largest value
    from a row to the query's last row, against the slow obvious way."""
    import numpy as np

    from abrank.io.arrow import max_at_or_below

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 90, 250)
    codes = np.repeat(rng.permutation(lengths.size), lengths)  # queries in no set order
    values = rng.random(codes.size)
    got = max_at_or_below(codes, values)
    start = 0
    for length in lengths:
        for row in range(start, start + length):
            assert got[row] == values[row : start + length].max()
        start += length
    assert max_at_or_below(np.zeros(0, dtype=int), np.zeros(0)).size == 0
