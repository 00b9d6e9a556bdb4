"""The paired tests reproduce the significance table of the shared TREC data (README).

Per-query values come from trec_eval's own per-query output (``measure<TAB>query<TAB>value``
lines) in the shared data; the expected means, deltas, p-values and win/loss/tie counts are
read from the table at the end of the shared README, at its printed precision.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from abrank.stats import compare

# (collection, control, treatment, measure as printed) -> (control file, treatment file, measure)
_DL = "trec-dl-passage/expected/{year}.{run}.{level}.trec_eval.txt"


def _dl(year: str, control: str, treatment: str, level: str) -> tuple[str, str]:
    return (
        _DL.format(year=year, run=control, level=level),
        _DL.format(year=year, run=treatment, level=level),
    )


def _files(collection: str, control: str, treatment: str, measure: str) -> tuple[str, str, str]:
    name = measure.split(" ")[0]
    level = "l2" if "(-l 2)" in measure else "l1"
    if treatment.startswith("+"):
        treatment = control + treatment
    if collection in ("DL19", "DL20"):
        return (*_dl(collection.lower(), control, treatment, level), name)
    if collection == "TREC-COVID":
        path = "beir-trec-covid/expected/trec-covid.{}.l1.trec_eval.txt"
        return path.format(control), path.format(treatment), name
    if collection.startswith("DL-HARD"):
        kind = collection.split()[1]
        path = f"dl-hard/baselines/{kind}/{{}}.run.eval"
        return path.format(control), path.format(treatment), name
    if collection == "CODEC doc":
        path = "codec/expected/document_{}.ndcg-qrels.trec_eval.txt"
        return path.format(control), path.format(treatment), name
    raise AssertionError(f"no files known for {collection}")


def _per_query(path: Path, measure: str) -> pd.Series:
    """trec_eval -q output: one value per query for ``measure`` (the 'all' row left out)."""
    values = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == measure and parts[1] != "all":
            values[parts[1]] = float(parts[2])
    assert values, f"{path}: no per-query {measure} rows"
    return pd.Series(values)


def _table(readme: Path) -> list[dict[str, str]]:
    lines = readme.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Derived reference"))
    rows = [line for line in lines[start:] if line.startswith("| ") and "---" not in line]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows[1:]]
    return [dict(zip(header, row, strict=True)) for row in cells]


def _number(text: str) -> float:
    text = text.replace("−", "-").replace("+", "")
    return math.nan if text == "NaN" else float(text)


def _same_printed(value: float, printed: str) -> bool:
    """Does ``value`` print as the table's p-value (3 significant digits)?"""
    return float(f"{value:.3g}") == float(printed)


@pytest.fixture(scope="module")
def table(shared_data: Path) -> list[dict[str, str]]:
    rows = _table(shared_data / "README.md")
    assert len(rows) == 19
    return rows


def test_reproduces_every_row_of_the_significance_table(shared_data: Path, table) -> None:
    checked = 0
    for row in table:
        c_file, t_file, measure = _files(
            row["collection"], row["control"], row["treatment"], row["measure"]
        )
        control = _per_query(shared_data / c_file, measure)
        treatment = _per_query(shared_data / t_file, measure)
        result = compare(
            control,
            treatment,
            tests=("t", "permutation", "bootstrap", "wilcoxon"),
            missing="error",
            metric=measure,
            n_resamples=2000,
        )
        label = f"{row['collection']} {row['treatment']} {row['measure']}"
        assert result.n == int(row["n"]), label
        assert abs(result.control_mean - _number(row["mean C"])) <= 0.5e-4 + 1e-12, label
        assert abs(result.treatment_mean - _number(row["mean T"])) <= 0.5e-4 + 1e-12, label
        assert abs(result.delta - _number(row["Δ"])) <= 0.5e-4 + 1e-12, label
        wins, losses, ties = (int(v) for v in row["wins/losses/ties"].split("/"))
        assert (result.wins, result.losses, result.ties) == (wins, losses, ties), label
        if row["t-test p"] == "NaN":  # every delta is zero: a clear "no change"
            assert result.delta == 0.0
            assert result.ci == (0.0, 0.0)
            assert result.bootstrap_ci == (0.0, 0.0)
            assert result.p_value == 1.0
            assert result.p_values == {
                "t": 1.0,
                "permutation": 1.0,
                "bootstrap": 1.0,
                "wilcoxon": 1.0,
            }
            assert result.verdict == "inconclusive"
        else:
            assert _same_printed(result.p_values["t"], row["t-test p"]), (label, result.p_values)
            assert _same_printed(result.p_values["wilcoxon"], row["Wilcoxon p"]), (
                label,
                result.p_values,
            )
            expected = "inconclusive"
            if result.p_value < 0.05:
                expected = "win" if result.delta > 0 else "loss"
            assert result.verdict == expected
            low, high = result.ci
            assert low < result.delta < high
        checked += 1
    assert checked == 19


def test_the_non_significant_pair_is_inconclusive(shared_data: Path) -> None:
    c_file, t_file, measure = _files("DL19", "splade-pp-ed.top100", "+rankvicuna-7b", "ndcg_cut_10")
    result = compare(
        _per_query(shared_data / c_file, measure), _per_query(shared_data / t_file, measure)
    )
    assert result.verdict == "inconclusive"
    assert result.ci[0] < 0 < result.ci[1]
    assert result.bootstrap_ci[0] < 0 < result.bootstrap_ci[1]
    assert result.p_values["permutation"] > 0.3
