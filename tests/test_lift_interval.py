"""The relative lift's interval on a line comes from the verdict's own test and level.

With the t-test deciding, the lift's interval is Fieller's: the ratios r for which the
paired t-test of treatment - (1 + r) * control does not reject. At r = 0 that is the paired
t-test of the deltas itself, so the interval excludes 0 exactly when the verdict is a win
or a loss. Checked here against a numerical inversion of scipy's t-test, and over many
random samples, also after a Holm correction.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from abrank.stats import adjust, compare
from abrank.stats.results import excludes_zero


def _inverted_t_interval(c: np.ndarray, t: np.ndarray, level: float) -> tuple[float, float]:
    """The lift interval by brute force: the roots of p(r) = 1 - level, where p(r) is
    scipy's paired t-test of t - (1 + r) c."""

    def gap(r: float) -> float:
        return sps.ttest_1samp(t - (1 + r) * c, 0.0).pvalue - (1 - level)

    centre = t.mean() / c.mean() - 1
    low = optimize.brentq(gap, centre - 5, centre, xtol=1e-14)
    high = optimize.brentq(gap, centre, centre + 5, xtol=1e-14)
    return low, high


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [12, 40, 200])
def test_lift_interval_is_the_inverted_paired_t_test(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    c = rng.beta(2, 3, n) + 0.2
    t = c * 1.05 + rng.normal(0, 0.15, n)
    result = compare(c, t, n_resamples=500, seed=seed)
    assert result.primary_test == "t"
    assert result.relative_ci == pytest.approx(_inverted_t_interval(c, t, 0.95), abs=1e-9)


def _sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A small paired sample of metric-like values, with an effect of random size (often
    near the edge of significance), sometimes lumpy (many tied queries)."""
    n = int(rng.integers(8, 80))
    c = rng.beta(2, 2, n) + 0.1
    effect = rng.normal(0, 0.05)
    noise = rng.normal(0, 0.12, n)
    if rng.random() < 0.3:
        noise[rng.random(n) < 0.6] = 0.0
    return c, c * (1 + effect) + noise


def test_the_shown_lift_interval_excludes_zero_exactly_when_the_verdict_decides() -> None:
    rng = np.random.default_rng(2026)
    seen = {"decided": 0, "inconclusive": 0, "regime": 0}
    disagreements = []
    for i in range(300):
        c, t = _sample(rng)
        result = compare(c, t, n_resamples=300, seed=i)
        decided = result.verdict != "inconclusive"
        if result.regime is not None:  # the exact sign-flip test decides: no lift interval
            assert result.relative_ci is None
            seen["regime"] += 1
            continue
        seen["decided" if decided else "inconclusive"] += 1
        if excludes_zero(result.relative_ci) != decided:
            disagreements.append((i, result.relative_ci, result.verdict))
    assert disagreements == []
    assert min(seen.values()) >= 10, seen


def test_after_holm_the_lift_interval_still_agrees_with_the_adjusted_verdict() -> None:
    rng = np.random.default_rng(7)
    for family in range(12):
        results = []
        for j in range(4):
            c, t = _sample(rng)
            results.append(compare(c, t, n_resamples=200, seed=family * 10 + j))
        for result in adjust(results, "holm"):
            if result.regime is None:
                decided = result.verdict != "inconclusive"
                assert excludes_zero(result.relative_ci) == decided, result


def test_the_bootstrap_lift_interval_is_kept_and_a_disagreement_is_a_note() -> None:
    rng = np.random.default_rng(5)
    found_note = False
    for i in range(200):
        c, t = _sample(rng)
        if c.size < 30:
            continue
        result = compare(c, t, n_resamples=400, seed=i)
        assert result.relative_ci_bootstrap is not None
        boot_decides = excludes_zero(result.relative_ci_bootstrap)
        noted = any("relative_ci_bootstrap" in note for note in result.notes)
        if result.regime is None:
            assert noted == (boot_decides != (result.verdict != "inconclusive"))
            found_note |= noted
    assert found_note


def test_the_lift_interval_covers_the_true_lift_at_its_level() -> None:
    """400 samples with a known lift L (treatment = control * (1 + L) + noise of mean 0):
    Fieller's interval covers L 95% of the time, within three Monte-Carlo SE."""
    rng = np.random.default_rng(99)
    runs, covered = 400, 0
    for i in range(runs):
        n = int(rng.integers(40, 200))
        c = rng.beta(2, 2, n) + 0.1
        lift = float(rng.normal(0, 0.05))
        t = c * (1 + lift) + rng.normal(0, 0.12, n)
        result = compare(c, t, tests=("t",), seed=i)
        assert result.regime is None
        covered += result.relative_ci[0] <= lift <= result.relative_ci[1]
    se = (0.95 * 0.05 / runs) ** 0.5
    assert abs(covered / runs - 0.95) <= 3 * se, covered / runs
