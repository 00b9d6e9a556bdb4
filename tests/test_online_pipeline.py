"""Online experiments end to end: an impression log in, a clustered readout out."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.cli import main
from abrank.render import render_markdown


def make_log(users: int = 1200, seed: int = 3, lift: float = 0.0, lose: float = 0.0):
    """A user-randomized log: per-user click propensity, ~4 impressions each, top 5."""
    rng = np.random.default_rng(seed)
    user = np.arange(users)
    arm = np.where(rng.random(users) < 0.5, "a", "b")
    keep = ~((arm == "b") & (rng.random(users) < lose))
    user, arm = user[keep], arm[keep]
    propensity = rng.beta(2, 5, size=user.size)
    count = rng.poisson(3, size=user.size) + 1
    imp_user = np.repeat(user, count)
    imp_arm = np.repeat(arm, count)
    imp_p = np.repeat(propensity, count) * np.where(imp_arm == "b", 1 + lift, 1.0)
    n = imp_user.size
    ranks = np.tile(np.arange(1, 6), n)
    examine = 1.0 / ranks
    clicked = rng.random(n * 5) < np.repeat(imp_p, 5) * examine
    device = np.where(np.repeat(user % 3 == 0, count), "mobile", "desktop")
    frame = pd.DataFrame(
        {
            "impression_id": np.repeat(np.arange(n), 5),
            "user_id": np.repeat(imp_user, 5),
            "rank": ranks,
            "doc_id": (np.repeat(rng.integers(0, 500, size=n), 5) + 37 * ranks) % 500,
            "clicked": clicked.astype(int),
            "dwell": np.where(clicked, rng.exponential(40, size=n * 5), np.nan),
            "device": np.repeat(device, 5),
            "arm": np.repeat(imp_arm, 5),
        }
    )
    return frame.sample(frac=1.0, random_state=seed)  # rows in no particular order


CONFIG = """\
name: online-test
log: {path: log.csv}
control: {name: a}
treatments: [{name: b}]
metrics: [click_rr@5, ctr@2, abandonment, sat_ctr@5]
analysis:
  design: independent
  unit: user_id
  resamples: 2000
segments:
  columns: [device]
"""


def with_analysis(line: str) -> str:
    """CONFIG with one more line under ``analysis:``."""
    return CONFIG.replace("segments:\n", f"  {line}\nsegments:\n")


@pytest.fixture()
def experiment(tmp_path):
    make_log().to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    return tmp_path / "exp.yaml"


def _reference_means(log: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per arm, the mean over impressions of click_rr@5 and abandonment, by plain pandas."""
    out = {}
    for arm, rows in log.groupby("arm"):
        clicks = rows[rows["clicked"] == 1]
        first = clicks.groupby("impression_id")["rank"].min()
        rr = (1.0 / first).reindex(rows["impression_id"].unique(), fill_value=0.0)
        out[arm] = {"click_rr@5": rr.mean(), "abandonment": (rr == 0).mean()}
    return out


def test_an_online_readout_has_units_srm_and_clustered_comparisons(experiment):
    readout = abrank.run_experiment(experiment)
    summary = readout.summary
    log = pd.read_csv(experiment.parent / "log.csv")
    expected = _reference_means(log)
    assert summary["unit"] == "user_id"
    users = log.groupby("arm")["user_id"].nunique()
    impressions = log.groupby("arm")["impression_id"].nunique()
    for arm in summary["arms"]:
        assert arm["units"] == users[arm["name"]]
        assert arm["impressions"] == impressions[arm["name"]]
    srm = summary["diagnostics"]["srm"]
    assert set(srm) >= {"units", "expected", "chi2", "p_value", "alarm"}
    assert srm["units"] == {"a": users["a"], "b": users["b"]}
    assert srm["expected"] == {"a": 0.5, "b": 0.5}
    assert srm["alarm"] is False
    overall = {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}
    assert list(overall) == ["click_rr@5", "ctr@2", "abandonment", "sat_ctr@5"]
    for metric in ("click_rr@5", "abandonment"):
        comp = overall[metric]
        assert comp["control_mean"] == pytest.approx(expected["a"][metric], rel=1e-12)
        assert comp["treatment_mean"] == pytest.approx(expected["b"][metric], rel=1e-12)
        assert comp["n_units"] == {"control": users["a"], "treatment": users["b"]}
        assert comp["unit"] == "user_id"
        assert "user_id" in comp["ci_method"]
        assert comp["p_adjusted"] >= comp["p_value"]  # Holm over the four metrics
    segments = [c for c in summary["comparisons"] if c["segment"] is not None]
    assert {c["segment"] for c in segments} == {"device=desktop", "device=mobile"}
    mobile = next(c for c in segments if c["segment"] == "device=mobile")
    mobile_users = log[log["device"] == "mobile"].groupby("arm")["user_id"].nunique()
    assert mobile["n_units"] == {"control": mobile_users["a"], "treatment": mobile_users["b"]}
    assert len(readout.per_query) == impressions.sum()
    ranks = readout.ctr_by_rank
    first = ranks[(ranks["arm"] == "a") & (ranks["rank"] == 1)].iloc[0]
    a_rows = log[(log["arm"] == "a") & (log["rank"] == 1)]
    assert first["ctr"] == pytest.approx(a_rows["clicked"].mean())
    text = render_markdown(readout)
    assert "clustered by user_id" in text
    assert "Clicks by position and per user" in text
    assert "ALARM" not in text


def test_a_lost_share_of_one_arms_users_raises_the_srm_alarm(tmp_path, capsys):
    make_log(users=4000, lose=0.2).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    out = tmp_path / "report"
    code = main(["run", str(tmp_path / "exp.yaml"), "--out", str(out), "--fail-on", "srm"])
    captured = capsys.readouterr()
    assert code == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["diagnostics"]["srm"]["alarm"] is True
    assert summary["diagnostics"]["srm"]["p_value"] < 0.001
    assert captured.out.splitlines()[1].startswith("ALARM: Sample ratio mismatch")
    assert "alert: online-test: srm: sample ratio mismatch" in captured.err
    report = (out / "report.md").read_text()
    body = report.split("\n## ")[0]  # the title block, above every section
    assert "**ALARM:** Sample ratio mismatch" in body
    assert 'class="warning alarm"' in (out / "report.html").read_text()
    # without --fail-on the same run exits 0
    assert main(["run", str(tmp_path / "exp.yaml"), "--out", str(out), "-q"]) == 0


def test_per_arm_files_give_the_one_logs_comparisons(tmp_path, experiment):
    log = pd.read_csv(experiment.parent / "log.csv")
    for arm in ("a", "b"):
        log[log["arm"] == arm].drop(columns="arm").to_csv(tmp_path / f"{arm}.csv", index=False)
    config = CONFIG.replace("log: {path: log.csv}\n", "").replace(
        "control: {name: a}\ntreatments: [{name: b}]",
        "control: {name: a, path: a.csv}\ntreatments: [{name: b, path: b.csv}]",
    )
    (tmp_path / "arms.yaml").write_text(config)
    one = abrank.run_experiment(experiment).summary["comparisons"]
    two = abrank.run_experiment(tmp_path / "arms.yaml").summary["comparisons"]
    assert one == two


def test_users_in_both_arms_are_counted_and_can_be_dropped(tmp_path):
    log = make_log()
    leak = log[log["user_id"] == log["user_id"].iloc[0]].copy()
    other = "b" if leak["arm"].iloc[0] == "a" else "a"
    leak["arm"] = other
    leak["impression_id"] += 10**6
    pd.concat([log, leak]).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    summary = abrank.run_experiment(tmp_path / "exp.yaml").summary
    mixed = summary["diagnostics"]["mixed_units"]
    assert mixed["count"] == 1 and mixed["policy"] == "warn"
    assert any("appear in more than one arm" in w for w in summary["diagnostics"]["warnings"])
    (tmp_path / "drop.yaml").write_text(with_analysis("mixed_units: drop"))
    dropped = abrank.run_experiment(tmp_path / "drop.yaml").summary
    kept = {a["name"]: a["units"] for a in summary["arms"]}
    assert {a["name"]: a["units"] for a in dropped["arms"]} == {k: v - 1 for k, v in kept.items()}


def test_cuped_reports_the_adjusted_comparison_beside_the_unadjusted_one(tmp_path, experiment):
    log = pd.read_csv(experiment.parent / "log.csv")
    rr = _per_user_rr(log)
    rng = np.random.default_rng(5)
    pre = pd.DataFrame(
        {
            "user_id": rr.index,
            "impressions": 4,
            "click_rr@5": rr.to_numpy() + rng.normal(0, 0.05, rr.size),
        }
    ).iloc[: int(rr.size * 0.8)]
    pre.to_csv(tmp_path / "pre.csv", index=False)
    (experiment.parent / "cuped.yaml").write_text(
        with_analysis(f"covariates: {{path: {tmp_path}/pre.csv}}")
    )
    readout = abrank.run_experiment(experiment.parent / "cuped.yaml")
    summary = readout.summary
    plain = abrank.run_experiment(experiment).summary
    adjusted = next(c for c in summary["comparisons"] if c["metric"] == "click_rr@5")
    before = next(c for c in plain["comparisons"] if c["metric"] == "click_rr@5")
    assert adjusted["cuped"]["variance_reduction"] > 0.3
    assert adjusted["cuped"]["unadjusted"]["delta"] == pytest.approx(before["delta"])
    assert adjusted["ci"][1] - adjusted["ci"][0] < before["ci"][1] - before["ci"][0]
    other = next(c for c in summary["comparisons"] if c["metric"] == "ctr@2")
    assert other["cuped"] is None  # no pre-period column for ctr@2
    text = render_markdown(readout)
    table = text[text.index("**CUPED adjustment**") :]
    row = next(line for line in table.splitlines() if line.startswith("| ClickRR@5 | "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"{adjusted['delta']:+.3f}"  # the adjusted delta
    assert cells[3] == f"{before['delta']:+.3f}"  # the unadjusted one beside it
    assert cells[6] == f"{adjusted['cuped']['variance_reduction']:.0%}"


def _per_user_rr(log: pd.DataFrame) -> pd.Series:
    clicks = log[log["clicked"] == 1]
    first = clicks.groupby("impression_id")["rank"].min()
    per_impression = log.drop_duplicates("impression_id").set_index("impression_id")
    rr = (1.0 / first).reindex(per_impression.index, fill_value=0.0)
    return rr.groupby(per_impression["user_id"]).mean()


def test_bad_online_input_exits_2_and_keeps_the_earlier_readout(tmp_path, experiment, capsys):
    out = tmp_path / "report"
    assert main(["run", str(experiment), "--out", str(out), "-q"]) == 0
    before = (out / "summary.json").read_bytes()
    log = pd.read_csv(experiment.parent / "log.csv")
    log.loc[log.index[0], "arm"] = "c"
    log.to_csv(experiment.parent / "log.csv", index=False)
    assert main(["run", str(experiment), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "log.csv" in err and "'c'" in err and "Traceback" not in err
    assert (out / "summary.json").read_bytes() == before


def test_validate_describes_an_online_experiment(experiment, capsys):
    assert main(["validate", str(experiment)]) == 0
    out = capsys.readouterr().out
    assert "ok: online-test: a (" in out and "impressions" in out and "user_id values" in out


def test_an_online_readout_folder_loads_back_and_renders_the_same(tmp_path, experiment):
    from abrank.readout import load_readout

    readout = abrank.run_experiment(experiment)
    folder = tmp_path / "report"
    abrank.write_readout(readout, folder)
    again = load_readout(folder)
    assert render_markdown(again) == render_markdown(readout)
    pd.testing.assert_frame_equal(
        again.ctr_by_rank.reset_index(drop=True),
        readout.ctr_by_rank.reset_index(drop=True),
        check_dtype=False,
    )


def test_a_significant_fall_of_abandonment_is_the_treatments_win(tmp_path):
    make_log(users=6000, lift=0.4).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "exp.yaml").write_text(CONFIG)
    readout = abrank.run_experiment(tmp_path / "exp.yaml")
    overall = {c["metric"]: c for c in readout.summary["comparisons"] if c["segment"] is None}
    assert overall["abandonment"]["delta"] < 0 and overall["abandonment"]["verdict"] == "win"
    assert overall["click_rr@5"]["delta"] > 0 and overall["click_rr@5"]["verdict"] == "win"
    from abrank.render import headline_lines

    line = next(x for x in headline_lines(readout.summary) if x.startswith("Abandonment"))
    assert line.endswith("→ b wins")


def test_judged_metrics_score_a_judged_sample_of_live_traffic(tmp_path):
    """An online log with a `query` column and judgments keyed by it: MRR per impression."""
    log = make_log(users=400)
    log["query"] = "q" + (log["impression_id"] % 7).astype(str)
    log.to_csv(tmp_path / "log.csv", index=False)
    rng = np.random.default_rng(1)
    docs = log[["query", "doc_id"]].drop_duplicates()
    judged = docs[rng.random(len(docs)) < 0.3].assign(relevance=1)
    judged = judged[judged["query"] != "q6"]  # q6 has no relevant judgment: undefined
    judged.rename(columns={"query": "query_id"}).to_csv(tmp_path / "qrels.csv", index=False)
    config = CONFIG.replace(
        "metrics: [click_rr@5, ctr@2, abandonment, sat_ctr@5]",
        "judgments: {path: qrels.csv}\nmetrics: [mrr@5, click_rr@5]",
    )
    (tmp_path / "exp.yaml").write_text(config)
    readout = abrank.run_experiment(tmp_path / "exp.yaml")
    relevant = set(map(tuple, judged[["query", "doc_id"]].astype(str).to_numpy()))
    hits = log[[(q, str(d)) in relevant for q, d in zip(log["query"], log["doc_id"])]]
    first = hits.groupby("impression_id")["rank"].min()
    shown = log.drop_duplicates("impression_id").set_index("impression_id")
    rr = (1.0 / first).reindex(shown.index, fill_value=0.0)[shown["query"] != "q6"]
    per_arm = rr.groupby(shown.loc[rr.index, "arm"]).mean()
    overall = {c["metric"]: c for c in readout.summary["comparisons"] if c["segment"] is None}
    assert overall["mrr@5"]["control_mean"] == pytest.approx(per_arm["a"], rel=1e-12)
    assert overall["mrr@5"]["treatment_mean"] == pytest.approx(per_arm["b"], rel=1e-12)
    undefined = readout.summary["diagnostics"]["undefined"]["metrics"]
    assert undefined == {"mrr@5": int((shown["query"] == "q6").sum())}


def test_a_document_shown_twice_in_an_impression_is_named_with_the_log(tmp_path):
    log = make_log(users=200)
    first = log["impression_id"].min()
    rows = log.index[log["impression_id"] == first]
    log.loc[rows, "doc_id"] = 7
    log["query"] = "q1"
    log.to_csv(tmp_path / "log.csv", index=False)
    pd.DataFrame({"query_id": ["q1"], "doc_id": ["7"], "relevance": [1]}).to_csv(
        tmp_path / "qrels.csv", index=False
    )
    config = CONFIG.replace(
        "metrics: [click_rr@5, ctr@2, abandonment, sat_ctr@5]",
        "judgments: {path: qrels.csv}\nmetrics: [mrr@5]",
    )
    (tmp_path / "exp.yaml").write_text(config)
    with pytest.raises(abrank.DataError) as error:
        abrank.run_experiment(tmp_path / "exp.yaml")
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'log.csv'}: judged metrics: rankings: ")
    assert f"('{first}', '7')" in message


def test_readme_shows_what_the_online_demo_run_prints(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    text = (root / "README.md").read_text(encoding="utf-8")
    start = text.index("$ abrank run experiments/demo-online.yaml\n")
    block = text[start:].split("\n", 1)[1].split("```", 1)[0].splitlines()
    monkeypatch.chdir(root)
    out = tmp_path / "demo-online"
    assert main(["run", "experiments/demo-online.yaml", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = [
        f"readout written to {out}/" if line.startswith("readout written") else line
        for line in block
    ]
    assert printed == expected
