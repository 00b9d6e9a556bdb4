"""Sparse, skewed or outlier-dominated deltas: the verdict comes from the sign-flip test.

On per-query deltas where few queries moved, or the deltas are skewed past Cochran's rule,
or one query carries most of the variance, the t-test's and the bootstrap's normal
approximations fail; the paired comparison then takes its verdict from the exact
sign-flip test (every sign pattern of the moved queries) and says so. Expected values here
come from slow enumerations with itertools and from hand-counted sign patterns.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from abrank.stats import adjust, compare
from abrank.stats.paired import exact_signflip_p, sparse_regime_reasons


def _slow_exact_p(d: np.ndarray) -> float:
    """Two-sided exact sign-flip p-value by listing every sign pattern of the moved deltas."""
    moved = [x for x in d if x != 0]
    observed = abs(sum(moved))
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(moved)):
        total += 1
        hits += abs(sum(s * abs(x) for s, x in zip(signs, moved))) >= observed - 1e-12
    return hits / total


def _trust_case() -> tuple[np.ndarray, np.ndarray]:
    """66 queries, 61 tied, 5 losses (the shape of a Recall@20 line of a daily readout)."""
    rng = np.random.default_rng(3)
    control = np.round(rng.uniform(0.5, 1, 66), 2)
    treatment = control.copy()
    treatment[[3, 17, 29, 41, 60]] -= [0.25, 0.2, 0.1, 0.15, 0.3]
    return control, treatment


def test_five_losses_in_66_queries_are_inconclusive_by_the_exact_test() -> None:
    control, treatment = _trust_case()
    result = compare(control, treatment, metric="recall@20", n_resamples=2000)
    # 5 moved queries, all losses: only the all-minus and all-plus patterns of the 2^5 reach
    # the observed |sum|, so p = 2 / 32, above 0.05 (the t-test says 0.034, the bootstrap
    # 0.0003)
    assert result.p_values["t"] < 0.05
    assert result.primary_test == "signflip"
    assert result.p_value == pytest.approx(2 / 32, abs=1e-15)
    assert result.p_values["signflip"] == result.p_value
    assert result.verdict == "inconclusive"
    assert result.relative_ci is None  # the exact test has no interval: the line shows none
    assert result.regime["nonzero"] == 5 and result.regime["exact"] is True
    assert result.regime["configured_test"] == "t"
    assert any("exact sign-flip" in note for note in result.notes)


def test_pairs_equal_but_for_their_last_bits_are_ties() -> None:
    """The trust case with the treatment's tied values summed in another order (as an SQL
    engine may sum a query's terms): they still tie, so the counts, the regime and the
    exact p-value are those of the exact ties."""
    control, treatment = _trust_case()
    noisy = (treatment + 1 / 3) - 1 / 3
    assert np.count_nonzero((noisy != treatment)[treatment == control]) > 10  # not blind
    exact = compare(control, treatment, metric="recall@20", n_resamples=2000, seed=1)
    result = compare(control, noisy, metric="recall@20", n_resamples=2000, seed=1)
    assert (result.wins, result.ties, result.losses) == (0, 61, 5)
    assert result.regime["nonzero"] == 5
    assert result.p_value == pytest.approx(2 / 32, abs=1e-15)
    assert result.p_values == pytest.approx(exact.p_values, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_exact_signflip_p_equals_the_slow_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 13))
    values = rng.choice([0.1, 0.2, 0.5, 1 / 3, 0.25], size=m) * rng.choice([-1, 1], size=m)
    d = np.concatenate([values, np.zeros(int(rng.integers(0, 20)))])
    rng.shuffle(d)
    assert exact_signflip_p(d, 1e-12) == pytest.approx(_slow_exact_p(d), abs=1e-12)


def test_regime_reasons_name_sparsity_skew_and_a_dominant_query() -> None:
    sparse = np.zeros(40)
    sparse[:6] = [0.1, -0.2, 0.1, 0.3, 0.1, -0.1]
    assert "sparse" in sparse_regime_reasons(sparse)
    # one query in 40 moved by 10 while the others move by about 0.1: Cochran's rule needs
    # n > 25 * skewness^2, and that query holds nearly all of the variance
    rng = np.random.default_rng(0)
    outlier = rng.normal(0, 0.1, 40)
    outlier[7] = 10.0
    reasons = sparse_regime_reasons(outlier)
    assert "skewed" in reasons and "dominated" in reasons
    ordinary = rng.normal(0.05, 0.2, 200)
    assert sparse_regime_reasons(ordinary) == ()


def _sparse_aa(rng: np.random.Generator, n: int) -> np.ndarray:
    """A/A deltas: 82% zero, 15% small (uniform 0.02-0.1) and 3% large (0.5-1), each with a
    fair random sign, so symmetric around 0 (the null of no effect holds exactly)."""
    u = rng.random(n)
    small = rng.uniform(0.02, 0.1, n)
    large = rng.uniform(0.5, 1.0, n)
    magnitude = np.where(u < 0.82, 0.0, np.where(u < 0.97, small, large))
    return magnitude * rng.choice([-1.0, 1.0], n)


def test_a_a_false_positives_of_the_verdict_hold_their_level_on_sparse_deltas() -> None:
    """400 A/A comparisons of 60 queries: the verdict rejects 5% within three Monte-Carlo
    SE (the bootstrap test rejects about 24% of them, beyond that band)."""
    runs, n = 400, 60
    rng = np.random.default_rng(11)
    rejected = boot_rejected = 0
    for i in range(runs):
        control = rng.uniform(0.3, 0.9, n)
        treatment = control + _sparse_aa(rng, n)
        result = compare(control, treatment, tests=("t",), n_resamples=200, seed=i)
        rejected += result.verdict != "inconclusive"
        if i < 100:
            boot = compare(control, treatment, tests=("bootstrap",), n_resamples=500, seed=i)
            boot_rejected += boot.p_values["bootstrap"] < 0.05
    se = math.sqrt(0.05 * 0.95 / runs)
    assert abs(rejected / runs - 0.05) <= 3 * se, rejected / runs
    assert boot_rejected / 100 > 0.05 + 3 * math.sqrt(0.05 * 0.95 / 100)


def test_holm_keeps_the_exact_test_and_its_missing_interval() -> None:
    control, treatment = _trust_case()
    other = compare(control, control + 0.01 * np.arange(66) % 0.03, metric="mrr@10")
    first = compare(control, treatment, metric="recall@20")
    adjusted = adjust([first, other], "holm")[0]
    assert adjusted.primary_test == "signflip"
    # Holm by hand over two p-values: the smaller doubled, the larger at least that
    small, large = sorted([first.p_value, other.p_value])
    expected = 2 * small if first.p_value == small else max(2 * small, large)
    assert adjusted.p_adjusted == pytest.approx(min(1.0, expected), abs=1e-15)
    assert adjusted.relative_ci is None and adjusted.verdict == "inconclusive"


def test_the_headline_names_the_exact_test_and_shows_no_interval_against_the_verdict() -> None:
    from abrank.render.headline import headline_line, opening_sentence

    control, treatment = _trust_case()
    result = compare(control, treatment, metric="recall@20", n_resamples=2000)
    summary = {
        "arms": [
            {"name": "c", "label": "Control", "role": "control"},
            {"name": "treatment", "label": "Treat", "role": "treatment"},
        ],
        "comparisons": [result.to_dict()],
    }
    line = headline_line(summary, result.to_dict())
    assert "no CI (exact sign-flip test on the 5 of 66 queries that moved)" in line
    assert "p = 0.0625 (exact sign-flip)" in line
    assert "%]" not in line  # no lift interval on the line
    assert "→ inconclusive" in line
    assert "exact sign-flip test on the 5 of 66" in opening_sentence(summary, result.to_dict())
