"""The tables of tests and corrections: every name is accepted by the library, the config and
the CLI alike and shown by the report with its display name; a wrong name reads the same
everywhere. Also the Comparison's repr and HTML, and compare() naming the metric from
the Series."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from test_cli import CONFIG, run_cli, write_experiment

from abrank import render
from abrank.analysis import run_experiment
from abrank.config import load_experiment
from abrank.errors import ConfigError
from abrank.render import correction_name, headline_lines, render_markdown
from abrank.stats import (
    CORRECTIONS,
    TESTS,
    Comparison,
    adjust,
    compare,
    compare_interleaved,
    registry,
)
from abrank.stats.estimation import DesignTests
from abrank.stats.independent import INDEPENDENT_TESTS
from abrank.stats.paired import PAIRED_TESTS

ROOT = Path(__file__).resolve().parent.parent

TEST_SPELLINGS = [
    pytest.param(spec, spelling, design, id=f"{design}-{spelling}")
    for spec in TESTS
    for spelling in (spec.name, *spec.aliases)
    for design in spec.designs
    if design != "interleaved"  # one log, not two sets of values: the test below
]
INTERLEAVED_SPELLINGS = [
    pytest.param(spec, spelling, id=spelling)
    for spec in TESTS
    for spelling in (spec.name, *spec.aliases)
    if "interleaved" in spec.designs
]
PAIRED_SPELLINGS = [p for p in TEST_SPELLINGS if p.values[2] == "paired"]
CORRECTION_SPELLINGS = [
    pytest.param(spec, spelling, id=spelling)
    for spec in CORRECTIONS
    for spelling in (spec.name, *spec.aliases)
]

TESTS_LISTED = "'t', 'permutation', 'bootstrap', 'wilcoxon', 'sequential', 'signflip'"
CORRECTIONS_LISTED = (
    "'holm', 'bonferroni', 'sidak', 'holm-sidak', 'simes-hochberg', 'hommel', 'fdr_bh', "
    "'fdr_by', 'none'"
)


def write_runs(folder: Path, n: int = 40) -> None:
    """Control and treatment runs of ``n`` queries (enough for the bootstrap), in place of
    the tiny experiment's: document a is the relevant one, at rank 1 + q % 3 in the
    control and 1 + (q // 2) % 2 in the treatment."""
    for name, rank_of in (("control", lambda q: q % 3), ("treatment", lambda q: (q // 2) % 2)):
        rows = ["query_id,doc_id,rank,locale"]
        for q in range(n):
            docs = ["b", "c"]
            docs.insert(rank_of(q), "a")
            rows += [f"q{q},{d},{r},{'en' if q % 2 else 'de'}" for r, d in enumerate(docs, 1)]
        (folder / f"{name}.csv").write_text("\n".join(rows) + "\n")
    grades = "".join(f"q{q}\ta\t1\nq{q}\tb\t0\n" for q in range(n))
    (folder / "judgments.tsv").write_text("query_id\tdoc_id\tgrade\n" + grades)


def tiny(folder: Path, analysis: str) -> Path:
    """The CLI tests' tiny experiment on 40 queries with these analysis options."""
    config = write_experiment(folder)
    write_runs(folder)
    line = "analysis: {seed: 3, resamples: 1000}"
    assert line in CONFIG
    config.write_text(CONFIG.replace(line, f"analysis: {{seed: 3, resamples: 200, {analysis}}}"))
    return config


def shown(spec: registry.CorrectionSpec) -> str | None:
    return None if spec.name == "none" else spec.display


# --------------------------------------------------------------------------- the tables


def test_tables_hold_the_known_names_and_labels() -> None:
    assert registry.test_names("paired") == (
        "t",
        "permutation",
        "bootstrap",
        "wilcoxon",
        "sequential",
        "signflip",
    )
    assert registry.test_names("independent") == (
        "t",
        "permutation",
        "bootstrap",
        "mannwhitney",
        "sequential",
    )
    assert registry.test_spec("randomization").name == "permutation"
    assert registry.correction_spec("BH").name == "fdr_bh"
    assert registry.correction_spec("hochberg").name == "simes-hochberg"
    assert registry.test_labels()["permutation"] == "perm."
    assert registry.correction_display_names()["sidak"] == "Šidák"
    names = [s for spec in (*TESTS, *CORRECTIONS) for s in (spec.name, *spec.aliases)]
    assert len({s.lower() for s in names}) == len(names)  # no spelling means two things


def test_every_design_has_a_function_for_each_of_its_tests() -> None:
    assert set(PAIRED_TESTS.functions) == set(registry.test_names("paired"))
    assert set(INDEPENDENT_TESTS.functions) == set(registry.test_names("independent"))
    assert PAIRED_TESTS.missing() == () and INDEPENDENT_TESTS.missing() == ()
    with pytest.raises(ValueError, match="'mannwhitney' is not a test of the paired design"):
        DesignTests("paired").register("mannwhitney")


def test_readme_lists_every_test_and_correction() -> None:
    readme = (ROOT / "README.md").read_text()
    primary = next(line for line in readme.splitlines() if "primary_test:" in line)
    correction = next(
        line for line in readme.splitlines() if line.strip().startswith("correction:")
    )
    assert all(name in primary for name in registry.test_names())
    assert [n for n in registry.correction_names() if n not in correction.split("#")[1]] == []


# --------------------------------------------------------------------------- library


@pytest.mark.parametrize(("spec", "spelling", "design"), TEST_SPELLINGS)
def test_library_accepts_every_test_name(spec, spelling, design) -> None:
    rng = np.random.default_rng(5)
    c, t = rng.random(40), rng.random(40)
    result = compare(
        c, t, design=design, primary_test=spelling, tests=(spelling,), n_resamples=200, seed=1
    )
    assert result.primary_test == spec.name
    assert (
        math.isfinite(result.p_values[spec.name]) and result.p_value == result.p_values[spec.name]
    )


@pytest.mark.parametrize(("spec", "spelling"), INTERLEAVED_SPELLINGS)
def test_the_interleaved_comparison_accepts_its_test_names(spec, spelling) -> None:
    rng = np.random.default_rng(5)
    outcomes = pd.DataFrame(
        {"user_id": rng.integers(0, 40, 300), "outcome": rng.choice([-1, 0, 0, 1], 300)}
    )
    result = compare_interleaved(
        outcomes, primary_test=spelling, tests=(spelling,), n_resamples=200, seed=1
    )
    assert result.primary_test == spec.name
    assert math.isfinite(result.p_value) and result.p_value == result.p_values[spec.name]
    with pytest.raises(ConfigError, match="for an interleaved comparison"):
        compare_interleaved(outcomes, primary_test="permutation")
    with pytest.raises(ConfigError, match="got 'interleaved'"):
        compare([0.1, 0.2], [0.3, 0.4], design="interleaved")


@pytest.mark.parametrize(("spec", "spelling"), CORRECTION_SPELLINGS)
def test_library_adjusts_with_every_correction_as_statsmodels_does(spec, spelling) -> None:
    base = compare([0.1, 0.4, 0.3], [0.2, 0.5, 0.9], tests=("t",))
    raw = [0.01, 0.04, 0.03, 0.2]
    family = [dataclasses.replace(base, p_value=p, p_adjusted=p) for p in raw]
    adjusted = adjust(family, method=spelling)
    expected = raw if spec.name == "none" else multipletests(raw, method=spec.name)[1]
    assert [c.p_adjusted for c in adjusted] == pytest.approx(list(expected), abs=1e-15)
    assert {c.correction for c in adjusted} == {None if spec.name == "none" else spec.name}


# --------------------------------------------------------------------------- config + report


@pytest.mark.parametrize(("spec", "spelling", "design"), TEST_SPELLINGS)
def test_config_accepts_every_test_name_and_the_report_shows_it(
    tmp_path, spec, spelling, design
) -> None:
    config = tiny(tmp_path, f"design: {design}, primary_test: {spelling}, tests: [{spelling}]")
    experiment = load_experiment(config)
    assert experiment.analysis.primary_test == spec.name
    assert experiment.analysis.tests == [spec.name]
    readout = run_experiment(experiment)
    primary = [c for c in readout.summary["comparisons"] if c["segment"] is None]
    assert {c["primary_test"] for c in primary} == {spec.name}
    assert all(f"({spec.display}, Holm)" in line for line in headline_lines(readout.summary))
    assert f"| p ({spec.label}) |" in render_markdown(readout, charts=[])


@pytest.mark.parametrize(("spec", "spelling"), CORRECTION_SPELLINGS)
def test_config_accepts_every_correction_and_the_report_shows_it(tmp_path, spec, spelling) -> None:
    config = tiny(tmp_path, f"correction: {spelling}, segment_correction: {spelling}")
    experiment = load_experiment(config)
    assert experiment.analysis.correction == spec.name
    assert experiment.analysis.segment_correction == spec.name
    readout = run_experiment(experiment)
    corrections = {c["correction"] for c in readout.summary["comparisons"]}
    assert corrections == {None if spec.name == "none" else spec.name}
    tag = f"(t, {spec.display})" if shown(spec) else "(t)"
    assert all(tag in line for line in headline_lines(readout.summary))
    adjusted = f"| p adj. ({spec.display}) |" if shown(spec) else "| p adj. |"
    assert adjusted in render_markdown(readout, charts=[])


def test_render_names_come_from_the_tables() -> None:
    for spec in TESTS:
        assert render.test_name(spec.name) == spec.display
    for spec in CORRECTIONS:
        assert correction_name(spec.name) == shown(spec)
    assert render.test_name("mannwhitney") == "Mann-Whitney"
    assert correction_name("fdr_bh") == "BH"
    assert correction_name("sidak") == "Šidák"
    assert correction_name("none") is None


def test_sidak_in_a_config_gives_statsmodels_adjusted_p(tmp_path) -> None:
    experiment = load_experiment(tiny(tmp_path, "primary_test: permutation, correction: sidak"))
    comparisons = [c for c in run_experiment(experiment).summary["comparisons"] if not c["segment"]]
    raw = [c["p_value"] for c in comparisons]
    assert len(raw) == 2 and all(0 < p < 1 for p in raw)
    by_hand = [1 - (1 - p) ** 2 for p in raw]  # Šidák over m = 2 metrics x 1 treatment
    assert [c["p_adjusted"] for c in comparisons] == pytest.approx(by_hand, abs=1e-12)
    expected = multipletests(raw, method="sidak")[1]
    assert [c["p_adjusted"] for c in comparisons] == pytest.approx(list(expected), abs=1e-15)
    assert all(c["p_adjusted"] > c["p_value"] for c in comparisons)
    assert {c["correction"] for c in comparisons} == {"sidak"}


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(("spec", "spelling", "design"), PAIRED_SPELLINGS)
def test_cli_compare_accepts_every_paired_test(tmp_path, capsys, spec, spelling, design) -> None:
    write_runs(tmp_path)
    files = [tmp_path / name for name in ("judgments.tsv", "control.csv", "treatment.csv")]
    code, out, err = run_cli(
        capsys, "compare", *files, "-m", "mrr@10", "--test", spelling, "--resamples", "200"
    )
    assert code == 0, err
    assert f"({spec.display}, Holm)" in out


@pytest.mark.parametrize(("spec", "spelling"), CORRECTION_SPELLINGS)
def test_cli_compare_accepts_every_correction(tmp_path, capsys, spec, spelling) -> None:
    write_experiment(tmp_path)
    files = [tmp_path / name for name in ("judgments.tsv", "control.csv", "treatment.csv")]
    code, out, err = run_cli(
        capsys, "compare", *files, "-m", "mrr@10", "ndcg@3", "--correction", spelling,
        "--resamples", "200",
    )  # fmt: skip
    assert code == 0, err
    tag = f"(t, {spec.display})" if shown(spec) else "(t)"
    assert [tag in line for line in out.splitlines()] == [True, True]


# --------------------------------------------------------------------------- wrong names


def test_an_unknown_test_reads_the_same_everywhere(tmp_path, capsys) -> None:
    problem = (
        f"expected one of {TESTS_LISTED} for the paired design, got 'bootstrp' "
        "(did you mean 'bootstrap'?)"
    )
    with pytest.raises(ConfigError) as info:
        compare([0.1, 0.2], [0.3, 0.4], primary_test="bootstrp")
    assert str(info.value) == f"primary_test: {problem}"

    config = tiny(tmp_path, "primary_test: bootstrp")
    with pytest.raises(ConfigError) as info:
        load_experiment(config)
    assert str(info.value) == f"{config}: line 7: analysis.primary_test: {problem}"

    files = [tmp_path / name for name in ("judgments.tsv", "control.csv", "treatment.csv")]
    code, _, err = run_cli(capsys, "compare", *files, "-m", "mrr@10", "--test", "bootstrp")
    assert code == 2 and err == f"abrank: error: --test: {problem}\n"


def test_a_test_of_the_other_design_is_refused_everywhere(tmp_path) -> None:
    problem = (
        "expected one of 't', 'permutation', 'bootstrap', 'mannwhitney', 'sequential' for the independent "
        "design, got 'wilcoxon'"
    )
    with pytest.raises(ConfigError) as info:
        compare([0.1, 0.2], [0.3, 0.4], design="independent", tests=("wilcoxon",))
    assert str(info.value) == f"tests: {problem}"
    config = tiny(tmp_path, "design: independent, tests: [t, wilcoxon]")
    with pytest.raises(ConfigError) as info:
        load_experiment(config)
    assert str(info.value) == f"{config}: line 7: analysis.tests[1]: {problem}"


def test_an_unknown_correction_reads_the_same_everywhere(tmp_path, capsys) -> None:
    problem = f"expected one of {CORRECTIONS_LISTED}, got 'holms' (did you mean 'holm'?)"
    base = compare([0.1, 0.4, 0.3], [0.2, 0.5, 0.9], tests=("t",))
    with pytest.raises(ConfigError) as info:
        adjust([base], method="holms")
    assert str(info.value) == f"method: {problem}"

    config = tiny(tmp_path, "segment_correction: holms")
    with pytest.raises(ConfigError) as info:
        load_experiment(config)
    assert str(info.value) == f"{config}: line 7: analysis.segment_correction: {problem}"

    files = [tmp_path / name for name in ("judgments.tsv", "control.csv", "treatment.csv")]
    code, _, err = run_cli(capsys, "compare", *files, "-m", "mrr@10", "--correction", "holms")
    assert code == 2 and err == f"abrank: error: --correction: {problem}\n"


# --------------------------------------------------------------------------- Python niceties


def test_compare_names_the_metric_after_the_series() -> None:
    index = ["q1", "q2", "q3"]
    control = pd.Series([0.2, 0.5, 0.9], index=index, name="mrr@10")
    treatment = pd.Series([0.4, 0.5, 1.0], index=index, name="mrr@10")
    named = compare(control, treatment, seed=4)
    assert named.metric == "mrr@10"
    explicit = compare(control.to_numpy(), treatment.to_numpy(), metric="mrr@10", seed=4)
    assert named.p_values == explicit.p_values  # the name seeds the draws, as metric= does
    assert compare(control, treatment, metric="rr").metric == "rr"
    assert compare(control, treatment.rename("other")).metric == ""
    assert compare(control.rename(None), treatment.rename(None)).metric == ""


def test_comparison_repr_is_one_short_line() -> None:
    # d = [0.2, 0, 0.1]: mean 0.1, t-interval 0.1 ± 0.95 / sqrt(2 * 0.975 * 0.025) * 0.1 /
    # sqrt(3) (2 df), p = 1 - sqrt(3/5) (see test_stats' worked example)
    result = compare([0.2, 0.5, 0.9], [0.4, 0.5, 1.0], metric="mrr@10", treatment_name="new")
    half = 0.95 / math.sqrt(2 * 0.975 * 0.025) * 0.1 / math.sqrt(3)
    assert f"{0.1 - half:+.4g}, {0.1 + half:+.4g}" == "-0.1484, +0.3484"
    assert repr(result) == (
        "Comparison(metric='mrr@10', treatment='new', segment=None, delta=+0.1, "
        "ci=[-0.1484, +0.3484], p=0.2254, verdict='inconclusive')"
    )
    adjusted = adjust([result, dataclasses.replace(result, p_value=0.5)], method="bonferroni")[0]
    assert repr(adjusted) == (
        "Comparison(metric='mrr@10', treatment='new', segment=None, delta=+0.1, "
        f"ci=[{adjusted.ci[0]:+.4g}, {adjusted.ci[1]:+.4g}], p=0.2254, "
        "p_adjusted=0.4508 (bonferroni), verdict='inconclusive')"
    )
    assert "\n" not in repr(adjusted) and len(repr(result)) < 140


def test_comparison_html_is_a_small_escaped_table() -> None:
    result = compare([0.2, 0.5, 0.9], [0.4, 0.5, 1.0], metric="mrr@10", treatment_name="<b>new</b>")
    table = result._repr_html_()
    assert table.startswith("<table") and table.endswith("</table>")
    assert table.count("<tr>") == 11
    assert "<th style='text-align:left'>95% CI (t)</th><td>[-0.1484, +0.3484]</td>" in table
    assert "<th style='text-align:left'>relative lift</th><td>+18.75%</td>" in table
    assert "<td>&lt;b&gt;new&lt;/b&gt;</td>" in table and "<b>" not in table
    assert isinstance(result, Comparison)
