"""An interleaving log whose impressions are concentrated in a few heavy users: the
jackknife gives the verdict and the interval (against a slow leave-one-out reference), the
verdict holds its level (a small run of benchmarks/bench_calibration_interleaving_heavy.py),
and a run reports diagnostics.concentration, the warning and the jackknife on the line."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import abrank
from abrank.render.headline import headline_lines
from abrank.stats import PreferenceCounts, compare_interleaved

BENCH = (
    Path(__file__).resolve().parent.parent
    / "benchmarks"
    / "bench_calibration_interleaving_heavy.py"
)

# --------------------------------------------------------------------------- the test

# 8 users; the first has 40 of the 53 impressions: Kish's n_eff = 53^2 / 1629 = 1.72 (22%)
WINS = np.array([22, 1, 2, 0, 2, 1, 2, 1])
TIES = np.array([10, 0, 0, 1, 1, 0, 0, 0])
LOSSES = np.array([8, 0, 0, 0, 0, 1, 1, 0])


def leave_one_out_reference(wins, ties, losses, level: float = 0.95):
    """The jackknife test by its definition: the preference with each user left out in
    turn, Var_J = (n - 1) / n * sum (pref_(-u) - mean)^2, on (sum D)^2 / sum D^2 * (n - 1)
    / n degrees of freedom; (delta, p, interval, df)."""
    m = [w + t / 2 for w, t in zip(wins, ties)]
    d = [w + t + x for w, t, x in zip(wins, ties, losses)]
    n = len(m)
    delta = sum(m) / sum(d) - 0.5
    left_out = [(sum(m) - m[u]) / (sum(d) - d[u]) - 0.5 for u in range(n)]
    mean = sum(left_out) / n
    se = math.sqrt((n - 1) / n * sum((x - mean) ** 2 for x in left_out))
    df = sum(d) ** 2 / sum(x * x for x in d) * (n - 1) / n
    p = 2 * scipy.stats.t.sf(abs(delta) / se, df)
    q = scipy.stats.t.ppf(0.5 + level / 2, df)
    return delta, p, (delta - q * se, delta + q * se), df


def delta_method_p(wins, ties, losses) -> float:
    """The clustered t-test's p by hand: sum (M_u - R D_u)^2 / (sum D)^2 * G / (G - 1)."""
    m = wins + ties / 2
    d = wins + ties + losses
    r = m.sum() / d.sum()
    g = m.size
    se = math.sqrt(((m - r * d) ** 2).sum() / d.sum() ** 2 * g / (g - 1))
    return 2 * scipy.stats.t.sf(abs(r - 0.5) / se, g - 1)


@pytest.mark.parametrize("primary", ["t", "bootstrap"])
def test_a_concentrated_log_takes_the_jackknife_verdict_of_the_reference(primary) -> None:
    counts = PreferenceCounts(wins=WINS, ties=TIES, losses=LOSSES)
    result = compare_interleaved(counts, primary_test=primary, n_resamples=500)
    delta, p, ci, df = leave_one_out_reference(WINS.tolist(), TIES.tolist(), LOSSES.tolist())
    assert result.delta == pytest.approx(delta, rel=1e-12)
    assert result.primary_test == "jackknife"
    assert result.p_value == pytest.approx(p, rel=1e-9)
    assert result.ci == pytest.approx(ci, rel=1e-9)
    assert result.ci_method == "jackknife, clustered by user_id"
    assert result.ci_agrees is True
    assert result.p_values["t"] == pytest.approx(delta_method_p(WINS, TIES, LOSSES), rel=1e-9)
    regime = result.regime
    assert regime["reasons"] == ["concentrated"] and regime["configured_test"] == primary
    assert regime["df"] == pytest.approx(df, rel=1e-12)
    assert regime["all"]["effective_units"] == pytest.approx(53**2 / 1629, rel=1e-12)
    assert regime["all"]["units"] == 8 and regime["all"]["concentrated"] is True
    own = {"t": "the t-test's p-value", "bootstrap": "the bootstrap's p-value"}[primary]
    (note,) = [note for note in result.notes if "jackknife" in note]
    assert f"{own} stays in p_values" in note


def test_the_jackknife_interval_agrees_with_its_verdict_at_every_level() -> None:
    counts = PreferenceCounts(wins=WINS, ties=TIES, losses=LOSSES)
    result = compare_interleaved(counts, tests=("t",))
    p = result.p_value  # the interval at level 1 - p touches 0
    low, high = result.levels.primary(1.0 - p)
    assert min(abs(low), abs(high)) == pytest.approx(0.0, abs=1e-12)


def test_per_impression_units_and_even_users_keep_the_delta_method() -> None:
    rng = np.random.default_rng(3)
    d = rng.integers(2, 9, 60)
    wins = rng.binomial(d, 0.3)
    losses = rng.binomial(d - wins, 0.3)
    counts = PreferenceCounts(wins=wins, ties=d - wins - losses, losses=losses)
    result = compare_interleaved(counts, tests=("t",))
    assert result.primary_test == "t" and result.regime is None
    assert result.p_value == pytest.approx(delta_method_p(wins, d - wins - losses, losses))
    frame = pd.DataFrame({"outcome": [1, 1, 0, -1, 1, 0, 1, -1, 1, 1], "user_id": [1] * 10})
    per_impression = compare_interleaved(frame, unit=None, tests=("t",))
    assert per_impression.primary_test == "t" and per_impression.regime is None


# --------------------------------------------------------------------------- calibration


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_calibration_interleaving_heavy", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_verdict_holds_its_level_with_two_heavy_users_in_100(bench) -> None:
    runs = 1000
    se = math.sqrt(0.05 * 0.95 / runs)  # Monte-Carlo SE of a rate of 0.05 (and 0.95)
    figures = bench.calibration(bench.POPULATIONS[1], runs, seed=0)
    # the delta method's 0.100 and 0.66 over 4000 runs; the jackknife's 0.014 and 0.94
    assert figures["fpr_before"][0] > 0.05 + 3 * se
    assert figures["fpr_after"][0] <= 0.05 + 3 * se
    assert figures["coverage_before"][0] < 0.95 - 3 * se
    assert abs(figures["coverage_after"][0] - 0.95) <= 3 * se
    assert figures["jackknife"][0] > 0.9


# --------------------------------------------------------------------------- a run

CONFIG = """\
name: heavy-interleaving
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
metrics: [clicks]
analysis: {design: interleaved, unit: user_id, resamples: 500}
"""


def make_log(users: int = 40, heavy: int = 0, seed: int = 2) -> pd.DataFrame:
    """An interleaved log of 4-result impressions with random teams; the first ``heavy``
    users see 150 impressions, the others 1 + Poisson(3)."""
    rng = np.random.default_rng(seed)
    count = 1 + rng.poisson(3, users)
    count[:heavy] = 150
    n = int(count.sum())
    user = np.repeat(np.arange(users), count)
    rank = np.tile(np.arange(1, 5), n)
    return pd.DataFrame(
        {
            "impression_id": np.repeat(np.arange(n), 4),
            "user_id": np.repeat(user, 4),
            "rank": rank,
            "doc_id": [f"d{r}" for r in rank],
            "team": np.where(rng.random(n * 4) < 0.5, "a", "b"),
            "clicked": (rng.random(n * 4) < 0.3 / rank).astype(int),
        }
    )


def kish_by_hand(log: pd.DataFrame) -> float:
    d = log.groupby("user_id")["impression_id"].nunique().to_numpy(float)
    return float(d.sum() ** 2 / (d**2).sum())


def run(tmp_path, log: pd.DataFrame) -> dict:
    log.to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    return abrank.run_experiment(tmp_path / "exp.yaml").summary


def test_a_concentrated_log_is_warned_about_and_the_jackknife_decides(tmp_path) -> None:
    log = make_log(heavy=2)
    summary = run(tmp_path, log)
    concentration = summary["diagnostics"]["concentration"]
    figures = concentration["arms"]["all"]
    n_eff = kish_by_hand(log)
    assert figures["units"] == 40 and figures["concentrated"] is True
    assert figures["effective_units"] == pytest.approx(n_eff, rel=1e-12)
    assert figures["top_share"] == pytest.approx(150 / log["impression_id"].nunique())
    warning = next(w for w in summary["diagnostics"]["warnings"] if "concentrated" in w)
    assert warning.startswith("the interleaved log: its impressions are concentrated")
    assert f"Kish's effective number of users is {n_eff:,.1f} of 40" in warning
    assert "the verdicts come from the jackknife" in warning
    (comp,) = summary["comparisons"]
    assert comp["primary_test"] == "jackknife"
    assert comp["ci_method"] == "jackknife, clustered by user_id"
    assert comp["regime"]["all"] == figures
    assert comp["ci_agrees"] is True
    assert (comp["ci"][0] > 0 or comp["ci"][1] < 0) == (comp["p_value"] < 0.05)
    (line,) = headline_lines(summary)
    assert f"(jackknife, clustered by user_id; {n_eff:,.0f} effective of 40 users" in line


def test_an_ordinary_log_is_measured_without_a_warning(tmp_path) -> None:
    log = make_log(heavy=0)
    summary = run(tmp_path, log)
    figures = summary["diagnostics"]["concentration"]["arms"]["all"]
    assert figures["effective_units"] == pytest.approx(kish_by_hand(log), rel=1e-12)
    assert figures["concentrated"] is False
    assert not any("concentrated" in w for w in summary["diagnostics"]["warnings"])
    (comp,) = summary["comparisons"]
    assert comp["primary_test"] == "t" and comp["regime"] is None
