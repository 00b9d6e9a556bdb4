"""Few heavy users end to end: diagnostics.concentration, its warning, and the jackknife's
verdict named on the headline line with its interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.render import render_markdown
from abrank.render.headline import headline_lines

CONFIG = """\
name: heavy-users
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
metrics: [click_rr@5, ctr@2]
analysis:
  design: independent
  unit: user_id
  resamples: 500
segments:
  columns: [device]
  min_queries: 20
"""


def make_log(users: int = 300, heavy: int = 0, seed: int = 4) -> pd.DataFrame:
    """A user-randomized log of top-5 impressions, users alternating between the arms; the
    first ``heavy`` users of each arm see 300 impressions, the others 1 + Poisson(3)."""
    rng = np.random.default_rng(seed)
    user = np.arange(users)
    arm = np.where(user % 2 == 0, "a", "b")
    count = 1 + rng.poisson(3, size=users)
    count[: 2 * heavy] = 300
    propensity = rng.beta(2, 5, size=users)
    n = int(count.sum())
    imp_user = np.repeat(user, count)
    ranks = np.tile(np.arange(1, 6), n)
    clicked = rng.random(n * 5) < np.repeat(np.repeat(propensity, count), 5) / ranks
    device = np.where(user % 3 == 0, "mobile", "desktop")
    return pd.DataFrame(
        {
            "impression_id": np.repeat(np.arange(n), 5),
            "user_id": np.repeat(imp_user, 5),
            "rank": ranks,
            "doc_id": (np.repeat(rng.integers(0, 400, size=n), 5) + 31 * ranks) % 400,
            "clicked": clicked.astype(int),
            "device": np.repeat(device[imp_user], 5),
            "arm": np.repeat(arm[imp_user], 5),
        }
    )


def run(tmp_path, log: pd.DataFrame):
    log.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    return abrank.run_experiment(tmp_path / "exp.yaml")


def kish_by_hand(log: pd.DataFrame, arm: str) -> tuple[float, int]:
    """(sum D)^2 / sum D^2 over the arm's users' impressions, and its users."""
    d = log[log["arm"] == arm].groupby("user_id")["impression_id"].nunique().to_numpy(float)
    return float(d.sum() ** 2 / (d**2).sum()), int(d.size)


def test_heavy_users_are_measured_warned_about_and_the_jackknife_decides(tmp_path) -> None:
    log = make_log(heavy=2)
    readout = run(tmp_path, log)
    summary = readout.summary
    concentration = summary["diagnostics"]["concentration"]
    assert concentration["threshold"] == 0.25
    for arm in ("a", "b"):
        n_eff, n = kish_by_hand(log, arm)
        figures = concentration["arms"][arm]
        assert figures["units"] == n == 150
        assert figures["effective_units"] == pytest.approx(n_eff, rel=1e-12)
        assert figures["effective_share"] == pytest.approx(n_eff / n, rel=1e-12)
        assert figures["top_units"] == 2  # 1% of 150, rounded up: the two heavy users
        impressions = log[log["arm"] == arm]["impression_id"].nunique()
        assert figures["top_share"] == pytest.approx(600 / impressions, rel=1e-12)
        assert figures["concentrated"] is True
        warning = next(w for w in summary["diagnostics"]["warnings"] if w.startswith(f"{arm}: "))
        assert f"Kish's effective number of users is {n_eff:,.1f} of 150" in warning
        assert "the verdicts come from the jackknife" in warning
    overall = [c for c in summary["comparisons"] if c["segment"] is None]
    for comp in overall:
        assert comp["primary_test"] == "jackknife"
        assert comp["ci_method"] == "jackknife, clustered by user_id"
        assert comp["regime"]["control"] == concentration["arms"]["a"]
        assert comp["ci_agrees"] is True
    # segments have their own users: those that switched are listed with their figures
    listed = {(c["metric"], c["segment"]) for c in concentration["comparisons"]}
    switched = {
        (c["metric"], c["segment"])
        for c in summary["comparisons"]
        if c["segment"] is not None and c["primary_test"] == "jackknife"
    }
    assert listed == switched and switched
    lines = headline_lines(summary)
    n_eff = min(kish_by_hand(log, arm)[0] for arm in ("a", "b"))
    for line in lines:
        assert f"(jackknife, clustered by user_id; {n_eff:,.0f} effective of 150 users" in line
        assert "95% CI (Holm) [" in line or "% CI (Holm) [" in line
        assert "no CI" not in line
    assert "jackknife, clustered by user_id" in render_markdown(readout, charts=[])


def test_ordinary_traffic_is_measured_without_a_warning(tmp_path) -> None:
    log = make_log(heavy=0)
    summary = run(tmp_path, log).summary
    concentration = summary["diagnostics"]["concentration"]
    n_eff, n = kish_by_hand(log, "a")
    assert concentration["arms"]["a"]["effective_units"] == pytest.approx(n_eff, rel=1e-12)
    assert concentration["arms"]["a"]["concentrated"] is False
    assert concentration["comparisons"] == []
    assert not any("concentrated" in w for w in summary["diagnostics"]["warnings"])
    assert {c["primary_test"] for c in summary["comparisons"]} == {"t"}
    assert all(c["regime"] is None for c in summary["comparisons"])
