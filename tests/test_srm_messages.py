"""The sample-ratio alarm names the test that gave its p-value: the exact binomial or
multinomial test below 1,000 expected units per arm, Pearson's chi-square above."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats as sps

import abrank
from abrank.readout.model import SampleRatio
from abrank.stats import sample_ratio_mismatch


def alarm(units: dict[str, int]) -> str | None:
    check = sample_ratio_mismatch(units)
    return SampleRatio.from_dict(check.to_dict(), "srm").message()


def test_two_small_arms_name_the_exact_binomial_test() -> None:
    message = alarm({"a": 30, "b": 8})
    p = sps.binomtest(30, 38, 0.5).pvalue  # 0.00047
    assert f"(exact binomial test, p = {p:.2g} < 0.001)" in message
    assert "chi-square" not in message


def test_three_small_arms_name_the_exact_multinomial_test() -> None:
    message = alarm({"a": 40, "b": 8, "c": 20})
    assert "(exact multinomial test, p = " in message
    assert "chi-square" not in message


def test_large_arms_keep_the_chi_square_and_its_statistic() -> None:
    message = alarm({"a": 21_000, "b": 19_000})
    # (21,000 - 20,000)^2 / 20,000 * 2 = 100
    assert "(chi-square 100.0, p = 1.5e-23 < 0.001)" in message


def test_a_summary_written_before_the_test_was_named_reads_as_the_chi_square() -> None:
    saved = {"units": {"a": 30, "b": 8}, "expected": {"a": 0.5, "b": 0.5}, "chi2": 12.74}
    check = SampleRatio.from_dict({**saved, "p_value": 0.0004, "alarm": True}, "srm")
    assert "(chi-square 12.7, p = 0.0004 < 0.001)" in check.message()


def test_an_online_readouts_first_warning_names_the_exact_test(tmp_path) -> None:
    rows = []
    for user in range(38):  # 30 users in a, 8 in b: 19 expected per arm
        arm = "a" if user < 30 else "b"
        for rank in (1, 2):
            rows.append((f"i{user}", f"u{user}", rank, f"d{rank}", int(rank == 1), arm))
    columns = ["impression_id", "user_id", "rank", "doc_id", "clicked", "arm"]
    pd.DataFrame(rows, columns=columns).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(
        "name: srm-small\nlog: {path: log.csv}\ncontrol: {name: a}\ntreatments: [{name: b}]\n"
        "metrics: [ctr@1]\nanalysis: {design: independent, unit: user_id, resamples: 200}\n"
    )
    summary = abrank.run_experiment(tmp_path / "exp.yaml").summary
    assert summary["diagnostics"]["srm"]["test"] == "exact"
    first = summary["diagnostics"]["warnings"][0]
    assert first.startswith("Sample ratio mismatch: units per arm a 30 / b 8")
    assert "exact binomial test" in first and "chi-square" not in first
    assert pytest.approx(sps.binomtest(30, 38).pvalue) == summary["diagnostics"]["srm"]["p_value"]
