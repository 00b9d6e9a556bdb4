"""Metric roles and the decision rule: the config, the checks of each comparison against
scipy's one-sided t-tests, the rule on worked examples, the sizing against its closed form,
and whole readouts of every design with roles."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

import abrank
from abrank.cli import main
from abrank.config.decision import MetricRole, parse_margin
from abrank.decision.checks import annotate
from abrank.decision.rule import RuleSettings, decide_comparisons, units_needed
from abrank.decision.sizing import MetricPlan, ship_probability, units_for_power
from abrank.stats import compare

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"


def _paired(seed: int, n: int, shift: float, sd: float = 0.2, base: float = 0.5):
    rng = np.random.default_rng(seed)
    control = base + rng.normal(0.0, 0.15, n)
    treatment = control + shift + rng.normal(0.0, sd, n)
    return control, treatment


def _compared(metric: str, control, treatment, treatment_name: str = "new"):
    return compare(
        control,
        treatment,
        design="paired",
        tests=["t"],
        metric=metric,
        treatment_name=treatment_name,
    )


# --------------------------------------------------------------------------- config


def _config(tmp_path: Path, metrics: list, **extra) -> Path:
    text = (EXPERIMENTS / "demo-reranker.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    for arm in [data["control"], *data["treatments"]]:
        arm["path"] = str(EXPERIMENTS / arm["path"])
    data["judgments"]["path"] = str(EXPERIMENTS / data["judgments"]["path"])
    data["metrics"] = metrics
    data.pop("primary_metric", None)
    data.update(extra)
    path = tmp_path / "roles.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_roles_are_read_by_canonical_name(tmp_path):
    path = _config(
        tmp_path,
        [
            "NDCG@10",
            {"name": "MRR@10", "role": "success"},
            {"name": "recall@20", "role": "guardrail", "nim": "0.5%", "direction": "higher"},
        ],
        decision={"mde": {"mrr@10": 0.02}, "power": 0.9},
    )
    experiment = abrank.load_experiment(path)
    assert experiment.metrics == ["ndcg@10", "mrr@10", "recall@20"]
    assert experiment.primary_metric == "mrr@10"  # the first success metric leads
    roles = experiment.metric_roles
    assert [roles[m].role for m in experiment.metrics] == ["secondary", "success", "guardrail"]
    assert roles["recall@20"].nim == pytest.approx(0.005) and roles["recall@20"].relative
    assert experiment.decision is not None
    assert experiment.decision.mde == {"mrr@10": 0.02} and experiment.decision.power == 0.9


def test_margins_absolute_and_relative():
    assert parse_margin(0.005) == (0.005, False)
    assert parse_margin("2%") == (0.02, True)
    assert parse_margin("0.5 %") == (0.005, True)
    assert parse_margin("0.01") == (0.01, False)
    for bad in ("x%", -1, True, "-2%", None):
        with pytest.raises(ValueError, match="margin"):
            parse_margin(bad)


@pytest.mark.parametrize(
    ("metrics", "extra", "expected"),
    [
        ([{"name": "mrr@10", "role": "guard"}], {}, "metrics[0].role: expected one of success"),
        (
            [{"name": "mrr@10", "role": "success"}, {"name": "recall@20", "role": "guardrail"}],
            {},
            "metrics[1]: expected nim, the guardrail's non-inferiority margin",
        ),
        (
            [{"name": "mrr@10", "role": "success", "nim": 0.1}],
            {},
            "metrics[0].nim: expected a margin only on a guardrail, got one on a success metric",
        ),
        (
            [
                {"name": "mrr@10", "role": "success"},
                {"name": "hit@3", "role": "guardrail", "nim": "lots"},
            ],
            {},
            "metrics[1].nim: expected a margin such as 0.005 or '5%', got 'lots'",
        ),
        (
            [{"name": "mrr@10", "role": "success", "direction": "up"}],
            {},
            "metrics[0].direction: expected higher or lower, got 'up'",
        ),
        (
            [{"name": "mrr@10", "role": "success", "weight": 2}],
            {},
            "metrics[0].weight: unknown key (known keys: name, role, nim, direction)",
        ),
        (
            [{"name": "recall@20", "role": "guardrail", "nim": 0.01}],
            {},
            "metrics: expected at least one metric with role: success",
        ),
        (
            [{"name": "mrr@10", "role": "success"}, "hit@3"],
            {"decision": {"mde": {"hit@3": 0.1}}},
            "decision.mde.hit@3: expected a success metric ['mrr@10'], got 'hit@3'",
        ),
        (
            [{"name": "mrr@10", "role": "success"}],
            {"decision": {"rule": "ship-always"}},
            "decision.rule: expected 'ship-if-success-and-no-harm'",
        ),
    ],
)
def test_bad_roles_exit_2_naming_the_field(tmp_path, capsys, metrics, extra, expected):
    path = _config(tmp_path, metrics, **extra)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "Traceback" not in err
    assert f"{path}: line " in err  # the message names the config's line


# --------------------------------------------------------------------------- checks


def test_guardrail_non_inferiority_is_scipys_one_sided_t_test():
    control, treatment = _paired(1, 1600, shift=-0.01)
    margin = 0.03
    comp = _compared("g", control, treatment)
    checked = annotate(comp, MetricRole(role="guardrail", nim=margin), False, 0.05)
    d = treatment - control
    expected = sps.ttest_1samp(d + margin, 0.0, alternative="greater").pvalue
    checks = checked.decision_checks
    assert checks["p_non_inferiority"] == pytest.approx(expected, rel=1e-9)
    se = d.std(ddof=1) / math.sqrt(d.size)
    bound = d.mean() - sps.t.ppf(0.95, d.size - 1) * se
    assert checks["bound"] == pytest.approx(bound, rel=1e-9)
    assert checks["non_inferior"] is bool(expected < 0.05) is True
    assert checks["inferior"] is False
    assert checks["deteriorated"] is False  # -0.01 is not significant here
    assert checked.role == "guardrail"


def test_a_guardrail_beyond_its_margin_has_p_above_one_half_and_is_inferior():
    control, treatment = _paired(2, 3000, shift=-0.08, sd=0.1)
    comp = _compared("g", control, treatment)
    checks = annotate(comp, MetricRole(role="guardrail", nim=0.02), False, 0.05).decision_checks
    d = treatment - control
    expected = sps.ttest_1samp(d + 0.02, 0.0, alternative="greater").pvalue
    assert expected > 0.99
    assert checks["p_non_inferiority"] == pytest.approx(expected, rel=1e-9)
    assert checks["inferior"] is True and checks["non_inferior"] is False
    assert checks["deteriorated"] is True


def test_relative_margin_inverts_the_ratio_test():
    control, treatment = _paired(3, 500, shift=-0.005, base=0.6)
    comp = _compared("g", control, treatment)
    checks = annotate(comp, MetricRole(role="guardrail", nim=0.05, relative=True), False, 0.05)
    checks = checks.decision_checks
    # H0: mean(t) / mean(c) - 1 <= -5%, i.e. mean(t - 0.95 c) <= 0 (the paired t-test)
    expected = sps.ttest_1samp(treatment - 0.95 * control, 0.0, alternative="greater").pvalue
    assert checks["scale"] == "relative"
    assert checks["p_non_inferiority"] == pytest.approx(expected, rel=1e-7)
    assert checks["non_inferior"] is bool(expected < 0.05)


def test_lower_is_better_flips_the_bad_direction():
    control, treatment = _paired(4, 500, shift=0.05)  # a clear increase
    comp = _compared("latency", control, treatment)
    lower = annotate(comp, MetricRole(role="guardrail", nim=0.01), True, 0.05).decision_checks
    higher = annotate(comp, MetricRole(role="secondary"), False, 0.05).decision_checks
    assert lower["direction"] == "lower" and lower["deteriorated"] is True
    assert lower["inferior"] is True  # the lower end of the increase is above +0.01
    d = treatment - control
    expected = sps.ttest_1samp(0.01 - d, 0.0, alternative="greater").pvalue
    assert lower["p_non_inferiority"] == pytest.approx(expected, rel=1e-9)
    assert higher["deteriorated"] is False


# --------------------------------------------------------------------------- the rule


def _annotated(metric, role, control, treatment, nim=None, treatment_name="new"):
    comp = _compared(metric, control, treatment, treatment_name)
    return annotate(comp, MetricRole(role=role, nim=nim), False, 0.05)


def test_ship_when_a_success_metric_wins_and_the_guardrail_holds():
    s = _annotated("s", "success", *_paired(5, 800, shift=0.05))
    g = _annotated("g", "guardrail", *_paired(6, 800, shift=0.0, sd=0.05), nim=0.02)
    decision = decide_comparisons([s, g], RuleSettings(), labels={"s": "S@10", "g": "G@20"})
    assert decision.status == "ship"
    assert decision.reasons[0] == (
        f"Ship: S@10 wins ({s.delta:+.3f}) and G@20 stays within its -0.02 margin"
    )
    assert decision.units_needed is None
    assert decision.success[0]["wins"] and decision.guardrails[0]["non_inferior"]


def test_no_ship_when_a_secondary_metric_deteriorates():
    s = _annotated("s", "success", *_paired(7, 800, shift=0.05))
    x = _annotated("x", "secondary", *_paired(8, 800, shift=-0.05))
    decision = decide_comparisons([s, x], RuleSettings())
    assert decision.status == "no-ship"
    assert decision.reasons[0].startswith("No-ship: x deteriorates (")
    assert [d["metric"] for d in decision.deteriorations] == ["x"]


def test_keep_running_with_the_units_of_the_closed_form():
    # one success metric, nothing else: P(ship) = Phi(d / se - z(1 - alpha / 2)) (times a
    # deterioration factor within 1e-6 of 1), so the scale is ((z_a + z_b) se / d)^2
    s = _annotated("s", "success", *_paired(9, 300, shift=0.0))
    settings = RuleSettings(mde={"s": 0.02})
    decision = decide_comparisons([s], settings)
    assert decision.status == "keep-running"
    low, high = s.ci_unadjusted
    se = (high - low) / (2 * sps.norm.ppf(0.975))
    scale = ((sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) * se / 0.02) ** 2
    expected = math.ceil(s.n * scale) - s.n
    assert abs(decision.units_needed - expected) <= 1
    assert decision.reasons[0].startswith("Keep running: no success metric wins yet (s ")
    assert (
        decision.reasons[-1]
        == f"about {decision.units_needed:,} more queries for 80% power to ship"
    )
    assert units_needed([s], settings) == decision.units_needed
    assert decision.days_needed is None  # an undated readout has no rate
    # a week of data: the same units at s.n / 7 a day
    weekly = decide_comparisons([s], settings, days=7)
    assert weekly.days_needed == math.ceil(weekly.units_needed / (s.n / 7))
    assert weekly.reasons[-1].endswith(
        f"(about {weekly.days_needed:,} more days at the current rate)"
    )


def test_unhealthy_wins_over_everything():
    s = _annotated("s", "success", *_paired(10, 800, shift=0.05))
    decision = decide_comparisons(
        [s], RuleSettings(), problems=["sample ratio mismatch (p = 1e-06 < 0.001)"]
    )
    assert decision.status == "unhealthy"
    assert decision.reasons[0] == (
        "Unhealthy: sample ratio mismatch (p = 1e-06 < 0.001); explain it before deciding"
    )


def test_several_treatments_ship_when_one_does():
    a = _annotated("s", "success", *_paired(11, 800, shift=0.0), treatment_name="a")
    b = _annotated("s", "success", *_paired(12, 800, shift=0.06), treatment_name="b")
    decision = decide_comparisons([a, b], RuleSettings())
    assert decision.status == "ship"
    assert decision.treatments == {"a": "keep-running", "b": "ship"}
    assert decision.reasons[0].startswith("Ship (b): s wins")


# --------------------------------------------------------------------------- sizing


def test_ship_probability_by_hand():
    plans = [
        MetricPlan("success", se=0.01, n=1000, effect=0.03),
        MetricPlan("guardrail", se=0.004, n=1000, margin=0.01),
        MetricPlan("secondary", se=0.02, n=1000),
    ]
    z = sps.norm.ppf
    win = sps.norm.cdf(3.0 - z(0.975)) * (1 - sps.norm.cdf(-3.0 - z(0.975)))
    guard = 1 - sps.norm.cdf(max(z(0.95) - 2.5, -z(0.975)))
    other = 1 - 0.025
    assert ship_probability(plans, 1.0, 0.05, 0.05) == pytest.approx(win * guard * other, rel=1e-12)
    # four times the units halve every standard error
    win4 = sps.norm.cdf(6.0 - z(0.975))
    guard4 = 1 - sps.norm.cdf(max(z(0.95) - 5.0, -z(0.975)))
    assert ship_probability(plans, 4.0, 0.05, 0.05) == pytest.approx(
        win4 * guard4 * other, rel=1e-6
    )


def test_units_for_power_reaches_the_power_and_no_less():
    plans = [
        MetricPlan("success", se=0.01, n=1000, effect=0.02),
        MetricPlan("guardrail", se=0.01, n=1000, margin=0.015),
    ]
    scale = units_for_power(plans, 0.8, 0.05, 0.05)
    assert ship_probability(plans, scale, 0.05, 0.05) == pytest.approx(0.8, abs=1e-6)
    assert ship_probability(plans, scale * 0.99, 0.05, 0.05) < 0.8
    # ten null secondary metrics cap P(ship) at 0.975^10 = 0.776: 80% is out of reach
    many = plans + [MetricPlan("secondary", se=0.01, n=1000) for _ in range(10)]
    assert units_for_power(many, 0.8, 0.05, 0.05) is None
    assert units_for_power([MetricPlan("success", 0.01, 1000, effect=0.0)], 0.8, 0.05, 0.05) is None


def test_each_guardrail_gets_power_one_minus_beta_over_g():
    # one tight guardrail beside two loose ones: P(ship) alone would reach 80% with the tight
    # one at about 82%; the power correction asks 1 - 0.2 / 3 of each guardrail
    plans = [
        MetricPlan("success", se=0.001, n=1000, effect=0.05),
        MetricPlan("guardrail", se=0.01, n=1000, margin=0.01),
        MetricPlan("guardrail", se=0.001, n=1000, margin=0.05),
        MetricPlan("guardrail", se=0.001, n=1000, margin=0.05),
    ]
    scale = units_for_power(plans, 0.8, 0.05, 0.05)
    z = sps.norm.ppf
    # the tight guardrail passes with 1 - Phi(z(0.95) - 0.01 / (0.01 / sqrt(scale)))
    expected = ((z(0.95) - z(0.2 / 3)) * 0.01 / 0.01) ** 2
    assert scale == pytest.approx(expected, rel=1e-6)
    assert ship_probability(plans, scale, 0.05, 0.05) > 0.85


# --------------------------------------------------------------------------- whole readouts

#: the roles the bundled demo gives its metrics
DEMO_ROLES = [
    {"name": "mrr@10", "role": "success"},
    "ndcg@10",
    {"name": "recall@20", "role": "guardrail", "nim": 0.005},
    "hit@3",
]


@pytest.fixture(scope="module")
def demo_with_roles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roles")
    path = _config(folder, DEMO_ROLES)
    return abrank.run_experiment(path)


def test_the_demo_with_roles_decides_no_ship(demo_with_roles):
    assert demo_with_roles.decision.status == "no-ship"
    assert repr(demo_with_roles).startswith("<Readout 'demo-reranker': decision no-ship; arms")
    summary = demo_with_roles.summary
    decision = summary["decision"]
    assert decision["status"] == "no-ship"
    assert decision["rule"] == "ship-if-success-and-no-harm"
    assert decision["reasons"][0].startswith("No-ship: Recall@20 deteriorates (-0.009, p = 0.0017)")
    overall = {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}
    assert overall["recall@20"]["decision_checks"]["deteriorated"] is True
    assert decision["deteriorations"] == [
        {
            "metric": "recall@20",
            "treatment": "reranker",
            "role": "guardrail",
            "delta": overall["recall@20"]["delta"],
            "p_value": overall["recall@20"]["p_value"],
        }
    ]
    # Holm spans the success metrics only (one here), then the secondary ones; the
    # guardrail is not corrected
    assert overall["mrr@10"]["p_adjusted"] == overall["mrr@10"]["p_value"]
    assert overall["recall@20"]["correction"] is None
    secondary = [overall["ndcg@10"]["p_value"], overall["hit@3"]["p_value"]]
    holm = multipletests(secondary, method="holm")[1]
    assert [overall["ndcg@10"]["p_adjusted"], overall["hit@3"]["p_adjusted"]] == pytest.approx(holm)
    assert [overall[m]["role"] for m in overall] == [
        "success",
        "secondary",
        "guardrail",
        "secondary",
    ]


def test_the_report_opens_with_the_decision(demo_with_roles, tmp_path):
    from abrank.analysis import write_readout

    write_readout(demo_with_roles, tmp_path / "out", formats=("md", "json", "html"))
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    body = [line for line in report.splitlines() if line.strip()]
    assert body[1].startswith("**No-ship:** Recall@20 deteriorates")
    assert "## Decision" in report and report.index("## Decision") < report.index("## Headline")
    assert (
        "| guardrail | Recall@20 | -0.009 (-0.9%) | margin -0.005; one-sided 95% lower bound"
        in report
    )
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert 'class="opening decision no-ship"' in html
    saved = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert saved["decision"] == demo_with_roles.summary["decision"]


def test_without_roles_there_is_no_decision(tmp_path):
    summary = abrank.run_experiment(_config(tmp_path, ["mrr@10", "recall@20"])).summary
    assert "decision" not in summary
    assert all("role" not in c and "decision_checks" not in c for c in summary["comparisons"])


def _design_config(tmp_path: Path, name: str, metrics: list) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXPERIMENTS, folder)
    path = folder / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["metrics"] = metrics
    data.pop("primary_metric", None)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "metrics"),
    [
        (
            "demo-online",
            [
                {"name": "click_rr@10", "role": "success"},
                {"name": "abandonment", "role": "guardrail", "nim": "2%"},
                "ctr@3",
            ],
        ),
        (
            "demo-interleaving",
            [
                {"name": "clicks", "role": "success"},
                {"name": "sat_clicks", "role": "guardrail", "nim": 0.02},
            ],
        ),
    ],
)
def test_every_design_decides(tmp_path, name, metrics):
    summary = abrank.run_experiment(_design_config(tmp_path, name, metrics)).summary
    decision = summary["decision"]
    overall = {c["metric"]: c for c in summary["comparisons"] if c["segment"] is None}
    success, guard = metrics[0]["name"], metrics[1]["name"]
    checks = overall[guard]["decision_checks"]
    harmed = any(c.get("decision_checks", {}).get("deteriorated") for c in overall.values())
    if harmed or checks["inferior"]:
        expected = "no-ship"
    elif overall[success]["verdict"] == "win" and checks["non_inferior"]:
        expected = "ship"
    else:
        expected = "keep-running"
    assert decision["status"] == expected
    assert overall[success]["role"] == "success" and overall[guard]["role"] == "guardrail"
    if name == "demo-online":
        assert checks["direction"] == "lower"  # abandonment: lower is better
        assert checks["scale"] == "relative" and checks["margin"] == pytest.approx(0.02)
        assert decision["unit"] == "user_id"


def test_duckdb_decides_as_the_memory_engine(demo_with_roles, tmp_path):
    pytest.importorskip("duckdb")
    path = _config(tmp_path, DEMO_ROLES)
    on_duckdb = abrank.run_experiment(path, engine="duckdb").summary["decision"]
    assert on_duckdb == demo_with_roles.summary["decision"]
