"""Arrow columns read from their buffers (abrank.io.buffers), and TREC files parsed
without pandas: pyarrow's conversions import it, which ``abrank metrics`` would wait for."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa

from abrank.io.buffers import numbers_of


def test_numbers_of_reads_each_chunk_from_its_offset():
    chunked = pa.chunked_array(
        [pa.array([1.5, 2.5, 3.5]).slice(1), pa.array([], pa.float64()), [7.0]]
    )
    assert numbers_of(chunked).tolist() == [2.5, 3.5, 7.0]
    ints = pa.array(np.arange(10, dtype=np.int32)).slice(3, 4)
    got = numbers_of(ints)
    assert got.dtype == np.int32 and got.tolist() == [3, 4, 5, 6]
    assert numbers_of(pa.chunked_array([], pa.int64())).tolist() == []


def test_numbers_of_leaves_other_columns_to_the_caller():
    assert numbers_of(pa.array([1.0, None])) is None  # a null: NaN or an error, the caller's
    assert numbers_of(pa.array(["1", "2"])) is None
    assert numbers_of(pa.array([1, 2], pa.float16())) is None


def test_trec_files_parse_without_importing_pandas(tmp_path):
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 2.5 s\nq1 Q0 d2 2 1.5 s\nq2 Q0 d1 1 9 s\n")
    qrels.write_text("q1 0 d2 1\nq2 0 d1 3\n")
    code = (
        "import sys\n"
        "from abrank.io.trec import qrels_columns, run_arrays\n"
        f"q = qrels_columns({str(qrels)!r}, check=False)\n"
        f"r = run_arrays({str(run)!r})\n"
        "print(q[2].tolist(), r[2].tolist(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[1.0, 3.0] [2.5, 1.5, 9.0] False"


def test_bools_and_arrays_round_trip_through_buffers():
    from abrank.io.buffers import arrow_of, bools_of, numpy_of, text_scalar, texts_of

    mask = np.array([True, False, True, True, False, False, True, False, True, True])
    assert arrow_of(mask).to_pylist() == mask.tolist()
    # sliced and chunked bit-packed columns: offsets inside a byte
    chunked = pa.chunked_array([pa.array(mask.tolist()).slice(3), pa.array([False, True])])
    assert bools_of(chunked).tolist() == [*mask[3:].tolist(), False, True]
    assert numpy_of(chunked).tolist() == bools_of(chunked).tolist()
    assert arrow_of(np.arange(4, dtype=np.int64)[::2]).to_pylist() == [0, 2]  # not contiguous
    assert numpy_of(pa.array(["a", None])).tolist() == ["a", None]  # pyarrow's own, as before
    assert texts_of(["a", "héllo", ""]).to_pylist() == ["a", "héllo", ""]
    assert text_scalar("\t", large=True).as_py() == "\t"
    assert text_scalar("x").type == pa.string()


def run_metrics_and_list_pandas(*args: str, module: str = "pandas") -> str:
    """``abrank metrics ARGS`` in a fresh interpreter; its output, then whether pandas
    (or ``module``) was loaded."""
    code = (
        "import io, sys, contextlib\n"
        "from abrank.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['metrics', *{list(args)!r}])\n"
        f"sys.stdout.write(out.getvalue() + str({module!r} in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_metrics_on_trec_files_with_plain_measures_load_no_pandas(tmp_path):
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    # a tie (q1's d2, d3: doc ids order them) and a tab-separated qrels (the splitting path)
    run.write_text("q1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\nq1 Q0 d3 3 2 s\nq2 Q0 d1 1 9 s\n")
    qrels.write_text("q1\t0\td3\t1\nq2\t0\td1\t0\nq2\t0\td7\t1\n")
    out = run_metrics_and_list_pandas("-m", "mrr", "--per-query", str(qrels), str(run))
    # q1: d3 outranks d2 on the tie (doc id descending): reciprocal rank 1/2; q2: 0
    assert out == "mrr\tq1\t0.5\nmrr\tq2\t0.0\nmrr\tall\t0.25\nFalse"
    out = run_metrics_and_list_pandas("-q", "-m", "recip_rank", "-m", "num_q", str(qrels), str(run))
    assert out.splitlines()[-1] == "False"
    assert "recip_rank            \tall\t0.2500" in out
    # trec_eval's default set (iprec_at_recall's suffix maxima per query included) too
    out = run_metrics_and_list_pandas(str(qrels), str(run))
    assert out.endswith("False") and f"{'iprec_at_recall_1.00':<22}\tall\t0.2500" in out
    # G's running gains are grouped with pandas: it is loaded then
    out = run_metrics_and_list_pandas("-m", "G", str(qrels), str(run))
    assert out.endswith("True") and out.startswith(f"{'G':<22}\tall\t")


def test_metrics_load_neither_the_statistics_nor_numpy_masked_arrays(tmp_path):
    """``abrank metrics`` builds only its own options (``compare``'s come from the
    statistics registry), and its sorts of distinct values are not ``np.unique``, whose
    first call imports ``numpy.ma``; a tie (q1) and a query's rows apart (q2) included."""
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text(
        "q2 Q0 d1 1 9 s\nq1 Q0 d1 1 3 s\nq1 Q0 d2 2 2 s\nq1 Q0 d3 3 2 s\nq2 Q0 d2 2 1 s\n"
    )
    qrels.write_text("q1 0 d3 1\nq2 0 d2 1\n")
    for module in ("abrank.stats", "numpy.ma"):
        out = run_metrics_and_list_pandas(
            "-m", "mrr", "--per-query", str(qrels), str(run), module=module
        )
        # q1: d3 outranks d2 on the tie (doc id descending): 1/2; q2: d2 second: 1/2
        assert out == "mrr\tq1\t0.5\nmrr\tq2\t0.5\nmrr\tall\t0.5\nFalse"


def test_a_large_run_is_cut_into_pieces_without_pandas(tmp_path):
    """The cut (forced here on a small run) and its judgments of queries the run lacks
    (an Arrow null for each) load no pandas either."""
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("".join(f"q{q} Q0 d{d} {d} {9 - d} s\n" for q in range(4) for d in range(3)))
    qrels.write_text("q0 0 d2 1\nq9 0 d1 1\nq3 0 d0 1\n")
    code = (
        "import io, sys, contextlib\n"
        "from abrank.cli import main\n"
        "from abrank.engines import pieces\n"
        "pieces.PIECES_FROM = 2\n"
        "pieces.usable_cores = lambda: 2\n"
        "cut = pieces.in_pieces\n"
        "pieces.in_pieces = lambda piece: print(len(cut(piece)), end=' ') or cut(piece)\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['metrics', '-c', '-m', 'mrr', '--per-query', {str(qrels)!r}, {str(run)!r}])\n"
        "sys.stdout.write(out.getvalue() + str('pandas' in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    # four pieces of a query each; q0's relevant document third (1/3), q3's first, q9 absent
    assert done.stdout == (
        "4 mrr\tq0\t0.3333333333333333\nmrr\tq3\t1.0\nmrr\tq9\t0.0\n"
        "mrr\tall\t0.4444444444444444\nFalse"
    )
