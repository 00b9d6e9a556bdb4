"""The readout of an interleaving experiment: headline, results, charts and diagnostics.

The figures each test expects are counted from the generated log by plain pandas, apart
from the library's credit code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import abrank
from abrank.render import headline_lines, render_html, render_markdown
from abrank.render.charts import plan_charts
from abrank.render.headline import opening_sentence, primary_comparisons

CONFIG = """\
name: tdi-report
title: Team-draft test
log: {{path: log.csv}}
control: {{name: old, label: Old ranker}}
treatments: [{{name: new, label: New ranker}}]
metrics: [clicks]
analysis: {{design: interleaved, unit: user_id, resamples: 1000}}
{extra}"""


def make_log(users: int = 300, seed: int = 4, first_old: float = 0.5) -> pd.DataFrame:
    """Impressions of four results whose teams alternate from a first team drawn with
    P(old) = ``first_old``; the new ranker's results are clicked more often."""
    rng = np.random.default_rng(seed)
    count = rng.poisson(3, users) + 1
    user = np.repeat(np.arange(users), count)
    n = user.size
    first_is_old = rng.random(n) < first_old
    rank = np.tile(np.arange(1, 5), n)
    old = np.repeat(first_is_old, 4) == (rank % 2 == 1)
    chance = np.where(old, 0.12, 0.22) / rank**0.5
    clicked = rng.random(n * 4) < chance
    return pd.DataFrame(
        {
            "impression_id": np.repeat([f"i{i:05d}" for i in range(n)], 4),
            "user_id": np.repeat(user, 4),
            "rank": rank,
            "doc_id": [f"d{i}" for i in rng.integers(0, 10_000, n * 4)],
            "team": np.where(old, "old", "new"),
            "clicked": clicked.astype(int),
        }
    )


def reference(log: pd.DataFrame, treatment: str = "new", control: str = "old") -> pd.DataFrame:
    """Per impression by plain pandas: clicks per team, the outcome, the first team."""
    clicks = log.pivot_table(
        index="impression_id", columns="team", values="clicked", aggfunc="sum", fill_value=0
    )
    first = log[log["rank"] == 1].set_index("impression_id")
    out = pd.DataFrame(
        {
            "outcome": np.sign(clicks[treatment] - clicks[control]),
            "user_id": first["user_id"],
            "first_team": first["team"],
            "clicked": log.groupby("impression_id")["clicked"].max(),
        }
    )
    return out


def run(tmp_path, log: pd.DataFrame, extra: str = ""):
    log.to_csv(tmp_path / "log.csv", index=False)
    config = tmp_path / "tdi.yaml"
    config.write_text(CONFIG.format(extra=extra))
    return abrank.run_experiment(config)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("tdi")
    log = make_log()
    return log, reference(log), run(tmp_path, log)


def test_the_headline_states_the_preference_its_counts_and_the_units(case) -> None:
    _, ref, readout = case
    wins, ties, losses = ((ref["outcome"] == v).sum() for v in (1, 0, -1))
    n, users = len(ref), ref["user_id"].nunique()
    delta = (wins + ties / 2) / n - 0.5
    (line,) = headline_lines(readout.summary)
    assert line.startswith("preference by clicks  ")
    assert f"{1 - (wins + ties / 2) / n:.3f} vs {(wins + ties / 2) / n:.3f}" in line
    assert f"Δ_AB {delta:+.3f}" in line
    assert f"n = {n:,} impressions / {users:,} users" in line
    assert f"W/T/L {wins:,}/{ties:,}/{losses:,}" in line
    assert line.endswith("→ New ranker wins")
    (comp,) = primary_comparisons(readout.summary)
    sentence = opening_sentence(readout.summary, comp)
    assert sentence.startswith(
        f"New ranker against Old ranker: preference by clicks {delta:+.3f} (won {wins:,} "
        f"impressions, lost {losses:,}, tied {ties:,}; 95% CI ["
    )
    assert sentence.endswith("): a win.")


def test_the_results_table_shows_shares_and_the_preference_not_a_lift(case) -> None:
    _, ref, readout = case
    text = render_markdown(readout, charts=[])
    header = next(line for line in text.splitlines() if line.startswith("| metric |"))
    assert header.split(" | ")[1:4] == ["control share", "treatment share", "Δ\\_AB"]
    assert "relative" not in header and "W / T / L" in header
    clicked = int(ref["clicked"].sum())
    assert f"{clicked:,} of the {len(ref):,} impressions" in text
    assert "## Preference per impression and per user" in text
    assert "segments with fewer" not in text  # no segments configured


def test_charts_are_the_outcome_bars_and_the_preference_per_user(case) -> None:
    _, ref, readout = case
    charts = {chart.name: chart for chart in plan_charts(readout)}
    assert {"outcomes.png", "preference_per_unit.png", "forest.png"} <= set(charts)
    assert "unit_distribution.png" not in charts and "ctr_by_rank.png" not in charts
    for name in ("outcomes.png", "preference_per_unit.png"):
        assert charts[name].png.startswith(b"\x89PNG") and charts[name].section == "preference"
    # the chart's data: each user's mean of 1 / 0.5 / 0, minus 1/2
    score = (ref["outcome"] + 1) / 2
    expected = (score.groupby(ref["user_id"]).mean() - 0.5).sort_values().to_numpy()
    shown = np.sort(readout.unit_values["value"].to_numpy())
    np.testing.assert_allclose(shown, expected, atol=1e-12)
    assert set(readout.unit_values["arm"]) == {"new"}


def test_diagnostics_count_the_first_results_of_each_team(case) -> None:
    _, ref, readout = case
    text = render_markdown(readout, charts=[])
    firsts = ref["first_team"].value_counts()
    for arm, label in (("old", "Old ranker"), ("new", "New ranker")):
        row = next(line for line in text.splitlines() if line.startswith(f"| {arm} | {label} |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[5] == f"{firsts[arm]:,}"
        assert cells[6] == f"{firsts[arm] / len(ref):.1%}"
        assert cells[7] == "50.0%"
    # fewer than 1,000 impressions expected per team: the exact binomial test gave the p-value
    n = int(firsts.sum())
    assert n / 2 < 1000
    p = sps.binomtest(int(firsts["old"]), n, 0.5).pvalue
    assert f"first-team check (exact binomial test): ok: p = {p:.3g} (alarm below 0.001)" in text
    assert "chi-square" not in text
    html = render_html(readout, charts=[])
    assert "first-team check" in html and "Δ_AB" in html


def test_an_unfair_first_team_is_the_first_warning_of_every_output(tmp_path) -> None:
    log = make_log(first_old=0.7)
    readout = run(tmp_path, log)
    first = reference(log)["first_team"].value_counts(normalize=True)
    warning = readout.summary["diagnostics"]["warnings"][0]
    assert warning.startswith(
        f"First-team imbalance: the first result of each impression came from old "
        f"{first['old']:.1%}, new {first['new']:.1%}"
    )
    text = render_markdown(readout, charts=[])
    assert text.index("First-team imbalance") < text.index("## Headline")
    assert "first team ALARM" in text


def test_the_bundled_demo_runs_and_its_counts_are_the_logs() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    log = pd.read_parquet(root / "experiments" / "data" / "demo-interleaving-log.parquet")
    readout = abrank.run_experiment(root / "experiments" / "demo-interleaving.yaml")
    satisfied = log.assign(clicked=(log["clicked"] == 1) & (log["dwell"] >= 30))
    for credit, frame in (("clicks", log), ("sat_clicks", satisfied)):
        ref = reference(frame.astype({"clicked": int}), "reranker", "bm25")
        (comp,) = [
            c
            for c in readout.summary["comparisons"]
            if c["metric"] == credit and c["segment"] is None
        ]
        counts = [int((ref["outcome"] == v).sum()) for v in (1, 0, -1)]
        assert [comp["wins"], comp["ties"], comp["losses"]] == counts
        assert comp["n_units"] == {"all": log["user_id"].nunique()}
    checks = readout.summary["diagnostics"]["interleaving"]
    firsts = log[log["rank"] == 1]["team"].value_counts()
    assert checks["first_team"]["units"] == {"bm25": firsts["bm25"], "reranker": firsts["reranker"]}
    assert not checks["first_team"]["alarm"]
    assert checks["same_lists"]["compared"] == log["impression_id"].nunique()
    devices = sorted(log["device"].unique())
    segments = [c["segment"] for c in readout.summary["comparisons"] if c["metric"] == "clicks"]
    assert segments == [None, *(f"device={d}" for d in devices)]


def test_readme_shows_what_the_interleaving_demo_and_the_planner_print(
    tmp_path, capsys, monkeypatch
) -> None:
    from pathlib import Path

    from abrank.cli import main

    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    monkeypatch.chdir(root)

    def block(command: str) -> list[str]:
        start = text.index(f"$ {command}\n")
        return text[start:].split("\n", 1)[1].split("```", 1)[0].splitlines()

    out = tmp_path / "demo-interleaving"
    assert main(["run", "experiments/demo-interleaving.yaml", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = [
        f"readout written to {out}/" if line.startswith("readout written") else line
        for line in block("abrank run experiments/demo-interleaving.yaml")
    ]
    assert printed == expected
    shown = block("abrank simulate experiments/demo-reranker.yaml")
    assert shown[0] == "..."  # the lines on the experiment and the model are left out
    folder = tmp_path / "simulation"
    assert main(["simulate", "experiments/demo-reranker.yaml", "--out", str(folder)]) == 0
    printed = capsys.readouterr().out.splitlines()
    start = printed.index(shown[1])
    assert printed[start : start + len(shown) - 1] == shown[1:]
