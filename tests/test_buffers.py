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
