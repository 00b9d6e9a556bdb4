"""Agreement with trec_eval 9.0.8 on every run of the shared TREC data.

The expected files hold trec_eval's own output (``measure  qid  value``, 4 decimals); each
test re-computes the same measures with ``trec_eval_text`` from the same files and options
and checks every per-query value and every ``all`` mean to within the printed rounding.
Full double precision (1e-9) is checked against pytrec_eval (trec_eval's C code) when it is
installed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from abrank.engines.evaluate import evaluate
from abrank.io.trec import read_trec_qrels, read_trec_run
from abrank.treceval.output import trec_eval_text

# trec_eval measure name -> abrank metric name (None: not one of ours)
_MEASURE = re.compile(r"^(P|recall|ndcg_cut|map_cut|success)_(\d+)$")
_FAMILY = {
    "P": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "ap",
    "success": "hit",
}
_PLAIN = {"recip_rank": "mrr", "map": "map", "ndcg": "ndcg"}
HALF_UNIT = 5e-5 + 1e-12  # trec_eval prints %.4f


def ours(measure: str, mrr_cutoff: int | None = None) -> str | None:
    if measure == "recip_rank" and mrr_cutoff is not None:
        return f"mrr@{mrr_cutoff}"
    if measure in _PLAIN:
        return _PLAIN[measure]
    match = _MEASURE.match(measure)
    if match:
        return f"{_FAMILY[match.group(1)]}@{match.group(2)}"
    return None


def read_expected(path: Path, mrr_cutoff: int | None = None) -> tuple[dict, dict]:
    """Per-query values {metric: {qid: value}} and means {metric: value}; also num_q."""
    per_query: dict[str, dict[str, float]] = defaultdict(dict)
    means: dict[str, float] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        measure, qid, value = line.split()
        if measure == "num_q" and qid == "all":
            means["num_q"] = float(value)
        name = ours(measure, mrr_cutoff)
        if name is None:
            continue
        if qid == "all":
            means[name] = float(value)
        else:
            per_query[name][qid] = float(value)
    return dict(per_query), means


def parse_output(text: str) -> tuple[dict, dict]:
    per_query: dict[str, dict[str, float]] = defaultdict(dict)
    means: dict[str, float] = {}
    for line in text.splitlines():
        measure, qid, value = line.split("\t")
        if qid == "all":
            means[measure] = float(value)
        else:
            per_query[measure][qid] = float(value)
    return dict(per_query), means


def check(
    expected_path: Path,
    qrels: Path,
    run: Path,
    *,
    complete: bool,
    rel_level: float = 1,
    depth: int | None = 1000,
    mrr_cutoff: int | None = None,
    strict_queries: bool = True,
) -> int:
    """Compare every value; returns how many values were compared."""
    expected_q, expected_all = read_expected(expected_path, mrr_cutoff)
    names = sorted(set(expected_q) | (set(expected_all) - {"num_q"}))
    assert names, f"no comparable measures in {expected_path.name}"
    text = trec_eval_text(
        qrels, run, names, per_query=True, complete=complete, rel_level=rel_level, depth=depth
    )
    got_q, got_all = parse_output(text)
    compared = 0
    for name in names:
        for qid, value in expected_q.get(name, {}).items():
            assert abs(got_q[name][qid] - value) <= HALF_UNIT, (expected_path.name, name, qid)
            compared += 1
        if strict_queries and expected_q.get(name):
            # trec_eval 9 does not print queries that -c adds, so only compare without -c
            extra = set(got_q[name]) - set(expected_q.get(name, {}))
            assert not extra or complete, (expected_path.name, name, sorted(extra)[:5])
        assert abs(got_all[name] - expected_all[name]) <= HALF_UNIT, (expected_path.name, name)
        compared += 1
    if "num_q" in expected_all and not complete:
        assert len(got_q[names[0]]) == expected_all["num_q"]
    return compared


# --------------------------------------------------------------------------- TREC DL 2019/20

DL_RUNS = [
    f"{year}.{system}"
    for year in ("dl19", "dl20")
    for system in (
        "bm25-flat.top100",
        "bm25-flat.top100+rankvicuna-7b",
        "splade-pp-ed.top100",
        "splade-pp-ed.top100+rankvicuna-7b",
    )
]


@pytest.mark.parametrize("run", DL_RUNS)
@pytest.mark.parametrize("level", [1, 2])
def test_trec_dl_runs_agree(shared_data, run, level):
    base = shared_data / "trec-dl-passage"
    qrels = base / f"qrels.{run.split('.')[0]}-passage.txt"
    n = check(
        base / "expected" / f"{run}.l{level}.trec_eval.txt",
        qrels,
        base / "runs" / f"{run}.txt",
        complete=True,
        rel_level=level,
    )
    assert n > 400
    check(
        base / "expected" / f"{run}.mrr10.l{level}.trec_eval.txt",
        qrels,
        base / "runs" / f"{run}.txt",
        complete=True,
        rel_level=level,
        mrr_cutoff=10,
    )


def test_published_dl19_and_covid_figures(shared_data):
    """Anserini / Pyserini / rank_llm figures, reproduced from the files."""
    dl = shared_data / "trec-dl-passage"
    covid = shared_data / "beir-trec-covid"

    def mean(qrels, run, metric, **options):
        text = trec_eval_text(qrels, run, [metric], complete=True, digits=4, **options)
        return text.strip().split("\t")[-1]

    qrels19 = dl / "qrels.dl19-passage.txt"
    assert mean(qrels19, dl / "runs/dl19.bm25-flat.top100.txt", "ndcg@10") == "0.5058"
    assert mean(qrels19, dl / "runs/dl19.bm25-flat.top100+rankvicuna-7b.txt", "ndcg@10") == "0.6682"
    assert (
        mean(qrels19, dl / "runs/dl19.bm25-flat.top100.txt", "recall@100", rel_level=2) == "0.4910"
    )
    assert (
        mean(qrels19, dl / "runs/dl19.bm25-flat.top100+rankvicuna-7b.txt", "ap@100", rel_level=2)
        == "0.3316"
    )
    assert mean(qrels19, dl / "runs/dl19.bm25-flat.top100.txt", "mrr", rel_level=2) == "0.7036"
    assert mean(qrels19, dl / "runs/dl19.bm25-flat.top100.txt", "mrr") == "0.8245"
    covid_qrels = covid / "qrels.beir-v1.0.0-trec-covid.test.txt"
    assert (
        mean(covid_qrels, covid / "runs/trec-covid.splade-pp-ed.top100.txt", "ndcg@10") == "0.7274"
    )
    assert mean(covid_qrels, covid / "runs/trec-covid.bm25-flat.top100.txt", "ndcg@10") == "0.5947"


def test_file_order_would_give_the_wrong_covid_figure(shared_data):
    """The tie trap: ranking SPLADE++ by file position gives 0.7282, trec_eval's rule 0.7274."""
    covid = shared_data / "beir-trec-covid"
    run = read_trec_run(covid / "runs/trec-covid.splade-pp-ed.top100.txt")
    judgments = read_trec_qrels(covid / "qrels.beir-v1.0.0-trec-covid.test.txt")
    by_rule = evaluate(run, judgments, ["ndcg@10"])["ndcg@10"].mean()
    # the file's own rank column (file order) instead of trec_eval's order
    raw = [
        line.split()
        for line in (covid / "runs/trec-covid.splade-pp-ed.top100.txt").read_text().splitlines()
    ]
    import pandas as pd

    by_file = pd.DataFrame(
        {
            "query_id": [r[0] for r in raw],
            "doc_id": [r[2] for r in raw],
            "rank": [int(r[3]) for r in raw],
        }
    )
    file_order = evaluate(by_file, judgments, ["ndcg@10"])["ndcg@10"].mean()
    assert f"{by_rule:.4f}" == "0.7274"
    assert f"{file_order:.4f}" == "0.7282"


# --------------------------------------------------------------------------- BEIR TREC-COVID


@pytest.mark.parametrize("system", ["bm25-flat.top100", "splade-pp-ed.top100"])
def test_trec_covid_runs_agree(shared_data, system):
    base = shared_data / "beir-trec-covid"
    qrels = base / "qrels.beir-v1.0.0-trec-covid.test.txt"
    run = base / "runs" / f"trec-covid.{system}.txt"
    check(base / "expected" / f"trec-covid.{system}.l1.trec_eval.txt", qrels, run, complete=True)
    check(
        base / "expected" / f"trec-covid.{system}.mrr10.l1.trec_eval.txt",
        qrels,
        run,
        complete=True,
        mrr_cutoff=10,
    )


# --------------------------------------------------------------------------- DL-HARD

DL_HARD = [
    ("passage", name)
    for name in (
        "bm25",
        "bm25+rm3",
        "bm25+bert(zs)",
        "bm25+t5(zs)",
        "bm25+rm3+bert(zs)",
        "bm25+rm3+t5(zs)",
    )
] + [
    ("doc", f"{first}{second}")
    for first in ("bm25", "bm25+rm3")
    for second in (
        "",
        "+bert-mp(zs)",
        "+bert-mp",
        "+electra-mp",
        "+parade-bert",
        "+parade-electra",
        "+t5-mp(zs)",
    )
]


@pytest.mark.parametrize(("kind", "name"), DL_HARD)
def test_dl_hard_published_per_query_output(shared_data, kind, name):
    """``trec_eval -l 2 -c -M1000 -q -m all_trec``: ties, 0-based ranks, 1,000 hits."""
    base = shared_data / "dl-hard"
    n = check(
        base / "baselines" / kind / f"{name}.run.eval",
        base / f"dl_hard-{kind}.qrels",
        base / "baselines" / kind / f"{name}.run.gz",
        complete=True,
        rel_level=2,
        depth=1000,
    )
    assert n > 2000


# --------------------------------------------------------------------------- CODEC


@pytest.mark.parametrize(
    "name",
    [
        "bm25-tuned",
        "bm25-tuned+t5-maxp",
        "bm25+rm3-tuned+t5-maxp",
        "ance-maxp",
        "ance-maxp+t5-maxp",
    ],
)
def test_codec_runs_agree(shared_data, name):
    """String query ids (``economics-1``), negative scores, ties at rank 1."""
    base = shared_data / "codec"
    run = base / "runs" / f"document_{name}.run.gz"
    check(
        base / "expected" / f"document_{name}.binary-qrels.trec_eval.txt",
        base / "document_binary.qrels",
        run,
        complete=True,
    )
    check(
        base / "expected" / f"document_{name}.ndcg-qrels.trec_eval.txt",
        base / "document_ndcg.qrels",
        run,
        complete=True,
    )


def test_codec_rm3_run_with_duplicates_matches_published_row_once_deduplicated(shared_data):
    base = shared_data / "codec"
    run = read_trec_run(base / "runs/document_bm25+rm3-tuned.run.gz", duplicates="first")
    ndcg = evaluate(run, read_trec_qrels(base / "document_ndcg.qrels"), ["ndcg@10"])
    binary = evaluate(run, read_trec_qrels(base / "document_binary.qrels"), ["map", "recall@1000"])
    assert f"{ndcg['ndcg@10'].mean():.4f}" == "0.3272"
    assert f"{binary['map'].mean():.4f}" == "0.2333"
    assert f"{binary['recall@1000'].mean():.4f}" == "0.8004"


# --------------------------------------------------------------------------- trec_eval's tests


def _te(shared_data) -> tuple[Path, Path]:
    base = shared_data / "trec_eval-tests"
    return base / "test", base / "expected_v9.0.8"


def test_trec_eval_suite_all_trec_per_query(shared_data):
    """out.test.aq: scrambled rank column, tab- and space-padded run lines."""
    test, expected = _te(shared_data)
    check(expected / "out.test.aq", test / "qrels.test", test / "results.test", complete=False)


def test_trec_eval_suite_long_segment_ids_and_unjudged_run_topics(shared_data):
    """out.comment.test: MS MARCO v2.1 segment ids (hashed keys); of the run's 301 topics
    only the 31 judged ones count."""
    test, _ = _te(shared_data)
    check(
        test / "out.comment.test",
        test / "qrels.comment.test",
        test / "results.comment.test.gz",
        complete=False,
    )


def test_trec_eval_suite_complete_flag(shared_data):
    """out.test.aqc: -c, one judged topic missing from the run scores 0 in the means."""
    test, expected = _te(shared_data)
    check(expected / "out.test.aqc", test / "qrels.test", test / "results.trunc", complete=True)


def test_trec_eval_suite_depth_100(shared_data):
    """out.test.aqcM: -M100 keeps the first 100 documents of each topic."""
    test, expected = _te(shared_data)
    check(
        expected / "out.test.aqcM",
        test / "qrels.test",
        test / "results.trunc",
        complete=True,
        depth=100,
    )


def test_trec_eval_suite_graded_levels_and_negative_grades(shared_data):
    """out.test.aql: -l2 on grades -1..4."""
    test, expected = _te(shared_data)
    check(
        expected / "out.test.aql",
        test / "qrels.rel_level",
        test / "results.test",
        complete=False,
        rel_level=2,
    )


def test_trec_eval_suite_odd_cutoffs(shared_data):
    """out.test.meas_params: P_3, P_7, recall_2000 beyond the run, success_2/5/20."""
    test, _ = _te(shared_data)
    path = test / "out.test.meas_params"
    expected_q, expected_all = read_expected(path)
    wanted = [name for name in expected_all if name.startswith(("precision@", "recall@", "hit@"))]
    assert {"precision@3", "precision@7", "recall@2000", "hit@2", "hit@20"} <= set(wanted)
    text = trec_eval_text(test / "qrels.test", test / "results.test", wanted, per_query=True)
    got_q, got_all = parse_output(text)
    for name in wanted:
        assert abs(got_all[name] - expected_all[name]) <= HALF_UNIT, name
        for qid, value in expected_q[name].items():
            assert abs(got_q[name][qid] - value) <= HALF_UNIT, (name, qid)


def test_queries_without_relevant_documents_score_zero_and_count(shared_data):
    """At -l 3 some DL19 queries have no relevant judgment: trec_eval scores them 0 and
    keeps them in the mean; evaluate() leaves them undefined (NaN)."""
    dl = shared_data / "trec-dl-passage"
    qrels = read_trec_qrels(dl / "qrels.dl19-passage.txt")
    run = read_trec_run(dl / "runs/dl19.bm25-flat.top100.txt")
    best = qrels.groupby("query_id")["relevance"].max()
    empty = set(best[best < 3].index)
    assert empty  # the collection does have such queries at this threshold
    table = evaluate(run, qrels, ["mrr", "recall@100", "precision@10"], rel_level=3)
    assert table.loc[sorted(empty), "mrr"].isna().all()
    # undefined per metric: no document reaches grade 3, so no ranking could score P@10 > 0
    assert table.loc[sorted(empty), "precision@10"].isna().all()
    text = trec_eval_text(
        dl / "qrels.dl19-passage.txt",
        dl / "runs/dl19.bm25-flat.top100.txt",
        ["mrr"],
        per_query=True,
        rel_level=3,
    )
    got_q, got_all = parse_output(text)
    assert all(got_q["mrr"][q] == 0.0 for q in empty)
    assert len(got_q["mrr"]) == 43
    assert got_all["mrr"] == pytest.approx(table["mrr"].fillna(0).sum() / 43, abs=1e-15)


# --------------------------------------------------------------------------- full precision


def _full_precision_cases() -> list[tuple[str, str, int]]:
    """Every run of the shared data with its qrels and the threshold its collection uses."""
    cases = []
    for run in DL_RUNS:
        year = run.split(".")[0]
        for level in (1, 2):
            cases.append(
                (
                    f"trec-dl-passage/qrels.{year}-passage.txt",
                    f"trec-dl-passage/runs/{run}.txt",
                    level,
                )
            )
    for system in ("bm25-flat.top100", "splade-pp-ed.top100"):
        cases.append(
            (
                "beir-trec-covid/qrels.beir-v1.0.0-trec-covid.test.txt",
                f"beir-trec-covid/runs/trec-covid.{system}.txt",
                1,
            )
        )
    for kind, name in DL_HARD:
        cases.append(
            (f"dl-hard/dl_hard-{kind}.qrels", f"dl-hard/baselines/{kind}/{name}.run.gz", 2)
        )
    for name in (
        "bm25-tuned",
        "bm25-tuned+t5-maxp",
        "bm25+rm3-tuned",
        "bm25+rm3-tuned+t5-maxp",
        "ance-maxp",
        "ance-maxp+t5-maxp",
    ):
        for qrels in ("document_binary.qrels", "document_ndcg.qrels"):
            cases.append((f"codec/{qrels}", f"codec/runs/document_{name}.run.gz", 1))
    tests = "trec_eval-tests/test"
    cases += [
        (f"{tests}/qrels.test", f"{tests}/results.test", 1),
        (f"{tests}/qrels.test", f"{tests}/results.trunc", 1),
        (f"{tests}/qrels.rel_level", f"{tests}/results.test", 2),
        (f"{tests}/qrels.comment.test", f"{tests}/results.comment.test.gz", 1),
    ]
    return cases


FULL_PRECISION = _full_precision_cases()


@pytest.mark.parametrize(("qrels", "run", "level"), FULL_PRECISION)
def test_full_precision_against_trec_eval_c_code(shared_data, qrels, run, level):
    """Per-query agreement to 1e-9 with pytrec_eval, which runs trec_eval's own C code."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    judgments = read_trec_qrels(shared_data / qrels)
    # the CODEC RM3 run holds 3 duplicate pairs; a dict keeps one score per document too
    ranking = read_trec_run(shared_data / run, duplicates="first")
    qrel_dict: dict = defaultdict(dict)
    for q, d, g in judgments.itertuples(index=False):
        qrel_dict[q][d] = int(g)
    run_dict: dict = defaultdict(dict)
    for q, d, s in ranking[["query_id", "doc_id", "score"]].itertuples(index=False):
        run_dict[q][d] = float(s)
    measures = {
        "recip_rank",
        "map",
        "ndcg",
        "ndcg_cut.5,10,100",
        "P.5,10",
        "recall.10,100",
        "map_cut.10,100",
        "success.1,10",
    }
    reference = pytrec_eval.RelevanceEvaluator(dict(qrel_dict), measures, relevance_level=level)
    expected = reference.evaluate(dict(run_dict))
    names = {"recip_rank": "mrr", "map": "map", "ndcg": "ndcg"}
    for te_name in next(iter(expected.values())):
        if te_name not in names:
            names[te_name] = ours(te_name)
    table = evaluate(ranking, judgments, list(names.values()), rel_level=level).fillna(0.0)
    assert set(table.index) == set(expected)
    compared = 0
    for qid, values in expected.items():
        for te_name, value in values.items():
            assert abs(table.at[qid, names[te_name]] - value) <= 1e-9, (qid, te_name)
            compared += 1
    assert compared >= 13 * len(expected)
