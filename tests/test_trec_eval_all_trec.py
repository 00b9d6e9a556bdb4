"""trec_eval 10's all_trec measures beyond the default set: worked by hand on a tiny run,
and against slow, obvious per-query loops on random graded judgments (the whole files of
trec_eval's own test suite are compared in test_trec_eval_default_set.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank.cli import main
from abrank.engines.memory import prepare
from abrank.treceval import all_trec

# q1 ranks b (grade 0), a (2), d (not in the qrels), e (-1: in the pool, unjudged), c (1);
# f (1) is judged but not retrieved. At -l 1: a, c, f are relevant (R = 3).
QRELS = "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq1 0 e -1\nq1 0 f 1\n"
RUN = "q1 Q0 b 1 5 s\nq1 Q0 a 2 4 s\nq1 Q0 d 3 3 s\nq1 Q0 e 4 2 s\nq1 Q0 c 5 1 s\n"
L2, L3, L5, L6 = math.log2(2), math.log2(3), math.log2(5), math.log2(6)
EPS = 0.00001
IDEAL = 2 / L2 + 1 / L3 + 1 / math.log2(4)  # ideal gains 2, 1, 1
BY_HAND = {
    # a at j=1 (1 judged nonrelevant above); c at j=4 (a, b and e above; d, outside the
    # pool, is left out): 1/5 + 4/5 x 3/4 x (1+e)/(2+2e)
    "infAP": (0.5 + 0.5 * 1.0 * (EPS / (1 + 2 * EPS)) + 0.2 + 0.8 * 0.75 * 0.5) / 3,
    "Rprec_mult_0.20": 0.0,  # floor(0.6 + 0.9) = 1 document: b
    "Rprec_mult_1.00": 1 / 3,  # 3 documents: a
    "Rprec_mult_2.00": 2 / 6,  # 6 documents, past the 5 retrieved
    "utility": 2 * 1.0 - 3 * 1.0,  # 2 relevant retrieved, 3 others
    "binG": (1 / math.log2(2 + 1) + 1 / math.log2(2 + 3)) / 3,
    # cost: the ideal gains 2, 1, 1 then 1 per place; gained: 2 at a, 3 at c
    "G": (2 / math.log2(2 + 3 - 2) + 1 / math.log2(2 + 6 - 3)) / 4,
    "ndcg": (2 / L3 + 1 / L6) / IDEAL,
    # a: its DCG over the ideal's at 2 places; c and the missed f: the final DCG over IDCG
    "ndcg_rel": ((2 / L3) / (2 + 1 / L3) + 2 * (2 / L3 + 1 / L6) / IDEAL) / 3,
    # the ideal gain changes after place 1 (2 -> 1) and after 3 (the end); the run goes on
    # past place 4, so its final ndcg counts too
    "Rndcg": (0.0 + (2 / L3) / IDEAL + (2 / L3 + 1 / L6) / IDEAL) / 3,
    "relative_P_5": 2 / 3,
    "set_relative_P": 2 / 3,
    "set_map": 4 / 15,
    "set_F": 2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3),
    # gains 0, 1, 2 leave [0, 1]: rescaled to g / 2
    "rbp": 0.1 * (1.0 * 0.9 + 0.5 * 0.9**4),
    "rbp_resid": 0.9**5 + 0.1 * (0.9**2 + 0.9**3),  # d and e are unjudged
    "unj_5": 2 / 5,
    "unj_10": 2 / 10,
}


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["metrics", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def hand(tmp_path):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return tmp_path / "qrels", tmp_path / "run"


def test_all_trec_measures_by_hand(hand, capsys):
    names = [
        "infAP",
        "Rprec_mult",
        "utility",
        "binG",
        "G",
        "ndcg",
        "ndcg_rel",
        "Rndcg",
        "relative_P.5",
        "set_relative_P",
        "set_map",
        "set_F",
        "rbp",
        "rbp_resid",
        "unj.5,10",
        "relstring",
    ]
    options = [token for name in names for token in ("-m", name)]
    code, out, err = run_cli(capsys, "-q", "--digits", "12", *options, *hand)
    assert code == 0, err
    got = {}
    for line in out.splitlines():
        name, query, value = line.split("\t")
        got[(name.strip(), query)] = value
    for name, value in BY_HAND.items():
        assert float(got[(name, "q1")]) == pytest.approx(value, abs=1e-11), name
        assert got[(name, "all")] == got[(name, "q1")]
    # relstring: grade digits, '-' outside the pool, '.' in it unjudged; no all row
    assert got[("relstring", "q1")] == "'02-.1'"
    assert ("relstring", "all") not in got


def test_parameters_by_hand(hand, capsys):
    options = ["-mutility.2,-1,0,0", "-mndcg.2=1,1=4", "-mrbp.p=0.5", "-mrelstring.3"]
    options += ["-mset_F.0.5", "-mRprec_mult.0.5"]
    code, out, err = run_cli(capsys, "-q", "--digits", "12", *options, *hand)
    assert code == 0, err
    got = {line.split("\t")[0].strip(): line.split("\t")[2] for line in out.splitlines()}
    assert float(got["utility_2,-1,0,0"]) == 2 * 2 - 3
    # gains a 1, c and f 4: ideal 4, 4, 1
    ideal = 4 / L2 + 4 / L3 + 1 / math.log2(4)
    assert float(got["ndcg_2=1,1=4"]) == pytest.approx((1 / L3 + 4 / L6) / ideal, abs=1e-11)
    # gains 0, 1, 2: rescaled to g / 2; p = 0.5
    assert float(got["rbp_p=0.5"]) == pytest.approx(0.5 * (1.0 * 0.5 + 0.5 * 0.5**4), abs=1e-11)
    assert got["relstring_3"] == "'02-'"
    p, r = 2 / 5, 2 / 3
    assert float(got["set_F_0.5"]) == pytest.approx(1.5 * p * r / (0.5 * p + r), abs=1e-11)
    assert float(got["Rprec_mult_0.50"]) == pytest.approx(1 / 2, abs=1e-11)  # 2 documents


# --------------------------------------------------------------------------- slow loops

NONPOOL, UNJUDGED = "-", "."


def _lists(ranking: list, judged: list[float], levels: dict[int, float]):
    """Gains of a ranking's places and its ideal gains (positive, largest first)."""

    def gain(label) -> float:
        if label in (NONPOOL, UNJUDGED):
            return 0.0
        return levels.get(int(label), float(label)) if label == int(label) else float(label)

    ideal = sorted((gain(g) for g in judged if g >= 0 and gain(g) > 0), reverse=True)
    return [gain(x) for x in ranking], ideal


def slow_infap(ranking, judged, t):
    big_r = sum(g >= t for g in judged)
    rel = non = unj = 0
    total = 0.0
    for j, label in enumerate(ranking):
        if label == NONPOOL:
            continue
        if label == UNJUDGED:
            unj += 1
        elif label < t:
            non += 1
        else:
            if j == 0:
                total += 1.0
            else:
                est = (rel + EPS) / (rel + non + 2 * EPS)
                total += 1 / (j + 1) + (j / (j + 1)) * ((rel + non + unj) / j) * est
            rel += 1
    return total / big_r if big_r else 0.0


def slow_g(ranking, judged, levels):
    gains, ideal = _lists(ranking, judged, levels)
    total, gained, cost = 0.0, 0.0, 0.0
    for i, g in enumerate(gains):
        gained += g
        cost += max(ideal[i], 1.0) if i < len(ideal) else 1.0
        if g:
            total += g / math.log2(2 + cost - gained)
    return total / sum(ideal) if sum(ideal) > 0 else 0.0


def _dcg(gains, upto):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[: upto + 1]) if g)


def slow_ndcg_rel(ranking, judged, levels):
    gains, ideal = _lists(ranking, judged, levels)
    if not ideal:
        return 0.0
    total, matched = 0.0, 0
    for i, g in enumerate(gains):
        if g > 0:
            total += _dcg(gains, i) / _dcg(ideal, min(i, len(ideal) - 1))
            matched += 1
    total += (len(ideal) - matched) * _dcg(gains, len(gains)) / _dcg(ideal, len(ideal))
    return total / len(ideal) if total > 0 else 0.0


def slow_rndcg(ranking, judged, levels, t):
    gains, ideal = _lists(ranking, judged, levels)
    if not any(g >= t for g in judged) or not ideal:
        return 0.0
    # ndcg just before each place where the ideal gain changes, the end of the list too
    ends = [i for i in range(1, len(ideal)) if ideal[i] != ideal[i - 1]] + [len(ideal)]
    values = [_dcg(gains, min(i - 1, len(gains) - 1)) / _dcg(ideal, i - 1) for i in ends]
    if len(gains) > len(ideal) + 1:
        values.append(_dcg(gains, len(gains)) / _dcg(ideal, len(ideal)))
    return sum(values) / len(values)


def slow_rbp(ranking, judged, levels, p):
    gains, _ = _lists(ranking, judged, levels)
    top = max((int(g) for g in judged if g >= 0), default=-1)
    every = [levels.get(lv, float(lv)) for lv in range(top + 1)]
    every += [g for lv, g in levels.items() if lv > top]
    low, high = min(every), max(every)
    if low < 0 or high > 1:
        gains = [
            (g - low) / (high - low) if x not in (NONPOOL, UNJUDGED) else 0.0
            for g, x in zip(gains, ranking, strict=True)
        ]
    return (1 - p) * sum(g * p**i for i, g in enumerate(gains))


def slow_rbp_resid(ranking, p):
    places = [i for i, x in enumerate(ranking) if x in (NONPOOL, UNJUDGED)]
    return p ** len(ranking) + (1 - p) * sum(p**i for i in places) if places else 0.0


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(12):
        docs = [f"d{i}" for i in range(int(rng.integers(0, 40)))]
        pool = rng.choice(60, size=int(rng.integers(1, 50)), replace=False)
        for d in pool:
            qrels.append((f"q{q}", f"d{d}", float(rng.choice([-1, 0, 0, 1, 2, 3, 4]))))
        for rank, doc in enumerate(docs, start=1):
            runs.append((f"q{q}", doc, rank))
    rankings = pd.DataFrame(runs, columns=["query_id", "doc_id", "rank"])
    judgments = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    return rankings, judgments


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("levels", "t", "p"),
    [({}, 1.0, 0.9), ({2: 0.5, 4: 7.0, 9: 3.0}, 2.0, 0.8), ({0: -1.0}, 1.0, 0.5)],
)
def test_vectorised_measures_equal_slow_loops(seed, levels, t, p):
    rankings, judgments = _random_case(seed)
    prep = prepare(rankings, judgments, None)
    ids = prep.ids.to_pylist()
    got = {
        "infAP": all_trec.inferred_ap(prep, t),
        "G": all_trec.gain_ratio(prep, levels),
        "ndcg_rel": all_trec.ndcg_rel(prep, levels),
        "Rndcg": all_trec.rndcg(prep, t, levels),
        "rbp": all_trec.rbp(prep, levels, p),
        "rbp_resid": all_trec.rbp_residual(prep, p),
    }
    for code, query in enumerate(ids):
        judged_rows = judgments[judgments.query_id == query]
        grade = dict(zip(judged_rows.doc_id, judged_rows.relevance, strict=True))
        docs = rankings[rankings.query_id == query].sort_values("rank").doc_id
        ranking = [
            NONPOOL if d not in grade else UNJUDGED if grade[d] < 0 else grade[d] for d in docs
        ]
        judged = list(grade.values())
        expected = {
            "infAP": slow_infap(ranking, judged, t),
            "G": slow_g(ranking, judged, levels),
            "ndcg_rel": slow_ndcg_rel(ranking, judged, levels),
            "Rndcg": slow_rndcg(ranking, judged, levels, t),
            "rbp": slow_rbp(ranking, judged, levels, p),
            "rbp_resid": slow_rbp_resid(ranking, p),
        }
        for name, value in expected.items():
            assert got[name][code] == pytest.approx(value, abs=1e-12), (name, query)


# --------------------------------------------------------------------------- rprec, infap

TEST = "trec_eval-tests/test"


def _per_query(path, name: str) -> dict[str, str]:
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    return {q: v for n, q, v in rows if n.strip() == name and q != "all"}


@pytest.mark.parametrize(
    ("expected", "qrels", "rel"),
    [("out.test.aq", "qrels.test", 1), ("out.test.aql", "qrels.rel_level", 2)],
)
def test_rprec_and_infap_families_equal_trec_eval_per_query(shared_data, expected, qrels, rel):
    from abrank.engines.evaluate import evaluate
    from abrank.io import read_judgments, read_rankings

    folder = shared_data / TEST
    table = evaluate(
        read_rankings(folder / "results.test"),
        read_judgments(folder / qrels),
        [f"rprec(rel={rel})", f"infap(rel={rel})", "Rprec", "infAP"],
        rel_level=rel,
        depth=None,
    )
    for ours, theirs in (("rprec", "Rprec"), ("infap", "infAP")):
        wanted = _per_query(folder / expected, theirs)
        assert len(wanted) == 3
        for query, value in wanted.items():
            assert f"{table.loc[query, f'{ours}(rel={rel})']:6.4f}" == value, (ours, query)
            assert table.loc[query, ours] == table.loc[query, f"{ours}(rel={rel})"]


def test_rprec_and_infap_by_hand_and_undefined_without_relevant(hand):
    from abrank.engines.evaluate import evaluate
    from abrank.io import read_judgments, read_rankings

    qrels, run = hand
    judgments = read_judgments(qrels)
    judgments.loc[len(judgments)] = ["q2", "x", 0.0]  # judged, nothing relevant
    table = evaluate(read_rankings(run), judgments, ["rprec", "infap"], complete=True)
    assert table.loc["q1", "rprec"] == pytest.approx(1 / 3)  # a among b, a, d
    assert table.loc["q1", "infap"] == pytest.approx(BY_HAND["infAP"])
    assert np.isnan(table.loc["q2", "rprec"]) and np.isnan(table.loc["q2", "infap"])


def test_rprec_and_infap_in_a_comparison(shared_data, capsys):
    import json

    folder = shared_data / TEST
    code = main(
        [
            "compare",
            str(folder / "qrels.test"),
            str(folder / "results.test"),
            str(folder / "results.trunc"),
            "-m",
            "rprec",
            "infap",
            "--json",
            "--resamples",
            "200",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    results = {r["metric"]: r for r in json.loads(out)}
    assert set(results) == {"rprec", "infap"}
    # trec_eval's means over the 3 topics: Rprec 0.2174, infAP 0.1785 (out.test.a)
    assert f"{results['rprec']['control_mean']:6.4f}" == "0.2174"
    assert f"{results['infap']['control_mean']:6.4f}" == "0.1785"


def test_a_config_naming_infap_validates_on_duckdb(tmp_path, capsys):
    pytest.importorskip("duckdb")
    data = Path(__file__).resolve().parent.parent / "experiments" / "data"
    (tmp_path / "exp.yaml").write_text(
        "name: infap-sql\n"
        f"control: {{name: a, path: {data / 'demo-control.csv.gz'}}}\n"
        "treatments:\n"
        f"  - {{name: b, path: {data / 'demo-treatment.jsonl.gz'}, "
        "columns: {query_id: qid, doc_id: doc, rank: pos}}\n"
        f"judgments: {{path: {data / 'demo-judgments.tsv'}}}\n"
        "metrics: [rprec, infap]\n"
    )
    code = main(["validate", str(tmp_path / "exp.yaml"), "--engine", "duckdb"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert main(["validate", str(tmp_path / "exp.yaml")]) == 0


# --------------------------------------------------------------------------- comments

# comments of 4 and 6 fields (a qrels' and a run's number): the readers' fast path parses
# them as lines; the trailing one would otherwise give runid
COMMENTED_QRELS = "#judged by NIST\n" + QRELS.replace("q1 0 c 1\n", "q1 0 c 1\n#x 0 y 1\n")
COMMENTED_RUN = "#q1 Q0 zz 1 9 other\n" + RUN + "#end of run, 6 fields here\n"


def test_comment_lines_are_left_out_as_trec_eval_10_does(hand, tmp_path, capsys):
    (tmp_path / "c.qrels").write_text(COMMENTED_QRELS)
    (tmp_path / "c.run").write_text(COMMENTED_RUN)
    options = ["-q", "-m", "all_trec"]
    code, plain, err = run_cli(capsys, *options, *hand)
    assert code == 0, err
    code, commented, err = run_cli(capsys, *options, tmp_path / "c.qrels", tmp_path / "c.run")
    assert code == 0, err
    assert commented == plain  # runid too: the tag of the last line that is not a comment
    assert "runid                 \tall\ts\n" in commented


def test_the_shared_qrels_with_comments_give_out_test(shared_data, tmp_path, capsys):
    folder = shared_data / TEST
    # (abrank tells formats by extension: the file is copied under a .qrels name)
    qrels = tmp_path / "with-comments.qrels"
    qrels.write_bytes((folder / "qrels.test.with-comments").read_bytes())
    assert qrels.read_text().startswith("#")
    code, out, err = run_cli(capsys, qrels, folder / "results.test")
    assert code == 0, err
    assert out == (folder / "out.test").read_text()


def test_comment_lines_on_duckdb(hand, tmp_path, capsys):
    pytest.importorskip("duckdb")
    (tmp_path / "c.qrels").write_text(COMMENTED_QRELS)
    (tmp_path / "c.run").write_text(COMMENTED_RUN)
    names = ["-m", "ndcg@10", "map", "rprec", "--per-query"]
    code, memory, err = run_cli(capsys, *names, *hand)
    assert code == 0, err
    files = [tmp_path / "c.qrels", tmp_path / "c.run"]
    code, duck, err = run_cli(capsys, "--engine", "duckdb", *names, *files)
    assert code == 0, err
    assert duck == memory
