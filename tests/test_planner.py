"""The planner (`abrank simulate`): simulated clicks against hand-worked probabilities, the
vectorized tests against the library's, calibration under H0, the DL19 result, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import abrank
from abrank.cli import main
from abrank.config import build_experiment, parse_experiment
from abrank.errors import ConfigError, DataError
from abrank.interleaving import PositionBased, interleave
from abrank.interleaving.clicks import Cascade
from abrank.planner import simulate_power
from abrank.planner.result import users_needed, users_ratio
from abrank.planner.setup import click_setup, flip_patterns
from abrank.planner.simulate import automatic_grid
from abrank.planner.users import UserModel, simulate_units
from abrank.stats import UnitSums, compare_clustered
from abrank.stats.interleaved import PreferenceCounts, compare_interleaved
from abrank.stats.unit_t import preference_test, ratio_difference_test

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"


def rankings(lists: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, doc, i + 1) for q, docs in lists.items() for i, doc in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])


# Two queries, two results each. q1: the treatment puts the relevant b first; q2: both
# rankers show the same list.
CONTROL = rankings({"q1": ["a", "b"], "q2": ["c", "d"]})
TREATMENT = rankings({"q1": ["b", "a"], "q2": ["c", "d"]})
JUDGMENTS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q2", "q2"],
        "doc_id": ["a", "b", "c", "d"],
        "relevance": [0, 1, 1, 0],
    }
)
PBM = PositionBased(attractiveness={0: 0.1, 1: 0.5})  # examination 1, 1/2


def tiny_units(model, users: int = 200_000, ctr_k: int = 1):
    setup = click_setup(CONTROL, TREATMENT, JUDGMENTS, model, depth=2)
    people = UserModel(impressions_per_user=1, propensity_sd=0)
    return setup, simulate_units(setup, users, 1, people, ctr_k, np.random.default_rng(5))


# ------------------------------------------------------------------ hand-worked clicks


def test_click_probabilities_of_the_tiny_case_by_hand():
    setup, _ = tiny_units(PBM, users=10)
    # control q1 [a(0), b(1)]: 1 * 0.1, 1/2 * 0.5; treatment q1 [b, a]: 0.5, 0.05; q2 [c(1), d(0)]
    assert setup.arm_probability.tolist() == [
        [[0.1, 0.25], [0.5, 0.05]],
        [[0.5, 0.05], [0.5, 0.05]],
    ]
    # depth 2: one round, two flip patterns per query; pattern 0 (false): treatment first
    assert setup.variants == 2
    teams = setup.variant_team.tolist()
    assert teams == [[1, 0], [0, 1], [1, 0], [0, 1]]
    # q1: treatment first shows [b, a]; control first shows [a, b]
    assert setup.variant_probability.tolist() == [
        [0.5, 0.05],
        [0.1, 0.25],
        [0.5, 0.05],
        [0.5, 0.05],
    ]


def test_pbm_win_share_and_click_metrics_match_the_closed_form():
    """By hand: q1 control-first [a C, b T] wins 0.25 * 0.9 = 0.225, loses 0.1 * 0.75 =
    0.075; treatment-first [b T, a C] wins 0.5 * 0.95 = 0.475, loses 0.05 * 0.5 = 0.025;
    q2's lists give wins and losses of 0.025 and 0.475 in either order. Over queries and
    flips: P(win) = 0.30, P(loss) = 0.15. click_rr@10: control q1 0.1 + 0.9 * 0.25 / 2 =
    0.2125, lists [x, y] with 0.5, 0.05: 0.5 + 0.5 * 0.05 / 2 = 0.5125; ctr@1 = p(top)."""
    _, units = tiny_units(PBM)
    n = units.impressions.sum()
    assert units.impressions.min() == 1 and units.impressions.max() == 1
    for share, exact in ((units.wins.sum() / n, 0.30), (units.losses.sum() / n, 0.15)):
        assert abs(share - exact) < 4 * math.sqrt(exact * (1 - exact) / n)
    treated = units.treated
    arms = {"control": ~treated, "treatment": treated}
    expected_rr = {"control": (0.2125 + 0.5125) / 2, "treatment": 0.5125}
    expected_ctr = {"control": (0.1 + 0.5) / 2, "treatment": 0.5}
    for arm, mask in arms.items():
        rr = units.click_rr[mask].mean()
        ctr = units.ctr[mask].mean()
        n_arm = mask.sum()
        assert abs(rr - expected_rr[arm]) < 4 * 0.5 / math.sqrt(n_arm)
        assert abs(ctr - expected_ctr[arm]) < 4 * 0.5 / math.sqrt(n_arm)


def test_cascade_win_share_matches_the_closed_form():
    """Pure cascade (stop after every click), attractiveness 0.1 / 0.5 at every rank:
    q1 [a C, b T] wins 0.9 * 0.5 = 0.45, loses 0.1; [b T, a C] wins 0.5, loses 0.5 * 0.1 =
    0.05; q2 [c, d] by either team first: the top (0.5) or the second (0.5 * 0.1) decides,
    0.275 each way on average. P(win) = (0.475 + 0.275) / 2 = 0.375, P(loss) = (0.075 +
    0.275) / 2 = 0.175."""
    model = Cascade(attractiveness={0: 0.1, 1: 0.5}, stop={0: 1.0, 1: 1.0})
    _, units = tiny_units(model)
    n = units.impressions.sum()
    for share, exact in ((units.wins.sum() / n, 0.375), (units.losses.sum() / n, 0.175)):
        assert abs(share - exact) < 4 * math.sqrt(exact * (1 - exact) / n)


def test_the_variants_are_every_team_draft_list_interleave_builds():
    control = rankings({"q1": ["a", "b", "c", "d"]})
    treatment = rankings({"q1": ["b", "e", "a", "f"]})
    judged = pd.DataFrame(
        {"query_id": ["q1"] * 5, "doc_id": list("abcde"), "relevance": [0, 1, 2, 3, 4]}
    )
    model = PositionBased(attractiveness={0: 0.0, 1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4}, eta=0)
    setup = click_setup(control, treatment, judged, model, depth=4)
    grade = {"a": 0.0, "b": 0.1, "c": 0.2, "d": 0.3, "e": 0.4, "f": 0.0}
    built = set()
    for seed in range(64):
        out = interleave(control, treatment, seed=seed, depth=4)
        teams = tuple(int(t == "treatment") for t in out["team"])
        built.add((tuple(grade[d] for d in out["doc_id"]), teams))
    variants = {
        (tuple(p), tuple(t))
        for p, t in zip(setup.variant_probability.tolist(), setup.variant_team.tolist())
    }
    assert setup.variants == 4 and variants == built


def test_flip_patterns_are_every_pattern_then_a_seeded_pool():
    assert flip_patterns(2).tolist() == [[False, False], [True, False], [False, True], [True, True]]
    pool = flip_patterns(11, seed=3)
    assert pool.shape == (1024, 11)
    assert np.array_equal(pool, flip_patterns(11, seed=3))
    assert abs(pool.mean() - 0.5) < 0.02


def test_a_grade_the_click_model_does_not_list_is_a_data_error():
    model = PositionBased(attractiveness={0: 0.1})
    with pytest.raises(DataError, match=r"attractiveness: expected a probability for every grade"):
        click_setup(CONTROL, TREATMENT, JUDGMENTS, model, depth=2)


def test_no_query_in_both_rankings_with_judgments_is_a_data_error():
    other = rankings({"q9": ["a"]})
    with pytest.raises(DataError, match=r"expected queries in both rankings that have judgments"):
        click_setup(CONTROL, other, JUDGMENTS, PBM, depth=2)


# ------------------------------------------------------------------ the tests themselves


def demo_units(experiments: int = 4, users: int = 300, seed: int = 11):
    experiment = parse_experiment(
        (EXPERIMENTS / "demo-reranker.yaml").read_text(), base_dir=EXPERIMENTS
    )
    from abrank.analysis.load import load_data

    data = load_data(experiment)
    setup = click_setup(
        data.rankings["bm25"], data.rankings["reranker"], data.judgments, PositionBased()
    )
    rng = np.random.default_rng(seed)
    return simulate_units(setup, users, experiments, UserModel(), 3, rng)


def test_vectorized_tests_equal_the_librarys_p_values():
    units = demo_units()
    for name in ("click_rr", "ctr"):
        m = getattr(units, name)
        delta, _, p = ratio_difference_test(m, units.impressions, units.treated)
        for row in range(m.shape[0]):
            t = units.treated[row]
            c = ~t
            found = compare_clustered(
                UnitSums(m[row, c], units.impressions[row, c]),
                UnitSums(m[row, t], units.impressions[row, t]),
                tests=["t"],
            )
            assert abs(found.p_value - p[row]) <= 1e-12
            assert abs(found.delta - delta[row]) <= 1e-12
    delta, _, p = preference_test(units.wins, units.losses, units.impressions)
    for row in range(units.wins.shape[0]):
        wins, losses = units.wins[row], units.losses[row]
        ties = units.impressions[row] - wins - losses
        found = compare_interleaved(
            PreferenceCounts(wins.astype(int), ties.astype(int), losses.astype(int)),
            tests=["t"],
        )
        assert abs(found.p_value - p[row]) <= 1e-12
        assert abs(found.delta - delta[row]) <= 1e-12


def test_vectorized_tests_degenerate_rows_as_the_library():
    # every impression a tie: p = 1; one arm with a single unit: no test (NaN)
    d = np.ones((1, 4))
    assert preference_test(np.zeros((1, 4)), np.zeros((1, 4)), d)[2].tolist() == [1.0]
    treated = np.array([[True, False, False, False]])
    assert np.isnan(ratio_difference_test(np.ones((1, 4)), d, treated)[2][0])
    # constant arms that differ: the exact permutation p 2 / C(4, 2)
    m = np.array([[1.0, 1.0, 0.0, 0.0]])
    p = ratio_difference_test(m, d, np.array([[True, True, False, False]]))[2][0]
    library = compare_clustered(UnitSums([0.0, 0.0], [1, 1]), UnitSums([1.0, 1.0], [1, 1]))
    assert p == pytest.approx(2 / 6) and p == pytest.approx(library.p_values["t"])


# ------------------------------------------------------------------ power and calibration


def demo_config(**simulation) -> abrank.Experiment:
    text = (EXPERIMENTS / "demo-reranker.yaml").read_text()
    if simulation:
        text += "simulation:\n" + "".join(
            f"  {k}: {json.dumps(v)}\n" for k, v in simulation.items()
        )
    return parse_experiment(text, source="demo.yaml", base_dir=EXPERIMENTS)


def test_under_h0_both_designs_reject_at_alpha():
    """One ranker on both sides: the share of 800 simulated experiments that reject is
    alpha = 0.05 within 3 Monte-Carlo standard errors (0.023) for every design."""
    config = build_experiment(
        {
            "name": "same",
            "control": {"name": "bm25", "path": "data/demo-control.csv.gz"},
            "treatments": [{"name": "again", "path": "data/demo-control.csv.gz"}],
            "judgments": {"path": "data/demo-judgments.tsv"},
            "metrics": ["mrr@10"],
        },
        base_dir=EXPERIMENTS,
    )
    result = simulate_power(config, users=[100, 300], simulations=800, seed=3)
    bound = 3 * math.sqrt(0.05 * 0.95 / 800)
    for design in result.designs:
        for power in design.power:
            assert abs(power - 0.05) <= bound, (design.name, design.power)


def test_power_grows_with_users_and_interleaving_needs_fewer(tmp_path):
    result = simulate_power(demo_config(), users=[30, 60, 120, 240], simulations=100)
    for design in result.designs:
        assert design.power[-1] > design.power[0]
    ab, il = result.design("ab_click_rr"), result.design("interleaving")
    assert il.needed.users < ab.needed.users
    assert result.ratio.value == pytest.approx(ab.needed.users / il.needed.users)
    assert result.sentence().startswith("team-draft interleaving needs ")


def test_same_seed_same_numbers_other_seed_other_numbers():
    first = simulate_power(demo_config(), users=[40, 80], simulations=40, seed=4)
    again = simulate_power(demo_config(), users=[40, 80], simulations=40, seed=4)
    other = simulate_power(demo_config(), users=[40, 80], simulations=40, seed=5)
    assert first == again
    strip = {"elapsed_seconds"}
    assert {k: v for k, v in first.to_dict().items() if k not in strip} == {
        k: v for k, v in again.to_dict().items() if k not in strip
    }
    assert first.pilot != other.pilot


def test_automatic_grid_brackets_both_designs():
    result = simulate_power(demo_config(simulations=60, click_model="cascade"))
    assert result.grid_source == "automatic" and len(result.users) == 6
    for name in ("ab_click_rr", "interleaving"):
        assert result.design(name).needed.bound == "within", result.design(name).power
    grid, note = automatic_grid(
        {"ab_click_rr": {"analytic_users": 1000.0}, "interleaving": {"analytic_users": 100.0}}
    )
    assert grid[0] == 50 and grid[-1] == 2000 and note is None
    grid, note = automatic_grid(
        {"ab_click_rr": {"analytic_users": None}, "interleaving": {"analytic_users": 100.0}}
    )
    assert grid[-1] == 100_000 and "stops at 100,000 users" in note


def test_users_needed_interpolates_on_log_users():
    found = users_needed([100, 400], [0.5, 0.9], 0.8)
    assert found.bound == "within"
    assert found.users == pytest.approx(100 * 4**0.75)  # 3/4 of the way on log users
    assert found.note is not None and "coarse" in found.note
    assert users_needed([100, 400], [0.85, 0.9], 0.8).bound == "at_most"
    assert users_needed([100, 400], [0.1, 0.3], 0.8).text() == "> 400"
    fine = users_needed([100, 200], [0.7, 0.9], 0.8)
    assert fine.note is None and fine.users == pytest.approx(100 * 2**0.5)
    ab, il = users_needed([100, 400], [0.1, 0.3], 0.8), users_needed([100, 400], [0.5, 0.9], 0.8)
    ratio = users_ratio(ab, il)
    assert ratio.bound == "at_least" and ratio.value == pytest.approx(400 / (100 * 4**0.75))


# ------------------------------------------------------------------ DL19: the literature's result


def test_dl19_interleaving_needs_several_times_fewer_users(shared_data):
    """BM25 vs BM25 + RankVicuna on TREC DL19 passage (43 queries): team-draft
    interleaving needs at least 3x fewer users than an A/B test on click_rr@10 for 80%
    power (measured with 100 simulations per size: about 4x under the PBM, 6x under the
    cascade)."""
    dl = shared_data / "trec-dl-passage"
    config = build_experiment(
        {
            "name": "dl19",
            "control": {"name": "bm25", "path": str(dl / "runs/dl19.bm25-flat.top100.txt")},
            "treatments": [
                {
                    "name": "rankvicuna",
                    "path": str(dl / "runs/dl19.bm25-flat.top100+rankvicuna-7b.txt"),
                }
            ],
            "judgments": {"path": str(dl / "qrels.dl19-passage.txt")},
            "metrics": ["mrr@10"],
            "simulation": {"simulations": 100},
        }
    )
    for model in ("pbm", "cascade"):
        result = simulate_power(config, click_model=model)
        assert result.queries == 43
        assert result.ratio.bound == "exact", result.to_dict()
        assert result.ratio.value >= 3, (model, result.users, result.ratio)


# ------------------------------------------------------------------ config


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("click_model: pbn", "simulation.click_model: expected 'pbm' or 'cascade', got 'pbn'"),
        ("profile: casual", "simulation.profile: expected 'perfect', 'navigational' or"),
        ("eta: -1", "simulation.eta: expected greater than or equal to 0, got -1"),
        ("attractiveness: {0: 1.5}", "simulation.attractiveness: expected a probability in [0, 1]"),
        ("stop: {}", "simulation.stop: expected a mapping of grade to probability with at least"),
        ("examination: [1, 2]", "simulation.examination: expected a list of probabilities"),
        ("users: [10, 100]", "simulation.users: expected numbers of users from 20 to 2,000,000"),
        ("users: [100, 100]", "simulation.users: expected different numbers of users"),
        ("simulations: 5", "simulation.simulations: expected greater than or equal to 20, got 5"),
        ("impressions_per_user: 0.5", "simulation.impressions_per_user: expected greater than"),
        ("propensity_sd: -0.1", "simulation.propensity_sd: expected greater than or equal to 0"),
        ("power: 1.5", "simulation.power: expected less than 1, got 1.5"),
        ("simulatons: 50", "simulation.simulatons: unknown key; did you mean 'simulations'?"),
    ],
)
def test_bad_simulation_values_name_the_key_and_line(line, message):
    text = (EXPERIMENTS / "demo-reranker.yaml").read_text()
    lines = text.count("\n")
    text += f"simulation:\n  {line}\n"
    with pytest.raises(ConfigError) as caught:
        parse_experiment(text, source="demo.yaml", base_dir=EXPERIMENTS)
    assert f"demo.yaml: line {lines + 2}: {message}" in str(caught.value)


def test_unknown_treatment_and_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match=r"simulation.treatment: expected one of the treatments"):
        simulate_power(demo_config(treatment="nope"))
    with pytest.raises(ConfigError, match=r"click_model: expected one of pbm, cascade"):
        simulate_power(demo_config(), click_model="dbn")
    with pytest.raises(ConfigError, match=r"users: expected numbers of users from 20"):
        simulate_power(demo_config(), users=[5])
    with pytest.raises(ConfigError, match=r"simulations: expected a whole number >= 20"):
        simulate_power(demo_config(), simulations=3)


def test_simulate_power_is_in_the_public_api():
    assert "simulate_power" in abrank.__all__
    assert abrank.simulate_power is simulate_power


# ------------------------------------------------------------------ CLI


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


CONFIG = EXPERIMENTS / "demo-reranker.yaml"


def test_cli_writes_the_folder_and_prints_the_table(tmp_path, capsys):
    out_dir = tmp_path / "plan"
    code, out, err = run_cli(
        capsys, "simulate", CONFIG, "--users", 40, 80, 160, "--simulations", 40, "--out", out_dir
    )
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        ".abrank-readout",
        "power.csv",
        "power.png",
        "rule_plan.json",  # the demo's metrics have roles: the units the decision rule needs
        "simulation.html",
        "simulation.json",
        "simulation.md",
    ]
    plan = json.loads((out_dir / "rule_plan.json").read_text())
    assert [(m["metric"], m["role"]) for m in plan["metrics"]] == [
        ("mrr@10", "success"),
        ("ndcg@10", "secondary"),
        ("recall@20", "guardrail"),
        ("hit@3", "secondary"),
    ]
    assert plan["unit"] == "queries" and plan["pilot_units"] == 1910
    assert plan["planned_power"] == pytest.approx(0.8, abs=1e-6) and plan["units"] > 1910
    assert "units for the decision rule" in out
    saved = json.loads((out_dir / "simulation.json").read_text())
    assert saved["users"] == [40, 80, 160] and saved["simulations"] == 40
    assert [d["name"] for d in saved["designs"]] == ["ab_click_rr", "ab_ctr", "interleaving"]
    assert saved["click_model"]["model"] == "pbm" and saved["seed"] == 7
    rows = pd.read_csv(out_dir / "power.csv")
    assert len(rows) == 9 and rows["power"].between(0, 1).all()
    assert "A/B click_rr@10" in out and "team-draft interleaving" in out
    assert saved["sentence"] in out
    assert (out_dir / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/png;base64," in (out_dir / "simulation.html").read_text()
    # a second run replaces the folder abrank wrote
    code, _, err = run_cli(
        capsys, "simulate", CONFIG, "--users", 40, 80, "--simulations", 20, "--out", out_dir
    )
    assert code == 0, err
    assert json.loads((out_dir / "simulation.json").read_text())["users"] == [40, 80]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--click-model", "dbn"), "--click-model: expected one of pbm, cascade, got 'dbn'"),
        (("--users", "5", "100"), "--users: expected numbers of users from 20 to 2,000,000"),
        (("--users", "100", "100"), "--users: expected different numbers of users"),
        (("--simulations", "3"), "--simulations: expected a whole number >= 20, got 3"),
    ],
)
def test_cli_bad_options_exit_2_and_leave_the_earlier_folder(tmp_path, capsys, args, message):
    out_dir = tmp_path / "plan"
    code, _, err = run_cli(
        capsys, "simulate", CONFIG, "--users", 40, 80, "--simulations", 20, "--out", out_dir
    )
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    code, out, err = run_cli(capsys, "simulate", CONFIG, *args, "--out", out_dir)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan"]


def test_cli_bad_config_value_exits_2_naming_the_key(tmp_path, capsys):
    config = tmp_path / "demo.yaml"
    text = CONFIG.read_text().replace("data/", str(EXPERIMENTS / "data") + "/")
    config.write_text(text + "simulation:\n  eta: -2\n")
    out_dir = tmp_path / "plan"
    code, _, err = run_cli(capsys, "simulate", config, "--out", out_dir)
    assert code == 2
    assert "simulation.eta: expected greater than or equal to 0, got -2" in err
    assert not out_dir.exists()


def test_cli_refuses_a_folder_abrank_did_not_write(tmp_path, capsys):
    out_dir = tmp_path / "mine"
    out_dir.mkdir()
    (out_dir / "notes.txt").write_text("keep me")
    code, _, err = run_cli(capsys, "simulate", CONFIG, "--users", 40, "--out", out_dir)
    assert code == 2
    assert "without the .abrank-readout marker" in err
    assert [p.name for p in out_dir.iterdir()] == ["notes.txt"]


def test_cli_refuses_an_online_experiment(tmp_path, capsys):
    """An online experiment without metric roles (the online demo's config has roles, with
    which ``simulate`` plans from the pilot readout instead: its metrics stripped of them)."""
    text = (EXPERIMENTS / "demo-online.yaml").read_text(encoding="utf-8")
    start, end = text.index("metrics:\n"), text.index("primary_metric:")
    text = text[:start] + "metrics: [click_rr@10, ctr@3]\n" + text[end:]
    config = tmp_path / "demo-online.yaml"
    config.write_text(text.replace("data/", f"{EXPERIMENTS / 'data'}/"), encoding="utf-8")
    out_dir = tmp_path / "plan"
    code, _, err = run_cli(capsys, "simulate", config, "--users", 40, "--out", out_dir)
    assert code == 2
    assert "demo-online.yaml: expected an offline experiment (a ranking per arm and" in err
    assert not out_dir.exists()


def test_ctr_k_and_cascade_stop_overrides_are_used():
    result = simulate_power(
        demo_config(ctr_k=5, click_model="cascade", stop={0: 1, 1: 1, 2: 1, 3: 1}),
        users=[40],
        simulations=20,
    )
    assert result.ctr_k == 5 and result.design("ab_ctr").label == "A/B ctr@5"
    assert result.click_model["stop"] == {"0": 1.0, "1": 1.0, "2": 1.0, "3": 1.0}
    assert result.click_model["attractiveness"]["4"] == 0.95  # the navigational profile's
