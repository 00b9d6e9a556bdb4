"""``abrank metrics`` as a drop-in for trec_eval: its command lines, its names, its bytes.

The expected files of the shared data are trec_eval 9.0.8's own output (see its README for
the commands). Where a file holds only measures abrank computes, the whole file must come
out byte for byte; where it holds others too (``-m all_trec``, trec_eval's default set),
abrank's lines must equal that file's lines for the same measures, in the same order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_trec_eval_agreement import DL_HARD

from abrank.cli import main

# --------------------------------------------------------------------------- a tiny example

# Worked by hand from trec_eval's rules (see abrank/treceval.py):
#   q1 ranks b (grade 0), a (1), d (unjudged): first relevant at 2 -> recip_rank 0.5, P_2 1/2;
#      2 relevant judged (a, c), 1 retrieved; 3 retrieved
#   q2 ranks x (1), y (unjudged): recip_rank 1, P_2 1/2; 1 relevant, retrieved; 2 retrieved
#   q3 is judged but not run (-c scores it 0 and, as trec_eval 10 does, prints its rows: it
#      has 1 relevant judgment, z); q4 is run but not judged (ignored)
#   -c: num_q 3, means over 3 queries; num_rel's all row counts grades > 0 over every
#   judged query (a, c, x, z: 4); runid is the tag of the run file's last line
QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\nq3 0 z 1\n"
RUN = (
    "q1 Q0 b 1 3.0 sysA\nq1 Q0 a 2 2.0 sysA\nq1 Q0 d 3 1.0 sysA\n"
    "q2 Q0 x 1 5.0 sysA\nq2 Q0 y 2 4.0 sysA\nq4 Q0 w 1 1.0 sysB\n"
)
EXPECTED = (
    "num_ret               \tq1\t3\n"
    "num_rel               \tq1\t2\n"
    "num_rel_ret           \tq1\t1\n"
    "recip_rank            \tq1\t0.5000\n"
    "P_2                   \tq1\t0.5000\n"
    "num_ret               \tq2\t2\n"
    "num_rel               \tq2\t1\n"
    "num_rel_ret           \tq2\t1\n"
    "recip_rank            \tq2\t1.0000\n"
    "P_2                   \tq2\t0.5000\n"
    "num_ret               \tq3\t0\n"
    "num_rel               \tq3\t1\n"
    "num_rel_ret           \tq3\t0\n"
    "recip_rank            \tq3\t0.0000\n"
    "P_2                   \tq3\t0.0000\n"
    "runid                 \tall\tsysB\n"
    "num_q                 \tall\t3\n"
    "num_ret               \tall\t5\n"
    "num_rel               \tall\t4\n"
    "num_rel_ret           \tall\t2\n"
    "recip_rank            \tall\t0.5000\n"
    "P_2                   \tall\t0.3333\n"
)
MEASURES = ["recip_rank", "P.2", "num_q", "num_ret", "num_rel", "num_rel_ret", "runid"]


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["metrics", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def m_options(names: list[str]) -> list[str]:
    return [token for name in names for token in ("-m", name)]


def test_trec_eval_layout_by_hand(tiny, capsys):
    qrels, run = tiny
    code, out, err = run_cli(capsys, "-q", "-c", *m_options(MEASURES), qrels, run)
    assert code == 0, err
    assert out == EXPECTED
    # without -c: q3 leaves the means and counts; num_rel sums the evaluated queries
    code, out, err = run_cli(capsys, *m_options(MEASURES), qrels, run)
    assert out == (
        "runid                 \tall\tsysB\n"
        "num_q                 \tall\t2\n"
        "num_ret               \tall\t5\n"
        "num_rel               \tall\t3\n"
        "num_rel_ret           \tall\t2\n"
        "recip_rank            \tall\t0.7500\n"
        "P_2                   \tall\t0.5000\n"
    )


@pytest.mark.parametrize(
    "form",
    [
        # trec_eval's own: options first, one value per -m
        ["-q", "-c", *m_options(MEASURES), "{qrels}", "{run}"],
        # attached values and grouped flags, as getopt allows
        ["-qc", *(f"-m{m}" for m in MEASURES), "{qrels}", "{run}"],
        # files in the middle, as getopt permutes them
        ["-q", "-m", "recip_rank", "{qrels}", "-c", "-m", "P.2", "{run}", "-m", "num_q"]
        + m_options(["num_ret", "num_rel", "num_rel_ret", "runid"]),
        # abrank's: files first, several names after one -m, long options
        ["{qrels}", "{run}", "-m", *MEASURES, "--per-query", "--complete"],
        # several names after one -m, files last
        ["--complete", "-q", "-m", *MEASURES, "{qrels}", "{run}"],
        # a comma list of names
        ["{qrels}", "{run}", "-m", ",".join(m for m in MEASURES if m != "P.2"), "-m", "P.2", "-qc"],
        ["{qrels}", "{run}", "--metric=recip_rank", "--met", "P.2", "-m", *MEASURES[2:], "-qc"],
    ],
)
def test_command_line_forms(tiny, capsys, form):
    qrels, run = tiny
    args = [a.format(qrels=qrels, run=run) for a in form]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert out == EXPECTED


def test_abrank_names_keep_abrank_layout_in_every_form(tiny, capsys):
    qrels, run = tiny
    # q1: relevant a at rank 2; q2: x at rank 1
    expected = "mrr@10\tall\t0.75\nprecision@2\tall\t0.5\n"
    for form in (
        [qrels, run, "-m", "mrr@10", "precision@2"],
        ["-m", "mrr@10", "precision@2", qrels, run],
        ["-m", "mrr@10", "-m", "precision@2", qrels, run],
        ["-m", "mrr@10,precision@2", qrels, run],
        ["-m", "mrr@10", "P.2", qrels, run],  # a trec_eval name among abrank's: abrank's layout
    ):
        code, out, err = run_cli(capsys, *form)
        assert (code, out) == (0, expected), (form, err)


def test_bare_families_take_trec_eval_default_cutoffs(tiny, capsys):
    qrels, run = tiny
    code, out, _ = run_cli(capsys, "-m", "P", "-m", "success", "-m", "ndcg_cut", qrels, run)
    names = [line.split("\t")[0].strip() for line in out.splitlines()]
    cutoffs = [5, 10, 15, 20, 30, 100, 200, 500, 1000]  # m_P.c, m_ndcg_cut.c
    assert names == (
        [f"P_{k}" for k in cutoffs]
        + [f"ndcg_cut_{k}" for k in cutoffs]
        + ["success_1", "success_5", "success_10"]
    )
    code, out, _ = run_cli(capsys, "-m", "recall", "-m", "map_cut", qrels, run)
    names = [line.split("\t")[0].strip() for line in out.splitlines()]
    assert names == [f"recall_{k}" for k in cutoffs] + [f"map_cut_{k}" for k in cutoffs]


def test_a_family_named_twice_keeps_its_first_cutoffs_and_says_so(tiny, capsys):
    qrels, run = tiny
    code, out, err = run_cli(capsys, "-m", "P.2", "-m", "P.10,1", "-m", "P", qrels, run)
    assert code == 0
    assert out == "P_2                   \tall\t0.5000\n"
    assert err == (
        "abrank: note: -m P.10,1 ignored: trec_eval keeps the first cutoffs given for P (-m P.2)\n"
    )


def test_trec_eval_names_on_tables_print_the_same(tiny, tmp_path, capsys):
    qrels, run = tiny
    (tmp_path / "qrels.csv").write_text(
        "query_id,doc_id,relevance\n" + QRELS.replace(" 0 ", ",").replace(" ", ",")
    )
    rows = [line.split() for line in RUN.splitlines()]
    (tmp_path / "run.csv").write_text(
        "query_id,doc_id,score\n" + "".join(f"{q},{d},{s}\n" for q, _, d, _, s, _ in rows)
    )
    names = [m for m in MEASURES if m != "runid"]
    _, from_trec, _ = run_cli(capsys, "-q", "-c", *m_options(names), qrels, run)
    code, from_tables, err = run_cli(
        capsys, "-q", "-c", *m_options(names), tmp_path / "qrels.csv", tmp_path / "run.csv"
    )
    assert code == 0, err
    assert from_tables == from_trec == EXPECTED.replace("runid                 \tall\tsysB\n", "")
    code, _, err = run_cli(capsys, "-m", "runid", tmp_path / "qrels.csv", tmp_path / "run.csv")
    assert code == 2
    assert "-m runid: expected a TREC run file (its sixth column names the run)" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "yaap"], "-m yaap: expected a trec_eval measure that abrank computes"),
        (["-m", "P.5,5"], "-m P.5,5: cutoffs: expected each cutoff once, got 5 twice"),
        (["-m", "P.0"], "-m P.0: cutoffs: expected whole numbers from 1 to 1000000 separated by commas"),
        (["-m", "ndcg_cut.2x"], "got '2x'"),
        (["-m", "utility.1,2"], "-m utility.1,2: parameters: expected 4 weights"),
        (["-m", "ndcg.1=x"], "-m ndcg.1=x: parameters: expected name=number pairs"),
        (["-m", "ndcg.-1=2"], "-m ndcg.-1=2: parameters: expected gains of grades 0 and above"),
        (["-m", "Rprec_mult.0.2,0.2"], "-m Rprec_mult.0.2,0.2: cutoffs: expected each cutoff once"),
        (["-m", "set_F.1,2"], "-m set_F.1,2: parameters: expected one number, got 2"),
        (["-m", "map.5"], "-m map.5: expected map without parameters, got '5'"),
        (["-m", "mrr", "--digits", "-1"], "--digits: expected a whole number from 0 to 17, got -1"),
        (["-m", "P.5", "-M", "0"], "--depth (-M): expected a whole number >= 1, got 0"),
        (["-m", "mrr", "-M", "-5"], "--depth (-M): expected a whole number >= 1, got -5"),
        (["-m", "mrr", "-l", "nan"], "--rel-level (-l): expected a number from -1000000 to 1000000, got nan"),
        (["-m", "mrr", "-l", "-inf"], "--rel-level (-l): expected a number from -1000000 to 1000000, got -inf"),
    ],
)
def test_bad_options_exit_2_with_one_line(tiny, capsys, args, message):
    qrels, run = tiny
    code, out, err = run_cli(capsys, *args, qrels, run)
    assert code == 2 and out == ""
    assert err.startswith("abrank: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_negative_digits_on_tables_is_bad_input_not_a_crash(tmp_path, capsys):
    (tmp_path / "q.csv").write_text("query_id,doc_id,relevance\nqb,D1,1\n")
    (tmp_path / "r.csv").write_text("query_id,doc_id,rank\nqb,D1,1\n")
    code, out, err = run_cli(
        capsys, tmp_path / "q.csv", tmp_path / "r.csv", "-m", "mrr", "--digits", "-1"
    )
    assert (code, out) == (2, "")
    assert err == "abrank: error: --digits: expected a whole number from 0 to 17, got -1\n"


def test_compare_takes_options_before_its_files(tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "a.txt").write_text(RUN)
    (tmp_path / "b.txt").write_text(RUN.replace("q1 Q0 b 1 3.0", "q1 Q0 b 1 0.5"))
    code = main(
        ["compare", "-m", "mrr@10", "ndcg@10", "--json", "--resamples", "100"]
        + [str(tmp_path / f) for f in ("qrels.txt", "a.txt", "b.txt")]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert '"metric": "mrr@10"' in out and '"metric": "ndcg@10"' in out


# --------------------------------------------------------------------------- whole files

DL_MEASURES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "ndcg_cut.5,10,20,100",
    "recip_rank",
    "recall.10,20,100",
    "map_cut.10,100",
    "P.10",
]
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


def whole_file_cases() -> list[tuple[str, list[str], str, str]]:
    """(expected file, options, qrels, run), paths relative to the shared data."""
    cases = []
    for run in DL_RUNS:
        qrels = f"trec-dl-passage/qrels.{run.split('.')[0]}-passage.txt"
        path = f"trec-dl-passage/runs/{run}.txt"
        for level in (1, 2):
            flags = ["-c", "-q"] + (["-l", "2"] if level == 2 else [])
            cases.append(
                (
                    f"trec-dl-passage/expected/{run}.l{level}.trec_eval.txt",
                    flags + m_options(DL_MEASURES),
                    qrels,
                    path,
                )
            )
            cases.append(
                (
                    f"trec-dl-passage/expected/{run}.mrr10.l{level}.trec_eval.txt",
                    flags + ["-M", "10", "-m", "recip_rank"],
                    qrels,
                    path,
                )
            )
    covid = "beir-trec-covid"
    for system in ("bm25-flat.top100", "splade-pp-ed.top100"):
        qrels = f"{covid}/qrels.beir-v1.0.0-trec-covid.test.txt"
        path = f"{covid}/runs/trec-covid.{system}.txt"
        cases.append(
            (
                f"{covid}/expected/trec-covid.{system}.l1.trec_eval.txt",
                ["-c", "-q", *m_options(DL_MEASURES)],
                qrels,
                path,
            )
        )
        cases.append(
            (
                f"{covid}/expected/trec-covid.{system}.mrr10.l1.trec_eval.txt",
                ["-c", "-q", "-M10", "-mrecip_rank"],
                qrels,
                path,
            )
        )
    for name in (
        "bm25-tuned",
        "bm25-tuned+t5-maxp",
        "bm25+rm3-tuned+t5-maxp",
        "ance-maxp",
        "ance-maxp+t5-maxp",
    ):
        path = f"codec/runs/document_{name}.run.gz"
        binary = ["-m", "recall.100,1000", "-m", "map", "-m", "ndcg_cut.10", "-m", "P.10"]
        binary += ["-m", "recip_rank", "-m", "num_q"]  # printed in trec_eval's order anyway
        cases.append(
            (
                f"codec/expected/document_{name}.binary-qrels.trec_eval.txt",
                ["-c", "-q", *binary],
                "codec/document_binary.qrels",
                path,
            )
        )
        cases.append(
            (
                f"codec/expected/document_{name}.ndcg-qrels.trec_eval.txt",
                ["-c", "-q", "-m", "ndcg_cut.10"],
                "codec/document_ndcg.qrels",
                path,
            )
        )
    return cases


@pytest.mark.parametrize(("expected", "options", "qrels", "run"), whole_file_cases())
def test_whole_trec_eval_files_byte_for_byte(shared_data, capsys, expected, options, qrels, run):
    code, out, err = run_cli(capsys, *options, shared_data / qrels, shared_data / run)
    assert code == 0, err
    assert out == (shared_data / expected).read_text()


# --------------------------------------------------------------------------- shared lines

# trec_eval 9's all_trec set but iprec_at_recall and 11pt_avg, which trec_eval 10 changed
# (and abrank follows 10); 10 adds rbp, rbp_resid and unj (compared with 10's own files in
# test_trec_eval_default_set.py)
ALL_TREC = [
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P",
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
]
OFFICIAL = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "recip_rank", "P"]


def shared_line_cases() -> list[tuple[str, list[str], str, str]]:
    cases = []
    for kind, name in DL_HARD:  # trec_eval -l 2 -o -c -M1000 -q -m all_trec
        folder = f"dl-hard/baselines/{kind}"
        cases.append(
            (
                f"{folder}/{name}.run.eval",
                ["-l", "2", "-c", "-M1000", "-q", *m_options(ALL_TREC)],
                f"dl-hard/dl_hard-{kind}.qrels",
                f"{folder}/{name}.run.gz",
            )
        )
    test, v9 = "trec_eval-tests/test", "trec_eval-tests/expected_v9.0.8"
    cases += [
        (f"{v9}/out.test", m_options(OFFICIAL), f"{test}/qrels.test", f"{test}/results.test"),
        (f"{v9}/out.test.a", m_options(ALL_TREC), f"{test}/qrels.test", f"{test}/results.test"),
        (
            f"{v9}/out.test.aq",
            ["-q", *m_options(ALL_TREC)],
            f"{test}/qrels.test",
            f"{test}/results.test",
        ),
        # trec_eval 10 prints the topics -c adds per query, 9 does not: the all rows
        (
            f"{v9}/out.test.aqc",
            ["-c", *m_options(ALL_TREC)],
            f"{test}/qrels.test",
            f"{test}/results.trunc",
        ),
        (
            f"{v9}/out.test.aqcM",
            ["-c", "-M100", *m_options(ALL_TREC)],
            f"{test}/qrels.test",
            f"{test}/results.trunc",
        ),
        (
            f"{v9}/out.test.aql",
            ["-q", "-l2", *m_options(ALL_TREC), "-mrelstring.20"],  # as trec_eval's Makefile
            f"{test}/qrels.rel_level",
            f"{test}/results.test",
        ),
        (  # ndcg_cut.23.4 (printed as ndcg_cut_23) is left out: abrank takes whole cutoffs
            f"{v9}/out.test.meas_params",
            ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-mndcg_cut.10,20", "-msuccess.2,5,20"],
            f"{test}/qrels.test",
            f"{test}/results.test",
        ),
        (
            f"{test}/out.comment.test",
            m_options(OFFICIAL),
            f"{test}/qrels.comment.test",
            f"{test}/results.comment.test.gz",
        ),
    ]
    return cases


@pytest.mark.parametrize(("expected", "options", "qrels", "run"), shared_line_cases())
def test_same_lines_as_trec_eval_for_the_measures_abrank_has(
    shared_data, capsys, expected, options, qrels, run
):
    code, out, err = run_cli(capsys, *options, shared_data / qrels, shared_data / run)
    assert code == 0, err
    ours = out.splitlines()
    printed = {line.split("\t")[0] for line in ours}
    theirs = [
        line
        for line in (shared_data / expected).read_text().splitlines()
        if line.split("\t")[0] in printed and ("-q" in options or "\tall\t" in line)
    ]
    if expected.endswith("passage/bm25+bert(zs).run.eval"):
        # the published file names the run T5-P; the run's own tag is BERT-P (data README)
        theirs = [
            line.replace("\tT5-P", "\tBERT-P") if line.startswith("runid") else line
            for line in theirs
        ]
    assert len(ours) > 10
    assert ours == theirs
