"""The interleaved design end to end: a log of merged lists and a config in, the readout out.

Every expected value comes from a slow per-impression reference written here (a Python
loop over the log's rows), from statsmodels' cluster-robust OLS or scipy's chi-square,
never from the pipeline itself. Logs are small and random, built in ``tmp_path``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.api as sm

import abrank
from abrank.cli import main
from abrank.designs.interleaved.outcomes import agreement_depth

CONTROL, TREATMENT, OTHER = "bm25", "reranker", "hybrid"
SAT_DWELL = 30.0


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- data


def make_log(
    seed: int,
    *,
    impressions: int = 300,
    users: int = 40,
    teams: tuple[str, ...] = (CONTROL, TREATMENT),
    first_share: float | None = None,
    queries: int = 20,
    lengths: tuple[int, int] = (3, 7),
) -> pd.DataFrame:
    """A random interleaved log: impressions of 3 to 6 results, each result's team drawn at
    random (the first result's team from ``first_share`` of the first team when given), the
    treatment's results clicked more often, dwell times around the satisfied threshold
    (some clicks without one), the device a property of the user."""
    rng = np.random.default_rng(seed)
    length = rng.integers(lengths[0], lengths[1], impressions)
    impression = np.repeat(np.arange(impressions), length)
    starts = np.r_[0, np.cumsum(length)[:-1]]
    rank = np.arange(impression.size) - np.repeat(starts, length) + 1
    user = rng.integers(0, users, impressions)[impression]
    team = np.asarray(teams)[rng.integers(0, len(teams), impression.size)]
    if first_share is not None:
        heads = rng.random(impressions) < first_share
        team[starts] = np.where(heads, teams[0], teams[1])
    p_click = np.where(team == TREATMENT, 0.3, 0.18) / np.sqrt(rank)
    clicked = rng.random(impression.size) < p_click
    dwell = rng.choice([5.0, 29.9, 30.0, 45.0, 120.0, np.nan], impression.size)
    return pd.DataFrame(
        {
            "impression_id": [f"i{i:04d}" for i in impression],
            "user_id": [f"u{u:03d}" for u in user],
            "rank": rank,
            "doc_id": [f"d{i}-{r}" for i, r in zip(impression, rank)],
            "team": team,
            "clicked": clicked.astype(int),
            "dwell": np.where(clicked, dwell, np.nan),
            "device": np.where(user % 3 == 0, "mobile", "desktop"),
            "query": [f"q{i % queries}" for i in impression],
        }
    )


def write_config(
    folder: Path,
    *,
    log: str = "log.csv",
    treatments: tuple[str, ...] = (TREATMENT,),
    metrics: str = "[clicks, sat_clicks]",
    analysis: str = "design: interleaved, unit: user_id, seed: 5, resamples: 2000",
    extra: str = "",
    control_path: str = "",
    name: str = "tdi",
) -> Path:
    lines = [
        f"name: {name}",
        f"log: {{path: {log}}}" if log else "",
        f"control: {{name: {CONTROL}{control_path}}}",
        "treatments: [" + ", ".join(f"{{name: {t}}}" for t in treatments) + "]",
        f"metrics: {metrics}",
        f"analysis: {{{analysis}}}",
        extra,
    ]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(line for line in lines if line) + "\n")
    return path


# --------------------------------------------------------------------------- reference


def reference_outcomes(
    log: pd.DataFrame,
    control: str,
    treatment: str,
    credit: str,
    sat_dwell: float = SAT_DWELL,
    unit: str = "user_id",
) -> dict[str, dict]:
    """Per impression, in the slowest obvious way: each row's click credited to its team
    when it counts (a satisfied click needs a dwell >= sat_dwell), the two teams' sums
    compared; the impression's unit (``user``), device, first team and whether anything
    was clicked."""
    found: dict[str, dict] = {}
    for row in log.sort_values(["impression_id", "rank"]).itertuples(index=False):
        entry = found.setdefault(
            row.impression_id,
            {
                "user": getattr(row, unit),
                "device": row.device,
                "first_team": row.team,
                "treatment": 0,
                "control": 0,
                "clicked": False,
            },
        )
        if row.clicked == 1:
            entry["clicked"] = True
            counts = credit == "clicks" or (not math.isnan(row.dwell) and row.dwell >= sat_dwell)
            if counts and row.team == treatment:
                entry["treatment"] += 1
            elif counts and row.team == control:
                entry["control"] += 1
    for entry in found.values():
        t, c = entry["treatment"], entry["control"]
        entry["outcome"] = 1 if t > c else (-1 if t < c else 0)
    return found


def wtl(outcomes: dict[str, dict]) -> tuple[int, int, int]:
    values = [e["outcome"] for e in outcomes.values()]
    return values.count(1), values.count(0), values.count(-1)


def clustered_t(outcomes: dict[str, dict], level: float = 0.95) -> tuple[float, float, tuple]:
    """Δ, its two-sided p-value and interval from an OLS of y = win + tie / 2 on a constant
    with cluster-robust errors by user (statsmodels, CR1) and a t with G - 1 df."""
    y = np.array([(e["outcome"] + 1) / 2 for e in outcomes.values()])
    groups = pd.factorize(pd.Series([e["user"] for e in outcomes.values()]))[0]
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    delta, se = float(fit.params[0]) - 0.5, float(fit.bse[0])
    df = int(groups.max()) + 1 - 1
    p = 2 * scipy.stats.t.sf(abs(delta) / se, df)
    half = scipy.stats.t.ppf(0.5 + level / 2, df) * se
    return delta, float(p), (delta - half, delta + half)


def comparison(summary: dict, metric: str, treatment: str = TREATMENT, segment=None) -> dict:
    (found,) = [
        c
        for c in summary["comparisons"]
        if c["metric"] == metric and c["treatment"] == treatment and c["segment"] == segment
    ]
    return found


# --------------------------------------------------------------------------- 1. end to end


@pytest.fixture
def two_team(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    log = make_log(11)
    log.to_csv(tmp_path / "log.csv", index=False)
    return write_config(tmp_path), log


@pytest.mark.parametrize("credit", ["clicks", "sat_clicks"])
def test_wins_ties_losses_delta_and_t_test_match_the_references(two_team, credit):
    config, log = two_team
    summary = abrank.run_experiment(config).summary
    ref = reference_outcomes(log, CONTROL, TREATMENT, credit)
    wins, ties, losses = wtl(ref)
    got = comparison(summary, credit)
    assert (got["wins"], got["ties"], got["losses"]) == (wins, ties, losses)
    assert got["design"] == "interleaved"
    assert got["n"] == got["n_control"] == got["n_treatment"] == len(ref) == 300
    assert got["delta"] == pytest.approx((wins + ties / 2) / len(ref) - 0.5, abs=1e-12)
    delta, p, ci = clustered_t(ref)
    assert got["delta"] == pytest.approx(delta, abs=1e-12)
    assert got["p_values"]["t"] == pytest.approx(p, rel=1e-9)
    assert got["ci_unadjusted"] == pytest.approx(list(ci), rel=1e-9)
    assert got["unit"] == "user_id"
    assert got["n_units"] == {"all": len({e["user"] for e in ref.values()})}
    clicked = sum(e["clicked"] for e in ref.values())
    assert got["interleaving"]["units"] == got["n_units"]["all"]
    assert got["interleaving"]["clicked"] == clicked
    assert got["interleaving"]["clicked_share"] == pytest.approx(clicked / len(ref))
    # the bootstrap runs beside the t test and is reproducible from the seed
    again = comparison(abrank.run_experiment(config).summary, credit)
    assert got["p_values"]["bootstrap"] == again["p_values"]["bootstrap"]
    assert got["bootstrap_ci"] == again["bootstrap_ci"]


def test_satisfied_clicks_need_a_dwell_of_at_least_sat_dwell(tmp_path):
    # one user, hand-worked: i1 the treatment's click has dwell 30 (counts) against the
    # control's 29.9 (does not), i2 the treatment's click has no dwell, the control's 45
    rows = [
        ("i1", 1, TREATMENT, 1, 30.0),
        ("i1", 2, CONTROL, 1, 29.9),
        ("i2", 1, CONTROL, 1, 45.0),
        ("i2", 2, TREATMENT, 1, None),
        ("i3", 1, TREATMENT, 0, None),
        ("i3", 2, CONTROL, 0, None),
    ]
    log = pd.DataFrame(rows, columns=["impression_id", "rank", "team", "clicked", "dwell"])
    log.assign(user_id="u1", doc_id=log["impression_id"] + log["rank"].astype(str)).to_csv(
        tmp_path / "log.csv", index=False
    )
    config = write_config(tmp_path, extra="")
    summary = abrank.run_experiment(config).summary
    sat = comparison(summary, "sat_clicks")
    assert (sat["wins"], sat["ties"], sat["losses"]) == (1, 1, 1)
    plain = comparison(summary, "clicks")
    assert (plain["wins"], plain["ties"], plain["losses"]) == (0, 3, 0)
    assert plain["interleaving"]["clicked"] == 2
    assert summary["sat_dwell"] == SAT_DWELL


def test_sat_dwell_sets_the_threshold_of_a_satisfied_click(tmp_path):
    log = make_log(18)
    log.to_csv(tmp_path / "log.csv", index=False)
    analysis = "design: interleaved, unit: user_id, tests: [t], sat_dwell: 45"
    config = write_config(tmp_path, metrics="[sat_clicks]", analysis=analysis)
    summary = abrank.run_experiment(config).summary
    ref = reference_outcomes(log, CONTROL, TREATMENT, "sat_clicks", sat_dwell=45.0)
    assert wtl(ref) != wtl(reference_outcomes(log, CONTROL, TREATMENT, "sat_clicks"))
    got = comparison(summary, "sat_clicks")
    assert (got["wins"], got["ties"], got["losses"]) == wtl(ref)
    assert got["p_values"] == {"t": pytest.approx(clustered_t(ref)[1], rel=1e-9)}
    assert summary["sat_dwell"] == 45.0


def test_a_unit_other_than_the_user_clusters_on_that_column(tmp_path):
    log = make_log(19, users=15)
    # three sessions per user, each impression in one of its user's sessions
    session = np.random.default_rng(0).integers(0, 3, log["impression_id"].nunique())
    codes = pd.factorize(log["impression_id"])[0]
    log["session_id"] = log["user_id"] + "/s" + session[codes].astype(str)
    log.to_csv(tmp_path / "log.csv", index=False)
    analysis = "design: interleaved, unit: session_id, tests: [t]"
    config = write_config(tmp_path, metrics="[clicks]", analysis=analysis)
    summary = abrank.run_experiment(config).summary
    ref = reference_outcomes(log, CONTROL, TREATMENT, "clicks", unit="session_id")
    got = comparison(summary, "clicks")
    sessions = len({e["user"] for e in ref.values()})
    assert sessions > log["user_id"].nunique()
    assert got["unit"] == "session_id" and got["n_units"] == {"all": sessions}
    assert got["p_values"]["t"] == pytest.approx(clustered_t(ref)[1], rel=1e-9)
    assert summary["diagnostics"]["interleaving"]["units"] == sessions


def test_the_impression_as_unit_is_the_one_sample_t_test_of_the_impressions(tmp_path, capsys):
    log = make_log(20)
    log.to_csv(tmp_path / "log.csv", index=False)
    analysis = "design: interleaved, unit: impression_id, tests: [t]"
    config = write_config(tmp_path, metrics="[clicks]", analysis=analysis)
    out = tmp_path / "readout"
    code, _, err = run_cli(capsys, "run", config, "--out", out, "-q")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    ref = reference_outcomes(log, CONTROL, TREATMENT, "clicks")
    y = [(e["outcome"] + 1) / 2 for e in ref.values()]
    test = scipy.stats.ttest_1samp(y, 0.5)
    got = comparison(summary, "clicks")
    assert got["n_units"] == {"all": 300} and got["unit"] == "impression_id"
    assert got["p_values"]["t"] == pytest.approx(test.pvalue, rel=1e-9)
    assert got["ci_unadjusted"] == pytest.approx(
        list(np.asarray(test.confidence_interval(0.95)) - 0.5), rel=1e-9
    )
    table = pd.read_csv(out / "per_query.csv")
    assert list(table.columns).count("impression_id") == 1 and len(table) == 300


def test_the_cli_writes_the_per_impression_table_and_the_summary(two_team, tmp_path, capsys):
    config, log = two_team
    out = tmp_path / "readout"
    code, _, err = run_cli(capsys, "run", config, "--out", out, "-q")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    table = pd.read_csv(out / "per_query.csv", dtype={"impression_id": str, "user_id": str})
    assert list(table.columns) == [
        "treatment",
        "metric",
        "impression_id",
        "user_id",
        "treatment_credit",
        "control_credit",
        "outcome",
        "clicked",
        "first_team",
    ]
    assert len(table) == 2 * 300
    for credit in ("clicks", "sat_clicks"):
        ref = reference_outcomes(log, CONTROL, TREATMENT, credit)
        rows = table[table["metric"] == credit].set_index("impression_id")
        assert set(rows["treatment"]) == {TREATMENT}
        assert sorted(rows.index) == sorted(ref)
        for impression, entry in ref.items():
            row = rows.loc[impression]
            assert (row["treatment_credit"], row["control_credit"]) == (
                entry["treatment"],
                entry["control"],
            )
            assert row["outcome"] == entry["outcome"]
            assert bool(row["clicked"]) == entry["clicked"]
            assert (row["first_team"], row["user_id"]) == (entry["first_team"], entry["user"])
        assert comparison(summary, credit)["wins"] == wtl(ref)[0]
    checks = summary["diagnostics"]["interleaving"]
    ref = reference_outcomes(log, CONTROL, TREATMENT, "clicks")
    assert checks["impressions"] == 300
    assert checks["units"] == len({e["user"] for e in ref.values()})
    assert checks["clicked"] == sum(e["clicked"] for e in ref.values())
    assert checks["same_lists"] is None


def test_the_arms_count_the_impressions_and_units_they_contributed_to(two_team):
    config, log = two_team
    summary = abrank.run_experiment(config).summary
    arms = {arm["name"]: arm for arm in summary["arms"]}
    for team in (CONTROL, TREATMENT):
        rows = log[log["team"] == team]
        assert arms[team]["impressions"] == rows["impression_id"].nunique()
        assert arms[team]["units"] == rows["user_id"].nunique()
    assert arms[CONTROL]["role"] == "control" and arms[TREATMENT]["role"] == "treatment"


# --------------------------------------------------------------------------- 2. multileaving


def test_multileaving_compares_each_treatment_with_the_control_on_their_two_teams(tmp_path):
    log = make_log(12, teams=(CONTROL, TREATMENT, OTHER))
    log.to_csv(tmp_path / "log.csv", index=False)
    config = write_config(tmp_path, treatments=(TREATMENT, OTHER), metrics="[clicks]")
    summary = abrank.run_experiment(config).summary
    assert [(c["treatment"], c["segment"]) for c in summary["comparisons"]] == [
        (TREATMENT, None),
        (OTHER, None),
    ]
    for treatment in (TREATMENT, OTHER):
        ref = reference_outcomes(log, CONTROL, treatment, "clicks")
        got = comparison(summary, "clicks", treatment)
        assert (got["wins"], got["ties"], got["losses"]) == wtl(ref)
        delta, p, _ = clustered_t(ref)
        assert got["delta"] == pytest.approx(delta, abs=1e-12)
        assert got["p_values"]["t"] == pytest.approx(p, rel=1e-9)
        # the pair's first-team check counts the impressions either of its teams opened
        firsts = [e["first_team"] for e in ref.values()]
        assert got["interleaving"]["first_team"]["units"] == {
            CONTROL: firsts.count(CONTROL),
            treatment: firsts.count(treatment),
        }
    first = summary["diagnostics"]["interleaving"]["first_team"]["units"]
    heads = log.sort_values(["impression_id", "rank"]).groupby("impression_id")["team"].first()
    assert first == {team: int((heads == team).sum()) for team in (CONTROL, TREATMENT, OTHER)}
    arms = {arm["name"]: (arm["impressions"], arm["units"]) for arm in summary["arms"]}
    assert arms == {
        team: (len(set(rows["impression_id"])), len(set(rows["user_id"])))
        for team, rows in log.groupby("team")
    }


def test_all_pairs_adds_the_treatment_against_treatment_comparison(tmp_path):
    log = make_log(13, teams=(CONTROL, TREATMENT, OTHER))
    log.to_csv(tmp_path / "log.csv", index=False)
    config = write_config(
        tmp_path, treatments=(TREATMENT, OTHER), metrics="[clicks]", extra="comparisons: all-pairs"
    )
    summary = abrank.run_experiment(config).summary
    pair = f"{OTHER} vs {TREATMENT}"
    assert [c["treatment"] for c in summary["comparisons"]] == [TREATMENT, OTHER, pair]
    ref = reference_outcomes(log, TREATMENT, OTHER, "clicks")
    got = comparison(summary, "clicks", pair)
    assert (got["wins"], got["ties"], got["losses"]) == wtl(ref)
    assert got["delta"] == pytest.approx(clustered_t(ref)[0], abs=1e-12)
    assert got["p_values"]["t"] == pytest.approx(clustered_t(ref)[1], rel=1e-9)


# --------------------------------------------------------------------------- 3. diagnostics


def test_the_first_team_counts_and_chi_square_match_scipy(two_team):
    config, log = two_team
    summary = abrank.run_experiment(config).summary
    heads = log.sort_values(["impression_id", "rank"]).groupby("impression_id")["team"].first()
    counts = [int((heads == CONTROL).sum()), int((heads == TREATMENT).sum())]
    chi2, p = scipy.stats.chisquare(counts)
    first = summary["diagnostics"]["interleaving"]["first_team"]
    assert first["units"] == {CONTROL: counts[0], TREATMENT: counts[1]}
    assert first["chi2"] == pytest.approx(chi2, rel=1e-12)
    if sum(counts) / 2 >= 1000:
        assert first["test"] == "chi2" and first["p_value"] == pytest.approx(p, rel=1e-9)
    else:  # few impressions per team: the exact binomial test
        exact = scipy.stats.binomtest(counts[0], sum(counts), 0.5).pvalue
        assert first["test"] == "exact" and first["p_value"] == pytest.approx(exact, rel=1e-9)
    assert first["alarm"] is False
    assert not any("First-team" in w for w in summary["diagnostics"]["warnings"])


def test_an_unfair_first_team_raises_the_alarm_and_fails_the_run(tmp_path, capsys):
    log = make_log(14, impressions=400, first_share=0.7)
    log.to_csv(tmp_path / "log.csv", index=False)
    config = write_config(tmp_path, metrics="[clicks]")
    out = tmp_path / "readout"
    code, _, err = run_cli(capsys, "run", config, "--out", out, "--fail-on", "srm", "-q")
    assert code == 3, err
    assert "first-team imbalance" in err
    summary = json.loads((out / "summary.json").read_text())  # written before the exit
    heads = log.sort_values(["impression_id", "rank"]).groupby("impression_id")["team"].first()
    counts = [int((heads == CONTROL).sum()), int((heads == TREATMENT).sum())]
    assert counts[0] / 400 > 0.6
    first = summary["diagnostics"]["interleaving"]["first_team"]
    assert first["p_value"] == pytest.approx(scipy.stats.chisquare(counts).pvalue, rel=1e-9)
    assert first["alarm"] is True
    warning = summary["diagnostics"]["warnings"][0]
    assert warning.startswith("First-team imbalance:")
    assert f"{CONTROL} {counts[0] / 400:.1%}" in warning


def write_rankings(folder: Path, seed: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Source rankings of 10 documents for q0..q19: q0..q7 the same in both, q8..q15
    differing at rank 4 (ranks 4 and 5 swapped), q16..q18 differing at rank 1; q19 only in
    the control's ranking. Rows written shuffled (the reader orders them by rank)."""
    control = {f"q{q}": [f"q{q}d{r}" for r in range(10)] for q in range(20)}
    treatment = {}
    for q in range(19):
        docs = list(control[f"q{q}"])
        if 8 <= q <= 15:
            docs[3], docs[4] = docs[4], docs[3]
        elif q >= 16:
            docs[0], docs[1] = docs[1], docs[0]
        treatment[f"q{q}"] = docs
    rng = np.random.default_rng(seed)
    for name, ranking in ((CONTROL, control), (TREATMENT, treatment)):
        rows = [(q, doc, r + 1) for q, docs in ranking.items() for r, doc in enumerate(docs)]
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])
        frame.iloc[rng.permutation(len(frame))].to_csv(folder / f"{name}.csv", index=False)
    return control, treatment


def test_same_lists_counts_impressions_both_rankings_would_have_shown_alike(tmp_path):
    control, treatment = write_rankings(tmp_path, 3)
    # 22 queries: q20 and q21 are in neither ranking
    log = make_log(15, queries=22, lengths=(2, 9))
    log.to_csv(tmp_path / "log.csv", index=False)
    config = tmp_path / "tdi.yaml"
    config.write_text(
        "name: tdi\nlog: {path: log.csv}\n"
        f"control: {{name: {CONTROL}, path: {CONTROL}.csv}}\n"
        f"treatments: [{{name: {TREATMENT}, path: {TREATMENT}.csv}}]\n"
        "metrics: [clicks]\nanalysis: {design: interleaved, unit: user_id, tests: [t]}\n"
    )
    same = compared = unmatched = 0
    for _, rows in log.groupby("impression_id"):
        query, n = rows["query"].iloc[0], len(rows)
        if query not in control or query not in treatment:
            unmatched += 1
            continue
        compared += 1
        same += control[query][:n] == treatment[query][:n]
    assert 0 < same < compared and unmatched > 0
    summary = abrank.run_experiment(config).summary
    checks = summary["diagnostics"]["interleaving"]["same_lists"]
    assert checks == {
        "compared": compared,
        "same": same,
        "share": same / compared,
        "unmatched": unmatched,
    }
    warned = any("would have shown alike" in w for w in summary["diagnostics"]["warnings"])
    assert warned == (same / compared >= 0.5)
    # without a query column no impression can be matched with the rankings: said so
    log.drop(columns="query").to_csv(tmp_path / "log.csv", index=False)
    summary = abrank.run_experiment(config).summary
    checks = summary["diagnostics"]["interleaving"]["same_lists"]
    assert checks == {"compared": 0, "same": 0, "share": None, "unmatched": 300}
    assert summary["diagnostics"]["warnings"][0].startswith(
        "none of the 300 impressions could be matched with the source rankings"
    )


def test_many_same_lists_are_warned_about(tmp_path):
    control, treatment = write_rankings(tmp_path, 4)
    log = make_log(23, queries=8, lengths=(2, 9))  # q0..q7: identical in both rankings
    log.to_csv(tmp_path / "log.csv", index=False)
    config = tmp_path / "tdi.yaml"
    config.write_text(
        "name: tdi\nlog: {path: log.csv}\n"
        f"control: {{name: {CONTROL}, path: {CONTROL}.csv}}\n"
        f"treatments: [{{name: {TREATMENT}, path: {TREATMENT}.csv}}]\n"
        "metrics: [clicks]\nanalysis: {design: interleaved, unit: user_id, tests: [t]}\n"
    )
    summary = abrank.run_experiment(config).summary
    checks = summary["diagnostics"]["interleaving"]["same_lists"]
    assert checks == {"compared": 300, "same": 300, "share": 1.0, "unmatched": 0}
    assert summary["diagnostics"]["warnings"][0].startswith(
        "100% of the impressions showed a list that both rankings would have shown alike"
    )


def _ranking(rows: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(q, doc, r + 1) for q, docs in rows.items() for r, doc in enumerate(docs)],
        columns=["query_id", "doc_id", "rank"],
    )


def test_agreement_depth_is_the_common_prefix_of_each_query_both_rankings_hold():
    first = _ranking(
        {
            "same": ["a", "b", "c"],
            "prefix": ["a", "b", "c"],
            "longer": ["a", "b"],
            "differ": ["a", "x", "c", "d"],
            "top": ["a", "b"],
            "only-first": ["a"],
        }
    )
    second = _ranking(
        {
            "same": ["a", "b", "c"],
            "prefix": ["a", "b"],
            "longer": ["a", "b", "c", "d"],
            "differ": ["a", "b", "c"],
            "top": ["b", "a"],
            "only-second": ["a"],
        }
    )
    depth = agreement_depth(first, second)
    assert depth.to_dict() == {"same": 3, "prefix": 2, "longer": 2, "differ": 1, "top": 0}
    assert agreement_depth(second, first).to_dict() == depth.to_dict()


# --------------------------------------------------------------------------- 4. segments


def test_segments_compare_each_value_and_list_the_small_ones(tmp_path):
    log = make_log(16, users=40)
    # two tablet users: too few units for a segment of their own
    tablet = log["user_id"].isin(["u001", "u002"])
    log.loc[tablet, "device"] = "tablet"
    log.to_csv(tmp_path / "log.csv", index=False)
    config = write_config(
        tmp_path,
        metrics="[clicks, sat_clicks]",
        extra="segments: {columns: [device], min_queries: 5}",
    )
    summary = abrank.run_experiment(config).summary
    for credit in ("clicks", "sat_clicks"):
        ref = reference_outcomes(log, CONTROL, TREATMENT, credit)
        for device in ("desktop", "mobile"):
            part = {i: e for i, e in ref.items() if e["device"] == device}
            got = comparison(summary, credit, segment=f"device={device}")
            assert (got["wins"], got["ties"], got["losses"]) == wtl(part)
            delta, p, ci = clustered_t(part)
            assert got["delta"] == pytest.approx(delta, abs=1e-12)
            assert got["p_values"]["t"] == pytest.approx(p, rel=1e-9)
            assert got["ci_unadjusted"] == pytest.approx(list(ci), rel=1e-9)
            assert got["n_units"] == {"all": len({e["user"] for e in part.values()})}
            firsts = [e["first_team"] for e in part.values()]
            assert got["interleaving"]["first_team"]["units"] == {
                CONTROL: firsts.count(CONTROL),
                TREATMENT: firsts.count(TREATMENT),
            }
            assert got["interleaving"]["clicked"] == sum(e["clicked"] for e in part.values())
    segments = {c["segment"] for c in summary["comparisons"]}
    assert segments == {None, "device=desktop", "device=mobile"}
    n_tablet = log.loc[tablet, "user_id"].nunique()
    assert summary["segments"]["too_small"] == [
        {"segment": "device=tablet", "treatment": TREATMENT, "metric": credit, "n": n_tablet}
        for credit in ("clicks", "sat_clicks")
    ]


# --------------------------------------------------------------------------- 5. bad input


def _good(folder: Path) -> pd.DataFrame:
    log = make_log(17, impressions=60, users=12)
    log.to_csv(folder / "log.csv", index=False)
    return log


def _unknown_team(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    log.loc[7, "team"] = "bm52"
    log.to_csv(folder / "log.csv", index=False)
    # row 7 of the frame: line 9 of the file, under its header line
    return write_config(folder), [
        "log.csv: line 9: team: expected one of the arms (bm25, reranker), got 'bm52'",
    ]


def _empty_team(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    log.loc[4, "team"] = None
    log.to_csv(folder / "log.csv", index=False)
    return write_config(folder), ["log.csv", "line 6: team", "got an empty value"]


def _missing_segment(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    log.loc[9, "device"] = None
    log.to_csv(folder / "log.csv", index=False)
    return write_config(folder, extra="segments: {columns: [device]}"), [
        # row 9 of the frame: line 11 of the file, under its header line
        "log.csv: line 11: device: expected a segment value, got an empty value",
    ]


def _segment_within_impression(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    row = log.loc[(log["rank"] == 3).to_numpy()].index[0]
    before = log.loc[row, "device"]
    log.loc[row, "device"] = "tablet"
    log.to_csv(folder / "log.csv", index=False)
    impression = log.loc[row, "impression_id"]
    first = log.index[(log["impression_id"] == impression) & (log["rank"] == 1)][0]
    # frame rows are file lines under the header line
    return write_config(folder, extra="segments: {columns: [device]}"), [
        f"log.csv: line {row + 2}: device: expected one device per impression, got 'tablet' in "
        f"impression {impression!r}, which has {before!r} at line {first + 2}",
    ]


def _missing_unit(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    log["session_id"] = log["user_id"] + "/s"
    log.loc[5, "session_id"] = None
    log.to_csv(folder / "log.csv", index=False)
    row = log.loc[5]
    return write_config(folder, analysis="design: interleaved, unit: session_id"), [
        f"log.csv: impression {row['impression_id']}, rank {row['rank']}: session_id: expected "
        "a value (analysis.unit), got a missing value",
    ]


def _unit_within_impression(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    log["session_id"] = log["user_id"] + "/s"
    row = log.loc[(log["rank"] == 2).to_numpy()].index[0]
    before = log.loc[row, "session_id"]
    log.loc[row, "session_id"] = "s-other"
    log.to_csv(folder / "log.csv", index=False)
    return write_config(folder, analysis="design: interleaved, unit: session_id"), [
        f"log.csv: impression {log.loc[row, 'impression_id']}, rank 2: session_id: expected one "
        f"value per impression (analysis.unit), got 's-other' after {before!r}",
    ]


def _repeated_rank(folder: Path) -> tuple[Path, list[str]]:
    log = _good(folder)
    first = log["impression_id"].iloc[0]
    log.loc[1, "rank"] = 1
    log.to_csv(folder / "log.csv", index=False)
    return write_config(folder), ["log.csv", "rank", repr(first)]


def _no_team_column(folder: Path) -> tuple[Path, list[str]]:
    _good(folder).drop(columns="team").to_csv(folder / "log.csv", index=False)
    return write_config(folder), [
        "log.csv",
        "team column",
        "found columns: impression_id, user_id, rank, doc_id, clicked, dwell, query, device",
    ]


def _no_unit(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    return write_config(folder, analysis="design: interleaved"), [
        "tdi.yaml",
        "analysis.unit",
        "expected the unit",
    ]


def _not_a_credit(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    return write_config(folder, metrics="[clicks, ctr@3]"), [
        "tdi.yaml",
        "metrics",
        "clicks or sat_clicks",
        "'ctr@3'",
    ]


def _no_log(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    return write_config(folder, log=""), ["tdi.yaml", "log", "expected the interleaved log"]


def _covariates(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    analysis = "design: interleaved, unit: user_id, covariates: {path: pre.csv}"
    return write_config(folder, analysis=analysis), [
        "tdi.yaml",
        "analysis.covariates",
        "expected nothing for the interleaved design",
    ]


def _expected_split(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    analysis = "design: interleaved, unit: user_id, expected_split: {bm25: 0.5, reranker: 0.5}"
    return write_config(folder, analysis=analysis), [
        "tdi.yaml",
        "analysis.expected_split",
        "expected nothing for the interleaved design",
    ]


def _judgments(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    (folder / "qrels.txt").write_text("q0 0 d0-1 1\n")
    return write_config(folder, extra="judgments: {path: qrels.txt}"), [
        "tdi.yaml",
        "judgments",
        "expected nothing for the interleaved design",
    ]


def _silent_arm(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    return write_config(folder, treatments=(TREATMENT, OTHER)), [
        "log.csv",
        "team",
        f"got none from '{OTHER}'",
    ]


def _no_dwell(folder: Path) -> tuple[Path, list[str]]:
    _good(folder).drop(columns="dwell").to_csv(folder / "log.csv", index=False)
    return write_config(folder), [
        "log.csv",
        "expected a dwell column (metrics: sat_clicks counts the clicks by their dwell time)",
        "found columns: impression_id, user_id, rank, doc_id, clicked, query, team, device",
    ]


def _no_unit_column(folder: Path) -> tuple[Path, list[str]]:
    _good(folder)
    return write_config(folder, analysis="design: interleaved, unit: session_id"), [
        "log.csv",
        "session_id column",
        "analysis.unit",
        "found columns: impression_id",
    ]


BAD = {
    "team value no arm": _unknown_team,
    "empty team": _empty_team,
    "ranks repeat": _repeated_rank,
    "missing segment value": _missing_segment,
    "missing unit value": _missing_unit,
    "two units in an impression": _unit_within_impression,
    "segment value within an impression": _segment_within_impression,
    "no team column": _no_team_column,
    "no analysis.unit": _no_unit,
    "not a credit": _not_a_credit,
    "no log": _no_log,
    "covariates": _covariates,
    "expected_split": _expected_split,
    "judgments": _judgments,
    "arm without results": _silent_arm,
    "no dwell with sat_clicks": _no_dwell,
    "no unit column": _no_unit_column,
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_naming_the_problem_and_leaves_the_readout(case, tmp_path, capsys):
    _good(tmp_path)
    out = tmp_path / "readout"
    code, _, err = run_cli(capsys, "run", write_config(tmp_path), "--out", out, "-q")
    assert code == 0, err
    before = _snapshot(out)
    config, expected = BAD[case](tmp_path)
    code, stdout, err = run_cli(capsys, "run", config, "--out", out, "-q")
    assert code == 2, err
    assert err.startswith("abrank: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    for text in expected:
        assert text in err
    assert _snapshot(out) == before
    assert not list(tmp_path.glob("readout.*")) and not list(out.glob(".*tmp*"))


# --------------------------------------------------------------------------- 6. history


def test_a_dated_interleaved_config_records_its_history(tmp_path, capsys):
    days = {"2026-03-01": make_log(21, users=30), "2026-03-02": make_log(22, users=35)}
    for day, log in days.items():
        log.to_parquet(tmp_path / f"log-{day}.parquet", index=False)
    config = write_config(tmp_path, log='"log-{date}.parquet"', metrics="[clicks]", name="daily")
    root = tmp_path / "reports"
    for day in days:
        code, _, err = run_cli(capsys, "run", config, "--date", day, "--out", root / "daily", "-q")
        assert code == 0, err
    history = pd.read_parquet(root / "history")
    assert sorted(history["date"].astype(str).unique()) == sorted(days)
    for day, log in days.items():
        rows = history[history["date"].astype(str) == day]
        assert list(rows["design"]) == ["interleaved"]
        units = log["user_id"].nunique()
        assert list(rows["n_control"]) == list(rows["n_treatment"]) == [units]
        heads = log.sort_values(["impression_id", "rank"]).groupby("impression_id")["team"].first()
        counts = [int((heads == CONTROL).sum()), int((heads == TREATMENT).sum())]
        # few impressions per team: the exact binomial test's p-value
        p = scipy.stats.binomtest(counts[0], sum(counts), 0.5).pvalue
        assert rows["srm_p_value"].iloc[0] == pytest.approx(p, rel=1e-9)
        ref = reference_outcomes(log, CONTROL, TREATMENT, "clicks")
        assert rows["delta"].iloc[0] == pytest.approx(clustered_t(ref)[0], abs=1e-12)
    code, out, err = run_cli(capsys, "history", "daily", "--root", root)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("2026-03-0")]
    assert [line.split()[0] for line in lines] == sorted(days)
    code, out, err = run_cli(capsys, "history", "daily", "--root", root, "--json")
    assert code == 0, err
    assert {row["design"] for row in json.loads(out)} == {"interleaved"}


# --------------------------------------------------------------------------- 7. validate


def test_validate_describes_the_interleaved_log(two_team, capsys):
    config, log = two_team
    code, out, err = run_cli(capsys, "validate", config)
    assert code == 0, err
    per_team = {
        t: log.loc[log["team"] == t, "impression_id"].nunique() for t in (CONTROL, TREATMENT)
    }
    assert out == (
        f"{config}: ok: tdi: interleaved log of 300 impressions, "
        f"{log['user_id'].nunique()} user_id values; teams {CONTROL} "
        f"({per_team[CONTROL]} impressions), {TREATMENT} ({per_team[TREATMENT]} impressions); "
        "credits clicks, sat_clicks\n"
    )


def test_validate_reports_a_bad_interleaved_log(tmp_path, capsys):
    config, _ = _unknown_team(tmp_path)
    code, out, err = run_cli(capsys, "validate", config)
    assert code == 2 and out == ""
    assert "log.csv" in err and "'bm52'" in err


def test_a_cumulative_window_pools_the_impressions_of_every_date(tmp_path, capsys):
    days = {"2026-03-01": make_log(24, users=20), "2026-03-02": make_log(25, users=20)}
    for day, log in days.items():
        log["impression_id"] = day + "/" + log["impression_id"]
        log.to_csv(tmp_path / f"log-{day}.csv", index=False)
    config = write_config(
        tmp_path,
        log='"log-{date}.csv"',
        metrics="[clicks]",
        name="pooled",
        extra="window: {cumulative: 2026-03-01}",
    )
    summary = abrank.run_experiment(config, date="2026-03-02").summary
    pooled = pd.concat(days.values(), ignore_index=True)
    ref = reference_outcomes(pooled, CONTROL, TREATMENT, "clicks")
    got = comparison(summary, "clicks")
    assert got["n"] == 600 and (got["wins"], got["ties"], got["losses"]) == wtl(ref)
    assert got["p_values"]["t"] == pytest.approx(clustered_t(ref)[1], rel=1e-9)
    assert [item["role"] for item in summary["inputs"]] == ["log", "log"]
    # an impression in two dates is an error naming both files
    again = days["2026-03-02"].copy()
    moved = days["2026-03-01"][days["2026-03-01"]["impression_id"] == "2026-03-01/i0000"]
    pd.concat([again, moved]).to_csv(tmp_path / "log-2026-03-02.csv", index=False)
    out = tmp_path / "readout"
    code, _, err = run_cli(capsys, "run", config, "--date", "2026-03-02", "--out", out, "-q")
    assert code == 2 and not out.exists(), err
    assert "log-2026-03-01.csv" in err and "log-2026-03-02.csv" in err
    assert "'2026-03-01/i0000'" in err


def test_the_per_unit_preferences_are_each_users_mean_score_minus_a_half(two_team):
    config, log = two_team
    readout = abrank.run_experiment(config)
    ref = reference_outcomes(log, CONTROL, TREATMENT, "clicks")  # the primary credit
    scores: dict[str, list[float]] = {}
    for entry in ref.values():
        scores.setdefault(entry["user"], []).append((entry["outcome"] + 1) / 2)
    expected = sorted(sum(v) / len(v) - 0.5 for v in scores.values())
    values = readout.unit_values
    assert set(values["arm"]) == {TREATMENT}
    assert sorted(values["value"]) == pytest.approx(expected, abs=1e-12)


def test_a_log_that_reuses_one_list_per_query_is_warned_about(tmp_path: Path) -> None:
    log = make_log(5, impressions=200, queries=20, lengths=(3, 4))  # 3 results each
    # every impression of a query shows one list: documents and teams by (query, rank)
    q = log["query"].str[1:].astype(int).to_numpy()
    log["doc_id"] = [f"d{a}-{r}" for a, r in zip(q, log["rank"])]
    log["team"] = np.where((q + log["rank"].to_numpy()) % 2 == 0, CONTROL, TREATMENT)
    log.to_csv(tmp_path / "log.csv", index=False)
    summary = abrank.run_experiment(write_config(tmp_path)).summary
    fixed = summary["diagnostics"]["interleaving"]["fixed_lists"]
    assert fixed == {"queries": 20, "fixed": 20, "share": 1.0}
    assert any("not merged afresh" in w for w in summary["diagnostics"]["warnings"])


def test_a_log_merged_per_impression_has_few_fixed_lists(two_team) -> None:
    config, log = two_team
    fixed = abrank.run_experiment(config).summary["diagnostics"]["interleaving"]["fixed_lists"]
    # by hand from the log: the queries seen twice or more, none with one list (random teams)
    seen = log.groupby("query")["impression_id"].nunique()
    assert fixed == {"queries": int((seen >= 2).sum()), "fixed": 0, "share": 0.0}
