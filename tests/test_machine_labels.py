"""Machine-labelled judgments: agreement (weighted kappa, confusion, tau), prediction-powered
inference (PPI++) against hand-worked values and the reference packages, the labeller of
the demo, and the model families."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from abrank.config.judgments import model_family
from abrank.demo.machine_labels import favoured_documents, human_sample, machine_labels
from abrank.stats.agreement import agreement, confusion_matrix, kendall_tau, weighted_kappa
from abrank.stats.ppi import compare_ppi, power_tuning, ppi_mean

# --------------------------------------------------------------------------- agreement


def test_kappa_of_a_two_by_two_table_worked_by_hand():
    # confusion [[1, 1], [0, 2]]: observed disagreement 1/4; marginals (1/2, 1/2) and
    # (1/4, 3/4) give a chance disagreement of 3/8 + 1/8 = 1/2; kappa = 1 - (1/4)/(1/2)
    human, machine = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    assert weighted_kappa(human, machine) == pytest.approx(0.5, abs=1e-15)
    assert weighted_kappa(human, machine, "linear") == pytest.approx(0.5, abs=1e-15)
    grades, counts = confusion_matrix(human, machine)
    assert grades.tolist() == [0.0, 1.0]
    assert counts.tolist() == [[1, 1], [0, 2]]


def test_quadratic_kappa_of_a_three_grade_table_worked_by_hand():
    # pairs (0,0) (1,2) (2,2) (2,0): observed weighted disagreement (0+1+0+4)/4 = 5/4;
    # human shares (1/4, 1/4, 1/2), machine (1/2, 0, 1/2): chance disagreement
    # sum p_i q_j (i-j)^2 = 1/4*1/2*4 + 1/4*1/2*1 + 1/4*1/2*1 + 1/2*1/2*4 = 1/2+1/8+1/8+1 = 7/4
    human, machine = np.array([0, 1, 2, 2]), np.array([0, 2, 2, 0])
    assert weighted_kappa(human, machine, "quadratic") == pytest.approx(1 - 5 / 7, abs=1e-15)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_scikit_learns(weights):
    sklearn_metrics = pytest.importorskip(
        "sklearn.metrics", reason="scikit-learn (the test extra) gives the reference kappa"
    )
    rng = np.random.default_rng(5)
    human = rng.integers(0, 4, 700)
    machine = np.clip(human + rng.integers(-1, 2, 700) * (rng.random(700) < 0.4), 0, 3)
    machine[:3] = 4  # a grade only the machine uses
    expected = sklearn_metrics.cohen_kappa_score(human, machine, weights=weights)
    assert weighted_kappa(human, machine, weights) == pytest.approx(expected, abs=1e-12)


def test_agreement_counts_and_mean_difference():
    found = agreement(np.array([0, 1, 2, 3]), np.array([1, 1, 2, 2]))
    assert found.overlap == 4
    assert found.mean_difference == pytest.approx(0.0)
    assert found.confusion["grades"] == [0, 1, 2, 3]
    assert found.confusion["counts"] == [[0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert found.to_dict()["kappa_linear"] == pytest.approx(
        weighted_kappa(np.array([0, 1, 2, 3]), np.array([1, 1, 2, 2]), "linear")
    )


def test_kendall_tau_of_orderings():
    assert kendall_tau(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40])) == pytest.approx(1.0)
    assert kendall_tau(np.array([1, 2, 3, 4]), np.array([4, 3, 2, 1])) == pytest.approx(-1.0)
    # one discordant pair of six: (5 - 1) / 6
    assert kendall_tau(np.array([1, 2, 3, 4]), np.array([1, 3, 2, 4])) == pytest.approx(4 / 6)
    assert math.isnan(kendall_tau(np.array([1.0]), np.array([2.0])))


# --------------------------------------------------------------------------- PPI++


def test_ppi_mean_worked_by_hand():
    # y = 1..4, f = (1, 1, 3, 3) on the labelled, f = (2, 4) on the unlabelled units.
    # cov(y, f) (denominator n) = (1.5 + 0.5 + 0.5 + 1.5) / 4 = 1; the variance of all six
    # predictions (denominator 5) = 22/15; lam = 1 / ((1 + 4/2) * 22/15) = 5/22.
    y, f, f_u = np.array([1.0, 2, 3, 4]), np.array([1.0, 1, 3, 3]), np.array([2.0, 4])
    assert power_tuning(y, f, f_u) == pytest.approx(5 / 22, abs=1e-15)
    est = ppi_mean(y, f, f_u)
    # theta = 5/22 * 3 + (2.5 - 5/22 * 2) = 2.5 + 5/22
    assert est.estimate == pytest.approx(2.5 + 5 / 22, abs=1e-14)
    # rectifier y - lam f deviates by +-14/11, +-3/11: variance 410/484, over n = 4;
    # lam f_u = (10/22, 20/22) has variance 25/484, over N = 2: total 460/1936
    assert est.se == pytest.approx(math.sqrt(460 / 1936), abs=1e-14)
    assert (est.n, est.n_unlabelled) == (4, 2)
    low, high = est.ci(0.95)
    assert (high - low) / 2 == pytest.approx(1.959963984540054 * est.se, rel=1e-12)


def test_lambda_is_clipped_and_zero_is_the_human_estimate():
    y = np.array([1.0, 2, 3, 4])
    # predictions against the labels: negative covariance, clipped to 0
    assert power_tuning(y, -y, np.array([0.0, 1, 2])) == 0.0
    est = ppi_mean(y, -y, np.array([0.0, 1, 2]))
    assert est.estimate == pytest.approx(2.5)
    assert est.se == pytest.approx(np.std(y) / 2)
    # predictions that equal the labels, and plenty unlabelled: clipped to 1 at most
    assert power_tuning(y, y, np.array([0.0, 10, 20])) <= 1.0


def test_ppi_equals_the_reference_package():
    ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (the test extra) is the reference")
    rng = np.random.default_rng(11)
    truth = rng.normal(0.1, 0.3, 3000)
    machine = truth + rng.normal(0.05, 0.2, 3000)
    y, f, f_u = truth[:300], machine[:300], machine[300:]
    est = ppi_mean(y, f, f_u)
    assert est.estimate == pytest.approx(
        float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, f_u))[0]), abs=1e-12
    )
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05)
    assert est.ci(0.95) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    for lam in (0.0, 0.4, 1.0):
        fixed = ppi_mean(y, f, f_u, lam=lam)
        assert fixed.estimate == pytest.approx(
            float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=lam))[0]), abs=1e-12
        )
        assert fixed.p_value() == pytest.approx(
            float(np.ravel(ppi_py.ppi_mean_pval(y, f, f_u, lam=lam))[0]), abs=1e-12
        )


def test_the_paired_comparison_is_ppi_on_the_deltas_and_its_arms_share_lambda():
    rng = np.random.default_rng(3)
    h_c, h_t = rng.random(80), rng.random(80) + 0.1
    f_c, f_t = h_c + rng.normal(0, 0.1, 80), h_t + rng.normal(0, 0.1, 80)
    u_c, u_t = rng.random(500), rng.random(500) + 0.12
    comp = compare_ppi(
        (h_c, h_t), (f_c, f_t), (u_c, u_t), metric="ndcg@10", treatment="t", segment=None
    )
    delta = ppi_mean(h_t - h_c, f_t - f_c, u_t - u_c)
    assert comp.delta == pytest.approx(delta.estimate, abs=1e-14)
    assert comp.ci == pytest.approx(delta.ci(0.95), abs=1e-14)
    assert comp.p_value == pytest.approx(delta.p_value(), abs=1e-15)
    assert comp.treatment_mean - comp.control_mean == pytest.approx(comp.delta, abs=1e-14)
    assert comp.control_mean == pytest.approx(ppi_mean(h_c, f_c, u_c, lam=delta.lam).estimate)
    assert (comp.n, comp.primary_test, comp.ci_method) == (80, "ppi", "ppi")
    assert comp.extra["ppi"]["n_unlabelled"] == 500
    assert comp.verdict == ("win" if comp.ci[0] > 0 else "inconclusive")


# --------------------------------------------------------------------------- the demo's labeller


def test_the_labeller_moves_grades_by_one_at_the_stated_rate():
    grades = np.tile(np.array([0, 1, 2, 3]), 5000)
    frame = pd.DataFrame(
        {"query_id": [f"q{i // 4}" for i in range(grades.size)], "doc_id": "d", "grade": grades}
    )
    frame["doc_id"] = [f"d{i}" for i in range(grades.size)]
    labels = machine_labels(frame, seed=1)
    moved = labels["grade"].to_numpy() - grades
    assert set(np.unique(moved)) <= {-1, 0, 1}
    assert np.mean(moved != 0) == pytest.approx(0.3, abs=0.015)
    assert (labels["grade"].between(0, 3)).all()
    # favoured pairs are raised a grade with the bias's chance where the noise left them
    favoured = frame.iloc[::2][["query_id", "doc_id"]]
    biased = machine_labels(frame, seed=1, favoured=favoured, bias=0.5)
    raised = biased["grade"].to_numpy() - labels["grade"].to_numpy()
    assert raised[1::2].max() == 0
    kept = (moved == 0) & (grades < 3)
    assert np.mean(raised[::2][kept[::2]]) == pytest.approx(0.5, abs=0.03)


def test_favoured_documents_and_the_human_sample():
    control = pd.DataFrame(
        {"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "position": [1, 2, 3]}
    )
    treatment = pd.DataFrame(
        {"query_id": ["q1"] * 3, "doc_id": ["b", "d", "a"], "position": [1, 2, 3]}
    )
    found = favoured_documents(control, treatment, k=2)
    assert found.to_dict("records") == [{"query_id": "q1", "doc_id": "d"}]
    judgments = pd.DataFrame(
        {"query_id": [f"q{i}" for i in range(50)] * 2, "doc_id": "d", "grade": 1}
    )
    sample = human_sample(judgments, share=0.1, seed=4)
    assert sample["query_id"].nunique() == 5
    assert len(sample) == 10  # every judgment of the kept queries


# --------------------------------------------------------------------------- families


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o", "gpt"),
        ("GPT-4o-mini", "gpt"),
        ("openai/gpt-4.1", "gpt"),
        ("Llama-3.1-8B-Instruct", "llama"),
        ("llama3", "llama"),
        ("qwen2.5-72b", "qwen"),
        ("claude-3-opus", "claude"),
        ("monoT5", "monot"),
        ("7b-model", "7b-model"),
    ],
)
def test_model_family(name, family):
    assert model_family(name) == family
