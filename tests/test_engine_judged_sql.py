"""Judged metrics on the SQL engines: per-query values equal to the memory engine's.

The memory engine's values (checked against trec_eval elsewhere) are the reference: every
run of ../shared/data and generated cases (score ties, unjudged and judged-only documents,
negative grades, long and mixed-length ids, a rank column, queries without a relevant
judgment) give the same values to 1e-9 on every backend of :data:`BACKENDS`; so does the
demo experiment's summary.json. Bad inputs name the file and line as the readers do.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import sqlglot
from trees import assert_same_summary

from abrank.analysis import run_experiment
from abrank.cli import main
from abrank.config import load_experiment
from abrank.engines import SUPPORTED
from abrank.engines.evaluate import score_arm
from abrank.engines.sql import compile_sql
from abrank.engines.sql.judged import judged_sql, score_arm_sql
from abrank.engines.sql.numbering import ranks_in_order
from abrank.engines.sql.rankings import (
    TableSource,
    check_numbered,
    open_judgments,
    open_rankings,
)
from abrank.errors import ConfigError, DataError
from abrank.io import read_judgments, read_rankings
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.metrics import parse_metrics

pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"


def duckdb_backend(request):
    from abrank.engines.sql.duckdb import DuckDBBackend

    return DuckDBBackend()


def spark_backend(request):
    """A backend on the test session's SparkSession (conftest's ``spark``)."""
    from abrank.engines.sql.spark import SparkBackend

    return SparkBackend(request.getfixturevalue("spark"))


#: One factory per SQL backend under test (each takes the requesting fixture).
BACKENDS: list[Callable] = [
    pytest.param(duckdb_backend, id="duckdb"),
    pytest.param(spark_backend, id="spark"),
]

#: Every family, cutoffs, both thresholds, exp gain and judged-only variants at once.
METRICS = [
    "mrr",
    "mrr@10",
    "mrr(rel=2)@10",
    "ndcg",
    "ndcg@5",
    "ndcg@10",
    "ndcg(gain=exp)@10",
    "dcg@10",
    "dcg(gain=exp)",
    "recall@5",
    "recall@100",
    "recall(rel=2)@100",
    "precision@5",
    "precision(rel=2)@10",
    "hit@1",
    "hit(rel=2)@10",
    "map",
    "ap@10",
    "map(rel=2)",
    "bpref",
    "bpref(rel=2)",
    "judged@10",
    "judged",
    "err@10",
    "err",
    "err@20(judged)",
    "ndcg@10(judged)",
    "mrr(rel=2,judged)@10",
    "map(judged)",
    "bpref(judged)",
    "precision@5(judged)",
    "recall@100(judged)",
    "rprec",
    "rprec(rel=2)",
    "rprec(judged)",
    "rbp",
    "rbp(p=0.95)@20",
    "rbp(p=0.5,rel=2)@10",
    "rbp(judged)",
    "rbp_residual",
    "rbp_residual(p=0.9)@10",
    "gm_map",
    "gm_map(rel=2,judged)",
    "infap",
    "infap(rel=2)",
    "infap(judged)",
]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    made = request.param(request)
    yield made
    made.close()


_names = iter(range(10**6))


def relation(backend, frame: pd.DataFrame) -> str:
    """A frame as a relation of the backend (ids as text)."""
    name = f"frame_{next(_names)}"
    backend.register_table(name, pa.Table.from_pandas(frame, preserve_index=False))
    return name


def assert_same_scores(memory, sql) -> None:
    """Same queries in the same order, values to 1e-12 (relative; the order of a sum is
    all that may differ) with NaN at the same places."""
    assert list(sql.values.index) == list(memory.values.index)
    assert list(sql.values.columns) == list(memory.values.columns)
    for column in memory.values.columns:
        a, b = memory.values[column].to_numpy(), sql.values[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        np.testing.assert_allclose(b[~np.isnan(b)], a[~np.isnan(a)], rtol=1e-12, atol=1e-14)
    assert sql.judged_at_k == pytest.approx(memory.judged_at_k, abs=1e-12, nan_ok=True)
    pd.testing.assert_series_equal(sql.first_relevant, memory.first_relevant)


# --------------------------------------------------------------------------- real data


def _real_runs() -> list[tuple[str, str]]:
    """(qrels, run) of every run in the shared data, relative to it."""
    if not SHARED.is_dir():
        return []
    pairs = []
    dl = "trec-dl-passage"
    for run in sorted((SHARED / dl / "runs").glob("*.txt")):
        year = run.name.split(".")[0]
        pairs.append((f"{dl}/qrels.{year}-passage.txt", f"{dl}/runs/{run.name}"))
    for kind in ("passage", "doc"):
        for run in sorted((SHARED / "dl-hard/baselines" / kind).glob("*.run.gz")):
            pairs.append((f"dl-hard/dl_hard-{kind}.qrels", f"dl-hard/baselines/{kind}/{run.name}"))
    for i, run in enumerate(sorted((SHARED / "codec/runs").glob("*.run.gz"))):
        qrels = "document_ndcg.qrels" if i % 2 == 0 else "document_binary.qrels"
        pairs.append((f"codec/{qrels}", f"codec/runs/{run.name}"))
    covid = "beir-trec-covid"
    for run in sorted((SHARED / covid / "runs").glob("*.txt")):
        pairs.append((f"{covid}/qrels.beir-v1.0.0-trec-covid.test.txt", f"{covid}/runs/{run.name}"))
    suite = "trec_eval-tests/test"
    pairs += [
        (f"{suite}/qrels.test", f"{suite}/results.test"),
        (f"{suite}/qrels.test", f"{suite}/results.trunc"),
        (f"{suite}/qrels-302.test", f"{suite}/results-302.test"),
        (f"{suite}/qrels.rel_level", f"{suite}/results.test"),
    ]
    return pairs


REAL_RUNS = _real_runs()


def _has_duplicates(path: Path) -> bool:
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode()
    pairs = [tuple(line.split()[::2][:2]) for line in text.splitlines() if line.strip()]
    return len(pairs) != len(set(pairs))


def _run_options(index: int) -> dict:
    """complete and depth alternate over the runs: each setting meets many runs."""
    return {"complete": index % 2 == 0, "depth": 1000 if index % 3 else 50}


@pytest.fixture(scope="module")
def duck():
    """A DuckDB backend (the per-run test; Spark scores every run in fewer statements)."""
    made = duckdb_backend(None)
    yield made
    made.close()


@pytest.mark.parametrize(
    ("index", "qrels", "run"),
    [(i, q, r) for i, (q, r) in enumerate(REAL_RUNS)] or [(0, "", "")],
    ids=[r for _, r in REAL_RUNS] or ["no-shared-data"],
)
def test_every_shared_run_scores_as_on_the_memory_engine(shared_data, duck, index, qrels, run):
    backend = duck
    qrels_path, run_path = shared_data / qrels, shared_data / run
    options = _run_options(index)
    duplicates = "first" if _has_duplicates(run_path) else "error"
    ranked = open_rankings(
        backend, f"run_{index}", TableSource((str(run_path),), "trec", run, duplicates=duplicates)
    )
    judged = open_judgments(
        backend, f"qrels_{index}", TableSource((str(qrels_path),), "qrels", qrels)
    )
    sql = score_arm_sql(
        backend, ranked.sql, judged.sql, METRICS, ranked_by=ranked.ranked_by, **options
    )
    memory = score_arm(
        read_trec_run(run_path, duplicates=duplicates),
        read_trec_qrels(qrels_path),
        METRICS,
        **options,
    )
    assert_same_scores(memory, sql)
    assert len(sql.values) > 0


def test_every_shared_run_scores_on_spark_as_on_the_memory_engine(shared_data, spark, tmp_path):
    """Every shared run on Spark, in one statement per setting of complete and depth: the
    runs' rankings and judgments as one table each, every query id prefixed by its run
    (queries are scored apart, so this is each run scored alone), against the memory
    engine on the same tables."""
    from abrank.engines.sql.spark import SparkBackend

    groups: dict[tuple, list[int]] = {}
    for index in range(len(REAL_RUNS)):
        groups.setdefault(tuple(sorted(_run_options(index).items())), []).append(index)
    backend = SparkBackend(spark)
    try:
        for g, (options, indexes) in enumerate(groups.items()):
            rankings, judgments = [], []
            for index in indexes:
                qrels, run = REAL_RUNS[index]
                duplicates = "first" if _has_duplicates(shared_data / run) else "error"
                ranked = read_trec_run(shared_data / run, duplicates=duplicates)
                judged = read_trec_qrels(shared_data / qrels)
                for frame, out in ((ranked, rankings), (judged, judgments)):
                    frame = frame.assign(query_id=f"{index}/" + frame["query_id"].astype(str))
                    out.append(frame[[c for c in frame.columns if c != "rank"]])
            for name, frames in (("rankings", rankings), ("judgments", judgments)):
                pd.concat(frames, ignore_index=True).to_parquet(tmp_path / f"{name}-{g}.parquet")
            files = {n: str(tmp_path / f"{n}-{g}.parquet") for n in ("rankings", "judgments")}
            opened = open_rankings(
                backend, f"runs_{g}", TableSource((files["rankings"],), "parquet", "runs")
            )
            judged = open_judgments(
                backend, f"qrels_{g}", TableSource((files["judgments"],), "parquet", "qrels")
            )
            sql = score_arm_sql(
                backend,
                opened.sql,
                judged.sql,
                METRICS,
                ranked_by=opened.ranked_by,
                **dict(options),
            )
            memory = score_arm(
                pd.read_parquet(files["rankings"]),
                pd.read_parquet(files["judgments"]),
                METRICS,
                **dict(options),
            )
            assert_same_scores(memory, sql)
            runs = {q.split("/")[0] for q in sql.values.index}
            assert runs == {str(i) for i in indexes}
    finally:
        backend.close()


def test_a_run_with_a_pair_ranked_twice_is_refused_as_the_reader_refuses_it(shared_data, backend):
    run = shared_data / "codec/runs/document_bm25+rm3-tuned.run.gz"
    with pytest.raises(DataError) as expected:
        read_trec_run(run)
    with pytest.raises(DataError) as found:
        open_rankings(backend, "codec_rm3", TableSource((str(run),), "trec", str(run)))
    assert str(found.value) == str(expected.value)


# --------------------------------------------------------------------------- generated


def generated(
    seed: int, *, ranked_by: str = "score", in_order: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rankings with many score ties, unjudged documents, judged documents never ranked,
    grades -1..3, ids of mixed lengths (some long), queries judged without any relevant
    document, queries only ranked and queries only judged; ranked by ``rank``, ranks with
    ties and gaps, or with ``in_order`` 1..n in each query (in a shuffled row order)."""
    rng = np.random.default_rng(seed)
    queries = [f"q{i}" if i % 3 else f"query-{i:03d}-" + "x" * (i % 40) for i in range(60)]
    rows, labels = [], []
    for i, query in enumerate(queries):
        docs = [f"d{j}" if j % 4 else f"doc-{j}-" + "y" * (j % 37) for j in range(50)]
        ranked = rng.choice(len(docs), size=int(rng.integers(0, 30)), replace=False)
        scores = rng.integers(0, 4, size=ranked.size).astype(float)  # ties everywhere
        if i % 11 != 5:  # some queries are judged only
            for position, (doc, score) in enumerate(zip(ranked, scores)):
                rows.append((query, docs[doc], score, position + 1))
        if i % 13 == 7:  # some queries are ranked only
            continue
        judged = rng.choice(len(docs), size=int(rng.integers(1, 35)), replace=False)
        top = 0 if i % 7 == 3 else 3  # some queries have nothing relevant
        for doc in judged:
            labels.append((query, docs[doc], float(rng.integers(-1, top + 1))))
    rankings = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    rankings = rankings.drop(columns="rank" if ranked_by == "score" else "score")
    if ranked_by == "rank" and not in_order:  # only the ranks' order matters, ties too
        rankings["rank"] = rankings["rank"] // 2 + 1
    if in_order:
        rankings = rankings.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    judgments = pd.DataFrame(labels, columns=["query_id", "doc_id", "relevance"])
    return rankings, judgments


_OPTIONS = pytest.mark.parametrize(
    "options",
    [
        {},
        {"complete": True},
        {"depth": 7, "rel_level": 2},
        {"gain": "exp", "depth": None, "judged_k": 5},
        {"judged_only": True, "complete": True},
    ],
    ids=["default", "complete", "depth-7-rel-2", "exp-gain-no-depth", "judged-only"],
)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ranked_by", ["score", "rank"])
@_OPTIONS
def test_generated_cases_score_as_on_the_memory_engine(backend, seed, ranked_by, options):
    rankings, judgments = generated(seed, ranked_by=ranked_by)
    memory = score_arm(rankings, judgments, METRICS, **options)
    ranked = relation(backend, rankings)
    if ranked_by == "rank":  # ties and gaps: numbered by the window
        assert not ranks_in_order(backend, ranked)
    sql = score_arm_sql(
        backend, ranked, relation(backend, judgments), METRICS, ranked_by=ranked_by, **options
    )
    assert_same_scores(memory, sql)
    assert memory.values.isna().any().any()  # undefined values are part of the check


@_OPTIONS
def test_ranks_1_to_n_number_the_rows_as_the_window_would(backend, options, monkeypatch):
    """Generated cases ranked 1..n, numbered from their ranks on every engine (Spark keeps
    its window by default: one seed there, three on DuckDB)."""
    monkeypatch.setattr(backend, "numbers_from_ranks", True)
    for seed in [0, 1, 2] if backend.dialect == "duckdb" else [0]:
        rankings, judgments = generated(seed, ranked_by="rank", in_order=True)
        memory = score_arm(rankings, judgments, METRICS, **options)
        ranked = relation(backend, rankings)
        assert ranks_in_order(backend, ranked)
        sql = score_arm_sql(
            backend, ranked, relation(backend, judgments), METRICS, ranked_by="rank", **options
        )
        assert_same_scores(memory, sql)


@pytest.mark.parametrize("ranked_by", ["score", "rank", "rank-in-order"])
@_OPTIONS
def test_kept_judged_rows_alone_score_as_on_the_memory_engine(duck, ranked_by, options):
    """The numbered rows kept without the unjudged ones (``every_row=False``, what DuckDB
    keeps for a readout without explanation tables): the same values, and only judged
    rows kept (with a rank column numbered by the window, a rank found again too)."""
    in_order = ranked_by == "rank-in-order"
    by = "score" if ranked_by == "score" else "rank"
    for seed in (0, 1):
        rankings, judgments = generated(seed, ranked_by=by, in_order=in_order)
        memory = score_arm(rankings, judgments, METRICS, **options)
        ranked, judged = relation(duck, rankings), relation(duck, judgments)
        assert by == "score" or ranks_in_order(duck, ranked) is in_order
        sql = score_arm_sql(
            duck, ranked, judged, METRICS, ranked_by=by, keep="lean", every_row=False, **options
        )
        assert_same_scores(memory, sql)
        again = "rank_again = 1" if by == "rank" else "FALSE"
        counts = (
            "SELECT COUNT(grade) AS judged, "
            f"SUM(CASE WHEN grade IS NULL AND NOT {again} THEN 1 ELSE 0 END) AS unjudged "
            "FROM lean"
        )
        kept = duck.run(counts).to_pylist()[0]
        assert kept["judged"] > 0 and kept["unjudged"] == 0
        duck.drop("lean")


def test_a_family_an_engine_lacks_is_refused_with_the_engine_that_computes_it(backend, monkeypatch):
    """Every family has an SQL definition now; the refusal that a family added to the
    registry before its SQL definition gets is still one clear ConfigError."""
    from abrank import engines

    monkeypatch.setitem(engines.UNSUPPORTED_FAMILIES, backend.dialect, ("infap",))
    rankings, judgments = generated(0)
    for name in ["infap", "infAP", "infap(rel=2)", "infap(judged)"]:
        with pytest.raises(ConfigError) as info:
            score_arm_sql(
                backend,
                relation(backend, rankings),
                relation(backend, judgments),
                ["map", name],
            )
        assert str(info.value).startswith(f"metric {name.lower().replace('(judged)', '')}")
        assert (
            f"expected a metric engine {backend.dialect} computes, got infap, which only "
            "engine memory computes" in str(info.value)
        )


def test_infap_on_graded_pools_equals_trec_eval(backend, shared_data):
    """qrels.rel_level grades -1 (in the pool, unjudged) to 4: infAP at -l2 per query as
    trec_eval prints it (out.test.aql), and the memory engine's values to 1e-12."""
    from abrank.io import read_judgments, read_rankings

    folder = shared_data / "trec_eval-tests" / "test"
    rankings = read_rankings(folder / "results.test")
    judgments = read_judgments(folder / "qrels.rel_level")
    options = dict(rel_level=2, depth=None)
    memory = score_arm(rankings, judgments, ["infap", "infap(rel=1)"], **options)
    sql = score_arm_sql(
        backend,
        relation(backend, rankings),
        relation(backend, judgments),
        ["infap", "infap(rel=1)"],
        ranked_by="rank",
        **options,
    )
    assert_same_scores(memory, sql)
    printed = {
        query: value
        for name, query, value in (
            line.split() for line in (folder / "out.test.aql").read_text().splitlines()
        )
        if name == "infAP" and query != "all"
    }
    assert len(printed) == 3
    for query, value in printed.items():
        assert f"{sql.values.loc[query, 'infap']:6.4f}" == value, query


def test_abrank_metrics_on_duckdb_computes_infap_and_rprec(tmp_path, capsys):
    """By hand: q1 judges a and c relevant, b not; the run ranks a, b, c. R-precision: one
    of the top 2 is relevant, 1/2. infAP: a at the top scores 1; c at position 2 (0-based)
    has r = 1, n = 1, u = 0 above: 1/3 + 2/3 x 2/2 x (1 + e)/(2 + 2e) = 2/3; (1 + 2/3) / 2."""
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 1\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 3 s\nq1 Q0 b 2 2 s\nq1 Q0 c 3 1 s\n")
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    code = main(["metrics", "--engine", "duckdb", "-m", "rprec", *files])
    out, err = capsys.readouterr()
    assert (code, out) == (0, "rprec\tall\t0.5\n"), err
    code = main(["metrics", "--engine", "duckdb", "-m", "infap", *files])
    out, err = capsys.readouterr()
    assert code == 0, err
    name, query, value = out.split("\t")
    assert (name, query) == ("infap", "all")
    assert float(value) == pytest.approx(5 / 6, abs=1e-12)


def test_values_by_hand(backend):
    """Ties go to the larger doc id (byte order: 'b' > 'B' > 'A'); ideal DCG from all
    judgments, the unranked relevant 'z' included; undefined where nothing is relevant."""
    rankings = pd.DataFrame(
        {
            "query_id": ["1", "1", "1", "1", "2"],
            "doc_id": ["A", "b", "B", "u", "x"],
            "score": [1.0, 1.0, 1.0, 0.5, 3.0],
        }
    )
    judgments = pd.DataFrame(
        {
            "query_id": ["1", "1", "1", "1", "2"],
            "doc_id": ["A", "B", "z", "u", "x"],
            "relevance": [2.0, 0.0, 1.0, -1.0, 0.0],
        }
    )
    metrics = ["mrr", "ndcg@3", "precision@2", "map", "judged@4", "mrr@3(judged)", "bpref"]
    got = score_arm_sql(
        backend, relation(backend, rankings), relation(backend, judgments), metrics
    ).values
    # order b (unjudged), B (0), A (2), u (-1); relevant: A, z
    ideal = 2 + 1 / np.log2(3)
    assert got.loc["1", "mrr"] == pytest.approx(1 / 3)
    assert got.loc["1", "ndcg@3"] == pytest.approx((2 / np.log2(4)) / ideal)
    assert got.loc["1", "precision@2"] == 0.0
    assert got.loc["1", "map"] == pytest.approx((1 / 3) / 2)
    assert got.loc["1", "judged@4"] == pytest.approx(3 / 4)
    assert got.loc["1", "mrr@3(judged)"] == pytest.approx(1 / 2)  # B, A, u once b is gone
    # bpref: A has B (judged nonrelevant) above it: 1 - min(1, 2) / min(N=1, R=2) = 0
    assert got.loc["1", "bpref"] == pytest.approx(0.0)
    assert got.loc["2"].drop("judged@4").isna().all()  # nothing relevant: undefined
    assert got.loc["2", "judged@4"] == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ([3, 1, 2], True),
        ([1.0, 2.0], True),
        (list(range(1, 71)), True),  # two words of ranks
        ([1, 2, 4], False),  # a gap
        ([1, 2, 2, 3], False),  # a rank twice
        ([1, 2, 2, 4], False),  # a rank twice, the top equal to the rows
        ([1, 1.5, 3], False),  # not whole
        ([*range(1, 64), 65, 65], False),  # 64 missing: a bit of the second word
        ([0, 1, 2], False),
    ],
)
def test_ranks_in_order_holds_for_ranks_1_to_n_once_each(duck, ranks, expected):
    rankings = pd.DataFrame(
        {
            "query_id": ["q"] * len(ranks) + ["r", "r"],
            "doc_id": [f"d{i}" for i in range(len(ranks))] + ["a", "b"],
            "rank": [float(r) for r in ranks] + [2.0, 1.0],
        }
    )
    assert ranks_in_order(duck, relation(duck, rankings)) is expected


def test_a_ranked_query_without_a_judged_document_is_scored_0(backend):
    """The aggregates read judged rows only: query 1 ranks no judged document, yet it is
    in the run (scored 0, judged 0 of its 3 rows); query 3 is judged but not ranked."""
    rankings = pd.DataFrame(
        {
            "query_id": ["1", "1", "1", "2", "2"],
            "doc_id": ["u", "v", "w", "x", "y"],
            "score": [3.0, 2.0, 1.0, 2.0, 1.0],
        }
    )
    judgments = pd.DataFrame(
        {
            "query_id": ["1", "2", "3"],
            "doc_id": ["r", "y", "s"],
            "relevance": [1.0, 1.0, 1.0],
        }
    )
    metrics = ["mrr", "recall@10", "ndcg@10", "judged", "judged@10"]
    got = score_arm_sql(
        backend, relation(backend, rankings), relation(backend, judgments), metrics
    ).values
    assert list(got.index) == ["1", "2"]
    assert got.loc["1"].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]
    # query 2: y, its one relevant document, second of two ranked rows
    assert got.loc["2", "mrr"] == pytest.approx(1 / 2)
    assert got.loc["2", "recall@10"] == 1.0
    assert got.loc["2", "ndcg@10"] == pytest.approx(1 / np.log2(3))
    assert got.loc["2", "judged"] == pytest.approx(1 / 2)
    assert got.loc["2", "judged@10"] == pytest.approx(1 / 10)


@pytest.mark.parametrize("kind", ["duckdb", "spark"])
def test_the_statements_compile_to_valid_engine_sql(kind):
    """The neutral definitions compile for DuckDB and Spark, and the compiled text parses
    back in that dialect (no construct of another engine left in it)."""
    metrics = parse_metrics(METRICS)
    for ranked_by in ("score", "rank"):
        neutral = judged_sql("r", "j", metrics, ranked_by=ranked_by, depth=100)
        compiled = compile_sql(neutral, kind)
        sqlglot.parse_one(compiled, read=kind)
        if kind == "spark":
            assert "STR_SPLIT" not in compiled and "::" not in compiled


# --------------------------------------------------------------------------- files


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


QRELS = "1 0 a 1\n1 0 b 0\n2 0 c 2\n"


@pytest.mark.parametrize(
    "run",
    [
        "1 Q0 a 1 2.0 t\n1 Q0 b 2 x t\n",  # a score that is no number
        "1 Q0 a 1 2.0 t\n\n1 Q0 b 2\n",  # too few fields (after a blank line)
        "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n1 Q0 a 3 0.5 t\n",  # a pair ranked twice
        "1 Q0 a 1 inf t\n",  # an infinite score
        "\n   \n",  # no line at all
    ],
    ids=["bad-score", "few-fields", "duplicate", "infinite", "empty"],
)
def test_bad_run_files_fail_with_the_readers_message(backend, tmp_path, run):
    path = write(tmp_path / "run.txt", run)
    with pytest.raises(DataError) as expected:
        read_trec_run(path)
    with pytest.raises(DataError) as found:
        open_rankings(backend, f"bad_{next(_names)}", TableSource((str(path),), "trec", str(path)))
    assert str(found.value) == str(expected.value)


@pytest.mark.parametrize(
    "qrels",
    ["1 0 a 1\n1 0 a 2\n", "1 0 a 1\n1 0 b\n", "1 0 a 1 x\n", "1 0 a high\n"],
    ids=["judged-twice", "few-fields", "many-fields", "bad-grade"],
)
def test_bad_qrels_fail_with_the_readers_message(backend, tmp_path, qrels):
    path = write(tmp_path / "q.qrels", qrels)
    with pytest.raises(DataError) as expected:
        read_trec_qrels(path)
    with pytest.raises(DataError) as found:
        open_judgments(
            backend, f"bad_{next(_names)}", TableSource((str(path),), "qrels", str(path))
        )
    assert str(found.value) == str(expected.value)


def test_a_problem_in_the_second_of_two_files_names_that_file_and_line(backend, tmp_path):
    """The files count in the order they are listed (as the memory engine reads them),
    not in the order of their names: a pair in both files is repeated in the one listed
    second, and a bad score there is named by that file and its own line."""
    first = write(tmp_path / "z.txt", "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    second = write(tmp_path / "a.txt", "2 Q0 c 1 2.0 t\n1 Q0 a 2 0.5 t\n")
    source = TableSource((str(first), str(second)), "trec", "control")
    with pytest.raises(DataError) as found:
        open_rankings(backend, f"two_{next(_names)}", source)
    assert str(found.value).startswith(
        f"{second}: line 2: expected each document once per query, got 1 duplicate "
        "(query, doc) pair(s): ('1', 'a') at line 2"
    )
    bad = write(tmp_path / "b.txt", "2 Q0 c 1 2.0 t\n2 Q0 d 2 x t\n")
    with pytest.raises(DataError) as found:
        open_rankings(
            backend, f"two_{next(_names)}", TableSource((str(first), str(bad)), "trec", "c")
        )
    assert str(found.value) == f"{bad}: line 2: score: expected a number, got 'x'"
    good = write(tmp_path / "c.txt", "2 Q0 c 1 2.0 t\n")
    source = TableSource((str(first), str(good)), "trec", "control")
    assert open_rankings(backend, f"two_{next(_names)}", source).file_rows == {
        str(first): 2,
        str(good): 1,
    }


def test_checks_left_to_the_numbering_raise_what_opening_raises(backend, tmp_path):
    """Opened with ``later``, a ranking's repeated pair and a rank column's repeated rank
    are not looked for on opening but in the kept numbered rows, with opening's message
    (a pair before a rank, as opening checks them); with ``duplicates: first`` the pairs
    are settled on opening; a clean ranking passes."""
    qrels = write(tmp_path / "q.qrels", "1 0 a 1\n2 0 b 1\n")
    judged = open_judgments(
        backend, f"later_{next(_names)}", TableSource((str(qrels),), "qrels", str(qrels))
    )
    cases = {
        "both": {"qid": ["1", "1", "1", "2"], "docid": list("aacb"), "rank": [1, 2, 2, 1]},
        "rank": {"qid": ["1", "1", "2"], "docid": list("acb"), "rank": [1, 1, 1]},
        "clean": {"qid": ["1", "1", "2"], "docid": list("acb"), "rank": [2, 1, 1]},
    }
    for case, columns in cases.items():
        path = tmp_path / f"{case}.parquet"
        pd.DataFrame(columns).to_parquet(path)
        source = TableSource((str(path),), "parquet", str(path))
        opened = open_rankings(backend, f"later_{next(_names)}", source, later=True)
        assert opened.unchecked is not None
        assert opened.unchecked.pairs and opened.unchecked.ranks
        kept = f"later_numbered_{next(_names)}"
        score_arm_sql(backend, opened.sql, judged.sql, ["mrr"], ranked_by="rank", keep=kept)
        if case == "clean":
            check_numbered(backend, opened, kept)
            continue
        with pytest.raises(DataError) as on_opening:
            open_rankings(backend, f"later_{next(_names)}", source)
        with pytest.raises(DataError) as numbered:
            check_numbered(backend, opened, kept)
        assert str(numbered.value) == str(on_opening.value)
        said = "pair once per ranking" if case == "both" else "rank: expected each rank once"
        assert said in str(numbered.value)
    first = TableSource((str(tmp_path / "rank.parquet"),), "parquet", "r", duplicates="first")
    opened = open_rankings(backend, f"later_{next(_names)}", first, later=True)
    assert opened.unchecked is not None
    assert not opened.unchecked.pairs and opened.unchecked.ranks


def test_a_missing_file_is_named(backend, tmp_path):
    path = tmp_path / "nothing.txt"
    with pytest.raises(DataError, match="nothing.txt: expected an existing file, got no such file"):
        open_rankings(backend, "missing", TableSource((str(path),), "trec", str(path)))


def test_keeping_the_first_of_repeated_pairs_needs_row_numbers(backend, tmp_path):
    """A TREC run keeps its first occurrence as the reader does, and so does a CSV table on
    DuckDB, which numbers its rows; on Spark, whose CSV reader numbers none, a CSV table is
    refused with a message."""
    run = write(tmp_path / "run.txt", "1 Q0 a 1 1.0 t\n1 Q0 b 2 3.0 t\n1 Q0 a 3 5.0 t\n")
    qrels = write(tmp_path / "q.qrels", "1 0 a 1\n")
    source = TableSource((str(run),), "trec", str(run), duplicates="first")
    ranked = open_rankings(backend, "first_trec", source)
    judged = open_judgments(backend, "first_qrels", TableSource((str(qrels),), "qrels", str(qrels)))
    sql = score_arm_sql(backend, ranked.sql, judged.sql, ["mrr"])
    assert sql.values.loc["1", "mrr"] == pytest.approx(0.5)  # a (score 1.0) after b
    table = write(tmp_path / "run.csv", "qid,docid,rank\n1,a,3\n1,b,2\n1,a,1\n")
    source = TableSource((str(table),), "csv", str(table), duplicates="first")
    if backend.dialect == "spark":
        with pytest.raises(ConfigError, match="duplicates: first: expected a file whose row order"):
            open_rankings(backend, "first_csv", source)
        return
    ranked = open_rankings(backend, "first_csv", source)
    sql = score_arm_sql(backend, ranked.sql, judged.sql, ["mrr"], ranked_by=ranked.ranked_by)
    assert sql.values.loc["1", "mrr"] == pytest.approx(1 / 2)  # a at rank 3 (line 2), b first


def test_only_the_columns_a_run_reads_are_kept_beside_the_canonical_ones(duck, tmp_path):
    """A ranking log's other columns: the engine's copy of its parsed rows keeps those the
    source names (the segment columns), while ``extra`` still lists every one."""
    path = tmp_path / "run.parquet"
    pd.DataFrame(
        {
            "qid": ["1", "1"],
            "docid": ["a", "b"],
            "rank": [1, 2],
            "locale": ["en", "en"],
            "device": ["mobile", "web"],
            "features": ["x", "y"],
        }
    ).to_parquet(path)
    for kept, carried in [(("locale",), ["locale"]), (None, ["locale", "device", "features"])]:
        name = f"kept_{len(carried)}"
        source = TableSource((str(path),), "parquet", str(path), kept=kept)
        opened = open_rankings(duck, name, source)
        assert opened.extra == ("locale", "device", "features")
        columns = duck.run(f"SELECT * FROM {name}_rows LIMIT 0").column_names
        assert [c for c in columns if c in opened.extra] == carried
        rows = duck.run(f"SELECT * FROM {opened.sql} AS r ORDER BY doc_id").to_pylist()
        assert [r["locale"] for r in rows] == ["en", "en"]
        assert list(rows[0]) == ["query_id", "doc_id", "rank", *carried]


def test_a_parquet_table_names_the_row(backend, tmp_path):
    path = tmp_path / "run.parquet"
    pd.DataFrame({"qid": ["1", "1"], "docid": ["a", "b"], "rank": [1.0, 2.5]}).to_parquet(path)
    with pytest.raises(DataError, match=r"run.parquet: row 2: rank: expected a whole number"):
        open_rankings(backend, "parquet_bad", TableSource((str(path),), "parquet", str(path)))


def test_tables_score_as_the_memory_engine_reads_them(backend, tmp_path):
    rankings, judgments = generated(4, ranked_by="rank")
    rankings = rankings.drop_duplicates(["query_id", "rank"])  # a table's ranks are unique
    rankings.rename(columns={"query_id": "qid", "rank": "position"}).to_csv(
        tmp_path / "run.csv", index=False
    )
    rankings.to_parquet(tmp_path / "run.parquet")
    judgments.rename(columns={"relevance": "grade"}).to_csv(
        tmp_path / "judgments.tsv", sep="\t", index=False
    )
    qrels = tmp_path / "judgments.tsv"
    judged = open_judgments(backend, "tsv_qrels", TableSource((str(qrels),), "tsv", str(qrels)))
    for name, fmt in (("run.csv", "csv"), ("run.parquet", "parquet")):
        path = tmp_path / name
        ranked = open_rankings(backend, f"table_{fmt}", TableSource((str(path),), fmt, str(path)))
        assert ranked.ranked_by == "rank"
        sql = score_arm_sql(backend, ranked.sql, judged.sql, METRICS, ranked_by="rank")
        memory = score_arm(read_rankings(path), read_judgments(qrels), METRICS)
        assert_same_scores(memory, sql)


# --------------------------------------------------------------------------- pipeline


def test_the_sql_engines_run_offline_experiments():
    assert "offline" in SUPPORTED["duckdb"] and "offline" in SUPPORTED["spark"]


def test_the_demo_experiment_gives_the_same_summary_on_every_engine(request):
    """The bundled demo (a CSV and a JSON Lines log with segment columns, TSV judgments)
    gives the same summary.json on the three engines; 2,000 resamples instead of the
    config's 10,000 keep the test quick (the resampling runs in NumPy on every engine)."""
    config = load_experiment(ROOT / "experiments" / "demo-reranker.yaml")
    analysis = config.analysis.model_copy(update={"resamples": 2000})
    config = config.model_copy(update={"analysis": analysis})
    memory = run_experiment(config)
    expected = json.loads(json.dumps(memory.summary))
    for engine in ("duckdb", request.getfixturevalue("spark")):
        sql = run_experiment(config, engine=engine)
        assert_same_summary(expected, json.loads(json.dumps(sql.summary)))
        assert len(sql.summary["comparisons"]) > 4  # overall and per segment
        pd.testing.assert_frame_equal(sql.per_query, memory.per_query)


def _experiment(tmp_path: Path, control: str, treatment: str, qrels: str, extra: str = "") -> Path:
    config = tmp_path / "exp.yaml"
    config.write_text(
        f"name: e\ncontrol: {{name: a, path: {control}}}\n"
        f"treatments: [{{name: b, path: {treatment}}}]\njudgments: {{path: {qrels}}}\n"
        "metrics: [mrr@10, ndcg@10]\nanalysis: {resamples: 200}\n" + extra
    )
    return config


def test_the_judged_only_repeat_runs_on_the_engine(tmp_path):
    """Low judged@10 triggers the judged-only comparisons: the same on both engines."""
    rankings, judgments = generated(3)
    rankings.to_csv(tmp_path / "a.csv", index=False)
    other = rankings.assign(score=rankings["score"] * -1.0)
    other.to_csv(tmp_path / "b.csv", index=False)
    judgments.to_csv(tmp_path / "j.csv", index=False)
    config = _experiment(tmp_path, "a.csv", "b.csv", "j.csv")
    memory = run_experiment(config)
    sql = run_experiment(config, engine="duckdb")
    assert memory.summary["diagnostics"]["unjudged"]["triggered"]
    assert_same_summary(memory.summary, sql.summary)


def _trec_lines(frame: pd.DataFrame) -> str:
    return "".join(
        f"{q} Q0 {d} 1 {s!r} t\n"
        for q, d, s in zip(frame["query_id"], frame["doc_id"], frame["score"], strict=True)
    )


def test_a_glob_of_run_files_and_an_attributes_file_give_the_same_summary(tmp_path):
    """An arm split over two TREC files (a glob, which engine duckdb reads as one ranking)
    scores as the whole file does on the memory engine; segments come from an attributes
    table."""
    rankings, judgments = generated(5)
    rankings = rankings[rankings["query_id"].isin(judgments["query_id"])]
    (tmp_path / "parts").mkdir()
    first = rankings["query_id"] < "q4"
    write(tmp_path / "parts" / "a-1.txt", _trec_lines(rankings[first]))
    write(tmp_path / "parts" / "a-2.txt", _trec_lines(rankings[~first]))
    write(tmp_path / "a.txt", _trec_lines(rankings))
    write(tmp_path / "b.txt", _trec_lines(rankings.assign(score=-rankings["score"])))
    write(
        tmp_path / "q.qrels",
        "".join(
            f"{q} 0 {d} {int(g)}\n"
            for q, d, g in zip(judgments["query_id"], judgments["doc_id"], judgments["relevance"])
        ),
    )
    queries = sorted(set(judgments["query_id"]))
    pd.DataFrame(
        {"query_id": queries, "kind": ["long" if len(q) > 4 else "short" for q in queries]}
    ).to_csv(tmp_path / "attributes.csv", index=False)
    segments = "segments: {columns: [kind], min_queries: 5, attributes: {path: attributes.csv}}\n"
    whole = _experiment(tmp_path, "a.txt", "b.txt", "q.qrels", segments)
    memory = run_experiment(whole)
    split = tmp_path / "split.yaml"
    split.write_text(whole.read_text().replace("path: a.txt", "path: parts/a-*.txt"))
    sql = run_experiment(split, engine="duckdb")
    assert any(c["segment"] for c in sql.summary["comparisons"])
    inputs = sql.summary.pop("inputs")
    assert [i["path"].rsplit("/", 1)[-1] for i in inputs[:2]] == ["a-1.txt", "a-2.txt"]
    memory.summary.pop("inputs")
    sql.summary.pop("config_path")
    memory.summary.pop("config_path")
    assert_same_summary(memory.summary, sql.summary)


def test_no_queries_in_common_is_a_data_error(tmp_path):
    write(tmp_path / "a.txt", "1 Q0 a 1 2.0 t\n")
    write(tmp_path / "b.txt", "1 Q0 b 1 2.0 t\n")
    write(tmp_path / "q.qrels", "9 0 a 1\n")
    config = _experiment(tmp_path, "a.txt", "b.txt", "q.qrels")
    with pytest.raises(DataError) as expected:
        run_experiment(config)
    with pytest.raises(DataError) as found:
        run_experiment(config, engine="duckdb")
    assert str(found.value) == str(expected.value)


def test_inline_labels_need_the_memory_engine(tmp_path):
    pd.DataFrame({"qid": ["1"], "docid": ["a"], "rank": [1], "relevance": [1]}).to_csv(
        tmp_path / "a.csv", index=False
    )
    config = tmp_path / "exp.yaml"
    config.write_text(
        "name: e\ncontrol: {name: a, path: a.csv}\ntreatments: [{name: b, path: a.csv}]\n"
        "metrics: [mrr@10]\n"
    )
    with pytest.raises(ConfigError, match="expected a judgments file for engine duckdb"):
        run_experiment(config, engine="duckdb")


# --------------------------------------------------------------------------- CLI


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def parse_output(text: str) -> dict[tuple[str, str], float]:
    rows = [line.split("\t") for line in text.strip().splitlines()]
    return {(m, q): float(v) for m, q, v in rows}


def test_metrics_cli_on_duckdb_prints_the_memory_engines_values(shared_data, capsys):
    dl = shared_data / "trec-dl-passage"
    args = [dl / "qrels.dl19-passage.txt", dl / "runs/dl19.bm25-flat.top100.txt"]
    args += ["-m", "ndcg@10", "mrr(rel=2)@10", "map", "bpref", "-q", "-c"]
    code, memory, _ = run_cli(capsys, "metrics", *args)
    assert code == 0
    code, sql, err = run_cli(capsys, "metrics", *args, "--engine", "duckdb")
    assert code == 0, err
    expected, got = parse_output(memory), parse_output(sql)
    assert list(got) == list(expected)
    assert all(abs(got[key] - expected[key]) < 1e-9 for key in expected)


def test_compare_cli_on_duckdb_gives_the_memory_engines_json(shared_data, capsys):
    dl = shared_data / "trec-dl-passage"
    args = [dl / "qrels.dl19-passage.txt", dl / "runs/dl19.bm25-flat.top100.txt"]
    args += [dl / "runs/dl19.bm25-flat.top100+rankvicuna-7b.txt", "-m", "ndcg@10", "mrr@10"]
    args += ["--json", "--resamples", "500"]
    code, memory, _ = run_cli(capsys, "compare", *args)
    assert code == 0
    code, sql, err = run_cli(capsys, "compare", *args, "--engine", "duckdb")
    assert code == 0, err
    assert_same_summary(json.loads(memory), json.loads(sql))


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        (("1 0 a 1\n", "1 Q0 a 1 x t\n"), ["-m", "mrr@10"], "line 1: score: expected a number"),
        (("1 0 a 1\n", "1 Q0 a 1\n"), ["-m", "mrr@10"], "expected at least 6 whitespace"),
        (("9 0 a 1\n", "1 Q0 a 1 1 t\n"), ["-m", "mrr@10"], "expected queries that are also in"),
        (("1 0 a 1\n", "1 Q0 a 1 1 t\n"), ["-m", "recip_rank"], "engine memory"),
        (("1 0 a 1\n", "1 Q0 a 1 1 t\n"), ["-m", "mrr@10", "--engine", "nosuch"], "nosuch"),
    ],
    ids=["bad-score", "few-fields", "no-common-query", "trec-eval-names", "unknown-engine"],
)
def test_bad_input_on_the_metrics_cli_exits_2(tmp_path, capsys, files, extra, message):
    qrels, run = write(tmp_path / "q.qrels", files[0]), write(tmp_path / "r.txt", files[1])
    engine = [] if "--engine" in extra else ["--engine", "duckdb"]
    code, out, err = run_cli(capsys, "metrics", qrels, run, *extra, *engine)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and out == ""


def test_bad_input_on_the_compare_cli_exits_2(tmp_path, capsys):
    qrels = write(tmp_path / "q.qrels", "1 0 a 1\n1 0 a 1\n")
    run = write(tmp_path / "r.txt", "1 Q0 a 1 1 t\n")
    code, _, err = run_cli(capsys, "compare", qrels, run, run, "-m", "mrr@10", "--engine", "duckdb")
    assert code == 2
    assert "expected one judgment per (query, doc) pair, got 1 repeated" in err


def test_kept_numbered_rows_score_the_same_and_give_each_judged_querys_top_rows():
    """Scoring with the numbered rows kept gives the values of scoring without; the kept
    rows give each judged query's top rows in trec_eval's order (score descending, ties
    by doc id descending), with their grades, worked out by hand here."""
    from abrank.engines.sql.duckdb import DuckDBBackend
    from abrank.engines.sql.judged import top_rows_sql

    rankings = pa.table(
        {
            "query_id": ["q1", "q1", "q1", "q1", "q2", "q2", "q3"],
            "doc_id": ["a", "b", "c", "d", "a", "b", "z"],
            "score": [1.0, 3.0, 3.0, 0.5, 2.0, 1.0, 9.0],
        }
    )
    judgments = pa.table(
        {
            "query_id": ["q1", "q1", "q2", "q4"],
            "doc_id": ["b", "d", "a", "x"],
            "relevance": [2.0, 1.0, 0.0, 1.0],
        }
    )
    metrics = ["mrr@10", "ndcg@3", "recall@2", "map"]
    backend = DuckDBBackend()
    try:
        backend.register_table("r", rankings)
        backend.register_table("j", judgments)
        plain = score_arm_sql(backend, "r", "j", metrics, complete=True)
        kept = score_arm_sql(backend, "r", "j", metrics, complete=True, keep="numbered")
        top = backend.run(compile_sql(top_rows_sql("numbered", "j", 2), "duckdb")).to_pylist()
    finally:
        backend.close()
    pd.testing.assert_frame_equal(plain.values, kept.values)
    assert plain.judged_at_k == kept.judged_at_k
    # q1: b and c tie at 3.0 (c first: doc id descending), then a; q3 is not judged
    assert top == [
        {"query_id": "q1", "doc_id": "c", "rank": 1, "grade": None},
        {"query_id": "q1", "doc_id": "b", "rank": 2, "grade": 2.0},
        {"query_id": "q2", "doc_id": "a", "rank": 1, "grade": 0.0},
        {"query_id": "q2", "doc_id": "b", "rank": 2, "grade": None},
    ]


@pytest.mark.parametrize("verb", ["run", "validate"])
def test_duplicates_first_counts_the_ranks_of_the_rows_kept_as_the_memory_engine(
    tmp_path, capsys, verb
):
    """A doubled row kept once by ``duplicates: first`` is no repeated rank (its later copy
    is dropped before ranks count), on DuckDB as in memory; a rank given to two kept rows
    is, with the memory engine's message, whether run finds it while numbering the rows
    or validate when opening them."""
    (tmp_path / "t.csv").write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,2\n")
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq1 0 b 0\n")
    config = tmp_path / "exp.yaml"
    config.write_text(
        "name: dupes\ncontrol: {name: c, path: c.csv}\ntreatments: [{name: t, path: t.csv}]\n"
        "judgments: {path: qrels.txt}\nmetrics: [mrr@10]\nduplicates: first\n"
        "analysis: {resamples: 100}\n"
    )
    control = tmp_path / "c.csv"

    def outcome(engine: str) -> tuple[int, str]:
        args = [verb, str(config), "--engine", engine]
        if verb == "run":
            args += ["--out", str(tmp_path / f"out-{engine}"), "--format", "json", "-q"]
        code = main(args)
        return code, capsys.readouterr().err

    control.write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq1,a,1\n")  # a doubled row
    assert outcome("memory")[0] == outcome("duckdb")[0] == 0
    control.write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq1,a,1\nq1,c,2\n")
    expected = (
        f"abrank: error: {control}: line 5: rank: expected each rank once per query, got rank "
        "2 again in query 'q1' (first at line 3)\n"
    )
    assert outcome("memory") == outcome("duckdb") == (2, expected)


def test_a_repeated_rank_in_parquet_rankings_is_named_on_duckdb_as_in_memory(tmp_path, capsys):
    """Found while the scoring numbers the rows (no pass of its own): the same message as
    the memory engine's, rows in any order."""
    pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q1", "q2", "q1"],
            "doc_id": ["a", "b", "c", "d", "e"],
            "rank": [2, 1, 1, 2, 2],
        }
    ).to_parquet(tmp_path / "c.parquet", index=False)
    pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "rank": [1, 1]}).to_parquet(
        tmp_path / "t.parquet", index=False
    )
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
    config = tmp_path / "exp.yaml"
    config.write_text(
        "name: ranks\ncontrol: {name: c, path: c.parquet}\n"
        "treatments: [{name: t, path: t.parquet}]\njudgments: {path: qrels.txt}\n"
        "metrics: [mrr@10]\nanalysis: {resamples: 100}\n"
    )
    expected = (
        f"abrank: error: {tmp_path / 'c.parquet'}: row 5: rank: expected each rank once per "
        "query, got rank 2 again in query 'q1' (first at row 1)\n"
    )
    for engine in ("memory", "duckdb"):
        out = str(tmp_path / f"out-{engine}")
        assert main(["run", str(config), "--engine", engine, "--out", out, "-q"]) == 2
        assert capsys.readouterr().err == expected
