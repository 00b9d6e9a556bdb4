"""trec_eval's default measure set (no -m, or -m official), -m all_trec, and -J.

The expected files are trec_eval 10's own output in the shared data (trec_eval's test
suite, ``trec_eval-tests/test``): ``out.test`` and ``out.comment.test`` are what
``trec_eval QRELS RUN`` prints, and ``out.test.aq`` what ``trec_eval -a -q`` prints.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from abrank.cli import main

TEST = "trec_eval-tests/test"


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["metrics", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("expected", "qrels", "run"),
    [
        ("out.test", "qrels.test", "results.test"),
        ("out.comment.test", "qrels.comment.test", "results.comment.test.gz"),
    ],
)
@pytest.mark.parametrize("options", [[], ["-m", "official"]])
def test_no_measure_prints_trec_eval_default_set(
    shared_data, capsys, expected, qrels, run, options
):
    folder = shared_data / TEST
    code, out, err = run_cli(capsys, *options, folder / qrels, folder / run)
    assert code == 0, err
    assert out.splitlines() == (folder / expected).read_text().splitlines()
    assert out == (folder / expected).read_text()


def _lines_of(path: Path, names: set[str]) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.split()[0] in names]


def test_per_query_default_set_equals_trec_eval_lines(shared_data, capsys):
    folder = shared_data / TEST
    code, out, err = run_cli(capsys, "-q", folder / "qrels.test", folder / "results.test")
    assert code == 0, err
    names = {line.split()[0] for line in (folder / "out.test").read_text().splitlines()}
    # trec_eval -a -q holds the default set's lines too, per query and then all
    expected = _lines_of(folder / "out.test.aq", names)
    assert out.splitlines() == expected
    assert len(expected) == 3 * 27 + 30  # gm_map, runid and num_q: the all rows only


# trec_eval 10's own test outputs, with the commands of its Makefile (data README, section 6)
ALL_TREC_FILES = [
    ("out.test.a", ["-m", "all_trec"], "qrels.test", "results.test"),
    ("out.test.aq", ["-m", "all_trec", "-q"], "qrels.test", "results.test"),
    # -c: the topic missing from results.trunc scores 0, and trec_eval 10 prints its rows
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc"),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100"], "qrels.test", "results.trunc"),
    # graded qrels (-1 .. 4), -l 2, and relstring's length given
    (
        "out.test.aql",
        ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"],
        "qrels.rel_level",
        "results.test",
    ),
    (
        "out.test.meas_params",
        [
            "-q",
            "-miprec_at_recall..10,.20,.25,.75,.50",
            "-m",
            "P.5,7,3",
            "-m",
            "recall.20,2000",
            "-m",
            "Rprec_mult.5.0,0.2,0.35",
            "-mutility.2,-1,0,0",
            "-m",
            "11pt_avg..25,.5,.75",
            "-mndcg.1=3,2=9,4=4.5",
            "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20",
        ],
        "qrels.test",
        "results.test",
    ),
]


@pytest.mark.parametrize(
    ("expected", "options", "qrels", "run"), ALL_TREC_FILES, ids=[c[0] for c in ALL_TREC_FILES]
)
def test_all_trec_equals_trec_eval_10_byte_for_byte(
    shared_data, capsys, expected, options, qrels, run
):
    folder = shared_data / TEST
    code, out, err = run_cli(capsys, *options, folder / qrels, folder / run)
    assert code == 0, err
    assert err == ""  # no measure of all_trec is left out
    theirs = (folder / expected).read_text()
    assert out.splitlines() == theirs.splitlines()
    assert out == theirs


@pytest.mark.parametrize("measure", ["prefs_simp", "yaap", "dcg", "map_avgjg"])
def test_a_trec_eval_measure_abrank_lacks_exits_2(shared_data, capsys, measure):
    folder = shared_data / TEST
    code, out, err = run_cli(capsys, "-m", measure, folder / "qrels.test", folder / "results.test")
    assert code == 2 and out == ""
    assert err.startswith(
        f"abrank: error: -m {measure}: expected a trec_eval measure that abrank computes "
        "(runid, num_q, num_ret, num_rel, num_rel_ret, map, gm_map, Rprec, bpref, recip_rank, "
        "iprec_at_recall, P, relstring, recall, infAP, gm_bpref, Rprec_mult, utility, "
        "11pt_avg, binG, G, ndcg, ndcg_rel, Rndcg, ndcg_cut, map_cut, relative_P, success, "
        "set_P, set_relative_P, set_recall, set_map, set_F, num_nonrel_judged_ret, rbp, "
        "rbp_resid, unj), got "
    )
    assert err.endswith(", which it does not\n")


def test_judged_only_is_the_run_without_its_unjudged_documents(shared_data, capsys, tmp_path):
    """trec_eval -J removes the unjudged documents before any measure: the same output as
    the run file with those lines deleted (the tie order of the rest is unchanged)."""
    folder = shared_data / TEST
    judged = {(q, d) for q, _, d, _ in (line.split() for line in (folder / "qrels.test").open())}
    kept = [
        line
        for line in (folder / "results.test").open()
        if (line.split()[0], line.split()[2]) in judged
    ]
    filtered = tmp_path / "judged.run"
    filtered.write_text("".join(kept))
    code, expected, _ = run_cli(capsys, "-q", folder / "qrels.test", filtered)
    assert code == 0
    code, out, err = run_cli(capsys, "-q", "-J", folder / "qrels.test", folder / "results.test")
    assert code == 0, err
    assert out == expected
    assert "num_ret               \tall\t738\n" in out  # of 1,500 retrieved, 738 judged


# --------------------------------------------------------------------------- by hand

# q1: qrels a, c, e relevant (R = 3), b not; run a b x c d (x, d unjudged)
# q2: qrels z relevant (R = 1); run y w z (y, w unjudged)
QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 1\nq1 0 e 1\nq2 0 z 1\n"
RUN = "".join(
    f"{q} Q0 {d} {r} {10 - r} hand\n"
    for q, docs in (("q1", "abxcd"), ("q2", "ywz"))
    for r, d in enumerate(docs, start=1)
)


@pytest.fixture
def hand(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return tmp_path / "qrels", tmp_path / "run"


def values(text: str) -> dict[tuple[str, str], str]:
    return {(n, q): v for n, q, v in (line.split("\t") for line in text.splitlines())}


def test_default_set_by_hand(hand, capsys):
    code, out, err = run_cli(capsys, "-q", *hand)
    assert code == 0, err
    got = values(out)

    def near(name, query, value):
        assert got[(f"{name:<22}", query)] == f"{value:6.4f}", (name, query)

    # Rprec: q1's top 3 (a b x) hold 1 of R = 3; q2's top 1 (y) none
    near("Rprec", "q1", 1 / 3)
    near("Rprec", "q2", 0.0)
    near("Rprec", "all", 1 / 6)
    # AP: q1 (1/1 + 2/4) / 3 = 0.5; q2 (1/3) / 1; gm_map their geometric mean
    near("map", "q1", 0.5)
    near("gm_map", "all", math.sqrt(0.5 / 3))
    assert ("gm_map                ", "q1") not in got  # trec_eval prints it for all only
    # bpref: q1 a has no nonrelevant above (1), c has b above: 1 - 1/min(1, 3) = 0; / R
    near("bpref", "q1", 1 / 3)
    near("bpref", "q2", 1.0)
    # iprec at recall level c needs round(c x R) relevant documents: q1 (R = 3) 0, 0, 1, 1,
    # 1, 2, 2, 2, 2, 3, 3 -> best precision at or below the 1st relevant 1.0, the 2nd 0.5,
    # the 3rd (not retrieved) 0; q2 (R = 1): 1/3 from the level 0.0 on
    q1 = [1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0]
    for i, value in enumerate(q1):
        near(f"iprec_at_recall_{i / 10:3.2f}", "q1", value)
        near(f"iprec_at_recall_{i / 10:3.2f}", "q2", 1 / 3)
        near(f"iprec_at_recall_{i / 10:3.2f}", "all", (value + 1 / 3) / 2)


def test_judged_only_by_hand(hand, capsys):
    code, out, err = run_cli(capsys, "-q", "-J", *hand)
    assert code == 0, err
    got = values(out)
    # q1 condensed: a b c; q2: z
    assert got[("num_ret               ", "q1")] == "3"
    assert got[("Rprec                 ", "q1")] == f"{2 / 3:6.4f}"
    assert got[("map                   ", "q2")] == "1.0000"
    assert got[("P_5                   ", "q1")] == f"{2 / 5:6.4f}"


def test_judged_only_with_abrank_names(hand, capsys):
    code, out, err = run_cli(capsys, "-J", "-m", "mrr", "-m", "judged@2", *hand)
    assert code == 0, err
    # q1 a first either way (1); q2 z first once y and w are gone (1); judged@2 unchanged
    assert out == "mrr(judged)\tall\t1.0\njudged@2\tall\t0.5\n"


def test_judged_only_negative_grades(tmp_path, capsys):
    """trec_eval -J reads a negative grade as "in the pool, not judged" and removes the
    document; abrank's judged-only metrics keep it, as judged@k counts it as judged."""
    (tmp_path / "qrels").write_text("q 0 neg -1\nq 0 r 1\n")
    (tmp_path / "run").write_text("q Q0 neg 1 2.0 s\nq Q0 r 2 1.0 s\n")
    files = (tmp_path / "qrels", tmp_path / "run")
    code, out, _ = run_cli(capsys, "-J", "-m", "recip_rank", "-m", "num_ret", *files)
    assert code == 0
    assert out == "num_ret               \tall\t1\nrecip_rank            \tall\t1.0000\n"
    code, out, _ = run_cli(capsys, "-J", "-m", "mrr", *files)
    assert code == 0
    assert out == "mrr(judged)\tall\t0.5\n"


def test_other_all_trec_measures_by_hand(hand, capsys):
    measures = ["11pt_avg", "set_P", "set_recall", "num_nonrel_judged_ret", "gm_bpref"]
    options = [token for m in measures for token in ("-m", m)]
    code, out, err = run_cli(capsys, "-q", *options, *hand)
    assert code == 0, err
    got = values(out)

    def shown(name, query):
        return got[(f"{name:<22}", query)]

    # 11pt_avg: the mean of q1's eleven iprec values above; q2's are all 1/3
    assert shown("11pt_avg", "q1") == f"{(5 * 1.0 + 4 * 0.5) / 11:6.4f}"
    assert shown("11pt_avg", "q2") == f"{1 / 3:6.4f}"
    # set_P: relevant retrieved / retrieved; set_recall: relevant retrieved / relevant
    assert (shown("set_P", "q1"), shown("set_P", "q2")) == ("0.4000", "0.3333")
    assert (shown("set_recall", "q1"), shown("set_recall", "q2")) == ("0.6667", "1.0000")
    # judged nonrelevant documents retrieved: b in q1; a count, summed in the all row
    assert (shown("num_nonrel_judged_ret", "q1"), shown("num_nonrel_judged_ret", "all")) == (
        "1",
        "1",
    )
    # gm_bpref: the geometric mean of bpref (1/3 and 1), all row only
    assert shown("gm_bpref", "all") == f"{math.sqrt(1 / 3):6.4f}"
    assert ("gm_bpref              ", "q1") not in got
