"""The bad-input corpus: every kind of malformed input, refused alike by every engine.

Each case is one bad file in an otherwise good experiment: an offline replay (a TREC run,
CSV, Parquet or JSON Lines rankings, TREC or CSV judgments), an online A/B test (a click
log with an ``arm`` column) or an interleaving test (a log with a ``team`` column). Each
goes through the command line, ``abrank run`` and ``abrank validate``, on the memory,
DuckDB and Spark engines, and every run must

- exit 2, with one line on stderr: ``abrank: error: `` and the case's message, which is
  the same on every engine (it is spelled out once per case, by hand: the file, the line
  or row, the column, what was expected and what the cell holds);
- print nothing else: no traceback, no warning (NumPy's overflow warnings included), no
  output on stdout;
- write nothing: the case's folder, which holds an earlier readout at the ``--out`` path,
  is byte for byte as it was (no new readout, no staging folder, no history).

Line numbers. Every engine names the line (CSV and TSV files count their header line,
JSON Lines and TREC files count from 1) or the 1-based row (Parquet) where the memory
engine does, except Spark on CSV, TSV and JSON Lines files: Spark's readers of those
give no row numbers (its Parquet reader gives ``_metadata.row_index``, and TREC files
are numbered by abrank's own line reader). There a message names no line: an offline
file's message leaves it out, an online log's names the impression instead; each case
spells that message out (``spark=``). One difference is left, and marked: ``abrank
validate`` reads an offline experiment's files with the memory engine's readers whatever
the engine, so on Spark it names the lines that ``abrank run`` cannot.

This module is the one place that holds the engines to the same message. The tests of
each engine hold what is particular to it.

Spark's cases share one JVM (the session fixture of conftest.py, which the engine takes
up as the session running in the process) and are marked slow, as every Spark case is.
"""

from __future__ import annotations

import io
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import run_cli
from test_cli import write_experiment as write_tiny

ENGINES = ("memory", "duckdb", "spark")
VERBS = ("run", "validate")

# --------------------------------------------------------------------------- experiments

#: Offline: the control ranks q1: a, b; q2: c, d; q3: f. Line 5 of the CSV is q2's d.
CONTROL = "query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq2,c,1\nq2,d,2\nq3,f,1\n"
TREATMENT = "query_id,doc_id,rank\nq1,b,1\nq1,a,2\nq2,d,1\nq2,c,2\nq3,f,1\n"
QRELS = "q1 0 a 2\nq2 0 d 1\nq3 0 f 1\n"
JUDGMENTS = "query_id,doc_id,grade\nq1,a,2\nq2,d,1\n"

OFFLINE = """name: corpus
control: {name: old, path: CONTROL}
treatments: [{name: new, path: TREATMENT}]
judgments: {path: JUDGMENTS}
metrics: [mrr@10, ndcg@3]
analysis: {seed: 3, resamples: 200}
engine: ENGINE
"""
ONLINE = """name: corpus
log: {path: LOG}
control: {name: bm25}
treatments: [{name: reranker}]
metrics: [click_rr@10, sat_ctr@3]
analysis: {design: independent, unit: user_id, resamples: 200}
segments: {columns: [device], min_queries: 2}
engine: ENGINE
"""
INTERLEAVED = """name: corpus
log: {path: LOG}
control: {name: bm25}
treatments: [{name: reranker}]
metrics: [clicks]
analysis: {design: interleaved, unit: user_id, resamples: 200}
segments: {columns: [device], min_queries: 2}
engine: ENGINE
"""


def click_log(interleaved: bool = False, **change) -> pd.DataFrame:
    """Eight impressions i0..i7 of two results, each of its own user; row 3 (line 5 of a
    CSV file, row 4 of a Parquet file) is impression i1's second result. ``change`` sets
    cells: column -> (row, value)."""
    rows = []
    for i in range(8):
        for rank in (1, 2):
            rows.append(
                {
                    "impression_id": f"i{i}",
                    "user_id": f"u{i}",
                    "rank": rank,
                    "doc_id": f"d{rank}",
                    "clicked": int(rank == 1 + i % 2),
                    "dwell": 40.0,
                    "device": "mobile" if i % 2 else "desktop",
                    **(
                        {"team": "bm25" if rank == 1 else "reranker"}
                        if interleaved
                        else {"arm": "bm25" if i % 2 else "reranker"}
                    ),
                }
            )
    frame = pd.DataFrame(rows)
    for column, (row, value) in change.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


# --------------------------------------------------------------------------- cases

Content = str | bytes | Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One bad input: the kind of experiment, the input it replaces (``control`` or
    ``judgments`` of an offline experiment, the ``log`` of the others), the bad file's
    name and content, the memory engine's message (``{path}``: the file's path) and
    Spark's where it cannot number the rows."""

    kind: str
    role: str
    name: str
    content: Content
    message: str
    spark: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """JSON-safe builtins (the content left out)."""
        return {
            "kind": self.kind,
            "role": self.role,
            "name": self.name,
            "message": self.message,
            "spark": self.spark,
        }


def control(name: str, content: Content, message: str, spark: str | None = None) -> Case:
    return Case("offline", "control", name, content, message, spark)


def judgments(name: str, content: Content, message: str, spark: str | None = None) -> Case:
    return Case("offline", "judgments", name, content, message, spark)


def online(name: str, content: Content, message: str, spark: str | None = None) -> Case:
    return Case("online", "log", name, content, message, spark)


def interleaved(name: str, content: Content, message: str, spark: str | None = None) -> Case:
    return Case("interleaved", "log", name, content, message, spark)


def csv_control(cell: str) -> str:
    """The control CSV with q2's d (line 5) at rank ``cell``."""
    return CONTROL.replace("q2,d,2", f"q2,d,{cell}")


def parquet_control(rank: pa.Array, rows: int = 5, docs: str = "abcdf") -> Callable[[Path], None]:
    """The control as Parquet (its first ``rows`` rows; rank a float column), its row 4
    (q2's d, or ``docs[3]``) ranked by ``rank[3]``; written by pyarrow, which keeps a NaN a
    NaN (pandas writes it as null)."""

    def write(path: Path) -> None:
        ids = {"query_id": ["q1", "q1", "q2", "q2", "q3"], "doc_id": list(docs)}
        table = pa.table({**{k: pa.array(v[:rows], pa.string()) for k, v in ids.items()}, "rank": rank})
        pq.write_table(table, path)

    return write


def jsonl_control(rank: str) -> str:
    """JSON Lines rankings whose line 2 has rank ``rank`` (JSON text)."""
    return (
        '{"query_id": "q1", "doc_id": "a", "rank": 1}\n'
        f'{{"query_id": "q1", "doc_id": "b", "rank": {rank}}}\n'
        '{"query_id": "q2", "doc_id": "d", "rank": 1}\n'
    )


def log_csv(interleaved: bool = False, **change) -> Callable[[Path], None]:
    return lambda path: click_log(interleaved, **change).to_csv(path, index=False)


def log_parquet(frame: Callable[[], pd.DataFrame]) -> Callable[[Path], None]:
    return lambda path: frame().to_parquet(path)


def real_nan_rank_log(path: Path) -> None:
    """The online log as Parquet with a NaN (not a null) rank in row 4."""
    frame = click_log()
    rank = frame["rank"].to_numpy(dtype=np.float64)
    rank[3] = np.nan
    table = pa.Table.from_pandas(frame.drop(columns="rank"), preserve_index=False)
    pq.write_table(table.append_column("rank", pa.array(rank, from_pandas=False)), path)


def truncated_parquet(path: Path) -> None:
    """The control as Parquet, cut short after 200 bytes: no footer."""
    pd.read_csv(io.StringIO(CONTROL)).to_parquet(path)
    path.write_bytes(path.read_bytes()[:200])


NO_FOOTER = (
    "expected a Parquet file, got unreadable data (Parquet magic bytes not found in footer. "
    "Either the file is corrupted or this is not a parquet file.)"
)
GARBAGE = bytes(np.random.default_rng(7).integers(0, 256, 3000, dtype=np.uint8))
DUPLICATE_HINT = "; set `duplicates: first` to keep the first occurrence"
LOG_COLUMNS = "impression_id, user_id, rank, doc_id, clicked, dwell, device"

CASES: dict[str, Case] = {
    # ranks: every table format, the cell as the memory engine shows it
    "rank-inf-csv": control(
        "control.csv",
        csv_control("inf"),
        "{path}: line 5: rank: expected a finite number, got inf",
        "{path}: rank: expected a finite number, got inf",
    ),
    "rank-minus-inf-csv": control(
        "control.csv",
        csv_control("-inf"),
        "{path}: line 5: rank: expected a finite number, got -inf",
        "{path}: rank: expected a finite number, got -inf",
    ),
    "rank-nan-csv": control(
        "control.csv",
        csv_control("NaN"),
        "{path}: line 5: rank: expected a number, got NaN",
        "{path}: rank: expected a number, got NaN",
    ),
    "rank-text-csv": control(
        "control.csv",
        csv_control("two"),
        "{path}: line 5: rank: expected a number, got 'two'",
        "{path}: rank: expected a number, got 'two'",
    ),
    "rank-zero-csv": control(
        "control.csv",
        csv_control("0"),
        "{path}: line 5: rank: expected a whole number >= 1, got 0",
        "{path}: rank: expected a whole number >= 1, got 0",
    ),
    "rank-negative-csv": control(
        "control.csv",
        csv_control("-3"),
        "{path}: line 5: rank: expected a whole number >= 1, got -3",
        "{path}: rank: expected a whole number >= 1, got -3",
    ),
    "rank-fraction-csv": control(
        "control.csv",
        csv_control("2.5"),
        "{path}: line 5: rank: expected a whole number, got 2.5",
        "{path}: rank: expected a whole number, got 2.5",
    ),
    "rank-overflow-csv": control(
        "control.csv",
        csv_control("99999999999999999999"),
        "{path}: line 5: rank: expected a number between -2^53 and 2^53, got 1e+20",
        "{path}: rank: expected a number between -2^53 and 2^53, got 1e+20",
    ),
    "rank-inf-parquet": control(
        "control.parquet",
        parquet_control(pa.array([1.0, 2.0, 1.0, np.inf, 1.0])),
        "{path}: row 4: rank: expected a finite number, got inf",
    ),
    "rank-nan-parquet": control(
        "control.parquet",
        parquet_control(pa.array([1.0, 2.0, 1.0, np.nan, 1.0], from_pandas=False)),
        "{path}: row 4: rank: expected a number, got NaN",
    ),
    "rank-empty-parquet": control(
        "control.parquet",
        parquet_control(pa.array([1.0, 2.0, 1.0, None, 1.0])),
        "{path}: row 4: rank: expected a number, got an empty value",
    ),
    "rank-inf-jsonl": control(
        "control.jsonl",
        jsonl_control("Infinity"),
        "{path}: line 2: rank: expected a finite number, got inf",
        "{path}: rank: expected a finite number, got inf",
    ),
    "rank-nan-jsonl": control(
        "control.jsonl",
        jsonl_control("NaN"),
        "{path}: line 2: rank: expected a number, got NaN",
        "{path}: rank: expected a number, got NaN",
    ),
    "rank-text-jsonl": control(
        "control.jsonl",
        jsonl_control('"two"'),
        "{path}: line 2: rank: expected a number, got 'two'",
        "{path}: rank: expected a number, got 'two'",
    ),
    # TREC runs: the score as written
    "score-nan-trec": control(
        "control.run",
        "q1 Q0 a 1 2.5 r\nq1 Q0 b 2 nan r\n",
        "{path}: line 2: score: expected a number, got 'nan'",
    ),
    "score-inf-trec": control(
        "control.run",
        "q1 Q0 a 1 2.5 r\nq1 Q0 b 2 inf r\n",
        "{path}: line 2: score: expected a finite number, got 'inf'",
    ),
    # binary, unreadable, empty files
    "nul-bytes-csv": control(
        "control.csv",
        CONTROL.replace("q2,d,2", "q2,d\x00,2"),
        "{path}: expected a text file, got binary data (NUL bytes)",
    ),
    "nul-bytes-trec": control(
        "control.run",
        "q1 Q0 a 1 2.5 r\nq1 Q0 b\x00 2 1 r\n",
        "{path}: expected a text file, got binary data (a NUL byte at offset 23)",
    ),
    "garbage-parquet": control("control.parquet", GARBAGE, f"{{path}}: {NO_FOOTER}"),
    "truncated-parquet": control("control.parquet", truncated_parquet, f"{{path}}: {NO_FOOTER}"),
    "empty-parquet": control(
        "control.parquet",
        b"",
        "{path}: expected a Parquet file, got unreadable data (Parquet file size is 0 bytes)",
    ),
    "empty-csv": control("control.csv", "", "{path}: expected at least one row, got an empty file"),
    "empty-jsonl": control(
        "control.jsonl", "", "{path}: expected at least one row, got an empty file"
    ),
    "empty-trec": control("control.run", "", "{path}: expected TREC lines, got an empty file"),
    "empty-qrels": judgments("qrels.txt", "", "{path}: expected TREC lines, got an empty file"),
    "header-only-csv": control(
        "control.csv",
        "query_id,doc_id,rank\n",
        "{path}: expected at least one row, got none (columns: query_id, doc_id, rank)",
    ),
    "header-only-parquet": control(
        "control.parquet",
        parquet_control(pa.array([], type=pa.float64()), rows=0),
        "{path}: expected at least one row, got none (columns: query_id, doc_id, rank)",
    ),
    # columns
    "missing-column-csv": control(
        "control.csv",
        CONTROL.replace("doc_id", "docs"),
        "{path}: expected a doc_id column (one of doc_id, docid, doc, docno, document, item_id, "
        "item, or set columns.doc_id in the config), found columns: query_id, docs, rank",
    ),
    "missing-rank-csv": control(
        "control.csv",
        "query_id,doc_id\nq1,a\n",
        "{path}: expected a rank column (rank, position, pos) or a score column (set "
        "columns.rank or columns.score), found columns: query_id, doc_id",
    ),
    "missing-grade-csv": judgments(
        "judgments.csv",
        "query_id,doc_id,score\nq1,a,2\n",
        "{path}: expected a relevance column (one of relevance, grade, label, rel, judgment, or "
        "set columns.relevance in the config), found columns: query_id, doc_id, score",
    ),
    "empty-query-id-csv": control(
        "control.csv",
        CONTROL.replace("q2,d,2", ",d,2"),
        "{path}: line 5: query_id: expected a non-empty id, got an empty value",
        "{path}: query_id: expected a non-empty id, got an empty value",
    ),
    # the same pair or rank twice
    "duplicate-pair-csv": control(
        "control.csv",
        CONTROL.replace("q2,d,2", "q2,c,2"),
        "{path}: expected each (query_id, doc_id) pair once per ranking, got 1 duplicates: "
        f"('q2', 'c') at line 5{DUPLICATE_HINT}",
        "{path}: expected each (query_id, doc_id) pair once per ranking, got 1 duplicates: "
        f"('q2', 'c'){DUPLICATE_HINT}",
    ),
    "duplicate-pair-parquet": control(
        "control.parquet",
        parquet_control(pa.array([1.0, 2.0, 1.0, 2.0, 1.0]), docs="abccf"),
        "{path}: expected each (query_id, doc_id) pair once per ranking, got 1 duplicates: "
        f"('q2', 'c') at line 4{DUPLICATE_HINT}",
    ),
    "duplicate-pair-trec": control(
        "control.run",
        "q1 Q0 a 1 2 r\nq1 Q0 a 2 1 r\n",
        "{path}: line 2: expected each document once per query, got 1 duplicate (query, doc) "
        "pair(s): ('q1', 'a') at line 2 (use duplicates: first to keep the first occurrence)",
    ),
    "duplicate-judgment-qrels": judgments(
        "qrels.txt",
        QRELS + "q1 0 a 1\n",
        "{path}: line 4: expected one judgment per (query, doc) pair, got 1 repeated: "
        "('q1', 'a') at line 4",
    ),
    "duplicate-judgment-csv": judgments(
        "judgments.csv",
        "query_id,doc_id,grade\nq1,a,2\nq1,a,1\n",
        "{path}: expected each (query_id, doc_id) pair once per judgments, got 1 duplicates: "
        "('q1', 'a') at line 3",
        "{path}: expected each (query_id, doc_id) pair once per judgments, got 1 duplicates: "
        "('q1', 'a')",
    ),
    "repeated-rank-csv": control(
        "control.csv",
        csv_control("1"),
        "{path}: line 5: rank: expected each rank once per query, got rank 1 again in query "
        "'q2' (first at line 4)",
        "{path}: rank: expected each rank once per query, got rank 1 again in query 'q2'",
    ),
    "repeated-rank-parquet": control(
        "control.parquet",
        parquet_control(pa.array([1.0, 2.0, 1.0, 1.0, 1.0])),
        "{path}: row 4: rank: expected each rank once per query, got rank 1 again in query "
        "'q2' (first at row 3)",
    ),
    # grades
    "grade-text-qrels": judgments(
        "qrels.txt",
        QRELS.replace("q2 0 d 1", "q2 0 d high"),
        "{path}: line 2: relevance: expected a number, got 'high'",
    ),
    "grade-text-csv": judgments(
        "judgments.csv",
        JUDGMENTS.replace("q2,d,1", "q2,d,high"),
        "{path}: line 3: relevance: expected a number, got 'high'",
        "{path}: relevance: expected a number, got 'high'",
    ),
    "grade-1e400-qrels": judgments(
        "qrels.txt",
        QRELS.replace("q2 0 d 1", "q2 0 d 1e400"),
        "{path}: line 2: relevance: expected a finite number, got '1e400'",
    ),
    "grade-overflow-qrels": judgments(
        "qrels.txt",
        QRELS.replace("q2 0 d 1", "q2 0 d 99999999999999999999"),
        "{path}: line 2: relevance: expected a number between -2^53 and 2^53, got "
        "'99999999999999999999'",
    ),
    "grade-overflow-csv": judgments(
        "judgments.csv",
        JUDGMENTS.replace("q2,d,1", "q2,d,99999999999999999999"),
        "{path}: line 3: relevance: expected a number between -2^53 and 2^53, got 1e+20",
        "{path}: relevance: expected a number between -2^53 and 2^53, got 1e+20",
    ),
    # online click logs: row 3 is impression i1's second result (line 5, row 4)
    "online-rank-nan": online(
        "log.csv",
        log_csv(rank=(3, "NaN")),
        "{path}: line 5: rank: expected a number, got NaN",
        "{path}: impression 'i1': rank: expected a number, got NaN",
    ),
    "online-rank-nan-parquet": online(
        "log.parquet", real_nan_rank_log, "{path}: row 4: rank: expected a number, got NaN"
    ),
    "online-rank-inf": online(
        "log.csv",
        log_csv(rank=(3, "inf")),
        "{path}: line 5: rank: expected a finite number, got inf",
        "{path}: impression 'i1': rank: expected a finite number, got inf",
    ),
    "online-rank-minus-inf": online(
        "log.csv",
        log_csv(rank=(3, "-inf")),
        "{path}: line 5: rank: expected a finite number, got -inf",
        "{path}: impression 'i1': rank: expected a finite number, got -inf",
    ),
    "online-rank-text": online(
        "log.csv",
        log_csv(rank=(3, "two")),
        "{path}: line 5: rank: expected a number, got 'two'",
        "{path}: impression 'i1': rank: expected a number, got 'two'",
    ),
    "online-rank-zero": online(
        "log.csv",
        log_csv(rank=(3, 0)),
        "{path}: line 5: rank: expected a whole number >= 1, got 0",
        "{path}: impression 'i1': rank: expected a whole number >= 1, got 0",
    ),
    "online-rank-fraction": online(
        "log.csv",
        log_csv(rank=(3, 1.5)),
        "{path}: line 5: rank: expected a whole number >= 1, got 1.5",
        "{path}: impression 'i1': rank: expected a whole number >= 1, got 1.5",
    ),
    "online-rank-overflow": online(
        "log.csv",
        log_csv(rank=(3, "99999999999999999999")),
        "{path}: line 5: rank: expected a number between -2^53 and 2^53, got 1e+20",
        "{path}: impression 'i1': rank: expected a number between -2^53 and 2^53, got 1e+20",
    ),
    "online-clicked-2": online(
        "log.csv",
        log_csv(clicked=(3, 2)),
        "{path}: line 5: clicked: expected 0, 1, true or false, got 2",
        "{path}: impression 'i1': clicked: expected 0, 1, true or false, got 2",
    ),
    "online-clicked-yes": online(
        "log.csv",
        log_csv(clicked=(3, "yes")),
        "{path}: line 5: clicked: expected 0, 1, true or false, got 'yes'",
        "{path}: impression 'i1': clicked: expected 0, 1, true or false, got 'yes'",
    ),
    "online-clicked-7-parquet": online(
        "log.parquet",
        log_parquet(lambda: click_log(clicked=(3, 7)).astype({"clicked": "int64"})),
        "{path}: row 4: clicked: expected 0, 1, true or false, got 7",
    ),
    "online-segment-empty": online(
        "log.csv",
        log_csv(device=(3, None)),
        "{path}: line 5: device: expected a segment value, got an empty value",
        "{path}: impression 'i1': device: expected a segment value, got an empty value",
    ),
    "online-dwell-negative": online(
        "log.csv",
        log_csv(dwell=(3, -4)),
        "{path}: line 5: dwell: expected a number of seconds >= 0, got -4",
        "{path}: impression 'i1': dwell: expected a number of seconds >= 0, got -4",
    ),
    "online-dwell-text": online(
        "log.csv",
        log_csv(dwell=(3, "long")),
        "{path}: line 5: dwell: expected a number, got 'long'",
        "{path}: impression 'i1': dwell: expected a number, got 'long'",
    ),
    "online-user-empty": online(
        "log.csv",
        log_csv(user_id=(3, None)),
        "{path}: line 5: user_id: expected a non-empty id, got an empty value",
        "{path}: impression 'i1': user_id: expected a non-empty id, got an empty value",
    ),
    # impressions: ranks 1..n, one user, arm and segment value each (rows 2, 3: i1)
    "online-rank-missing": online(
        "log.csv",
        log_csv(rank=(3, 3)),
        "{path}: impression 'i1' (line 4): rank: expected ranks 1..3, rank 2 is missing",
        "{path}: impression 'i1': rank: expected ranks 1..3, rank 2 is missing",
    ),
    "online-rank-repeated": online(
        "log.csv",
        log_csv(rank=(3, 1)),
        "{path}: line 5: rank: expected each rank once per impression, got rank 1 again in "
        "impression 'i1' (first at line 4)",
        "{path}: rank: expected each rank once per impression, got rank 1 again in impression "
        "'i1'",
    ),
    "online-two-users": online(
        "log.csv",
        log_csv(user_id=(3, "u9")),
        "{path}: line 5: user_id: expected one user_id per impression, got 'u9' in impression "
        "'i1', which has 'u1' at line 4",
        "{path}: user_id: expected one user_id per impression, got 'u9' in impression 'i1', "
        "which has 'u1'",
    ),
    "online-two-arms": online(
        "log.csv",
        log_csv(arm=(3, "reranker")),
        "{path}: line 5: arm: expected one arm per impression, got 'reranker' in impression "
        "'i1', which has 'bm25' at line 4",
        "{path}: arm: expected one arm per impression, got 'reranker' in impression 'i1', which "
        "has 'bm25'",
    ),
    "online-two-segment-values": online(
        "log.csv",
        log_csv(device=(3, "tablet")),
        "{path}: line 5: device: expected one device per impression, got 'tablet' in impression "
        "'i1', which has 'mobile' at line 4",
        "{path}: device: expected one device per impression, got 'tablet' in impression 'i1', "
        "which has 'mobile'",
    ),
    "online-arm-no-arm": online(
        "log.csv",
        log_csv(arm=([2, 3], "hybrid")),
        "{path}: arm: expected the arm names 'bm25', 'reranker', got 'hybrid' (values found: "
        "'bm25' (6 rows), 'hybrid' (2 rows), 'reranker' (8 rows))",
    ),
    "online-nul-bytes": online(
        "log.csv",
        b"impression_id,user_id\x00,rank\n",
        "{path}: expected a text file, got binary data (NUL bytes)",
    ),
    "online-garbage-parquet": online("log.parquet", GARBAGE, f"{{path}}: {NO_FOOTER}"),
    "online-empty": online("log.csv", "", "{path}: expected at least one row, got an empty file"),
    "online-header-only": online(
        "log.csv",
        f"{LOG_COLUMNS}, arm\n".replace(", ", ","),
        f"{{path}}: expected at least one row, got none (columns: {LOG_COLUMNS}, arm)",
    ),
    "online-missing-column": online(
        "log.csv",
        lambda path: click_log().drop(columns="clicked").to_csv(path, index=False),
        "{path}: expected a clicked column (one of clicked, click, is_click, or set "
        "columns.clicked), found columns: impression_id, user_id, rank, doc_id, dwell, "
        "device, arm",
    ),
    # interleaving logs
    "interleaved-rank-nan": interleaved(
        "log.csv",
        log_csv(True, rank=(3, "NaN")),
        "{path}: line 5: rank: expected a number, got NaN",
        "{path}: impression 'i1': rank: expected a number, got NaN",
    ),
    "interleaved-clicked-2": interleaved(
        "log.csv",
        log_csv(True, clicked=(3, 2)),
        "{path}: line 5: clicked: expected 0, 1, true or false, got 2",
        "{path}: impression 'i1': clicked: expected 0, 1, true or false, got 2",
    ),
    "interleaved-segment-empty": interleaved(
        "log.csv",
        log_csv(True, device=(3, None)),
        "{path}: line 5: device: expected a segment value, got an empty value",
        "{path}: impression 'i1': device: expected a segment value, got an empty value",
    ),
    "interleaved-team-empty": interleaved(
        "log.csv",
        log_csv(True, team=(3, None)),
        "{path}: line 5: team: expected a non-empty id, got an empty value",
        "{path}: impression 'i1': team: expected a non-empty id, got an empty value",
    ),
    "interleaved-team-no-arm": interleaved(
        "log.csv",
        log_csv(True, team=(3, "hybrid")),
        "{path}: line 5: team: expected one of the arms (bm25, reranker), got 'hybrid'",
        "{path}: impression 'i1': team: expected one of the arms (bm25, reranker), got 'hybrid'",
    ),
    "interleaved-rank-missing": interleaved(
        "log.csv",
        log_csv(True, rank=(3, 3)),
        "{path}: impression 'i1' (line 4): rank: expected ranks 1..3, rank 2 is missing",
        "{path}: impression 'i1': rank: expected ranks 1..3, rank 2 is missing",
    ),
    "interleaved-two-segment-values": interleaved(
        "log.csv",
        log_csv(True, device=(3, "tablet")),
        "{path}: line 5: device: expected one device per impression, got 'tablet' in impression "
        "'i1', which has 'mobile' at line 4",
        "{path}: device: expected one device per impression, got 'tablet' in impression 'i1', "
        "which has 'mobile'",
    ),
    "interleaved-garbage-parquet": interleaved("log.parquet", GARBAGE, f"{{path}}: {NO_FOOTER}"),
    "interleaved-header-only": interleaved(
        "log.csv",
        f"{LOG_COLUMNS}, team\n".replace(", ", ","),
        f"{{path}}: expected at least one row, got none (columns: {LOG_COLUMNS}, team)",
    ),
    "interleaved-missing-team": interleaved(
        "log.csv",
        lambda path: click_log(True).drop(columns="team").to_csv(path, index=False),
        "{path}: expected a team column (the arm that contributed each result), found "
        f"columns: {LOG_COLUMNS}",
    ),
}


# --------------------------------------------------------------------------- running


@pytest.fixture(scope="module")
def earlier_readout(tmp_path_factory) -> Path:
    """A readout of test_cli's tiny experiment, written by the memory engine: each case's
    ``--out`` path holds a copy of it, which a refused run must leave as it was."""
    from abrank.cli import main

    folder = tmp_path_factory.mktemp("earlier")
    config = write_tiny(folder)
    out = folder / "out"
    assert main(["run", str(config), "--out", str(out), "--quiet", "--format", "json,csv"]) == 0
    assert (out / ".abrank-readout").is_file() and (out / "summary.json").is_file()
    return out


def write_case(folder: Path, case: Case, engine: str) -> tuple[Path, Path]:
    """The experiment of ``case`` in ``folder`` with its bad file; the config and the bad
    file's path."""
    bad = folder / case.name
    if callable(case.content):
        case.content(bad)
    else:
        bad.write_bytes(case.content.encode() if isinstance(case.content, str) else case.content)
    if case.kind == "offline":
        good = {"CONTROL": ("control.csv", CONTROL), "TREATMENT": ("treatment.csv", TREATMENT)}
        good["JUDGMENTS"] = ("qrels.txt", QRELS)
        key = "CONTROL" if case.role == "control" else "JUDGMENTS"
        paths = {}
        for name, (file, text) in good.items():
            if name != key:
                (folder / file).write_text(text)
                paths[name] = file
        paths[key] = case.name
        text = OFFLINE
    else:
        paths = {"LOG": case.name}
        text = ONLINE if case.kind == "online" else INTERLEAVED
    for key, value in paths.items():
        text = text.replace(key, value)
    config = folder / "exp.yaml"
    config.write_text(text.replace("ENGINE", engine))
    return config, bad


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder`` (hidden ones too): file bytes, None for folders."""
    return {
        p.relative_to(folder).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


def expected(case: Case, engine: str, path: Path) -> str:
    message = case.spark if engine == "spark" and case.spark is not None else case.message
    return message.format(path=path)


def uses_engine(request, engine: str) -> None:
    """Spark runs on the session of conftest.py (one JVM for every case), which the
    engine takes up as the session running in this process."""
    if engine == "spark":
        request.getfixturevalue("spark")


#: The cases run on Spark too: one per check and input format. Spark runs the statements
#: that DuckDB runs (one definition, compiled for each, :mod:`abrank.engines.sql`), so the
#: other cases take the same path there; what is Spark's own (reading each format, rows
#: that it cannot number, its failures) is held by these, each a second or more a case.
SPARK_CASES = (
    "rank-inf-csv",
    "rank-text-csv",
    "rank-fraction-csv",
    "rank-nan-parquet",
    "rank-text-jsonl",
    "score-nan-trec",
    "garbage-parquet",
    "empty-csv",
    "header-only-parquet",
    "missing-column-csv",
    "duplicate-pair-trec",
    "duplicate-pair-parquet",
    "duplicate-judgment-qrels",
    "repeated-rank-csv",
    "repeated-rank-parquet",
    "grade-text-qrels",
    "empty-query-id-csv",
    "nul-bytes-csv",
    "online-rank-text",
    "online-clicked-yes",
    "online-dwell-negative",
    "online-two-users",
    "online-arm-no-arm",
    "online-missing-column",
    "online-rank-repeated",
    "interleaved-team-no-arm",
    "interleaved-rank-missing",
    "interleaved-missing-team",
)


def corpus() -> list:
    """Every (case, verb, engine): validate reads as run does, on the same engine. On Spark
    only ``run`` (``tests/test_validate_like_run.py`` holds validate to run's messages
    there), of the :data:`SPARK_CASES`."""
    return [
        pytest.param(name, verb, engine, id=f"{name}-{verb}-{engine}")
        for name in CASES
        for verb in VERBS
        for engine in ENGINES
        if engine != "spark" or (verb == "run" and name in SPARK_CASES)
    ]


def test_every_spark_case_is_a_case():
    assert sorted(set(SPARK_CASES) - set(CASES)) == []


@pytest.mark.parametrize(("case", "verb", "engine"), corpus())
def test_refused_alike_on_every_engine(
    case, verb, engine, request, tmp_path, earlier_readout, capsys, monkeypatch
):
    uses_engine(request, engine)
    bad = CASES[case]
    folder = tmp_path / "experiment"
    folder.mkdir()
    monkeypatch.chdir(folder)  # a user runs abrank beside the experiment
    config, path = write_case(folder, bad, engine)
    shutil.copytree(earlier_readout, folder / "out")
    before = snapshot(tmp_path)
    args = [verb, config] + (["--out", folder / "out", "--quiet"] if verb == "run" else [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, *args)
    assert (code, err) == (2, f"abrank: error: {expected(bad, engine, path)}\n")
    assert out == ""
    shown = [w for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert [str(w.message) for w in shown] == []  # nothing would reach stderr
    assert snapshot(tmp_path) == before  # nothing written; the earlier readout as it was


NUMBERED_CASES = (
    "duplicate-pair-csv",
    "duplicate-pair-parquet",
    "duplicate-pair-trec",
    "repeated-rank-csv",
    "repeated-rank-parquet",
)
"""Cases whose bad rows an SQL engine finds where it numbers the rankings; a run that makes
no explanation table (``--format json``) keeps only the judged numbered rows on DuckDB and
counts the pairs on the opened rows."""


@pytest.mark.parametrize("case", NUMBERED_CASES)
def test_refused_alike_without_the_explanation_tables(case, request, tmp_path, capsys):
    uses_engine(request, "duckdb")
    bad = CASES[case]
    folder = tmp_path / "experiment"
    folder.mkdir()
    config, path = write_case(folder, bad, "duckdb")
    args = ["run", config, "--out", folder / "out", "--quiet", "--format", "json"]
    code, out, err = run_cli(capsys, *args)
    assert (code, err, out) == (2, f"abrank: error: {expected(bad, 'duckdb', path)}\n", "")
    assert not (folder / "out").exists()


def test_every_case_is_one_bad_file_of_a_good_experiment(tmp_path, capsys):
    """The experiments the cases break pass validation as they are (memory engine): each
    message is about the bad file alone."""
    good = {
        "offline": control("control.csv", CONTROL, ""),
        "online": online("log.csv", log_csv(), ""),
        "interleaved": interleaved("log.csv", log_csv(True), ""),
    }
    for kind, case in good.items():
        folder = tmp_path / kind
        folder.mkdir()
        config, _ = write_case(folder, case, "memory")
        code, out, err = run_cli(capsys, "validate", config)
        assert (code, err) == (0, ""), kind
        assert out.startswith(f"{config}: ok: corpus: ")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_log_column_no_metric_reads_is_not_checked_on_any_engine(
    engine, request, tmp_path, capsys, monkeypatch
):
    """A bad dwell time in a log whose metrics count no satisfied click: no engine reads
    the column, so none refuses it (the memory engine loads only the columns the metrics
    read; the SQL engines checked every dwell)."""
    uses_engine(request, engine)
    monkeypatch.chdir(tmp_path)
    case = online("log.csv", log_csv(dwell=(3, -4)), "")
    config, _ = write_case(tmp_path, case, engine)
    config.write_text(config.read_text().replace("sat_ctr@3", "ctr@3"))
    code, out, err = run_cli(capsys, "validate", config)
    assert (code, err) == (0, "")
    # i1, i3, i5, i7 (users u1, u3, u5, u7) saw bm25; i0, i2, i4, i6 the reranker
    arms = "bm25 (4 impressions, 4 user_id values), reranker (4 impressions, 4 user_id values)"
    assert out == f"{config}: ok: corpus: {arms}; metrics click_rr@10, ctr@3\n"


@pytest.mark.parametrize("grade", ["1e200", "1e308"])
def test_a_grade_whose_gains_overflow_is_refused_at_its_line_without_warnings(
    grade, tmp_path, capsys, monkeypatch
):
    """DCG sums and the statistics' squares of grades this large overflowed: NumPy warned
    on stderr and the run stopped on a value of the control arm. The qrels line is named
    instead, before any metric is computed."""
    monkeypatch.chdir(tmp_path)
    case = judgments("qrels.txt", QRELS.replace("q1 0 a 2", f"q1 0 a {grade}"), "")
    config, path = write_case(tmp_path, case, "memory")
    config.write_text(config.read_text().replace("[mrr@10, ndcg@3]", "[dcg@3]"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, "run", config, "--out", tmp_path / "out", "--quiet")
    assert (code, out) == (2, "")
    assert err == (
        f"abrank: error: {path}: line 1: relevance: expected a number between -2^53 and 2^53, "
        f"got '{grade}'\n"
    )
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
    assert not (tmp_path / "out").exists()
