"""The statistics of an interleaving test: Δ_AB and W/T/L against a slow reference, the
clustered delta-method variance against statsmodels' cluster-robust OLS, the unit bootstrap
against a slow one, A/A calibration clustered on users (and the per-impression test's
over-confidence), coverage with a true preference, degenerate logs and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from abrank.errors import ConfigError, DataError
from abrank.interleaving import impression_outcomes
from abrank.stats import (
    PreferenceCounts,
    compare,
    compare_interleaved,
    first_team_balance,
    preference_counts,
)
from abrank.stats.interleaved import (
    NOTE_ALL_TIES,
    NOTE_CONSTANT,
    NOTE_PER_IMPRESSION,
    NOTE_SMALL_UNITS,
    preference_variance,
)

TEAMS = ("bm25", "reranker")


def random_log(seed: int, impressions: int = 1500, users: int = 120) -> pd.DataFrame:
    """A random interleaved log: 10 results per impression, teams at random, users with
    their own click rates and a taste for the reranker's results, ranks shuffled in
    the rows."""
    rng = np.random.default_rng(seed)
    user_of = rng.integers(0, users, impressions)
    rate = rng.beta(1, 4, users)[user_of]
    taste = rng.normal(0.0, 0.1, users)[user_of]
    rows = impressions * 10
    imp = np.repeat(np.arange(impressions), 10)
    team = np.where(rng.random(rows) < 0.5, TEAMS[0], TEAMS[1])
    boost = np.where(team == TEAMS[1], taste[imp], -taste[imp])
    clicked = rng.random(rows) < np.clip(rate[imp] + boost, 0, 1)
    log = pd.DataFrame(
        {
            "impression_id": [f"i{i}" for i in imp],
            "user_id": [f"u{u}" for u in user_of[imp]],
            "rank": np.tile(np.arange(1, 11), impressions),
            "doc_id": [f"d{k}" for k in range(rows)],
            "team": team,
            "clicked": clicked,
        }
    )
    return log.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def slow_outcomes(log: pd.DataFrame) -> dict[str, tuple[str, int, str, bool]]:
    """Per impression, by a loop over the rows: (user, outcome, first team, any click)."""
    credit: dict[str, list[int]] = {}
    first: dict[str, tuple[int, str]] = {}
    user: dict[str, str] = {}
    any_click: dict[str, bool] = {}
    for row in log.itertuples(index=False):
        counts = credit.setdefault(row.impression_id, [0, 0])
        if row.clicked:
            counts[TEAMS.index(row.team)] += 1
        any_click[row.impression_id] = any_click.get(row.impression_id, False) or row.clicked
        if row.impression_id not in first or row.rank < first[row.impression_id][0]:
            first[row.impression_id] = (row.rank, row.team)
        user[row.impression_id] = row.user_id
    result = {}
    for imp, (control, treatment) in credit.items():
        outcome = 1 if treatment > control else -1 if treatment < control else 0
        result[imp] = (user[imp], outcome, first[imp][1], any_click[imp])
    return result


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return random_log(5)


@pytest.fixture(scope="module")
def outcomes(log: pd.DataFrame) -> pd.DataFrame:
    return impression_outcomes(log, control=TEAMS[0], treatment=TEAMS[1])


# --------------------------------------------------------------------------- estimate


def test_delta_and_wins_ties_losses_match_a_slow_reference(log, outcomes) -> None:
    slow = slow_outcomes(log)
    wins = sum(1 for _, o, _, _ in slow.values() if o == 1)
    ties = sum(1 for _, o, _, _ in slow.values() if o == 0)
    losses = sum(1 for _, o, _, _ in slow.values() if o == -1)
    clicked = sum(1 for _, _, _, c in slow.values() if c)
    n = len(slow)
    result = compare_interleaved(outcomes, n_resamples=200, teams=TEAMS)
    assert (result.wins, result.ties, result.losses) == (wins, ties, losses)
    assert result.n == result.n_control == result.n_treatment == n
    assert result.delta == pytest.approx((wins + ties / 2) / n - 0.5, abs=1e-15)
    assert result.treatment_mean == pytest.approx((wins + ties / 2) / n, abs=1e-15)
    assert result.control_mean == pytest.approx((losses + ties / 2) / n, abs=1e-15)
    assert result.control_mean + result.treatment_mean == pytest.approx(1.0, abs=1e-15)
    assert result.design == "interleaved" and result.relative_lift is None
    assert result.unit == "user_id"
    assert result.n_units == {"all": len({u for u, _, _, _ in slow.values()})}
    assert result.interleaving["clicked"] == clicked
    assert result.interleaving["clicked_share"] == pytest.approx(clicked / n, abs=1e-15)
    firsts = [f for _, _, f, _ in slow.values()]
    balance = result.interleaving["first_team"]
    assert balance["units"] == {t: firsts.count(t) for t in TEAMS}
    assert balance["chi2"] == pytest.approx(
        stats.chisquare([firsts.count(t) for t in TEAMS]).statistic, rel=1e-12
    )


def test_per_unit_counts_are_the_units_impressions(log, outcomes) -> None:
    slow = slow_outcomes(log)
    counts = preference_counts(outcomes, "user_id")
    table: dict[str, list[int]] = {}
    for u, o, _, _ in slow.values():
        table.setdefault(u, [0, 0, 0])[1 - o] += 1
    order = list(pd.unique(outcomes["user_id"]))
    expected = np.array([table[u] for u in order])
    assert np.array_equal(np.column_stack([counts.wins, counts.ties, counts.losses]), expected)
    per_impression = preference_counts(outcomes, None)
    assert per_impression.n_units == len(slow)
    assert counts.to_dict()["wins"] == per_impression.to_dict()["wins"]


# --------------------------------------------------------------------------- the t test


def test_delta_method_matches_statsmodels_cluster_robust_ols(outcomes) -> None:
    y = np.where(outcomes["outcome"] == 1, 1.0, np.where(outcomes["outcome"] == 0, 0.5, 0.0))
    groups = pd.factorize(outcomes["user_id"])[0]
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    g, n, k = groups.max() + 1, y.size, 1
    # statsmodels' CR1 factor G/(G-1) * (N-1)/(N-K): the second part is 1 for K = 1
    factor = g / (g - 1) * (n - 1) / (n - k)
    assert factor == pytest.approx(g / (g - 1), rel=1e-15)
    counts = preference_counts(outcomes)
    assert preference_variance(counts) == pytest.approx(fit.bse[0] ** 2, rel=1e-9)
    # by hand: sum (M - R D)^2 / (sum D)^2 * G / (G - 1)
    m, d = counts.numerator, counts.denominator
    r = m.sum() / d.sum()
    by_hand = ((m - r * d) ** 2).sum() / d.sum() ** 2 * g / (g - 1)
    assert preference_variance(counts) == pytest.approx(by_hand, rel=1e-12)
    result = compare_interleaved(outcomes, tests=("t",))
    assert result.delta == pytest.approx(fit.params[0] - 0.5, abs=1e-12)
    assert result.p_value == pytest.approx(
        2 * stats.t.sf(abs(result.delta) / fit.bse[0], g - 1), rel=1e-9
    )
    low, high = fit.conf_int(alpha=0.05)[0]
    assert result.ci == pytest.approx((low - 0.5, high - 0.5), abs=1e-9)
    assert result.ci_method == "delta method, clustered by user_id"
    assert result.bootstrap_ci is None and list(result.p_values) == ["t"]


def test_per_impression_test_is_the_ordinary_t_test(outcomes) -> None:
    y = np.where(outcomes["outcome"] == 1, 1.0, np.where(outcomes["outcome"] == 0, 0.5, 0.0))
    result = compare_interleaved(outcomes, unit=None, tests=("t",))
    expected = stats.ttest_1samp(y, 0.5)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    low, high = expected.confidence_interval(0.95)
    assert result.ci == pytest.approx((low - 0.5, high - 0.5), abs=1e-12)
    assert result.unit == "impression" and NOTE_PER_IMPRESSION in result.notes
    assert result.n_units == {"all": len(outcomes)}


# --------------------------------------------------------------------------- the bootstrap


def slow_expanded_bca(m: np.ndarray, d: np.ndarray, b: int, seed: int, level: float):
    """BCa of sum(M)/sum(D) - 1/2 from ``b`` resamples of units drawn one resample at a
    time, Hesterberg's expanded quantiles sqrt(G/(G-1)) t_{G-1}; a leave-one-out loop
    for the acceleration. Returns the interval and the two-sided p-value for 0."""
    rng = np.random.default_rng(seed)
    g = m.size
    obs = m.sum() / d.sum() - 0.5
    boot = np.empty(b)
    for i in range(b):
        idx = rng.integers(0, g, g)
        boot[i] = m[idx].sum() / d[idx].sum() - 0.5
    z0 = stats.norm.ppf(((boot < obs).sum() + (boot <= obs).sum()) / (2 * b))
    jack = np.array([(m.sum() - m[u]) / (d.sum() - d[u]) - 0.5 for u in range(g)])
    u = (g - 1) * (jack.mean() - jack)
    accel = (u**3).sum() / g**3 / (6 * ((u**2).sum() / g**2) ** 1.5)

    def expanded(p):
        return math.sqrt(g / (g - 1)) * stats.t.ppf(p, g - 1)

    alpha = (1 - level) / 2
    levels = [
        stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
        for z in (expanded(alpha), expanded(1 - alpha))
    ]
    interval = tuple(np.quantile(boot, levels))
    share = ((boot < 0).sum() + (boot <= 0).sum()) / (2 * b)
    w = stats.norm.ppf(share) - z0
    z = w / (1 + accel * w) - z0
    tail = stats.t.cdf(z / math.sqrt(g / (g - 1)), g - 1)
    return interval, 2 * min(tail, 1 - tail)


def test_unit_bootstrap_agrees_with_a_slow_unit_bootstrap() -> None:
    rng = np.random.default_rng(11)
    g = 150
    d = 1 + rng.poisson(6, g)
    clicks = rng.binomial(d, 0.5)
    wins = rng.binomial(clicks, np.clip(rng.normal(0.57, 0.15, g), 0, 1))
    counts = PreferenceCounts(wins=wins, ties=d - clicks, losses=clicks - wins)
    result = compare_interleaved(counts, n_resamples=20_000, seed=4)
    interval, p = slow_expanded_bca(counts.numerator, counts.denominator, 20_000, 99, 0.95)
    se = math.sqrt(preference_variance(counts))
    assert abs(result.bootstrap_ci[0] - interval[0]) < 0.15 * se
    assert abs(result.bootstrap_ci[1] - interval[1]) < 0.15 * se
    assert result.p_values["bootstrap"] == pytest.approx(p, abs=0.3 * p + 0.002)
    assert 0.001 < p < 0.2  # a p-value where the comparison means something
    # the t interval and the bootstrap's agree to a fraction of the standard error here
    assert abs(result.ci[0] - result.bootstrap_ci[0]) < 0.3 * se
    assert result.resampled_deltas.shape == (20_000,)


def test_results_are_reproducible_from_the_seed(outcomes) -> None:
    first = compare_interleaved(outcomes, n_resamples=2000, seed=7)
    again = compare_interleaved(outcomes, n_resamples=2000, seed=7)
    other = compare_interleaved(outcomes, n_resamples=2000, seed=8)
    assert first.to_dict() == again.to_dict()
    assert np.array_equal(first.resampled_deltas, again.resampled_deltas)
    assert first.bootstrap_ci != other.bootstrap_ci
    assert first.ci == other.ci  # the delta method draws nothing
    primary = compare_interleaved(outcomes, primary_test="bootstrap", n_resamples=2000, seed=7)
    assert primary.ci == first.bootstrap_ci and primary.p_value == first.p_values["bootstrap"]
    assert primary.ci_method == "unit bootstrap (BCa), clustered by user_id"


# --------------------------------------------------------------------------- calibration


def simulated_counts(rng, experiments: int, users: int, preference: float):
    """Per-unit counts of ``experiments`` simulated interleaving tests at once: each user
    sees 1 + Poisson(7) impressions, clicks in each with their own propensity (Beta(2, 3))
    and, given a click, prefers the treatment with their own probability (Beta around
    1/2 + ``preference``, heterogeneous across users). Arrays (experiments, users)."""
    shape = (experiments, users)
    d = 1 + rng.poisson(7, shape)
    clicks = rng.binomial(d, rng.beta(2, 3, shape))
    mean = 0.5 + preference
    taste = rng.beta(2 * mean, 2 * (1 - mean), shape)
    wins = rng.binomial(clicks, taste)
    return wins, d - clicks, clicks - wins


def test_aa_false_positives_are_calibrated_only_when_clustered_on_users() -> None:
    rng = np.random.default_rng(2026)
    experiments, users = 1500, 400
    wins, ties, losses = simulated_counts(rng, experiments, users, 0.0)
    clustered = naive = 0
    for e in range(experiments):
        counts = PreferenceCounts(wins=wins[e], ties=ties[e], losses=losses[e])
        clustered += compare_interleaved(counts, tests=("t",)).p_value < 0.05
        w, t, lo = int(wins[e].sum()), int(ties[e].sum()), int(losses[e].sum())
        per_impression = PreferenceCounts(
            wins=np.r_[np.ones(w), np.zeros(t + lo)],
            ties=np.r_[np.zeros(w), np.ones(t), np.zeros(lo)],
            losses=np.r_[np.zeros(w + t), np.ones(lo)],
        )
        naive += compare_interleaved(per_impression, tests=("t",)).p_value < 0.05
    clustered_rate, naive_rate = clustered / experiments, naive / experiments
    print(
        f"A/A false-positive rate: clustered {clustered_rate:.3f}, per impression {naive_rate:.3f}"
    )
    assert 0.03 <= clustered_rate <= 0.07
    assert naive_rate > 0.12


def test_intervals_cover_a_true_preference() -> None:
    rng = np.random.default_rng(7)
    experiments, users, preference = 1000, 400, 0.1
    wins, ties, losses = simulated_counts(rng, experiments, users, preference)
    # E[M_u - D_u / 2] = E[clicks] * preference, so Δ = E[click rate] * preference
    true = 2 / 5 * preference
    covered_t = covered_boot = 0
    boot_runs = 400
    for e in range(experiments):
        counts = PreferenceCounts(wins=wins[e], ties=ties[e], losses=losses[e])
        bootstrap = e < boot_runs
        tests = ("t", "bootstrap") if bootstrap else ("t",)
        result = compare_interleaved(counts, tests=tests, n_resamples=999, seed=e)
        covered_t += result.ci[0] <= true <= result.ci[1]
        if bootstrap:
            covered_boot += result.bootstrap_ci[0] <= true <= result.bootstrap_ci[1]
    print(f"coverage: t {covered_t / experiments:.3f}, bootstrap {covered_boot / boot_runs:.3f}")
    assert 0.93 <= covered_t / experiments <= 0.97
    assert 0.92 <= covered_boot / boot_runs <= 0.98


# --------------------------------------------------------------------------- degenerate


def test_a_log_of_ties_only_has_p_one_and_a_zero_interval(outcomes) -> None:
    ties = outcomes.assign(outcome=0, clicked=False)
    result = compare_interleaved(ties, n_resamples=500)
    assert (result.delta, result.ci, result.p_value) == (0.0, (0.0, 0.0), 1.0)
    assert result.p_values == {"t": 1.0, "bootstrap": 1.0}
    assert result.bootstrap_ci == (0.0, 0.0) and result.verdict == "inconclusive"
    assert NOTE_ALL_TIES in result.notes and result.interleaving["clicked_share"] == 0.0
    one_user = compare_interleaved(PreferenceCounts(wins=[0], ties=[3], losses=[0]))
    assert (one_user.p_value, one_user.ci) == (1.0, (0.0, 0.0))


def test_no_variance_falls_back_to_the_exact_sign_flip_test() -> None:
    g = 8
    counts = PreferenceCounts(wins=np.full(g, 2), ties=np.full(g, 2), losses=np.zeros(g))
    result = compare_interleaved(counts)
    assert result.delta == pytest.approx(0.25)
    assert result.p_value == pytest.approx(2.0 ** (1 - g))
    assert result.ci == (0.25, 0.25) and result.verdict == "win"
    assert NOTE_CONSTANT in result.notes and NOTE_SMALL_UNITS in result.notes
    assert math.isnan(result.p_values["bootstrap"]) and result.bootstrap_ci is None


def test_one_unit_gives_no_test() -> None:
    result = compare_interleaved(PreferenceCounts(wins=[3], ties=[1], losses=[1]))
    assert math.isnan(result.p_value) and result.ci == (-math.inf, math.inf)
    assert result.verdict == "inconclusive"


def test_interleaving_details_are_left_out_of_other_designs() -> None:
    other = compare([0.1, 0.2, 0.3], [0.2, 0.2, 0.5], n_resamples=100)
    assert other.interleaving is None and "interleaving" not in other.to_dict()


# --------------------------------------------------------------------------- first team


def test_first_team_balance_is_the_chi_square_against_halves() -> None:
    frame = pd.DataFrame({"first_team": ["a"] * 60 + ["b"] * 40 + ["c"] * 7})
    check = first_team_balance(frame, ("a", "b"))
    expected = stats.chisquare([60, 40])
    assert check.units == {"a": 60, "b": 40}
    assert check.chi2 == pytest.approx(expected.statistic, rel=1e-12)
    # 50 expected per team: the p-value is the exact binomial test's
    assert check.test == "exact"
    assert check.p_value == pytest.approx(stats.binomtest(60, 100, 0.5).pvalue, rel=1e-9)
    assert not check.alarm
    skewed = first_team_balance(pd.DataFrame({"first_team": ["a"] * 700 + ["b"] * 300}), ("a", "b"))
    assert skewed.alarm


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.assign(outcome=f["outcome"].where(f.index != 3, 2)), "row 4: outcome"),
        (lambda f: f.drop(columns="user_id"), "got no user_id"),
        (lambda f: f.drop(columns="outcome"), "got no outcome"),
        (lambda f: f.assign(user_id=f["user_id"].where(f.index != 5, None)), "row 6: user_id"),
        (
            lambda f: f.assign(clicked=f["clicked"].astype(int).where(f.index != 0, 5)),
            "row 1: clicked",
        ),
        (lambda f: f.iloc[:0], "at least one impression"),
    ],
)
def test_bad_outcomes_are_named(outcomes, change, message) -> None:
    with pytest.raises(DataError, match=message):
        compare_interleaved(change(outcomes))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"tests": ("wilcoxon",)}, ConfigError, "tests: expected one of 't', 'bootstrap'"),
        ({"primary_test": "permutation"}, ConfigError, "primary_test: expected one of"),
        ({"alpha": 1.5}, ConfigError, "alpha"),
        ({"n_resamples": 0}, ConfigError, "n_resamples"),
        ({"seed": -1}, ConfigError, "seed"),
        ({"unit": ""}, ConfigError, "unit"),
        ({"metric": 3}, ConfigError, "metric"),
    ],
)
def test_bad_arguments_are_named(outcomes, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        compare_interleaved(outcomes, **kwargs)


def test_bad_counts_and_checks_are_named() -> None:
    with pytest.raises(DataError, match="unit 1: expected at least one impression"):
        PreferenceCounts(wins=[1, 0], ties=[0, 0], losses=[0, 0])
    with pytest.raises(DataError, match=r"ties\[0\]: expected a whole number"):
        PreferenceCounts(wins=[1], ties=[0.5], losses=[0])
    with pytest.raises(DataError, match="one value per unit in every array"):
        PreferenceCounts(wins=[1, 2], ties=[0], losses=[0])
    with pytest.raises(DataError, match=r"clicked\[0\]: expected at most"):
        PreferenceCounts(wins=[1], ties=[0], losses=[0], clicked=[2])
    with pytest.raises(ConfigError, match="teams: expected None with PreferenceCounts"):
        compare_interleaved(PreferenceCounts(wins=[1], ties=[0], losses=[0]), teams=TEAMS)
    with pytest.raises(ConfigError, match="outcomes: expected a DataFrame"):
        compare_interleaved([1, 0, -1])
    with pytest.raises(DataError, match="expected first_team"):
        first_team_balance(pd.DataFrame({"outcome": [1]}), TEAMS)
    with pytest.raises(DataError, match="expected impressions starting with"):
        first_team_balance(pd.DataFrame({"first_team": ["x"]}), TEAMS)
    with pytest.raises(ConfigError, match="teams: expected different team names"):
        first_team_balance(pd.DataFrame({"first_team": ["x"]}), ("a", "a"))
