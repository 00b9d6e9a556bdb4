"""Bad input that once crashed or passed silently: each is now one clean message (exit 2)
naming the file and the line or field, or a warning in the readout and on the terminal."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

import numpy as np
import pytest
from test_cli import CONFIG, CONTROL, run_cli, write_experiment

from abrank.config import MAX_DEPTH, parse_experiment
from abrank.errors import ConfigError, DataError
from abrank.io import read_judgments, read_rankings


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    """The tiny experiment of test_cli: control, treatment, judgments and config."""
    return write_experiment(tmp_path)


def bad_run(capsys, config: Path, *args: str) -> str:
    """Run the CLI on a config that must be refused; return its one-line message."""
    code, out, err = run_cli(
        capsys, "run", config, "--out", config.parent / "out", "--quiet", *args
    )
    assert code == 2, err
    assert err.startswith("abrank: error: ") and err.count("\n") == 1, err
    assert out == "" and not (config.parent / "out").exists()
    return err


def deny_reading(monkeypatch, path: Path) -> None:
    """Make opening ``path`` fail as a file without read permission does (tests may run as
    root, whom chmod does not stop)."""
    denied = Path(path).resolve()
    real_open = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).resolve() == denied:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)  # pathlib's read_bytes opens through io.open


# --------------------------------------------------------------------------- configs


def test_a_recursive_yaml_alias_is_named_with_its_line(experiment, capsys):
    experiment.write_text(
        CONFIG.replace(
            "control: {name: old, path: control.csv}",
            "control: &c {name: old, path: control.csv, columns: *c}",
        )
    )
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment}: line 3: expected an alias to a finished YAML node, "
        "got *c inside the node &c it names (a recursive alias)\n"
    )


@pytest.mark.parametrize(
    "text, line",
    [("[" * 5000, 1), (CONFIG + "description: " + "[" * 5000 + "\n", 9)],
    ids=["whole file", "one value"],
)
def test_yaml_nested_5000_deep_is_named_with_its_line(text, line, experiment, capsys):
    experiment.write_text(text)
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment}: line {line}: expected YAML nested at most "
        f"{MAX_DEPTH} levels deep, got deeper nesting\n"
    )


def test_yaml_nested_within_the_limit_reaches_validation(experiment):
    nested = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    with pytest.raises(ConfigError, match=r"line 9: description: expected a valid string"):
        parse_experiment(
            CONFIG + f"description: {nested}\n", source="x.yaml", base_dir=experiment.parent
        )


def test_an_alias_bomb_is_refused_without_expanding_it(experiment):
    # ten aliases to a ten-value list, nine times over: 10**9 values once expanded
    levels = "x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    with pytest.raises(ConfigError, match=r"^x.yaml: line 1[0-9]: expected a config of at most"):
        parse_experiment(CONFIG + levels, source="x.yaml", base_dir=experiment.parent)


def test_shared_anchors_are_still_allowed(experiment):
    text = CONFIG.replace(
        "control: {name: old, path: control.csv}",
        "control: {name: old, path: control.csv, columns: &cols {query_id: query_id}}",
    ).replace(
        "treatments: [{name: new, path: treatment.csv}]",
        "treatments: [{name: new, path: treatment.csv, columns: *cols}]",
    )
    exp = parse_experiment(text, source="x.yaml", base_dir=experiment.parent)
    assert exp.treatments[0].columns.mapping() == {"query_id": "query_id"}


def test_an_unreadable_config_is_named(experiment, capsys, monkeypatch):
    deny_reading(monkeypatch, experiment)
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment}: expected a readable config file, got permission denied\n"
    )


# --------------------------------------------------------------------------- unreadable logs


def write_control(folder: Path, suffix: str) -> Path:
    """The control log of the tiny experiment in the format its suffix names."""
    import pandas as pd

    frame = pd.read_csv(io.StringIO(CONTROL), dtype={"query_id": str, "doc_id": str})
    path = folder / f"control{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == ".tsv":
        frame.to_csv(path, sep="\t", index=False)
    else:  # .csv and an unfamiliar extension, recognised by its first line
        frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".jsonl", ".log"])
def test_an_unreadable_log_is_named(suffix, experiment, capsys, monkeypatch):
    path = write_control(experiment.parent, suffix)
    experiment.write_text(CONFIG.replace("control.csv", path.name))
    deny_reading(monkeypatch, path)
    err = bad_run(capsys, experiment)
    assert err == f"abrank: error: {path}: expected a readable data file, got permission denied\n"


def test_unreadable_judgments_are_named(experiment, capsys, monkeypatch):
    deny_reading(monkeypatch, experiment.parent / "judgments.tsv")
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment.parent / 'judgments.tsv'}: expected a readable data file, "
        "got permission denied\n"
    )


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_a_log_without_read_permission_is_named(experiment, capsys):
    path = experiment.parent / "control.csv"
    path.chmod(0)
    try:
        err = bad_run(capsys, experiment)
    finally:
        path.chmod(0o644)
    assert err == f"abrank: error: {path}: expected a readable data file, got permission denied\n"


# --------------------------------------------------------------------------- values


SCORED = "query_id,doc_id,score\nq1,a,2.5\nq1,b,{value}\nq2,c,1\n"


@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity"])
def test_an_infinite_score_in_a_table_is_named_with_its_line(value, tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(SCORED.format(value=value))
    with pytest.raises(DataError) as info:
        read_rankings(path)
    sign = "-" if value.startswith("-") else ""
    assert str(info.value) == f"{path}: line 3: score: expected a finite number, got {sign}inf"


def test_a_nan_score_in_a_table_is_named_with_its_line(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(SCORED.format(value="nan"))
    with pytest.raises(DataError) as info:
        read_rankings(path)
    assert str(info.value) == f"{path}: line 3: score: expected a number, got NaN"


def test_an_infinite_score_in_parquet_is_named_with_its_row(tmp_path):
    import pandas as pd

    path = tmp_path / "run.parquet"
    pd.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, np.inf]}
    ).to_parquet(path)
    with pytest.raises(DataError) as info:
        read_rankings(path)
    assert str(info.value) == f"{path}: row 2: score: expected a finite number, got inf"


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_a_non_finite_score_in_a_trec_run_is_named_with_its_line(value, tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(f"q1 Q0 a 1 2.5 r\nq1 Q0 b 2 {value} r\nq2 Q0 c 1 1 r\n")
    with pytest.raises(DataError) as info:
        read_rankings(path)
    expected = "a number" if value == "nan" else "a finite number"
    assert str(info.value).startswith(f"{path}: line 2: score: expected {expected}, got ")


def test_an_infinite_grade_is_named_with_its_line(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b inf\n")
    with pytest.raises(DataError, match=r"qrels.txt: line 2: relevance: expected a finite number"):
        read_judgments(qrels)
    table = tmp_path / "judgments.csv"
    table.write_text("query_id,doc_id,grade\nq1,a,1\nq1,b,-inf\n")
    with pytest.raises(DataError) as info:
        read_judgments(table)
    assert str(info.value) == f"{table}: line 3: relevance: expected a finite number, got -inf"


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_rank_below_1_is_named_with_its_line(value, experiment, capsys):
    (experiment.parent / "control.csv").write_text(CONTROL.replace("q2,d,2,", f"q2,d,{value},"))
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment.parent / 'control.csv'}: line 5: rank: expected a whole "
        f"number >= 1, got {value}\n"
    )


def test_a_rank_repeated_within_a_query_names_the_query_and_both_lines(experiment, capsys):
    # q2's documents c and d both at rank 1 (lines 4 and 5)
    (experiment.parent / "control.csv").write_text(CONTROL.replace("q2,d,2,", "q2,d,1,"))
    err = bad_run(capsys, experiment)
    assert err == (
        f"abrank: error: {experiment.parent / 'control.csv'}: line 5: rank: expected each rank "
        "once per query, got rank 1 again in query 'q2' (first at line 4)\n"
    )


def test_a_repeated_rank_is_found_in_any_row_order(tmp_path):
    import pandas as pd

    path = tmp_path / "log.parquet"
    pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q1", "q2", "q1"],
            "doc_id": ["a", "b", "c", "d", "e"],
            "rank": [2, 1, 1, 2, 2],
        },
        index=[10, 20, 30, 40, 50],  # a stored index of the file's own: rows are positions
    ).to_parquet(path)
    with pytest.raises(DataError) as info:
        read_rankings(path)
    assert str(info.value) == (
        f"{path}: row 5: rank: expected each rank once per query, got rank 2 again in query "
        "'q1' (first at row 1)"
    )


def test_equal_ranks_in_different_queries_and_gaps_are_fine(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,5\nq2,a,1\nq2,c,2\nq1,c,7\n")
    frame = read_rankings(path)
    assert frame["rank"].tolist() == [1, 5, 1, 2, 7]


def test_a_repeated_pair_kept_first_does_not_count_as_a_repeated_rank(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,rank\nq1,a,1\nq1,b,2\nq1,a,1\n")  # a doubled row
    frame = read_rankings(path, duplicates="first")
    assert list(zip(frame["doc_id"], frame["rank"])) == [("a", 1), ("b", 2)]


def test_duplicates_first_keeps_the_first_row_of_the_file_when_ranking_by_score(tmp_path):
    # as for TREC runs: the repeated pair at line 4 is dropped, whatever its score
    path = tmp_path / "log.csv"
    path.write_text("query_id,doc_id,score\nq1,a,1\nq1,b,3\nq1,a,2\n")
    with pytest.raises(DataError, match=r"\('q1', 'a'\) at line 4"):
        read_rankings(path)
    frame = read_rankings(path, duplicates="first")
    assert list(zip(frame["doc_id"], frame["score"], frame["rank"])) == [("b", 3, 1), ("a", 1, 2)]
    trec = tmp_path / "log.txt"
    trec.write_text("q1 Q0 a 1 1 r\nq1 Q0 b 2 3 r\nq1 Q0 a 3 2 r\n")
    same = read_rankings(trec, duplicates="first")
    assert list(zip(same["doc_id"], same["score"], same["rank"])) == [("b", 3, 1), ("a", 1, 2)]


# --------------------------------------------------------------------------- warnings


def test_a_treatment_log_identical_to_the_control_is_warned_about(experiment, capsys):
    import hashlib
    import json

    copy = experiment.parent / "copy.csv"
    copy.write_text(CONTROL)  # another file, the same bytes
    experiment.write_text(CONFIG.replace("treatment.csv", "copy.csv"))
    out_dir = experiment.parent / "out"
    code, out, err = run_cli(capsys, "run", experiment, "--out", out_dir)
    assert code == 0, err
    digest = hashlib.sha256(CONTROL.encode()).hexdigest()[:12]
    expected = (
        f"new: its log {copy} has the same content as the control's "
        f"({experiment.parent / 'control.csv'}, sha256 {digest}): the arms cannot differ; "
        "check the treatment's path"
    )
    warnings = json.loads((out_dir / "summary.json").read_text())["diagnostics"]["warnings"]
    assert warnings[0] == expected
    assert f"note: {expected}\n" in err
    assert "has the same content as the control's" in (out_dir / "report.md").read_text()


def test_different_logs_give_no_identical_log_warning(experiment, capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", experiment, "--out", tmp_path / "out")
    assert code == 0, err
    assert "same content" not in err


def test_run_prints_each_data_warning_on_the_terminal_unless_quiet(experiment, capsys):
    import json

    out_dir = experiment.parent / "out"
    code, out, err = run_cli(capsys, "run", experiment, "--out", out_dir)
    assert code == 0, err
    # q4 is judged but has no relevant document (JUDGMENTS grades it 0)
    expected = (
        "mrr@10, ndcg@3: undefined on 1 of 4 queries (no judged document could score on them), "
        "left out of the comparisons (no_relevant: drop)"
    )
    warnings = json.loads((out_dir / "summary.json").read_text())["diagnostics"]["warnings"]
    assert warnings[0] == expected
    # three queries: the comparisons (two overall, two per segment) leave the bootstrap out
    assert warnings[1].startswith("mrr@10 (new), ndcg@3 (new): fewer than 30 queries")
    assert warnings[2].startswith("2 segment comparisons: fewer than 30 queries")
    # three queries at most moved: the verdict comes from the exact sign-flip test
    assert "sparse, skewed or outlier-dominated deltas" in warnings[3]
    assert len(warnings) == 4
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert notes == [f"note: {w}" for w in warnings]
    assert "note:" not in out  # notes go to stderr, headlines to stdout
    code, out, err = run_cli(capsys, "run", experiment, "--out", out_dir, "--quiet")
    assert code == 0 and err == "" and out == ""


# --------------------------------------------------------------------------- sep and decimal


def european(text: str) -> str:
    """A plain CSV as a spreadsheet in a decimal-comma locale writes it: ``;`` between
    fields, ``,`` in numbers (the plain files hold no commas inside fields)."""
    return text.replace(",", ";").replace(".", ",")


PLAIN_CONTROL = (
    "query_id,doc_id,score\nq1,a,0.5\nq1,b,0.25\nq2,c,0.75\nq2,e,1.5\nq3,f,2.5\nq3,g,2.0\n"
)
PLAIN_TREATMENT = (
    "query_id,doc_id,score\nq1,a,0.5\nq1,b,0.75\nq2,c,0.5\nq2,e,1.5\nq3,f,1.0\nq3,g,2.0\n"
)
PLAIN_JUDGMENTS = "query_id,doc_id,grade\nq1,a,1.0\nq1,b,0.5\nq2,e,2.5\nq3,g,1.0\nq3,f,0.5\n"
PLAIN_ATTRIBUTES = "query_id,locale\nq1,en\nq2,de\nq3,en\n"
TABLES_CONFIG = """name: tables
control: {{path: control.csv{options}}}
treatments: [{{path: treatment.csv{options}}}]
judgments: {{path: judgments.csv{options}}}
metrics: [mrr@10, ndcg@3]
analysis: {{seed: 3, resamples: 1000}}
segments: {{columns: [locale], min_queries: 2, attributes: {{path: attributes.csv{options}}}}}
"""


def write_tables(folder: Path, *, options: str, convert) -> Path:
    folder.mkdir()
    for name, text in [
        ("control.csv", PLAIN_CONTROL),
        ("treatment.csv", PLAIN_TREATMENT),
        ("judgments.csv", PLAIN_JUDGMENTS),
        ("attributes.csv", PLAIN_ATTRIBUTES),
    ]:
        (folder / name).write_text(convert(text))
    config = folder / "tables.yaml"
    config.write_text(TABLES_CONFIG.format(options=options))
    return config


def test_semicolon_decimal_comma_files_give_the_plain_csv_numbers(tmp_path, capsys):
    import json

    import pandas as pd

    plain = write_tables(tmp_path / "plain", options="", convert=lambda text: text)
    semi = write_tables(tmp_path / "semi", options=", sep: ';', decimal: ','", convert=european)
    assert (semi.parent / "control.csv").read_text().splitlines()[1] == "q1;a;0,5"
    summaries, tables = [], []
    for config in (plain, semi):
        out_dir = config.parent / "out"
        code, _, err = run_cli(capsys, "run", config, "--out", out_dir, "--quiet")
        assert code == 0, err
        summary = json.loads((out_dir / "summary.json").read_text())
        summaries.append(summary["comparisons"])
        tables.append(pd.read_csv(out_dir / "per_query.csv"))
    assert summaries[0] == summaries[1]
    pd.testing.assert_frame_equal(tables[0], tables[1])
    # by hand (grade 0.5 is below the threshold 1): control ranks q1 a(0.5) > b, q2 e > c,
    # q3 f(2.5) > g, so its reciprocal ranks are 1, 1, 1/2; the treatment ranks q1
    # b(0.75) > a and q3 g(2.0) > f: 1/2, 1, 1. One win (q3), one loss (q1), one tie.
    overall = {c["metric"]: c for c in summaries[1] if c["segment"] is None}
    assert overall["mrr@10"]["control_mean"] == pytest.approx(2.5 / 3, abs=1e-12)
    assert overall["mrr@10"]["treatment_mean"] == pytest.approx(2.5 / 3, abs=1e-12)
    mrr = overall["mrr@10"]
    assert (mrr["wins"], mrr["ties"], mrr["losses"]) == (1, 1, 1)
    per_query = tables[1].set_index(["arm", "query_id"])["mrr@10"]
    assert per_query[("treatment", "q1")] == 0.5 and per_query[("control", "q3")] == 0.5
    assert {c["segment"] for c in summaries[1]} == {None, "locale=en"}


def test_read_functions_take_sep_and_decimal(tmp_path):
    plain, semi = tmp_path / "plain.csv", tmp_path / "semi.csv"
    plain.write_text(PLAIN_CONTROL)
    semi.write_text(european(PLAIN_CONTROL))
    frame = read_rankings(semi, sep=";", decimal=",")
    assert frame["score"].tolist() == [0.5, 0.25, 1.5, 0.75, 2.5, 2.0]  # ranked per query
    assert frame.equals(read_rankings(plain))
    grades = tmp_path / "grades.tsv"
    grades.write_text("query_id\tdoc_id\tgrade\nq1\ta\t1,0\nq1\tb\t2,5\n")
    assert read_judgments(grades, decimal=",")["relevance"].tolist() == [1.0, 2.5]


def test_a_bad_number_in_a_decimal_comma_file_is_the_one_named(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("query_id;doc_id;score\nq1;a;0,5\nq1;b;high\n")
    with pytest.raises(DataError) as info:
        read_rankings(path, sep=";", decimal=",")
    assert str(info.value) == f"{path}: line 3: score: expected a number, got 'high'"


@pytest.mark.parametrize(
    "options, expected",
    [
        ("sep: ';;'", "line 3: control.sep: expected a single character such as ';' or '\\t'"),
        ('sep: "\\n"', "line 3: control.sep: expected a single character"),
        ("decimal: ';'", "line 3: control.decimal: expected '.' or ',', got ';'"),
    ],
)
def test_bad_sep_and_decimal_keys_are_named_with_their_line(options, expected, experiment):
    text = CONFIG.replace("path: control.csv}", f"path: control.csv, {options}}}")
    with pytest.raises(ConfigError) as info:
        parse_experiment(text, source="x.yaml", base_dir=experiment.parent)
    assert str(info.value).startswith(f"x.yaml: {expected}")


def test_a_single_quoted_tab_separator_means_a_tab(experiment):
    text = CONFIG.replace("path: control.csv}", "path: control.csv, sep: '\\t'}")
    exp = parse_experiment(text, source="x.yaml", base_dir=experiment.parent)
    assert exp.control.sep == "\t"


def test_sep_on_a_trec_file_and_a_comma_decimal_in_a_comma_file_are_refused(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 a 1 0.5 r\n")
    with pytest.raises(ConfigError) as info:
        read_rankings(run, sep=";")
    assert (
        str(info.value) == f"{run}: sep: expected a CSV or TSV file for this key, got format trec"
    )
    table = tmp_path / "log.csv"
    table.write_text(PLAIN_CONTROL)
    with pytest.raises(ConfigError) as info:
        read_rankings(table, decimal=",")
    assert str(info.value) == (
        f"{table}: decimal: expected a decimal mark other than the field separator, got ',' "
        "for both; set sep to the file's field separator (e.g. ';')"
    )


def test_sep_in_a_config_reaches_the_reader(experiment, capsys):
    (experiment.parent / "control.csv").write_text(CONTROL.replace(",", "|"))
    experiment.write_text(CONFIG.replace("path: control.csv}", "path: control.csv, sep: '|'}"))
    code, _, err = run_cli(capsys, "run", experiment, "--out", experiment.parent / "o", "-q")
    assert code == 0, err
